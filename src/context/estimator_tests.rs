use super::*;

fn code() -> String {
    "fn main() {\n    println!(\"hello {}\", 42);\n}\n".repeat(40)
}

fn prose() -> String {
    "The window is small, so the answer has to be short and to the point. ".repeat(40)
}

/// A made-up server tokenizer that prices classes unlike the prior: letters and blanks 1/5,
/// digits 1, punctuation 1/2, line breaks 1/3, non-ASCII 2/3.
fn server_count(text: &str) -> u32 {
    let p = TextProfile::of(text).0;
    (p[0] / 5.0 + p[1] + p[2] / 2.0 + p[3] / 3.0 + p[4] * 2.0 / 3.0).round() as u32
}

fn learn(est: &mut CalibratedEstimator, text: &str) {
    est.calibrate(&TextProfile::of(text), 0, server_count(text));
}

#[test]
fn counts_by_character_class() {
    let est = CalibratedEstimator::default();
    let text = code();
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
fn a_repeated_prompt_converges_to_the_servers_count_with_a_small_margin() {
    let mut est = CalibratedEstimator::default();
    let text = code();
    let truth = f64::from(server_count(&text));
    for _ in 0..20 {
        learn(&mut est, &text);
    }
    let ratio = est.count(&text) as f64 / truth;
    assert!((1.0..1.06).contains(&ratio), "ratio {ratio}");
    assert_eq!(est.observations(), 20);
}

/// What a single ratio could not do: prices learnt on prompts of prose and code carry over to
/// a kind of text not seen yet (numbers), within the margin.
#[test]
fn prices_learnt_per_class_carry_over_to_a_new_kind_of_text() {
    let mut est = CalibratedEstimator::default();
    for i in 0..6 {
        let mixed = format!("{}{}", prose().repeat(i % 3 + 1), code().repeat(3 - i % 3));
        learn(&mut est, &mixed);
    }
    let numbers: String = (0..400).map(|i| format!("{i},{}\n", i * 7)).collect();
    let cjk = "上下文窗口必须适合。".repeat(60);
    for text in [numbers, cjk, prose(), code()] {
        let truth = server_count(&text) as usize;
        let estimate = est.count(&text);
        assert!(estimate >= truth, "estimate {estimate} below {truth}");
        assert!(
            (estimate as f64) < truth as f64 * 1.8,
            "estimate {estimate} far above {truth}"
        );
    }
}

#[test]
fn follows_an_undercount_at_once() {
    let mut est = CalibratedEstimator::default();
    let text = code();
    // The server counts twice as many tokens as we do.
    let truth = u32::try_from(est.count(&text) * 2).unwrap();
    est.calibrate(&TextProfile::of(&text), 0, truth);
    assert!(est.count(&text) >= truth as usize);
}

#[test]
fn never_optimistic_about_the_last_observation() {
    let mut est = CalibratedEstimator::default();
    let text = code();
    let profile = TextProfile::of(&text);
    // Counts that jump around: after each one, the estimate is at or above it.
    for truth in [300u32, 700, 250, 900, 200, 200, 200, 650, 100] {
        est.calibrate(&profile, 0, truth);
        assert!(
            est.count(&text) >= truth as usize,
            "estimate {} below reported {truth}",
            est.count(&text)
        );
    }
}

/// The margin is the worst recent miss: a server whose counts jump keeps a wide one, and it
/// narrows again once the misses age out.
#[test]
fn the_margin_follows_recent_misses() {
    let mut est = CalibratedEstimator::default();
    let text = prose();
    for _ in 0..10 {
        learn(&mut est, &text);
    }
    let calm = est.margin();
    assert!(calm < 1.06, "margin {calm}");
    let truth = server_count(&text);
    est.calibrate(&TextProfile::of(&text), 0, truth * 13 / 10);
    assert!(est.margin() > 1.25, "margin {}", est.margin());
    for _ in 0..(RECENT_MISSES + 4) {
        learn(&mut est, &text);
    }
    assert!(est.margin() < 1.1, "margin {}", est.margin());
}

#[test]
fn structure_is_not_priced_as_text() {
    let mut est = CalibratedEstimator::default();
    let text = prose();
    let truth = server_count(&text);
    for _ in 0..10 {
        est.calibrate(&TextProfile::of(&text), 500, truth + 500);
    }
    let ratio = est.count(&text) as f64 / f64::from(truth);
    assert!((1.0..1.06).contains(&ratio), "ratio {ratio}");
}

#[test]
fn prices_and_margin_are_bounded() {
    let mut est = CalibratedEstimator::default();
    let profile = TextProfile::of(&code());
    est.calibrate(&profile, 0, 1);
    for _ in 0..100 {
        est.calibrate(&profile, 0, 100_000_000);
    }
    assert!(est.margin() <= MAX_MARGIN);
    let ceiling = (profile.dot(&est.prior) * PRICE_RANGE * MAX_MARGIN).ceil() as usize;
    assert!(est.count(&code()) <= ceiling);
    let seen = est.observations();
    est.calibrate(&TextProfile::default(), 0, 10);
    est.calibrate(&profile, 0, 0);
    est.calibrate(&profile, 50_000, 10);
    assert_eq!(est.observations(), seen);
}

#[test]
fn overflow_raises_counts() {
    let mut est = CalibratedEstimator::default();
    let text = code();
    let before = est.count(&text);
    est.record_overflow();
    assert!(est.count(&text) > before);
}

#[test]
fn profiles_count_characters_not_bytes() {
    let p = TextProfile::of("ab 1,\né日");
    assert_eq!(p.0, [3.0, 1.0, 1.0, 1.0, 2.0]);
    let mut sum = TextProfile::default();
    sum.add("ab");
    sum.add(" 1");
    assert_eq!(sum.0, [3.0, 1.0, 0.0, 0.0, 0.0]);
}
