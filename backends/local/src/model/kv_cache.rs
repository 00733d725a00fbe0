//! The per-sequence KV cache: preallocated K and V buffers for every layer, owned by the engine.
//!
//! Each layer's K and V have shape `(1, kv_heads, capacity, head_dim)`; on the CPU the keys
//! lie in blocks within it (`kv_layout.rs`). Appending writes in place at `len`; capacity
//! doubles when full (amortised O(1) append), capped at the model's context length and
//! rounded up to whole key blocks. `len` advances only after a forward pass has written every
//! layer, so a forward that fails part-way leaves the cache at its previous, consistent length.
//!
//! All the layers' buffers are views into one allocation, and that is what keeps memory to
//! what the tokens use. Past 32 MiB the allocator maps fresh zeroed pages for it (glibc's
//! mmap threshold never rises above that), which cost no memory until written, and each head
//! writes its rows in order: the capacity beyond `len` stays virtual, and a grown cache's old
//! buffer goes back to the system when it is dropped. Per-layer buffers of a few MiB came off
//! the heap instead, where the zeroing touched every page and freed buffers stayed resident:
//! a 4k-token prompt on the 0.5B then held 150 MiB for 96 MiB of keys and values.
//!
//! On the CPU the cache holds f16 ([`kv_dtype`]): half the memory, and half the bytes that
//! decoding at depth reads per token, which is what bounds its attention there. Keys and
//! values are rounded to f16 once, as they are written, and widened as the attention reads
//! them; llama.cpp's cache is f16 by default too.

use candle_core::{DType, Device, Tensor};

use crate::error::EngineError;
use crate::model::ModelConfig;
use crate::model::kv_layout::{KeyLayout, whole_blocks};

/// What a cache on `device` holds: f16 on the CPU, where hearth-kernels' attention reads it
/// (see the module documentation); f32 elsewhere, where the generic attention's matmuls
/// would need each step's whole cache converted to the queries' dtype first.
pub fn kv_dtype(device: &Device) -> DType {
    if device.is_cpu() {
        DType::F16
    } else {
        DType::F32
    }
}

/// Bytes of K and V one token takes, all layers, in a cache of `config`'s model on `device`.
pub(crate) fn token_bytes(config: &ModelConfig, device: &Device) -> usize {
    config.kv_bytes_per_token(kv_dtype(device).size_in_bytes())
}

/// Smallest allocation, in tokens, so short chats do not reallocate every step.
const MIN_CAPACITY: usize = 256;

/// One layer's K and V: views into the cache's single buffer.
struct LayerKv {
    k: Tensor,
    v: Tensor,
}

impl LayerKv {
    /// Copies `from`'s first `len` tokens into this layer's start. The keys go in whole
    /// blocks, which lie alike at the start of any capacity (`kv_layout.rs`); both buffers
    /// hold whole blocks, so the rounded-up prefix is inside them.
    fn copy_prefix(&self, from: &LayerKv, len: usize) -> Result<(), EngineError> {
        let keys = whole_blocks(len);
        self.k
            .slice_set(&from.k.narrow(2, 0, keys)?.contiguous()?, 2, 0)?;
        self.v
            .slice_set(&from.v.narrow(2, 0, len)?.contiguous()?, 2, 0)?;
        Ok(())
    }
}

/// K/V for one sequence, all layers.
pub struct KvCache {
    layers: Vec<LayerKv>,
    num_layers: usize,
    kv_heads: usize,
    head_dim: usize,
    len: usize,
    capacity: usize,
    max_len: usize,
    device: Device,
    keys: KeyLayout,
    /// Bytes of K and V per token, all layers, in the cache's dtype.
    token_bytes: usize,
}

impl KvCache {
    /// An empty cache for `config` that may grow to `max_len` tokens. Allocates nothing yet.
    pub fn new(config: &ModelConfig, max_len: usize, device: &Device) -> Self {
        Self {
            layers: Vec::new(),
            num_layers: config.num_layers,
            kv_heads: config.num_kv_heads,
            head_dim: config.head_dim,
            len: 0,
            capacity: 0,
            max_len,
            device: device.clone(),
            keys: KeyLayout::on(device),
            token_bytes: token_bytes(config, device),
        }
    }

    /// Tokens held.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Layers, KV heads and head size.
    pub(crate) fn dims(&self) -> (usize, usize, usize) {
        (self.num_layers, self.kv_heads, self.head_dim)
    }

    /// Most tokens this cache can ever hold.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// Bytes allocated now, capacity included.
    pub fn allocated_bytes(&self) -> usize {
        self.bytes_for(self.capacity)
    }

    /// Bytes the held tokens take: what the memory budget counts, since the capacity past them
    /// is never written and, once the buffer is past 32 MiB, never resident (see the module
    /// documentation). A smaller buffer may be resident whole; the budget undercounts it by
    /// less than 32 MiB.
    pub fn held_bytes(&self) -> usize {
        self.bytes_for(self.len)
    }

    /// Saturating: the sizes come from the model's header, and a count past `usize::MAX` is
    /// over every budget it is compared with.
    fn bytes_for(&self, tokens: usize) -> usize {
        self.token_bytes.saturating_mul(tokens)
    }

    /// What the buffers hold: [`kv_dtype`] of the cache's device.
    pub(crate) fn dtype(&self) -> DType {
        kv_dtype(&self.device)
    }

    /// Keeps the first `n` tokens. `n` beyond the current length is an error.
    pub fn truncate(&mut self, n: usize) -> Result<(), EngineError> {
        if n > self.len {
            return Err(EngineError::BadPosition {
                position: n,
                len: self.len,
            });
        }
        self.len = n;
        Ok(())
    }

    /// Forgets every token and frees the buffers.
    pub fn reset(&mut self) {
        self.len = 0;
        self.capacity = 0;
        self.layers.clear();
    }

    /// A new cache holding a copy of this cache's first `n` tokens (for a new sequence that
    /// shares a prefix with this one, e.g. the system prompt).
    pub fn fork_prefix(&self, n: usize) -> Result<Self, EngineError> {
        if n > self.len {
            return Err(EngineError::BadPosition {
                position: n,
                len: self.len,
            });
        }
        let mut fork = Self {
            layers: Vec::new(),
            len: 0,
            capacity: 0,
            device: self.device.clone(),
            ..*self
        };
        if n == 0 {
            return Ok(fork);
        }
        fork.reserve(n)?;
        for (dst, src) in fork.layers.iter().zip(&self.layers) {
            dst.copy_prefix(src, n)?;
        }
        fork.len = n;
        Ok(fork)
    }

    /// Makes room for `extra` more tokens; when that takes growing the buffers, they grow by
    /// `room` more (as far as the context allows), so that what follows does not grow them
    /// again at once.
    pub(crate) fn reserve_with_room(
        &mut self,
        extra: usize,
        room: usize,
    ) -> Result<(), EngineError> {
        if self.len + extra <= self.capacity && !self.layers.is_empty() {
            return Ok(());
        }
        let room = room.min(self.max_len.saturating_sub(self.len + extra));
        self.reserve(extra + room)
    }

    /// Makes room for `extra` more tokens, growing the buffers if needed.
    pub(crate) fn reserve(&mut self, extra: usize) -> Result<(), EngineError> {
        let needed = self.len + extra;
        if needed > self.max_len {
            return Err(EngineError::ContextOverflow {
                needed,
                limit: self.max_len,
            });
        }
        if needed <= self.capacity && !self.layers.is_empty() {
            return Ok(());
        }
        let new_cap = whole_blocks(
            needed
                .max(self.capacity * 2)
                .max(MIN_CAPACITY)
                .min(self.max_len),
        );
        // `(layers · 2, kv_heads, capacity, head_dim)`: layer `i`'s K is slice `2i`, its V
        // `2i + 1`, each one `(1, kv_heads, capacity, head_dim)` and contiguous.
        let shape = (self.num_layers * 2, self.kv_heads, new_cap, self.head_dim);
        let all = Tensor::zeros(shape, self.dtype(), &self.device)?;
        let mut layers = Vec::with_capacity(self.num_layers);
        for i in 0..self.num_layers {
            let k = all.narrow(0, 2 * i, 1)?;
            let v = all.narrow(0, 2 * i + 1, 1)?;
            let layer = LayerKv { k, v };
            if self.len > 0 {
                layer.copy_prefix(&self.layers[i], self.len)?;
            }
            layers.push(layer);
        }
        self.layers = layers;
        self.capacity = new_cap;
        Ok(())
    }

    /// Writes `k`/`v` of shape `(1, kv_heads, L, head_dim)` for `layer` at position `len`,
    /// in the cache's dtype. Does not advance `len`; see [`Self::commit`].
    pub(crate) fn write(
        &mut self,
        layer: usize,
        k: &Tensor,
        v: &Tensor,
    ) -> Result<(), EngineError> {
        let l = k.dim(2)?;
        let slot = self.layer(layer)?;
        if self.len + l > self.capacity {
            return Err(EngineError::ContextOverflow {
                needed: self.len + l,
                limit: self.capacity,
            });
        }
        self.keys.write(&slot.k, k, self.len)?;
        slot.v
            .slice_set(&v.to_dtype(self.dtype())?.contiguous()?, 2, self.len)?;
        Ok(())
    }

    /// `layer`'s K and V at positions `0..end`, `(1, kv_heads, end, head_dim)`, one row per
    /// position, in the cache's dtype: views, except for blocked keys (a copy).
    pub(crate) fn view(&self, layer: usize, end: usize) -> Result<(Tensor, Tensor), EngineError> {
        let slot = self.layer(layer)?;
        Ok((self.keys.rows(&slot.k, end)?, slot.v.narrow(2, 0, end)?))
    }

    /// `layer`'s whole K and V buffers, `(1, kv_heads, capacity, head_dim)`, for kernels that
    /// read the cache in place: on the CPU the keys lie in blocks (`kv_layout.rs`).
    pub(crate) fn buffers(&self, layer: usize) -> Result<(&Tensor, &Tensor), EngineError> {
        let slot = self.layer(layer)?;
        Ok((&slot.k, &slot.v))
    }

    fn layer(&self, layer: usize) -> Result<&LayerKv, EngineError> {
        self.layers.get(layer).ok_or(EngineError::BadPosition {
            position: layer,
            len: self.layers.len(),
        })
    }

    /// Marks `n` tokens written by the last forward pass as held.
    pub(crate) fn commit(&mut self, n: usize) {
        self.len = (self.len + n).min(self.capacity);
    }
}
