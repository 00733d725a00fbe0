//! The estimate used where no tokenizer is at hand, learnt from the server's counts.
//!
//! Text is priced per character class ([`TextProfile`]): letters and blanks merge into tokens,
//! digits, punctuation, line breaks and non-ASCII characters mostly do not, and each tokenizer
//! prices each class its own way. Prose, code, JSON, logs and CJK text mix the classes in very
//! different proportions, so one ratio learnt on a prompt of prose under-counts the code that
//! a tool reads next (the rejection after every new tool output that a single scale caused).
//! Each server count teaches the price of every class at once, by recursive least squares from
//! a conservative prior; what the fit still gets wrong is measured on every new prompt before
//! the prompt teaches it, and the estimate keeps a margin as large as the worst recent miss.

use std::collections::VecDeque;

use super::tokens::{DEFAULT_IMAGE_TOKENS, MESSAGE_OVERHEAD, TokenCounter};

/// ASCII letters and blanks per token before any calibration. Measured against the Qwen2.5
/// tokenizer, this with one token per digit, punctuation mark and non-ASCII character counted
/// 1.15× to 1.67× the real count on Rust source, Markdown, JSON, Cargo.lock, compiler errors
/// and Chinese: never below it, so the first request cannot overflow on a count of ours.
pub const DEFAULT_CHARS_PER_TOKEN: f64 = 4.0;

/// How far above the fit the estimate stays when the fit has not missed lately.
const BASE_MARGIN: f64 = 1.03;

/// The margin never goes above this, however wild the server's counts.
const MAX_MARGIN: f64 = 2.0;

/// How many recent misses the margin is sized to.
const RECENT_MISSES: usize = 8;

/// Factor applied to every price after a rejection that did not state the prompt's size.
const OVERFLOW_FACTOR: f64 = 1.15;

/// Weight of the past in the fit at each new prompt (recursive least squares' forgetting factor).
const FORGETTING: f64 = 0.9;

/// Prices never leave [prior / `PRICE_RANGE`, prior × `PRICE_RANGE`].
const PRICE_RANGE: f64 = 8.0;

/// The character classes priced apart.
const CLASSES: usize = 5;

/// Counts of characters by class in a text or a whole prompt: ASCII letters and blanks, ASCII
/// digits, ASCII punctuation and symbols, line breaks, and everything non-ASCII.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TextProfile([f64; CLASSES]);

impl TextProfile {
    /// The profile of `text`.
    pub fn of(text: &str) -> Self {
        let mut counts = [0usize; CLASSES];
        for byte in text.bytes() {
            let class = match byte {
                b'a'..=b'z' | b'A'..=b'Z' | b' ' | b'\t' => 0,
                b'0'..=b'9' => 1,
                b'\n' | b'\r' => 3,
                // A non-ASCII character counts once, at its first byte.
                0xC0..=0xFF => 4,
                0x80..=0xBF => continue,
                _ => 2,
            };
            counts[class] += 1;
        }
        Self(counts.map(|c| c as f64))
    }

    /// Adds `text`'s profile to this one.
    pub fn add(&mut self, text: &str) {
        let other = Self::of(text);
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }

    fn dot(&self, prices: &[f64; CLASSES]) -> f64 {
        self.0.iter().zip(prices).map(|(x, w)| x * w).sum()
    }
}

/// An estimate of one server's token counts that learns from `usage.prompt_tokens` and from
/// the counts its rejections state.
///
/// A text costs the sum over character classes of count × price, times a margin. Prices start
/// at one token per four letters or blanks and one per any other character, which is above
/// Qwen's count on every kind of text measured, and follow the server's counts. The margin is
/// [`BASE_MARGIN`] plus the largest relative under-count among the last [`RECENT_MISSES`]
/// prompts, each measured before it was learnt from: the error the estimate actually makes on
/// a prompt it has not seen.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibratedEstimator {
    prior: [f64; CLASSES],
    prices: [f64; CLASSES],
    /// Uncertainty of the prices (recursive least squares).
    covariance: [[f64; CLASSES]; CLASSES],
    margin: f64,
    misses: VecDeque<f64>,
    image_tokens: usize,
    observations: u32,
}

impl Default for CalibratedEstimator {
    fn default() -> Self {
        Self::new(DEFAULT_CHARS_PER_TOKEN)
    }
}

impl CalibratedEstimator {
    /// A fresh estimator with `chars_per_token` ASCII letters and blanks per token.
    pub fn new(chars_per_token: f64) -> Self {
        let prior = [1.0 / chars_per_token.clamp(1.0, 8.0), 1.0, 1.0, 1.0, 1.0];
        let mut covariance = [[0.0; CLASSES]; CLASSES];
        for (i, row) in covariance.iter_mut().enumerate() {
            // A price may well be half or double the prior; the fit decides.
            row[i] = prior_variance(prior[i]);
        }
        Self {
            prior,
            prices: prior,
            covariance,
            // The prior is above every count measured; the margin starts with the first miss.
            margin: 1.0,
            misses: VecDeque::new(),
            image_tokens: DEFAULT_IMAGE_TOKENS,
            observations: 0,
        }
    }

    /// The same estimator with `tokens` per image.
    pub fn with_image_tokens(mut self, tokens: usize) -> Self {
        self.image_tokens = tokens;
        self
    }

    /// The multiplier kept above the fitted prices.
    pub fn margin(&self) -> f64 {
        self.margin
    }

    /// How many server counts it has learnt from.
    pub fn observations(&self) -> u32 {
        self.observations
    }

    /// Tokens the texts of `profile` cost together, before rounding.
    pub fn text_tokens(&self, profile: &TextProfile) -> f64 {
        profile.dot(&self.prices) * self.margin
    }

    /// Learns from one prompt: `texts` is the profile of every text it held, `structure` the
    /// tokens this estimator's caller added for the template around them (per message, per
    /// call), and `reported` the server's count for the whole prompt.
    pub fn calibrate(&mut self, texts: &TextProfile, structure: usize, reported: u32) {
        let target = f64::from(reported) - structure as f64;
        let fitted = texts.dot(&self.prices);
        if target <= 0.0 || fitted <= 0.0 {
            return;
        }
        // The miss on a prompt not yet learnt from is the error to keep room for.
        if self.misses.len() == RECENT_MISSES {
            self.misses.pop_front();
        }
        self.misses.push_back(target / fitted - 1.0);
        self.learn(texts, target);
        let worst = self.misses.iter().copied().fold(0.0, f64::max);
        self.margin = (BASE_MARGIN + worst).min(MAX_MARGIN);
        // Never below what this very prompt needed, whatever the fit says now: a count far
        // above the fit raises every price at once, as under-counting is what overflows.
        let short = BASE_MARGIN * target / (texts.dot(&self.prices) * self.margin);
        if short > 1.0 {
            for (price, prior) in self.prices.iter_mut().zip(self.prior) {
                *price = (*price * short).min(prior * PRICE_RANGE);
            }
        }
        self.observations = self.observations.saturating_add(1);
        tracing::debug!(
            fitted,
            target,
            margin = self.margin,
            prices = ?self.prices,
            "token estimate calibrated"
        );
    }

    /// Learns from a prompt the server rejected as too long without saying its size: every
    /// price goes up by 15%.
    pub fn record_overflow(&mut self) {
        for (price, prior) in self.prices.iter_mut().zip(self.prior) {
            *price = (*price * OVERFLOW_FACTOR).min(prior * PRICE_RANGE);
        }
        tracing::warn!(
            prices = ?self.prices,
            "server rejected the prompt as too long; counting more tokens from now on"
        );
    }

    /// One step of recursive least squares towards `texts · prices = target`, with a noise of
    /// 2% of the target (the fit is linear; no tokenizer is). Older prompts weigh less
    /// ([`FORGETTING`]), so the fit keeps following; no uncertainty grows past the prior's.
    fn learn(&mut self, texts: &TextProfile, target: f64) {
        let x = texts.0;
        // Forget, then scale each class's uncertainty back to the prior's where it grew past
        // it (D·P·D with D diagonal keeps the matrix a covariance).
        let forgotten = self.covariance.map(|row| row.map(|v| v / FORGETTING));
        let shrink: [f64; CLASSES] = std::array::from_fn(|i| {
            let cap = prior_variance(self.prior[i]);
            (cap / forgotten[i][i]).sqrt().min(1.0)
        });
        self.covariance = std::array::from_fn(|i| {
            std::array::from_fn(|j| forgotten[i][j] * shrink[i] * shrink[j])
        });
        let p = &self.covariance;
        let px: [f64; CLASSES] =
            std::array::from_fn(|i| (0..CLASSES).map(|j| p[i][j] * x[j]).sum());
        let noise = (0.02 * target + 4.0).powi(2);
        let denominator = noise + (0..CLASSES).map(|i| x[i] * px[i]).sum::<f64>();
        let error = target - texts.dot(&self.prices);
        let gain = px.map(|v| v / denominator);
        for ((price, prior), gain) in self.prices.iter_mut().zip(self.prior).zip(gain) {
            *price = (*price + gain * error).clamp(prior / PRICE_RANGE, prior * PRICE_RANGE);
        }
        let updated: [[f64; CLASSES]; CLASSES] =
            std::array::from_fn(|i| std::array::from_fn(|j| p[i][j] - gain[i] * px[j]));
        self.covariance = updated;
    }
}

fn prior_variance(prior: f64) -> f64 {
    (0.7 * prior).powi(2)
}

impl TokenCounter for CalibratedEstimator {
    fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        (TextProfile::of(text).dot(&self.prices) * self.margin).ceil() as usize
    }

    fn image_tokens(&self) -> usize {
        (self.image_tokens as f64 * self.margin).ceil() as usize
    }

    fn message_overhead(&self) -> usize {
        MESSAGE_OVERHEAD
    }
}

#[cfg(test)]
#[path = "estimator_tests.rs"]
mod tests;
