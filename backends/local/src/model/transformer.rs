//! The decoder stack shared by Qwen2, Qwen3 and Llama: weights and the forward pass.
//!
//! One attention path serves every chunk size, single-token decode included: queries of
//! `L` new tokens attend over the cache's `len + L` keys, query `i` seeing keys `0..=len + i`.
//! On the CPU that is hearth-kernels' fused kernel over the cache buffers; elsewhere it is
//! candle ops with an additive causal mask offset by `len`, built only when that path runs
//! (for `L == 1` the mask would be all zeros and is skipped).

use candle_core::quantized::QMatMul;
use candle_core::{Device, Tensor};

use crate::error::{EngineBug, EngineError};
use crate::model::disk_rows::DiskRows;
use crate::model::linear::Linear;
use crate::model::stacked::SharedInput;
use crate::model::{KvCache, ModelConfig, Rope, cpu_mlp, cpu_norm, cpu_rope};

pub(crate) struct Attention {
    /// q, k and v projections (with their biases), in that order.
    pub qkv: SharedInput,
    pub wo: Linear,
    pub q_norm: Option<Tensor>,
    pub k_norm: Option<Tensor>,
}

pub(crate) struct Mlp {
    /// gate and up projections, in that order.
    pub gate_up: SharedInput,
    pub down: Linear,
}

pub(crate) struct Block {
    pub attn_norm: Tensor,
    pub attn: Attention,
    pub ffn_norm: Tensor,
    pub mlp: Mlp,
}

/// Where token embeddings come from.
pub(crate) enum Embedding {
    /// A table of their own (quantized, or dense from safetensors).
    Table(QMatMul),
    /// A table left in the model file, read a row per token.
    OnDisk(DiskRows),
    /// The rows of the packed output head the table is tied to: one copy of the weights
    /// instead of two.
    TiedToHead,
}

/// A loaded model: weights, RoPE tables and config. Immutable; every sequence brings its own
/// [`KvCache`].
pub struct Model {
    pub(crate) config: ModelConfig,
    pub(crate) embed: Embedding,
    pub(crate) blocks: Vec<Block>,
    pub(crate) norm: Tensor,
    pub(crate) lm_head: Linear,
    pub(crate) rope: Rope,
    pub(crate) device: Device,
    pub(crate) quantization: String,
    pub(crate) weight_bytes_per_token: usize,
    /// The CPU's cores where the model runs on the CPU, 0 elsewhere: a forward pass keeps the
    /// pool's other threads spinning only where each has a core of its own.
    pub(crate) cpu_cores: usize,
}

/// What [`Model::cpu_cores`] holds for a model on `device`.
pub(crate) fn cpu_cores(device: &Device) -> usize {
    if device.is_cpu() {
        std::thread::available_parallelism().map_or(1, usize::from)
    } else {
        0
    }
}

impl Model {
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The weight format, e.g. `Q4_K_M` or `Q8_0`.
    pub fn quantization(&self) -> &str {
        &self.quantization
    }

    /// How many of the model's matmuls each kernel serves (see [`Linear::kernel`]), most
    /// used first.
    pub fn kernels(&self) -> Vec<(String, usize)> {
        let mut counts = std::collections::BTreeMap::<String, usize>::new();
        let linears = self.blocks.iter().flat_map(|b| {
            let mut all = b.attn.qkv.linears();
            all.push(&b.attn.wo);
            all.extend(b.mlp.gate_up.linears());
            all.push(&b.mlp.down);
            all
        });
        for linear in linears.chain([&self.lm_head]) {
            *counts.entry(linear.kernel()).or_default() += 1;
        }
        let mut counts: Vec<(String, usize)> = counts.into_iter().collect();
        counts.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        counts
    }

    /// Bytes of weights read per decoded token (every block plus the output head; the
    /// embedding is a row lookup unless tied to the head). For the bandwidth bound.
    pub fn weight_bytes_per_token(&self) -> usize {
        self.weight_bytes_per_token
    }

    /// Bytes of K and V one cached token takes in this model's caches.
    pub fn kv_bytes_per_token(&self) -> usize {
        crate::model::kv_cache::token_bytes(&self.config, &self.device)
    }

    /// A fresh cache for one sequence, bounded by the model's context length.
    pub fn new_cache(&self) -> KvCache {
        KvCache::new(&self.config, self.config.context_length, &self.device)
    }

    /// Runs `tokens` at positions `cache.len()..` and appends them to `cache`; returns the
    /// logits of the last token as a `(vocab,)` f32 tensor. Empty input, ids outside the
    /// vocabulary and overflowing the context are errors that leave the cache unchanged.
    pub fn forward(&self, tokens: &[u32], cache: &mut KvCache) -> Result<Tensor, EngineError> {
        self.checked(tokens)?;
        // A decoded token is about a hundred matmuls split over the pool's threads, with a
        // little serial work between them: threads kept spinning pick up each split at once.
        // Prompt chunks are not helped (each split has milliseconds of work), and kept warm
        // they were read 15–20% slower at depths 0 and 1k (`hearth bench`, 2-core Zen 4 VM,
        // two runs each way, in turn).
        if tokens.len() == 1 && rayon::current_num_threads() <= self.cpu_cores {
            hearth_kernels::keep_pool_warm(|| self.forward_checked(tokens, cache))
        } else {
            self.forward_checked(tokens, cache)
        }
    }

    /// [`Self::forward`] for a prompt chunk whose logits nothing reads: the tokens' keys and
    /// values go to the cache as they would there, and the last layer stops once it has
    /// written them, without the output head.
    pub fn prefill(&self, tokens: &[u32], cache: &mut KvCache) -> Result<(), EngineError> {
        self.checked(tokens)?;
        self.layers(tokens, cache, Rows::KeysOnly)?;
        cache.commit(tokens.len());
        Ok(())
    }

    /// Refuses empty input and ids outside the vocabulary.
    fn checked(&self, tokens: &[u32]) -> Result<(), EngineError> {
        if tokens.is_empty() {
            return Err(EngineError::InvalidRequest("no tokens to run".into()));
        }
        match tokens
            .iter()
            .find(|&&t| t as usize >= self.config.vocab_size)
        {
            Some(&id) => Err(EngineError::TokenOutOfRange {
                id,
                vocab: self.config.vocab_size,
            }),
            None => Ok(()),
        }
    }

    /// [`Self::forward`] on tokens already checked.
    fn forward_checked(&self, tokens: &[u32], cache: &mut KvCache) -> Result<Tensor, EngineError> {
        // Only the last token's logits are returned, so past the keys and values that the
        // cache keeps for every token, the last layer takes the last token alone (as
        // llama.cpp does): a prompt chunk's last attention, output projection and MLP were a
        // layer's worth of work for rows nothing reads.
        let x = self.layers(tokens, cache, Rows::Last)?;
        let last = x.narrow(1, x.dim(1)? - 1, 1)?;
        let last = cpu_norm::rms_norm(&last, &self.norm, self.config.rms_eps as f32)?;
        let logits = self.lm_head.forward(&last)?.flatten_all()?;
        cache.commit(tokens.len());
        Ok(logits)
    }

    /// Every layer on `tokens`, writing their keys and values to `cache` (uncommitted); the
    /// last layer hands on the `last` rows. Returns the last layer's output.
    fn layers(
        &self,
        tokens: &[u32],
        cache: &mut KvCache,
        last: Rows,
    ) -> Result<Tensor, EngineError> {
        let l = tokens.len();
        cache.reserve(l)?;
        let offset = cache.len();
        let x = match &self.embed {
            Embedding::Table(table) => Some(table.embedding(&Tensor::new(tokens, &self.device)?)?),
            Embedding::OnDisk(table) => Some(table.rows(tokens, &self.device)?),
            Embedding::TiedToHead => self.lm_head.rows(tokens, &self.device)?,
        };
        let mut x = x.ok_or(EngineBug::TiedEmbeddingWithoutHead)?.unsqueeze(0)?;
        let mask = LazyMask::new(l, offset, &self.device);
        let last_block = self.blocks.len().saturating_sub(1);
        for (i, block) in self.blocks.iter().enumerate() {
            let rows = match last {
                // A single token's last row is all of it: the plain path.
                Rows::Last if l == 1 => Rows::All,
                last if i == last_block => last,
                _ => Rows::All,
            };
            x = self.block_forward(block, i, &x, (offset, rows), &mask, cache)?;
        }
        Ok(x)
    }

    fn block_forward(
        &self,
        block: &Block,
        index: usize,
        x: &Tensor,
        (offset, rows): (usize, Rows),
        mask: &LazyMask,
        cache: &mut KvCache,
    ) -> Result<Tensor, EngineError> {
        let eps = self.config.rms_eps as f32;
        let h = cpu_norm::rms_norm(x, &block.attn_norm, eps)?;
        let x = match rows {
            Rows::All => x.clone(),
            Rows::Last => x.narrow(1, x.dim(1)? - 1, 1)?,
            Rows::KeysOnly => {
                self.store_keys(&block.attn, index, &h, offset, cache)?;
                return Ok(x.clone());
            }
        };
        let attn = self.attention(&block.attn, index, &h, (offset, rows), mask, cache)?;
        let (x, h) = cpu_norm::add_rms_norm(&x, &attn, &block.ffn_norm, eps)?;
        let mlp = block
            .mlp
            .down
            .forward(&cpu_mlp::gated(&block.mlp.gate_up, &h)?)?;
        Ok((x + mlp)?)
    }

    fn attention(
        &self,
        attn: &Attention,
        index: usize,
        h: &Tensor,
        (offset, rows): (usize, Rows),
        mask: &LazyMask,
        cache: &mut KvCache,
    ) -> Result<Tensor, EngineError> {
        let cfg = &self.config;
        let (_, l, _) = h.dims3()?;
        let (heads, kv_heads, dim) = (cfg.num_heads, cfg.num_kv_heads, cfg.head_dim);
        let q = self.store_keys(attn, index, h, offset, cache)?;
        let last_only = rows == Rows::Last;
        let (q, first) = if last_only {
            (q.narrow(2, l - 1, 1)?.contiguous()?, offset + l - 1)
        } else {
            (q, offset)
        };
        let (k_buf, v_buf) = cache.buffers(index)?;
        let out = match crate::model::cpu_attention::attend(&q, k_buf, v_buf, first)? {
            Some(out) => out,
            None => {
                let (k_all, v_all) = cache.view(index, offset + l)?;
                let (k_all, v_all) = (k_all.to_dtype(q.dtype())?, v_all.to_dtype(q.dtype())?);
                // The last token alone sees every key: it needs no mask.
                let mask = if last_only { None } else { mask.get()? };
                generic_attention(&q, &k_all, &v_all, mask, (heads, kv_heads, dim))?
            }
        };
        attn.wo.forward(&out)
    }

    /// The layer's q/k/v projections on `h`, `(1, L, hidden)`: writes the rotated keys and the
    /// values to the cache at `offset..` and returns the rotated queries, `(1, heads, L, D)`.
    fn store_keys(
        &self,
        attn: &Attention,
        index: usize,
        h: &Tensor,
        offset: usize,
        cache: &mut KvCache,
    ) -> Result<Tensor, EngineError> {
        let cfg = &self.config;
        let (_, l, _) = h.dims3()?;
        let (heads, kv_heads, dim) = (cfg.num_heads, cfg.num_kv_heads, cfg.head_dim);
        let (q, k, v) = match attn.qkv.forward(h)?.as_slice() {
            [q, k, v] => (q.clone(), k.clone(), v.clone()),
            other => return Err(EngineBug::QkvArity { found: other.len() }.into()),
        };
        // Qwen3's per-head norms come before the rotation: they take candle's ops.
        let in_place = match (&attn.q_norm, &attn.k_norm) {
            (None, None) => cpu_rope::rotated(&q, &self.rope, (heads, dim), offset)?
                .zip(cpu_rope::rotated(&k, &self.rope, (kv_heads, dim), offset)?),
            _ => None,
        };
        let (q, k) = match in_place {
            Some(rotated) => rotated,
            None => self.rotated_by_candle(attn, (q, k), l, offset)?,
        };
        // (1, L, KV, D) -> (1, KV, L, D)
        let v = v
            .reshape((1, l, kv_heads, dim))?
            .transpose(1, 2)?
            .contiguous()?;
        cache.write(index, &k, &v)?;
        Ok(q)
    }

    /// [`cpu_rope::rotated`] on candle's ops, with Qwen3's per-head norms before it: `q` and
    /// `k` as the projection gives them, `(1, L, heads · D)`, rotated as `(1, heads, L, D)`.
    fn rotated_by_candle(
        &self,
        attn: &Attention,
        (q, k): (Tensor, Tensor),
        l: usize,
        offset: usize,
    ) -> Result<(Tensor, Tensor), EngineError> {
        let cfg = &self.config;
        let (heads, kv_heads, dim) = (cfg.num_heads, cfg.num_kv_heads, cfg.head_dim);
        let eps = cfg.rms_eps as f32;
        let q = q.reshape((1, l, heads, dim))?;
        let k = k.reshape((1, l, kv_heads, dim))?;
        let q = match &attn.q_norm {
            Some(w) => candle_nn::ops::rms_norm(&q, w, eps)?,
            None => q,
        };
        let k = match &attn.k_norm {
            Some(w) => candle_nn::ops::rms_norm(&k, w, eps)?,
            None => k,
        };
        // (1, L, H, D) -> (1, H, L, D)
        let q = self.rope.apply(&q.transpose(1, 2)?, offset)?;
        let k = self.rope.apply(&k.transpose(1, 2)?, offset)?;
        Ok((q, k))
    }
}

/// What a layer carries on past writing its tokens' keys and values to the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rows {
    /// Every token's output: the next layer reads them all.
    All,
    /// The last token's alone: the last layer's output goes only to the last logits.
    Last,
    /// Nothing: the last layer of a prompt chunk whose logits nothing reads.
    KeysOnly,
}

/// Attention on candle ops, for devices and dtypes the fused CPU kernel does not cover.
/// Grouped-query attention folds the query heads of one KV head into the row dimension
/// instead of copying K/V per head. `q`: `(1, H, L, D)`; `k`, `v`: `(1, KV, len + L, D)`.
pub(crate) fn generic_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    (heads, kv_heads, dim): (usize, usize, usize),
) -> Result<Tensor, EngineError> {
    let l = q.dim(2)?;
    let kv_len = k.dim(2)?;
    let groups = heads / kv_heads;
    // Query heads h = g_kv * groups + g, so (1, H, L, D) is (KV, groups * L, D) in memory.
    let q = q.reshape((kv_heads, groups * l, dim))?;
    let k = k.squeeze(0)?;
    let v = v.squeeze(0)?;
    let scale = 1.0 / (dim as f64).sqrt();
    let scores = (q.matmul(&k.t()?)? * scale)?;
    let scores = match mask {
        Some(mask) => scores
            .reshape((kv_heads, groups, l, kv_len))?
            .broadcast_add(mask)?
            .reshape((kv_heads, groups * l, kv_len))?,
        None => scores,
    };
    let probs = candle_nn::ops::softmax_last_dim(&scores)?;
    let out = probs.matmul(&v)?; // (KV, groups * L, D)
    Ok(out
        .reshape((1, heads, l, dim))?
        .transpose(1, 2)?
        .reshape((1, l, heads * dim))?)
}

/// The causal mask of one forward pass, built on first use by a layer that needs it.
struct LazyMask<'a> {
    l: usize,
    offset: usize,
    device: &'a Device,
    mask: std::cell::OnceCell<Option<Tensor>>,
}

impl<'a> LazyMask<'a> {
    fn new(l: usize, offset: usize, device: &'a Device) -> Self {
        Self {
            l,
            offset,
            device,
            mask: std::cell::OnceCell::new(),
        }
    }

    fn get(&self) -> Result<Option<&Tensor>, EngineError> {
        if self.mask.get().is_none() {
            let mask = causal_mask(self.l, self.offset, self.device)?;
            let _ = self.mask.set(mask);
        }
        Ok(self.mask.get().and_then(Option::as_ref))
    }
}

/// Additive causal mask `(L, offset + L)`: query `i` sees keys `0..=offset + i`. `None` for a
/// single query, which sees every key.
pub(crate) fn causal_mask(
    l: usize,
    offset: usize,
    device: &Device,
) -> Result<Option<Tensor>, EngineError> {
    if l == 1 {
        return Ok(None);
    }
    let kv_len = offset + l;
    let mut data = vec![0f32; l * kv_len];
    for i in 0..l {
        for j in (offset + i + 1)..kv_len {
            data[i * kv_len + j] = f32::NEG_INFINITY;
        }
    }
    Ok(Some(Tensor::from_vec(data, (l, kv_len), device)?))
}
