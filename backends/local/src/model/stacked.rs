//! Linear maps that share one input (q/k/v; gate/up), run as one matmul over their stacked
//! weights when the weights allow it. In decode every matmul is a separate parallel region
//! (and, for quantized weights, a separate quantization of the input); stacking q/k/v and
//! gate/up turns five of a block's seven matmuls into two.

use candle_core::quantized::{QMatMul, QTensor, ggml_file::qtensor_from_ggml};
use candle_core::{D, Tensor};

use crate::error::EngineError;
use crate::model::linear::{Linear, Packing};

enum Kind {
    /// One weight whose rows are every part's rows in order, with the stacked bias.
    Stacked { w: Linear, b: Option<Tensor> },
    /// Weights that cannot be stacked (different quant types): one matmul each.
    Separate(Vec<(Linear, Option<Tensor>)>),
}

/// Several `x @ w_i^T (+ b_i)` sharing `x`.
pub(crate) struct SharedInput {
    kind: Kind,
    /// Output width of each part.
    outs: Vec<usize>,
}

/// Stacks per-part biases; parts without one get zeros. `None` when no part has a bias.
fn stack_biases(
    biases: Vec<Option<Tensor>>,
    outs: &[usize],
) -> Result<Option<Tensor>, EngineError> {
    let Some(like) = biases.iter().flatten().next().cloned() else {
        return Ok(None);
    };
    let parts = biases
        .into_iter()
        .zip(outs)
        .map(|(b, &n)| match b {
            Some(b) => Ok(b),
            None => Tensor::zeros(n, like.dtype(), like.device()),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(Tensor::cat(&parts, 0)?))
}

impl SharedInput {
    /// From GGUF weights `(out_i, in)`. Stacked when all share one type and input width: the
    /// row-major block data of each is simply concatenated.
    pub fn quantized(
        ws: Vec<QTensor>,
        biases: Vec<Option<Tensor>>,
        packing: &Packing,
    ) -> Result<Self, EngineError> {
        let dims = ws
            .iter()
            .map(|w| w.shape().dims2())
            .collect::<Result<Vec<_>, _>>()?;
        let outs: Vec<usize> = dims.iter().map(|d| d.0).collect();
        let dtype = ws.first().map(QTensor::dtype);
        let stackable = ws.len() > 1
            && ws.iter().all(|w| Some(w.dtype()) == dtype)
            && dims.iter().all(|d| d.1 == dims[0].1);
        if let (true, Some(dtype)) = (stackable, dtype) {
            let device = ws[0].device();
            let mut bytes = Vec::with_capacity(ws.iter().map(|w| w.storage_size_in_bytes()).sum());
            for w in &ws {
                bytes.extend_from_slice(&w.data()?);
            }
            drop(ws);
            let rows = outs.iter().sum();
            let stacked = qtensor_from_ggml(dtype, &bytes, vec![rows, dims[0].1], &device)?;
            return Ok(Self {
                kind: Kind::Stacked {
                    w: packing.linear(QMatMul::from_qtensor(stacked)?)?,
                    b: stack_biases(biases, &outs)?,
                },
                outs,
            });
        }
        let separate = ws
            .into_iter()
            .zip(biases)
            .map(|(w, b)| Ok((packing.linear(QMatMul::from_qtensor(w)?)?, b)))
            .collect::<Result<Vec<_>, EngineError>>()?;
        Ok(Self {
            kind: Kind::Separate(separate),
            outs,
        })
    }

    /// From dense f32 weights `(out_i, in)`, always stacked.
    pub fn dense(ws: Vec<Tensor>, biases: Vec<Option<Tensor>>) -> Result<Self, EngineError> {
        let outs = ws.iter().map(|w| w.dim(0)).collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            kind: Kind::Stacked {
                w: Linear::Candle(QMatMul::Tensor(Tensor::cat(&ws, 0)?)),
                b: stack_biases(biases, &outs)?,
            },
            outs,
        })
    }

    /// The weights behind the parts: one when stacked.
    pub fn linears(&self) -> Vec<&Linear> {
        match &self.kind {
            Kind::Stacked { w, .. } => vec![w],
            Kind::Separate(parts) => parts.iter().map(|(w, _)| w).collect(),
        }
    }

    /// Output width of each part.
    pub fn outs(&self) -> &[usize] {
        &self.outs
    }

    /// The parts' outputs side by side, `(.., Σ out_i)`: stacked weights give it as it is,
    /// separate ones are joined.
    pub fn forward_joined(&self, x: &Tensor) -> Result<Tensor, EngineError> {
        match &self.kind {
            Kind::Stacked { w, b } => {
                let y = w.forward(x)?;
                Ok(match b {
                    Some(b) => y.broadcast_add(b)?,
                    None => y,
                })
            }
            Kind::Separate(_) => Ok(Tensor::cat(&self.forward(x)?, D::Minus1)?),
        }
    }

    /// Each part's output, `(.., out_i)`; stacked outputs are views into one tensor.
    pub fn forward(&self, x: &Tensor) -> Result<Vec<Tensor>, EngineError> {
        match &self.kind {
            Kind::Stacked { .. } => {
                let y = self.forward_joined(x)?;
                let mut start = 0;
                let mut out = Vec::with_capacity(self.outs.len());
                for &n in &self.outs {
                    out.push(y.narrow(D::Minus1, start, n)?);
                    start += n;
                }
                Ok(out)
            }
            Kind::Separate(parts) => parts
                .iter()
                .map(|(w, b)| {
                    let y = w.forward(x)?;
                    Ok(match b {
                        Some(b) => y.broadcast_add(b)?,
                        None => y,
                    })
                })
                .collect(),
        }
    }
}
