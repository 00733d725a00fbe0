//! The estimate used where no tokenizer is at hand, calibrated against the server's counts.

use super::tokens::{DEFAULT_IMAGE_TOKENS, MESSAGE_OVERHEAD, TokenCounter};

/// ASCII letters and blanks per token before any calibration. Measured against the Qwen2.5
/// tokenizer, this with one token per digit, punctuation mark and non-ASCII character counted
/// 1.15× to 1.67× the real count on Rust source, Markdown, JSON, Cargo.lock, compiler errors
/// and Chinese: never below it, so the first request cannot overflow on a count of ours.
pub const DEFAULT_CHARS_PER_TOKEN: f64 = 4.0;

/// Headroom kept above what the server reported: after calibration the estimate for the same
/// prompt is at least this much above the server's count.
const HEADROOM: f64 = 1.05;

/// Weight of a new observation when the estimate was too high (it relaxes slowly).
const RELAX_WEIGHT: f64 = 0.2;

/// The scale never goes below this (a quarter of the raw count, below anything measured:
/// the raw count is at most ~1.7× Qwen's on the texts measured) nor above [`MAX_SCALE`].
const MIN_SCALE: f64 = 0.25;
const MAX_SCALE: f64 = 4.0;

/// Factor applied after the server rejected a prompt as too long.
const OVERFLOW_FACTOR: f64 = 1.15;

/// A characters-per-token estimate that learns from `usage.prompt_tokens`.
///
/// ASCII letters and blanks cost `1 / chars_per_token` each; digits, ASCII punctuation
/// (newlines included) and non-ASCII characters cost one token each (Qwen splits numbers into
/// digits, and symbols and CJK rarely merge much).
/// The sum is multiplied by a scale that starts at 1 and
/// follows the server's counts: up at once when the estimate was short, down slowly when it
/// was long, and always 5% above the last count, so it never turns optimistic.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibratedEstimator {
    chars_per_token: f64,
    scale: f64,
    image_tokens: usize,
    observations: u32,
}

impl Default for CalibratedEstimator {
    fn default() -> Self {
        Self::new(DEFAULT_CHARS_PER_TOKEN)
    }
}

impl CalibratedEstimator {
    /// A fresh estimator with `chars_per_token` ASCII characters per token.
    pub fn new(chars_per_token: f64) -> Self {
        Self {
            chars_per_token: chars_per_token.clamp(1.0, 8.0),
            scale: 1.0,
            image_tokens: DEFAULT_IMAGE_TOKENS,
            observations: 0,
        }
    }

    /// The same estimator with `tokens` per image.
    pub fn with_image_tokens(mut self, tokens: usize) -> Self {
        self.image_tokens = tokens;
        self
    }

    /// The current multiplier on the raw character estimate.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// How many server counts it has learnt from.
    pub fn observations(&self) -> u32 {
        self.observations
    }

    /// Learns from one round: `estimated` is what this estimator counted for the prompt it
    /// sent (at its current scale), `reported` the server's `usage.prompt_tokens` for it.
    pub fn calibrate(&mut self, estimated: usize, reported: u32) {
        if estimated == 0 || reported == 0 {
            return;
        }
        // The scale the estimate would have needed to match the server exactly.
        let exact = self.scale * f64::from(reported) / estimated as f64;
        let wanted = (exact * HEADROOM).clamp(MIN_SCALE, MAX_SCALE);
        self.scale = if wanted >= self.scale {
            // Under-counting is what overflows a window: follow at once.
            wanted
        } else {
            // Relax towards the observation, never below the headroom over it.
            let relaxed = self.scale + RELAX_WEIGHT * (wanted - self.scale);
            relaxed.max(wanted)
        };
        self.observations = self.observations.saturating_add(1);
        tracing::debug!(
            estimated,
            reported,
            scale = self.scale,
            "token estimate calibrated"
        );
    }

    /// Learns from a prompt the server rejected as too long: counts go up by 15%.
    pub fn record_overflow(&mut self) {
        self.scale = (self.scale * OVERFLOW_FACTOR).min(MAX_SCALE);
        tracing::warn!(
            scale = self.scale,
            "server rejected the prompt as too long; counting more tokens from now on"
        );
    }

    fn raw(&self, text: &str) -> f64 {
        let (merged, single) = text.chars().fold((0usize, 0usize), |(m, s), c| {
            if c.is_ascii_alphabetic() || c == ' ' || c == '\t' {
                (m + 1, s)
            } else {
                (m, s + 1)
            }
        });
        merged as f64 / self.chars_per_token + single as f64
    }
}

impl TokenCounter for CalibratedEstimator {
    fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        (self.raw(text) * self.scale).ceil() as usize
    }

    fn image_tokens(&self) -> usize {
        (self.image_tokens as f64 * self.scale.max(1.0)).ceil() as usize
    }

    fn message_overhead(&self) -> usize {
        MESSAGE_OVERHEAD
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> String {
        "fn main() {\n    println!(\"hello {}\", 42);\n}\n".repeat(40)
    }

    #[test]
    fn counts_by_character_class() {
        let est = CalibratedEstimator::default();
        let text = sample();
        let merged = text
            .chars()
            .filter(|c| c.is_ascii_alphabetic() || *c == ' ')
            .count();
        let expected = (merged as f64 / 4.0 + (text.len() - merged) as f64).ceil() as usize;
        assert_eq!(est.count(&text), expected);
        assert_eq!(est.count(""), 0);
        // Non-ASCII characters cost one token each.
        assert_eq!(est.count("日本語"), 3);
        assert_eq!(est.count("2026"), 4);
        assert_eq!(est.count("abcd efg"), 2);
        assert_eq!(est.count("a();"), 4);
    }

    #[test]
    fn converges_to_the_servers_ratio_with_headroom() {
        let mut est = CalibratedEstimator::default();
        let text = sample();
        // The server counts 60% of our first estimate.
        let truth = (est.count(&text) * 6 / 10) as u32;
        for _ in 0..60 {
            let estimated = est.count(&text);
            est.calibrate(estimated, truth);
        }
        let ratio = est.count(&text) as f64 / f64::from(truth);
        assert!((ratio - HEADROOM).abs() < 0.02, "ratio {ratio}");
        assert_eq!(est.observations(), 60);
    }

    #[test]
    fn follows_an_undercount_at_once() {
        let mut est = CalibratedEstimator::default();
        let text = sample();
        // The server counts twice as many tokens as we do.
        let truth = (est.count(&text) * 2) as u32;
        est.calibrate(est.count(&text), truth);
        assert!(est.count(&text) >= truth as usize);
    }

    #[test]
    fn never_optimistic_about_the_last_observation() {
        let mut est = CalibratedEstimator::default();
        let text = sample();
        // Counts that jump around: after each one, the estimate is at or above it.
        for truth in [300u32, 700, 250, 900, 200, 200, 200, 650, 100] {
            est.calibrate(est.count(&text), truth);
            assert!(
                est.count(&text) >= truth as usize,
                "estimate {} below reported {truth}",
                est.count(&text)
            );
        }
    }

    #[test]
    fn scale_is_clamped() {
        let mut est = CalibratedEstimator::default();
        est.calibrate(1000, 1);
        assert!(est.scale() >= MIN_SCALE);
        for _ in 0..100 {
            est.calibrate(1, 1_000_000);
        }
        assert!((est.scale() - MAX_SCALE).abs() < 1e-9);
        est.calibrate(0, 10);
        est.calibrate(10, 0);
        assert_eq!(est.observations(), 101);
    }

    #[test]
    fn overflow_raises_counts() {
        let mut est = CalibratedEstimator::default();
        let text = sample();
        let before = est.count(&text);
        est.record_overflow();
        assert!(est.count(&text) > before);
    }
}
