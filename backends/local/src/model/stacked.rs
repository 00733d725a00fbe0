//! Linear maps that share one input (q/k/v; gate/up), run as one matmul over their stacked
//! weights when the weights allow it. In decode every matmul is a separate parallel region
//! (and, for quantized weights, a separate quantization of the input); stacking q/k/v and
//! gate/up turns five of a block's seven matmuls into two. Parts of different formats are
//! stacked in runs of one format: in half the layers of a Q4_K_M file v is Q8_0 while q and k
//! are Q5_0 (or Q6_K beside Q4_K in larger models), and q and k still run as one matmul.

use candle_core::quantized::{GgmlDType, QMatMul, QTensor, ggml_file::qtensor_from_ggml};
use candle_core::{D, Tensor};

use crate::error::EngineError;
use crate::model::linear::{Linear, Packing};

/// Consecutive parts run as one matmul over their stacked rows.
struct Group {
    w: Linear,
    /// The parts' biases stacked, when any part has one.
    b: Option<Tensor>,
    /// Output width of each part in the group.
    outs: Vec<usize>,
}

impl Group {
    fn forward(&self, x: &Tensor) -> Result<Tensor, EngineError> {
        let y = self.w.forward(x)?;
        Ok(match &self.b {
            Some(b) => y.broadcast_add(b)?,
            None => y,
        })
    }
}

/// Several `x @ w_i^T (+ b_i)` sharing `x`.
pub(crate) struct SharedInput {
    /// The parts in order, in runs that stack.
    groups: Vec<Group>,
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
    /// From GGUF weights `(out_i, in)`. Consecutive weights of one type and input width are
    /// stacked: the row-major block data of each is simply concatenated.
    pub fn quantized(
        ws: Vec<QTensor>,
        biases: Vec<Option<Tensor>>,
        packing: &Packing,
    ) -> Result<Self, EngineError> {
        let mut outs = Vec::with_capacity(ws.len());
        let mut runs: Vec<Run> = Vec::new();
        for (w, b) in ws.into_iter().zip(biases) {
            let (rows, cols) = w.shape().dims2()?;
            outs.push(rows);
            let key = (w.dtype(), cols);
            match runs.last_mut() {
                Some(run) if run.key == key => run.parts.push((w, b, rows)),
                _ => runs.push(Run {
                    key,
                    parts: vec![(w, b, rows)],
                }),
            }
        }
        let groups = runs
            .into_iter()
            .map(|run| run.stack(packing))
            .collect::<Result<_, _>>()?;
        Ok(Self { groups, outs })
    }

    /// From dense f32 weights `(out_i, in)`, always stacked.
    pub fn dense(ws: Vec<Tensor>, biases: Vec<Option<Tensor>>) -> Result<Self, EngineError> {
        let outs = ws.iter().map(|w| w.dim(0)).collect::<Result<Vec<_>, _>>()?;
        let group = Group {
            w: Linear::Candle(QMatMul::Tensor(Tensor::cat(&ws, 0)?)),
            b: stack_biases(biases, &outs)?,
            outs: outs.clone(),
        };
        Ok(Self {
            groups: vec![group],
            outs,
        })
    }

    /// The weights behind the parts: one per run that stacks.
    pub fn linears(&self) -> Vec<&Linear> {
        self.groups.iter().map(|g| &g.w).collect()
    }

    /// Output width of each part.
    pub fn outs(&self) -> &[usize] {
        &self.outs
    }

    /// The parts' outputs side by side, `(.., Σ out_i)`: one stacked weight gives it as it is,
    /// several runs are joined.
    pub fn forward_joined(&self, x: &Tensor) -> Result<Tensor, EngineError> {
        match self.groups.as_slice() {
            [group] => group.forward(x),
            groups => {
                let ys = groups
                    .iter()
                    .map(|g| g.forward(x))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Tensor::cat(&ys, D::Minus1)?)
            }
        }
    }

    /// Each part's output, `(.., out_i)`; the parts of a stacked run are views into its one
    /// tensor.
    pub fn forward(&self, x: &Tensor) -> Result<Vec<Tensor>, EngineError> {
        let mut out = Vec::with_capacity(self.outs.len());
        for group in &self.groups {
            let y = group.forward(x)?;
            if let [_] = group.outs.as_slice() {
                out.push(y);
                continue;
            }
            let mut start = 0;
            for &n in &group.outs {
                out.push(y.narrow(D::Minus1, start, n)?);
                start += n;
            }
        }
        Ok(out)
    }
}

/// Consecutive weights of one type and input width (the run's key), with their biases and
/// output widths.
struct Run {
    key: (GgmlDType, usize),
    parts: Vec<(QTensor, Option<Tensor>, usize)>,
}

impl Run {
    /// One matmul for the run's weights, their rows in order (their biases stacked alike).
    fn stack(self, packing: &Packing) -> Result<Group, EngineError> {
        let mut ws = Vec::with_capacity(self.parts.len());
        let (mut biases, mut outs) = (Vec::new(), Vec::new());
        for (w, b, rows) in self.parts {
            ws.push(w);
            biases.push(b);
            outs.push(rows);
        }
        let b = stack_biases(biases, &outs)?;
        let (dtype, cols) = self.key;
        let weight = match <[QTensor; 1]>::try_from(ws) {
            Ok([w]) => w,
            Err(ws) => {
                let mut bytes =
                    Vec::with_capacity(ws.iter().map(|w| w.storage_size_in_bytes()).sum());
                for w in &ws {
                    bytes.extend_from_slice(&w.data()?);
                }
                let device = ws[0].device();
                drop(ws);
                let shape = vec![outs.iter().sum(), cols];
                qtensor_from_ggml(dtype, &bytes, shape, &device)?
            }
        };
        Ok(Group {
            w: packing.linear(QMatMul::from_qtensor(weight)?)?,
            b,
            outs,
        })
    }
}

#[cfg(test)]
mod tests {
    use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
    use candle_core::{Device, Tensor};

    use super::SharedInput;
    use crate::model::cpu_memory::f32_bits;
    use crate::model::linear::{Kernels, Packing};

    fn weight(dtype: GgmlDType, rows: usize, seed: f64) -> QTensor {
        let w = Tensor::arange(0f32, (rows * 64) as f32, &Device::Cpu).unwrap();
        let w = ((w * seed).unwrap().sin().unwrap())
            .reshape((rows, 64))
            .unwrap();
        QTensor::quantize(&w, dtype).unwrap()
    }

    /// q and k of one format run as one matmul beside a v of another, as in half the layers
    /// of a Q4_K_M file, and each part's output (with its bias, where it has one) is the
    /// one its own weight gives, to the bit: stacking rows changes no row's sum.
    #[test]
    fn runs_of_one_format_stack_and_each_part_answers_as_alone() {
        let dev = Device::Cpu;
        let packing = Packing::new(Kernels::Fastest);
        let parts = [
            (GgmlDType::Q8_0, 48, 0.37),
            (GgmlDType::Q8_0, 16, 0.11),
            (GgmlDType::Q4_0, 16, 0.23),
            (GgmlDType::Q4_0, 32, 0.05),
            (GgmlDType::Q8_0, 16, 0.71),
        ];
        let k_bias = Tensor::arange(0f32, 16.0, &dev).unwrap();
        let biases = vec![None, Some(k_bias.clone()), None, None, None];
        let ws = parts.iter().map(|&(t, r, s)| weight(t, r, s)).collect();
        let shared = SharedInput::quantized(ws, biases, &packing).unwrap();
        assert_eq!(shared.linears().len(), 3, "[q, k], [v, v2], [w]");
        assert_eq!(shared.outs(), &[48, 16, 16, 32, 16]);

        let x = Tensor::randn(0f32, 1.0, (1, 3, 64), &dev).unwrap();
        let outputs = shared.forward(&x).unwrap();
        assert_eq!(outputs.len(), parts.len());
        for (i, (&(dtype, rows, seed), got)) in parts.iter().zip(&outputs).enumerate() {
            let alone = packing
                .linear(QMatMul::from_qtensor(weight(dtype, rows, seed)).unwrap())
                .unwrap();
            let mut want = alone.forward(&x).unwrap();
            if i == 1 {
                want = want.broadcast_add(&k_bias).unwrap();
            }
            assert_eq!(got.dims(), want.dims(), "part {i}");
            assert!(f32_bits(got) == f32_bits(&want), "part {i}");
        }
        let joined = shared.forward_joined(&x).unwrap();
        let parts = Tensor::cat(&outputs, 2).unwrap();
        assert!(f32_bits(&joined) == f32_bits(&parts));
    }
}
