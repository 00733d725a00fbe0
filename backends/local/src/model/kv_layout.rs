//! How a KV cache holds its keys, and the writes and reads that depend on it.
//!
//! On the CPU, hearth-kernels' attention reads the keys in blocks of [`KEY_BLOCK`] positions,
//! each block dimension-major (see `hearth_kernels::store_keys`): held that way, a decoded
//! token's attention reads each block as it lies instead of transposing it first, which took a
//! third of its time at depth. Elsewhere candle's attention reads one row per position. The
//! values are one row per position everywhere.
//!
//! In both layouts a head's first `n · KEY_BLOCK` positions are its first elements, so a
//! prefix of whole blocks copies the same way (`KvCache::reserve`, `fork_prefix`).

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, Device, Layout, Tensor, WithDType};
use half::f16;
use hearth_kernels::{CacheShape, KEY_BLOCK, store_keys};

use crate::error::EngineError;

/// How a cache's keys lie in its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyLayout {
    /// One row of `head_dim` per position: what candle's matmuls read.
    Rows,
    /// Blocks of [`KEY_BLOCK`] positions, each dimension-major: what the CPU kernel reads.
    Blocked,
}

impl KeyLayout {
    /// The layout of a cache on `device`: blocked on the CPU, where hearth-kernels' attention
    /// reads it.
    pub(crate) fn on(device: &Device) -> Self {
        if device.is_cpu() {
            Self::Blocked
        } else {
            Self::Rows
        }
    }

    /// Writes `keys`, `(1, kv_heads, L, head_dim)`, into `cache`, one layer's whole
    /// `(1, kv_heads, capacity, head_dim)` buffer, at position `at`, in the cache's dtype.
    pub(crate) fn write(self, cache: &Tensor, keys: &Tensor, at: usize) -> Result<(), EngineError> {
        let keys = keys.to_dtype(cache.dtype())?.contiguous()?;
        match self {
            Self::Rows => cache.slice_set(&keys, 2, at)?,
            Self::Blocked => {
                let (_, kv_heads, capacity, head_dim) = cache.dims4()?;
                let (_, heads_given, _, dim_given) = keys.dims4()?;
                if (heads_given, dim_given) != (kv_heads, head_dim) {
                    return Err(candle_core::Error::Msg(format!(
                        "keys of {heads_given} heads × {dim_given} for a cache of \
                         {kv_heads} × {head_dim}"
                    ))
                    .into());
                }
                let shape = CacheShape {
                    kv_heads,
                    head_dim,
                    capacity,
                };
                cache.inplace_op2(&keys, &StoreKeys { shape, at })?;
            }
        }
        Ok(())
    }

    /// The keys of positions `0..end` of `cache` (as [`Self::write`] takes it), one row per
    /// position: a view for rows, a copy for blocks.
    pub(crate) fn rows(self, cache: &Tensor, end: usize) -> Result<Tensor, EngineError> {
        Ok(match self {
            Self::Rows => cache.narrow(2, 0, end)?,
            Self::Blocked => {
                let (_, kv_heads, capacity, head_dim) = cache.dims4()?;
                let blocks = capacity / KEY_BLOCK;
                cache
                    .reshape((kv_heads, blocks, head_dim, KEY_BLOCK))?
                    .transpose(2, 3)?
                    .reshape((1, kv_heads, capacity, head_dim))?
                    .narrow(2, 0, end)?
            }
        })
    }
}

/// `positions` rounded up to whole key blocks: what a cache's capacity is, and what it copies
/// of a prefix of that many tokens, since a block's keys are spread across the block.
pub(crate) fn whole_blocks(positions: usize) -> usize {
    positions.next_multiple_of(KEY_BLOCK)
}

/// [`store_keys`] as a candle in-place op: the cache's buffer is shared by every layer, and
/// candle gives write access to it only through such an op.
struct StoreKeys {
    shape: CacheShape,
    at: usize,
}

impl StoreKeys {
    fn store<T: WithDType>(
        &self,
        cache: &mut [T],
        cache_layout: &Layout,
        keys: &[T],
        keys_layout: &Layout,
    ) -> candle_core::Result<()> {
        let contiguous = |layout: &Layout, what: &str| {
            layout
                .contiguous_offsets()
                .ok_or_else(|| candle_core::Error::Msg(format!("{what} is not contiguous")))
        };
        let (start, end) = contiguous(cache_layout, "the key cache")?;
        let (from, to) = contiguous(keys_layout, "the new keys")?;
        let (Some(cache), Some(keys)) = (cache.get_mut(start..end), keys.get(from..to)) else {
            return Err(candle_core::Error::Msg("a layout past its buffer".into()));
        };
        store_keys(cache, self.shape, self.at, keys)
            .map_err(|e| candle_core::Error::Msg(e.to_string()))
    }
}

impl candle_core::InplaceOp2 for StoreKeys {
    fn name(&self) -> &'static str {
        "store-keys"
    }

    fn cpu_fwd(
        &self,
        cache: &mut CpuStorage,
        cache_layout: &Layout,
        keys: &CpuStorage,
        keys_layout: &Layout,
    ) -> candle_core::Result<()> {
        match (cache, keys) {
            (CpuStorage::F16(cache), CpuStorage::F16(keys)) => {
                self.store::<f16>(cache, cache_layout, keys, keys_layout)
            }
            (CpuStorage::F32(cache), CpuStorage::F32(keys)) => {
                self.store::<f32>(cache, cache_layout, keys, keys_layout)
            }
            (cache, keys) => Err(candle_core::Error::Msg(format!(
                "keys of {:?} into a cache of {:?}",
                keys.dtype(),
                cache.dtype()
            ))),
        }
    }
}

/// `keys` (one row per position, `(1, kv_heads, capacity, head_dim)`) as a blocked cache
/// holds them, for tests that hand the CPU kernel a cache of their own.
#[cfg(test)]
pub(crate) fn blocked(keys: &Tensor) -> Tensor {
    let cache = Tensor::zeros(keys.shape(), keys.dtype(), keys.device()).unwrap();
    KeyLayout::Blocked.write(&cache, keys, 0).unwrap();
    cache
}

#[cfg(test)]
mod tests {
    use candle_core::DType;

    use super::*;

    /// Keys written into a blocked cache, a few at a time across a block's end, read back
    /// as the rows they were; so do keys in a row cache.
    #[test]
    fn written_keys_read_back_as_rows_in_either_layout() {
        let dev = Device::Cpu;
        let (kv_heads, capacity, head_dim) = (2, 2 * KEY_BLOCK, 8);
        let keys = Tensor::randn(0f32, 1.0, (1, kv_heads, 70, head_dim), &dev).unwrap();
        for layout in [KeyLayout::Rows, KeyLayout::Blocked] {
            for dtype in [DType::F32, DType::F16] {
                let cache = Tensor::zeros((1, kv_heads, capacity, head_dim), dtype, &dev).unwrap();
                let mut at = 0;
                for n in [1, 60, 2, 7] {
                    let part = keys.narrow(2, at, n).unwrap();
                    layout.write(&cache, &part, at).unwrap();
                    at += n;
                }
                let back = layout
                    .rows(&cache, at)
                    .unwrap()
                    .to_dtype(DType::F32)
                    .unwrap();
                let want = keys.to_dtype(dtype).unwrap().to_dtype(DType::F32).unwrap();
                let diff = (back - want).unwrap().abs().unwrap().max_all().unwrap();
                assert_eq!(
                    diff.to_scalar::<f32>().unwrap(),
                    0.0,
                    "{layout:?} {dtype:?}"
                );
            }
        }
    }

    #[test]
    fn keys_past_the_cache_or_of_another_dtype_are_errors() {
        let dev = Device::Cpu;
        let cache = Tensor::zeros((1, 1, KEY_BLOCK, 4), DType::F16, &dev).unwrap();
        let two = Tensor::zeros((1, 1, 2, 4), DType::F32, &dev).unwrap();
        assert!(
            KeyLayout::Blocked
                .write(&cache, &two, KEY_BLOCK - 1)
                .is_err()
        );
        assert!(
            KeyLayout::Blocked
                .write(&cache, &two, KEY_BLOCK - 2)
                .is_ok()
        );
        let wide = Tensor::zeros((1, 1, 2, 5), DType::F32, &dev).unwrap();
        assert!(KeyLayout::Blocked.write(&cache, &wide, 0).is_err());
    }
}
