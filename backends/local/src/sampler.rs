//! Token sampling: greedy, temperature, top-k, top-p and a repeat penalty, with a seeded
//! generator so a given seed always samples the same tokens.

use crate::error::EngineError;

mod ranking;

pub use ranking::argmax;
use ranking::{by_logit, top_n};

/// How to pick the next token.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SamplingParams {
    /// 0 (or less) means greedy.
    pub temperature: f32,
    /// Keep only the `k` most likely tokens.
    pub top_k: Option<usize>,
    /// Keep the smallest set whose probability reaches `p`.
    pub top_p: Option<f32>,
    /// Divides positive (multiplies negative) logits of recently seen tokens; 1.0 disables.
    pub repeat_penalty: f32,
    /// How many recent tokens the penalty looks at.
    pub repeat_last_n: usize,
    pub seed: u64,
}

impl SamplingParams {
    /// Argmax decoding.
    pub fn greedy() -> Self {
        Self {
            temperature: 0.0,
            top_k: None,
            top_p: None,
            repeat_penalty: 1.0,
            repeat_last_n: 64,
            seed: 0,
        }
    }
}

impl Default for SamplingParams {
    /// Qwen2.5-Coder's recommended settings.
    fn default() -> Self {
        Self {
            temperature: 0.7,
            top_k: Some(20),
            top_p: Some(0.8),
            repeat_penalty: 1.05,
            repeat_last_n: 64,
            seed: 299_792_458,
        }
    }
}

/// A sampler with its own random state.
pub struct Sampler {
    params: SamplingParams,
    state: u64,
}

impl Sampler {
    pub fn new(params: SamplingParams) -> Self {
        let state = params.seed;
        Self { params, state }
    }

    /// Picks the next token from `logits` given the tokens so far.
    pub fn sample(&mut self, logits: &mut [f32], history: &[u32]) -> Result<u32, EngineError> {
        if logits.is_empty() {
            return Err(EngineError::InvalidRequest("empty logits".into()));
        }
        self.apply_repeat_penalty(logits, history);
        if self.params.temperature <= 0.0 {
            return Ok(argmax(logits));
        }
        let cand = self.candidates(logits);
        Ok(self.draw(cand))
    }

    /// Like [`Sampler::sample`], but only tokens `allowed` accepts can be picked. The ranking is
    /// the same, so where the model's own choice is allowed greedy decoding picks it; tokens are
    /// checked best first and only as many as the draw needs (`top_k`, one when greedy, at most
    /// [`CONSTRAINED_POOL`]). `None` when no token is allowed.
    pub fn sample_constrained(
        &mut self,
        logits: &mut [f32],
        history: &[u32],
        allowed: &dyn Fn(u32) -> bool,
    ) -> Result<Option<u32>, EngineError> {
        if logits.is_empty() {
            return Err(EngineError::InvalidRequest("empty logits".into()));
        }
        self.apply_repeat_penalty(logits, history);
        let want = if self.params.temperature <= 0.0 {
            1
        } else {
            self.params
                .top_k
                .filter(|&k| k > 0)
                .unwrap_or(CONSTRAINED_POOL)
                .min(CONSTRAINED_POOL)
        };
        let mut picked = Vec::with_capacity(want);
        let best = top_n(logits, CONSTRAINED_POOL);
        for &(id, logit) in &best {
            if allowed(id) {
                picked.push((id, logit));
                if picked.len() == want {
                    break;
                }
            }
        }
        if picked.len() < want {
            // The grammar rules out what the model likes most (a key it must spell, a
            // closing tag): look through the whole vocabulary, cheap refusals first.
            let mut checked: Vec<u32> = best.iter().map(|c| c.0).collect();
            checked.sort_unstable();
            let mut rest: Vec<(u32, f32)> = logits
                .iter()
                .enumerate()
                .map(|(i, &l)| (i as u32, l))
                .filter(|c| checked.binary_search(&c.0).is_err() && allowed(c.0))
                .collect();
            rest.sort_by(by_logit);
            picked.extend(rest.into_iter().take(want - picked.len()));
        }
        if picked.is_empty() {
            return Ok(None);
        }
        if self.params.temperature <= 0.0 {
            return Ok(Some(picked[0].0));
        }
        Ok(Some(self.draw(picked)))
    }

    /// Draws from `cand`, sorted best first: softmax at the temperature, cut to `top_p`.
    fn draw(&mut self, mut cand: Vec<(u32, f32)>) -> u32 {
        let max = cand.first().map(|c| c.1).unwrap_or(0.0);
        let mut total = 0.0f64;
        for c in cand.iter_mut() {
            c.1 = ((c.1 - max) / self.params.temperature).exp();
            total += c.1 as f64;
        }
        if let Some(p) = self.params.top_p {
            let mut acc = 0.0f64;
            let mut keep = cand.len();
            for (i, c) in cand.iter().enumerate() {
                acc += c.1 as f64 / total;
                if acc >= p as f64 {
                    keep = i + 1;
                    break;
                }
            }
            cand.truncate(keep);
            total = cand.iter().map(|c| c.1 as f64).sum();
        }
        let mut r = self.next_f64() * total;
        for c in &cand {
            r -= c.1 as f64;
            if r <= 0.0 {
                return c.0;
            }
        }
        cand.last().map(|c| c.0).unwrap_or(0)
    }

    fn apply_repeat_penalty(&self, logits: &mut [f32], history: &[u32]) {
        let penalty = self.params.repeat_penalty;
        if penalty == 1.0 {
            return;
        }
        let start = history.len().saturating_sub(self.params.repeat_last_n);
        let mut seen = std::collections::HashSet::new();
        for &t in &history[start..] {
            if seen.insert(t)
                && let Some(l) = logits.get_mut(t as usize)
            {
                *l = if *l >= 0.0 {
                    *l / penalty
                } else {
                    *l * penalty
                };
            }
        }
    }

    /// (id, logit) sorted by logit descending, cut to top-k.
    fn candidates(&self, logits: &[f32]) -> Vec<(u32, f32)> {
        match self.params.top_k.filter(|&k| k > 0) {
            Some(k) => top_n(logits, k),
            None => top_n(logits, logits.len()),
        }
    }

    /// splitmix64 → uniform in [0, 1).
    fn next_f64(&mut self) -> f64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// How many candidates a constrained draw considers at most when `top_k` does not say.
pub const CONSTRAINED_POOL: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_takes_the_first_maximum() {
        let mut s = Sampler::new(SamplingParams::greedy());
        assert_eq!(s.sample(&mut [0.1, 3.0, 3.0, -1.0], &[]).unwrap(), 1);
    }

    #[test]
    fn repeat_penalty_can_change_the_greedy_choice() {
        let params = SamplingParams {
            repeat_penalty: 2.0,
            ..SamplingParams::greedy()
        };
        let mut s = Sampler::new(params);
        assert_eq!(s.sample(&mut [1.0, 3.0, 2.0], &[1]).unwrap(), 2);
    }

    #[test]
    fn top_k_one_is_greedy_and_top_p_cuts_the_tail() {
        let k1 = SamplingParams {
            top_k: Some(1),
            top_p: None,
            temperature: 5.0,
            ..SamplingParams::default()
        };
        let mut s = Sampler::new(k1);
        for _ in 0..20 {
            assert_eq!(s.sample(&mut [0.0, 1.0, 0.5], &[]).unwrap(), 1);
        }
        let p = SamplingParams {
            top_k: None,
            top_p: Some(0.5),
            temperature: 1.0,
            repeat_penalty: 1.0,
            ..SamplingParams::default()
        };
        let mut s = Sampler::new(p);
        for _ in 0..50 {
            // Token 0 holds ~88% of the mass, so p=0.5 keeps only it.
            assert_eq!(s.sample(&mut [2.0, 0.0, 0.0], &[]).unwrap(), 0);
        }
    }

    #[test]
    fn same_seed_same_samples_and_all_candidates_reachable() {
        let params = SamplingParams {
            top_k: None,
            top_p: None,
            repeat_penalty: 1.0,
            temperature: 1.0,
            seed: 42,
            ..SamplingParams::default()
        };
        let draw = |params: &SamplingParams| {
            let mut s = Sampler::new(params.clone());
            (0..200)
                .map(|_| s.sample(&mut [0.0, 0.0, 0.0, 0.0], &[]).unwrap())
                .collect::<Vec<_>>()
        };
        let a = draw(&params);
        assert_eq!(a, draw(&params));
        for id in 0..4 {
            assert!(a.contains(&id), "token {id} never drawn");
        }
    }

    #[test]
    fn constrained_greedy_takes_the_best_allowed_token() {
        let mut s = Sampler::new(SamplingParams::greedy());
        let mut logits = [0.1, 3.0, 2.0, 2.5];
        let pick = s
            .sample_constrained(&mut logits, &[], &|id| id != 1)
            .unwrap();
        assert_eq!(pick, Some(3));
        assert_eq!(
            s.sample_constrained(&mut logits, &[], &|_| false).unwrap(),
            None
        );
    }

    #[test]
    fn constrained_sampling_looks_past_the_pool_and_draws_only_allowed_tokens() {
        // The one allowed token ranks last of 1000.
        let mut logits: Vec<f32> = (0..1000).map(|i| -(i as f32)).collect();
        let mut s = Sampler::new(SamplingParams::greedy());
        let pick = s
            .sample_constrained(&mut logits, &[], &|id| id == 999)
            .unwrap();
        assert_eq!(pick, Some(999));

        let mut s = Sampler::new(SamplingParams::default());
        for _ in 0..100 {
            let mut logits = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
            let pick = s
                .sample_constrained(&mut logits, &[], &|id| id % 2 == 1)
                .unwrap();
            assert!(matches!(pick, Some(1 | 3 | 5)), "{pick:?}");
        }
    }
}
