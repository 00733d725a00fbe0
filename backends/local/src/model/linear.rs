//! A linear layer's weight on the fastest matmul this CPU has for it: Q8_0 weights are
//! repacked for hearth-kernels' AVX-512 VNNI or AVX2 kernel where the CPU has one (candle's own
//! fast path needs rows that are multiples of 256, which Qwen2.5-0.5B's 896-wide projections
//! are not: prefill there ran at about a sixth of the speed); everything else stays on
//! candle's `QMatMul`.

use candle_core::quantized::{GgmlDType, QMatMul};
use candle_core::{DType, Module, Tensor};
use hearth_kernels::PackedQ8_0;

use crate::error::EngineError;

pub(crate) enum Linear {
    Candle(QMatMul),
    /// Replaces the candle weight (same bytes, plus 6%), for prefill and decode alike.
    Packed(PackedQ8_0),
}

impl Linear {
    /// Packs `weight` when it is a Q8_0 matrix on the CPU and this CPU runs the kernel.
    pub fn new(weight: QMatMul) -> Result<Self, EngineError> {
        if let QMatMul::QTensor(t) = &weight
            && t.dtype() == GgmlDType::Q8_0
            && t.device().is_cpu()
            && PackedQ8_0::supported()
        {
            let (rows, cols) = t.shape().dims2()?;
            match PackedQ8_0::pack(&t.data()?, rows, cols) {
                Ok(packed) => return Ok(Self::Packed(packed)),
                Err(err) => tracing::debug!("{rows}x{cols} weight stays on candle: {err}"),
            }
        }
        Ok(Self::Candle(weight))
    }

    /// `x @ wᵀ` over the last dimension of `x`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, EngineError> {
        match self {
            Self::Candle(w) => Ok(w.forward(x)?),
            Self::Packed(w) => {
                let mut dims = x.dims().to_vec();
                let cols = dims.pop().unwrap_or(0);
                if cols != w.cols() {
                    return Err(EngineError::InvalidRequest(format!(
                        "matmul input is {cols} wide, the weight takes {}",
                        w.cols()
                    )));
                }
                let lhs = x.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
                let m = lhs.len() / cols;
                let mut out = vec![0f32; m * w.rows()];
                w.matmul(&lhs, m, &mut out, candle_core::utils::get_num_threads());
                dims.push(w.rows());
                Ok(Tensor::from_vec(out, dims, x.device())?.to_dtype(x.dtype())?)
            }
        }
    }
}
