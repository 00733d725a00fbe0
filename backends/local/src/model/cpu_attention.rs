//! Attention on the CPU through hearth-kernels' fused kernel, which reads the KV cache's
//! buffers in place: no score matrix, no mask tensor, no copy of the cached keys. Anything it
//! does not cover (another device, another dtype, a buffer that is not plain contiguous
//! memory) returns `None` and the caller keeps the generic candle path.

use candle_core::{DType, Storage, Tensor};
use hearth_kernels::{AttentionShape, causal_attention};

use crate::error::{EngineBug, EngineError};

/// `q`: `(1, heads, L, head_dim)`, rotated. `k`, `v`: the cache's whole `(1, kv_heads,
/// capacity, head_dim)` buffers with the new tokens written at `offset..offset + L`. Returns
/// `(1, L, heads · head_dim)`.
pub(crate) fn attend(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    offset: usize,
) -> Result<Option<Tensor>, EngineError> {
    if !q.device().is_cpu() || [q, k, v].iter().any(|t| t.dtype() != DType::F32) {
        return Ok(None);
    }
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
            with_slice(v, |v| causal_attention(q, k, v, shape, &mut out))
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

/// Runs `f` on the tensor's f32 values when they are one contiguous run of CPU memory.
fn with_slice<R>(t: &Tensor, f: impl FnOnce(&[f32]) -> R) -> Option<R> {
    let (storage, layout) = t.storage_and_layout();
    let Storage::Cpu(cpu) = &*storage else {
        return None;
    };
    let (start, end) = layout.contiguous_offsets()?;
    let data = cpu.as_slice::<f32>().ok()?;
    Some(f(data.get(start..end)?))
}

#[cfg(test)]
mod tests {
    use candle_core::{Device, Tensor};

    use super::attend;
    use crate::model::transformer::{causal_mask, generic_attention};

    /// The fused kernel and the candle path (what CUDA runs) agree on the same cache, for
    /// decode and for chunks at a depth, with grouped heads.
    #[test]
    fn the_fused_kernel_agrees_with_the_generic_path() {
        let dev = Device::Cpu;
        let (heads, kv_heads, dim, capacity) = (6, 2, 16, 96);
        for (l, offset) in [(1, 0), (1, 40), (5, 0), (9, 70)] {
            let q = Tensor::randn(0f32, 1.0, (1, heads, l, dim), &dev).unwrap();
            let k = Tensor::randn(0f32, 1.0, (1, kv_heads, capacity, dim), &dev).unwrap();
            let v = Tensor::randn(0f32, 1.0, (1, kv_heads, capacity, dim), &dev).unwrap();
            let fused = attend(&q, &k, &v, offset).unwrap().expect("f32 on the CPU");
            let mask = causal_mask(l, offset, &dev).unwrap();
            let (k_all, v_all) = (
                k.narrow(2, 0, offset + l).unwrap(),
                v.narrow(2, 0, offset + l).unwrap(),
            );
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
            assert!(diff < 1e-5, "l={l} offset={offset}: {diff}");
        }
    }

    #[test]
    fn other_dtypes_fall_back_to_the_generic_path() {
        let dev = Device::Cpu;
        let q = Tensor::zeros((1, 2, 1, 8), candle_core::DType::F16, &dev).unwrap();
        let kv = Tensor::zeros((1, 1, 4, 8), candle_core::DType::F16, &dev).unwrap();
        assert!(attend(&q, &kv, &kv, 0).unwrap().is_none());
    }
}
