//! Prefix reuse across requests without a session id: a small LRU of cached sequences, each
//! its tokens plus their KV. A new prompt continues the sequence sharing its longest common
//! token prefix (truncating that sequence's divergent tail), so an agent's next round — the
//! same conversation plus new messages — prefills only what is new. Caches thrown away
//! (evicted, failed, reload) leave a record, so the next cold prefill of that conversation can
//! say why it is cold, once.

use std::collections::VecDeque;

use tracing::debug;

use crate::error::EngineError;
use crate::model::KvCache;

/// Records of discarded caches kept for cold-prefill reporting.
const MAX_DISCARD_RECORDS: usize = 32;
/// A sequence diverging this far from its end is copied (forked), not taken over: it most
/// likely belongs to another conversation that shares only a prefix (the system prompt).
const MAX_STOLEN_TAIL: usize = 64;

/// Tokens and their KV; `tokens.len() == cache.len()` always.
pub struct Sequence {
    pub tokens: Vec<u32>,
    pub cache: KvCache,
}

impl Sequence {
    pub fn new(cache: KvCache) -> Self {
        Self {
            tokens: Vec::new(),
            cache,
        }
    }

    /// Keeps the first `n` tokens.
    pub fn truncate(&mut self, n: usize) -> Result<(), EngineError> {
        self.cache.truncate(n)?;
        self.tokens.truncate(n);
        Ok(())
    }
}

/// Why a cache was thrown away, reported on the next cold prefill that it explains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColdCause {
    Evicted,
    FailedGeneration,
    Reload,
    NewSession,
}

impl ColdCause {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Evicted => "evicted",
            Self::FailedGeneration => "failed_generation",
            Self::Reload => "reload",
            Self::NewSession => "new_session",
        }
    }
}

/// The sequence a request runs on.
pub struct Taken {
    pub seq: Sequence,
    /// Prompt tokens already in the cache.
    pub reused: usize,
    /// Set when nothing was reused: why.
    pub cold: Option<ColdCause>,
}

struct Entry {
    seq: Sequence,
    last_used: u64,
}

/// The LRU of cached sequences with a memory budget.
pub struct PrefixPool {
    entries: Vec<Entry>,
    discards: VecDeque<(Vec<u32>, ColdCause)>,
    budget_bytes: usize,
    max_entries: usize,
    clock: u64,
}

/// How many tokens `a` and `b` share from their start.
pub(crate) fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl PrefixPool {
    pub fn new(budget_bytes: usize, max_entries: usize) -> Self {
        Self {
            entries: Vec::new(),
            discards: VecDeque::new(),
            budget_bytes,
            max_entries: max_entries.max(1),
            clock: 0,
        }
    }

    /// Bytes held by idle cached sequences.
    pub fn bytes(&self) -> usize {
        self.entries.iter().map(|e| e.seq.cache.held_bytes()).sum()
    }

    /// The most tokens of `prompt` a cached sequence holds.
    pub fn shared(&self, prompt: &[u32]) -> usize {
        self.entries
            .iter()
            .map(|e| common_prefix(&e.seq.tokens, prompt))
            .max()
            .unwrap_or(0)
    }

    /// The sequence to run `prompt` on. At least one prompt token is always left to run, so
    /// the request gets fresh logits.
    pub fn take(
        &mut self,
        prompt: &[u32],
        fresh: impl FnOnce() -> KvCache,
    ) -> Result<Taken, EngineError> {
        let limit = prompt.len().saturating_sub(1);
        let best = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (i, common_prefix(&e.seq.tokens, prompt).min(limit)))
            .max_by_key(|&(i, n)| (n, self.entries[i].last_used));
        if let Some((i, n)) = best.filter(|&(_, n)| n > 0) {
            let entry_len = self.entries[i].seq.tokens.len();
            let seq = if entry_len - n <= MAX_STOLEN_TAIL.max(entry_len / 4) {
                let mut seq = self.entries.swap_remove(i).seq;
                seq.truncate(n)?;
                seq
            } else {
                let src = &self.entries[i].seq;
                Sequence {
                    tokens: src.tokens[..n].to_vec(),
                    cache: src.cache.fork_prefix(n)?,
                }
            };
            debug!(reused = n, "prefix cache hit");
            return Ok(Taken {
                seq,
                reused: n,
                cold: None,
            });
        }
        Ok(Taken {
            seq: Sequence::new(fresh()),
            reused: 0,
            cold: Some(self.cold_cause(prompt)),
        })
    }

    /// Returns a sequence after its request, then evicts least recently used sequences past
    /// the budget.
    pub fn put(&mut self, seq: Sequence) {
        if seq.tokens.is_empty() {
            return;
        }
        self.clock += 1;
        self.entries.push(Entry {
            seq,
            last_used: self.clock,
        });
        while self.entries.len() > self.max_entries
            || (self.bytes() > self.budget_bytes && !self.entries.is_empty())
        {
            let Some((oldest, _)) = self
                .entries
                .iter()
                .enumerate()
                .min_by_key(|(_, e)| e.last_used)
            else {
                break;
            };
            let entry = self.entries.swap_remove(oldest);
            self.record(entry.seq.tokens, ColdCause::Evicted);
        }
    }

    /// Records that the conversation `tokens` lost its cache for `cause`.
    pub fn record(&mut self, tokens: Vec<u32>, cause: ColdCause) {
        if tokens.is_empty() {
            return;
        }
        debug!(
            cause = cause.as_str(),
            tokens = tokens.len(),
            "kv cache discarded"
        );
        if self.discards.len() == MAX_DISCARD_RECORDS {
            self.discards.pop_front();
        }
        self.discards.push_back((tokens, cause));
    }

    /// Drops every cached sequence (a reload), recording `cause` for each.
    pub fn clear(&mut self, cause: ColdCause) {
        for entry in std::mem::take(&mut self.entries) {
            self.record(entry.seq.tokens, cause);
        }
    }

    /// The cause recorded for the discarded cache this prompt continues (it shares at least
    /// half of that cache's tokens), consumed so it is reported once; else a new session.
    fn cold_cause(&mut self, prompt: &[u32]) -> ColdCause {
        let hit = self
            .discards
            .iter()
            .enumerate()
            .map(|(i, (tokens, _))| (i, common_prefix(tokens, prompt), tokens.len()))
            .filter(|&(_, n, len)| n > 0 && 2 * n >= len)
            .max_by_key(|&(_, n, _)| n);
        match hit.and_then(|(i, _, _)| self.discards.remove(i)) {
            Some((_, cause)) => cause,
            None => ColdCause::NewSession,
        }
    }
}
