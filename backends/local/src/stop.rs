//! Stop strings with partial-match holdback: streamed text that could still become a stop
//! string is held back until it either completes one (and is cut there) or cannot.

/// What one piece of text did to the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopStep {
    /// Text safe to show now.
    pub emit: String,
    /// A stop string completed; generation ends and nothing after it is shown.
    pub stopped: bool,
}

/// Watches generated text for any of a request's stop strings.
#[derive(Debug, Default)]
pub struct StopMatcher {
    stops: Vec<String>,
    held: String,
}

impl StopMatcher {
    pub fn new(stops: &[String]) -> Self {
        Self {
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
            held: String::new(),
        }
    }

    /// Feeds the next piece of decoded text.
    pub fn push(&mut self, text: &str) -> StopStep {
        self.held.push_str(text);
        let first_stop = self
            .stops
            .iter()
            .filter_map(|s| self.held.find(s.as_str()))
            .min();
        if let Some(at) = first_stop {
            let emit = self.held[..at].to_string();
            self.held.clear();
            return StopStep {
                emit,
                stopped: true,
            };
        }
        let keep_from = self.partial_match_start();
        let emit = self.held[..keep_from].to_string();
        self.held.drain(..keep_from);
        StopStep {
            emit,
            stopped: false,
        }
    }

    /// Text still held back when generation ends without a stop string.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }

    /// Start of the longest suffix of `held` that is a proper prefix of a stop string.
    fn partial_match_start(&self) -> usize {
        let held = &self.held;
        held.char_indices()
            .map(|(i, _)| i)
            .find(|&i| {
                let tail = &held[i..];
                self.stops
                    .iter()
                    .any(|s| s.len() > tail.len() && s.starts_with(tail))
            })
            .unwrap_or(held.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stops: &[&str], pieces: &[&str]) -> (String, bool) {
        let stops: Vec<String> = stops.iter().map(|s| s.to_string()).collect();
        let mut m = StopMatcher::new(&stops);
        let mut out = String::new();
        for p in pieces {
            let step = m.push(p);
            out.push_str(&step.emit);
            if step.stopped {
                return (out, true);
            }
        }
        out.push_str(&m.finish());
        (out, false)
    }

    #[test]
    fn stop_split_across_pieces_is_cut_and_never_shown() {
        assert_eq!(
            run(&["</end>"], &["abc</e", "nd>tail"]),
            ("abc".into(), true)
        );
        assert_eq!(run(&["STOP"], &["xS", "T", "O", "P"]), ("x".into(), true));
    }

    #[test]
    fn partial_matches_that_do_not_complete_are_released() {
        assert_eq!(run(&["</end>"], &["a</e", "x"]), ("a</ex".into(), false));
        assert_eq!(run(&["</end>"], &["a</en"]), ("a</en".into(), false));
    }

    #[test]
    fn every_split_gives_the_same_text() {
        let text = "héllo wörld</stop> after";
        for cut in text.char_indices().map(|(i, _)| i) {
            assert_eq!(
                run(&["</stop>", "zzz"], &[&text[..cut], &text[cut..]]),
                ("héllo wörld".into(), true),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn earliest_stop_wins_and_no_stops_pass_everything() {
        assert_eq!(run(&["b", "a"], &["xxab"]), ("xx".into(), true));
        assert_eq!(run(&[], &["a", "b"]), ("ab".into(), false));
    }
}
