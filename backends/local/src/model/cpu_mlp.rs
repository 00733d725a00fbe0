//! The MLP's gated activation, on the CPU through hearth-kernels' one-pass kernel over the
//! gate/up projection's joined output in place. Anything the kernel does not cover (another
//! device or dtype, memory that is not one contiguous run) takes candle's ops, which give the
//! same values.

use candle_core::{D, DType, Tensor};
use hearth_kernels::silu_mul_uninit;

use crate::error::{EngineBug, EngineError};
use crate::model::cpu_memory::{with_slice, written};
use crate::model::stacked::SharedInput;

/// `silu(gate) · up` of the MLP's input `h`, through its gate and up projections.
pub(crate) fn gated(gate_up: &SharedInput, h: &Tensor) -> Result<Tensor, EngineError> {
    let &[width, up_width] = gate_up.outs() else {
        return Err(EngineBug::GateUpArity {
            found: gate_up.outs().len(),
        }
        .into());
    };
    let joined = gate_up.forward_joined(h)?;
    if width == up_width
        && let Some(gated) = swiglu(&joined, width)?
    {
        return Ok(gated);
    }
    let gate = joined.narrow(D::Minus1, 0, width)?;
    let up = joined.narrow(D::Minus1, width, up_width)?;
    Ok((candle_nn::ops::silu(&gate)? * up)?)
}

/// `silu(gate) · up` for `gate_up`: `(.., 2 · width)`, each row's gate values then its up
/// values. Returns `(.., width)`, or `None` where the kernel does not apply.
fn swiglu(gate_up: &Tensor, width: usize) -> Result<Option<Tensor>, EngineError> {
    if !gate_up.device().is_cpu() || gate_up.dtype() != DType::F32 || width == 0 {
        return Ok(None);
    }
    let mut dims = gate_up.dims().to_vec();
    if dims.pop() != Some(2 * width) {
        return Ok(None);
    }
    let out = written(gate_up.elem_count() / 2, |out| {
        with_slice(gate_up, |values: &[f32]| {
            silu_mul_uninit(values, width, out)
        })
    });
    let Some(out) = out else {
        return Ok(None);
    };
    dims.push(width);
    Ok(Some(Tensor::from_vec(out, dims, gate_up.device())?))
}

#[cfg(test)]
mod tests {
    use candle_core::{D, DType, Device, Tensor};

    use super::swiglu;
    use crate::model::cpu_memory::f32_bits;

    /// The kernel gives candle's `silu(gate) * up` to the bit, for a decoded token's row and a
    /// prompt chunk's rows.
    #[test]
    fn the_kernel_gives_candle_s_values_to_the_bit() {
        let dev = Device::Cpu;
        for (rows, width) in [(1, 64), (1, 4864), (37, 4864)] {
            let gate_up =
                (Tensor::randn(0f32, 1.0, (1, rows, 2 * width), &dev).unwrap() * 6.0).unwrap();
            let gate = gate_up.narrow(D::Minus1, 0, width).unwrap();
            let up = gate_up.narrow(D::Minus1, width, width).unwrap();
            let want = (candle_nn::ops::silu(&gate).unwrap() * up).unwrap();
            let got = swiglu(&gate_up, width)
                .unwrap()
                .expect("the kernel takes it");
            assert_eq!(got.dims(), want.dims());
            assert!(f32_bits(&got) == f32_bits(&want), "{rows} rows of {width}");
        }
    }

    /// Other dtypes, mismatched or empty widths and strided views stay on candle's ops.
    #[test]
    fn what_the_kernel_does_not_cover_falls_back() {
        let dev = Device::Cpu;
        let f16 = Tensor::zeros((1, 2, 8), DType::F16, &dev).unwrap();
        assert!(swiglu(&f16, 4).unwrap().is_none());
        let f32 = Tensor::zeros((1, 2, 8), DType::F32, &dev).unwrap();
        assert!(swiglu(&f32, 3).unwrap().is_none());
        let strided = Tensor::zeros((1, 2, 16), DType::F32, &dev)
            .unwrap()
            .narrow(D::Minus1, 0, 8)
            .unwrap();
        assert!(swiglu(&strided, 4).unwrap().is_none());
        let empty = Tensor::zeros((1, 2, 0), DType::F32, &dev).unwrap();
        assert!(swiglu(&empty, 0).unwrap().is_none());
    }
}
