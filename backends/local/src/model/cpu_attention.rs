//! Attention on the CPU through hearth-kernels' fused kernel, which reads the KV cache's
//! buffers in place, f32 or f16: no score matrix, no mask tensor, no copy of the cached keys.
//! Anything it does not cover (another device, another dtype, a buffer that is not plain
//! contiguous memory) returns `None` and the caller keeps the generic candle path.

use candle_core::{DType, Tensor, WithDType};
use half::f16;
use hearth_kernels::{AttentionShape, KvElement, causal_attention};

use crate::error::{EngineBug, EngineError};
use crate::model::cpu_memory::with_slice;

/// `q`: `(1, heads, L, head_dim)`, rotated, f32. `k`, `v`: the cache's whole `(1, kv_heads,
/// capacity, head_dim)` buffers, both f32 or both f16, the keys in blocks
/// (`KeyLayout::Blocked`), with the new tokens written at `offset..offset + L`. Returns
/// `(1, L, heads · head_dim)`.
pub(crate) fn attend(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    offset: usize,
) -> Result<Option<Tensor>, EngineError> {
    if !q.device().is_cpu() || q.dtype() != DType::F32 || k.dtype() != v.dtype() {
        return Ok(None);
    }
    match k.dtype() {
        DType::F32 => attend_on::<f32>(q, k, v, offset),
        DType::F16 => attend_on::<f16>(q, k, v, offset),
        _ => Ok(None),
    }
}

fn attend_on<E: KvElement + WithDType>(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    offset: usize,
) -> Result<Option<Tensor>, EngineError> {
    let (_, heads, queries, head_dim) = q.dims4()?;
    let (_, kv_heads, capacity, _) = k.dims4()?;
    let shape = AttentionShape {
        heads,
        kv_heads,
        head_dim,
        queries,
        offset,
        capacity,
    };
    let mut out = vec![0f32; queries * heads * head_dim];
    let ran = with_slice(q, |q| {
        with_slice(k, |k| {
            with_slice(v, |v: &[E]| causal_attention(q, k, v, shape, &mut out))
        })
    });
    match ran {
        Some(Some(Some(result))) => {
            result.map_err(|e| EngineBug::AttentionShape(e.to_string()))?;
            Ok(Some(Tensor::from_vec(
                out,
                (1, queries, heads * head_dim),
                q.device(),
            )?))
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use candle_core::{DType, Device, Tensor};

    use super::attend;
    use crate::model::kv_layout::blocked;
    use crate::model::transformer::{causal_mask, generic_attention};

    /// The fused kernel and the candle path (what CUDA runs) agree on the same cache, for
    /// decode and for chunks at a depth, with grouped heads, on an f32 cache and on an f16
    /// one (the generic path reading it widened, as the engine's fallback does).
    #[test]
    fn the_fused_kernel_agrees_with_the_generic_path() {
        let dev = Device::Cpu;
        let (heads, kv_heads, dim, capacity) = (6, 2, 16, 128);
        for (l, offset, dtype) in [
            (1, 0, DType::F32),
            (1, 40, DType::F32),
            (5, 0, DType::F32),
            (9, 70, DType::F32),
            (1, 40, DType::F16),
            (9, 70, DType::F16),
        ] {
            let q = Tensor::randn(0f32, 1.0, (1, heads, l, dim), &dev).unwrap();
            let held = |t: Tensor| t.to_dtype(dtype).unwrap();
            let k = held(Tensor::randn(0f32, 1.0, (1, kv_heads, capacity, dim), &dev).unwrap());
            let v = held(Tensor::randn(0f32, 1.0, (1, kv_heads, capacity, dim), &dev).unwrap());
            let fused = attend(&q, &blocked(&k), &v, offset)
                .unwrap()
                .expect("the kernel takes it");
            let mask = causal_mask(l, offset, &dev).unwrap();
            let widened = |t: &Tensor| t.narrow(2, 0, offset + l).unwrap().to_dtype(DType::F32);
            let (k_all, v_all) = (widened(&k).unwrap(), widened(&v).unwrap());
            let generic =
                generic_attention(&q, &k_all, &v_all, mask.as_ref(), (heads, kv_heads, dim))
                    .unwrap();
            assert_eq!(fused.dims(), generic.dims());
            let diff = (fused - generic)
                .unwrap()
                .abs()
                .unwrap()
                .max_all()
                .unwrap()
                .to_scalar::<f32>()
                .unwrap();
            assert!(diff < 1e-5, "l={l} offset={offset} {dtype:?}: {diff}");
        }
    }

    #[test]
    fn other_dtypes_fall_back_to_the_generic_path() {
        let dev = Device::Cpu;
        let zeros =
            |shape: (usize, usize, usize, usize), dtype| Tensor::zeros(shape, dtype, &dev).unwrap();
        let kv = zeros((1, 1, 64, 8), DType::F16);
        assert!(
            attend(&zeros((1, 2, 1, 8), DType::F16), &kv, &kv, 0)
                .unwrap()
                .is_none()
        );
        let q = zeros((1, 2, 1, 8), DType::F32);
        assert!(
            attend(&q, &zeros((1, 1, 64, 8), DType::BF16), &kv, 0)
                .unwrap()
                .is_none()
        );
        assert!(
            attend(&q, &kv, &zeros((1, 1, 64, 8), DType::F32), 0)
                .unwrap()
                .is_none()
        );
    }
}
