//! RMS normalization on the CPU through hearth-kernels, over the activations' memory in
//! place, with the residual add before it folded into the same pass. Anything the kernels do not
//! cover (another device or dtype, memory that is not one contiguous run) takes candle's ops,
//! which give the same values.

use candle_core::{DType, Tensor};

use crate::error::EngineError;
use crate::model::cpu_memory::{with_slice, written};

/// candle's `rms_norm(x, alpha, eps)` over the last dimension.
pub(crate) fn rms_norm(x: &Tensor, alpha: &Tensor, eps: f32) -> Result<Tensor, EngineError> {
    if covered(x, alpha) {
        let out = written(x.elem_count(), |out| {
            with_slice(x, |x: &[f32]| {
                with_slice(alpha, |alpha: &[f32]| {
                    hearth_kernels::rms_norm_uninit(x, alpha, eps, out)
                })
            })
            .flatten()
        });
        if let Some(out) = out {
            return Ok(Tensor::from_vec(out, x.shape(), x.device())?);
        }
    }
    // candle's op refuses a strided input.
    Ok(candle_nn::ops::rms_norm(&x.contiguous()?, alpha, eps)?)
}

/// `(x + delta, rms_norm(x + delta, alpha, eps))`: the residual stream after a sublayer, and
/// the next sublayer's input.
pub(crate) fn add_rms_norm(
    x: &Tensor,
    delta: &Tensor,
    alpha: &Tensor,
    eps: f32,
) -> Result<(Tensor, Tensor), EngineError> {
    if covered(x, alpha) && delta.dtype() == DType::F32 && delta.dims() == x.dims() {
        let len = x.elem_count();
        // The kernel writes both outputs or neither: `out` is written inside `sum`'s writing.
        let mut out = None;
        let sum = written(len, |sum| {
            out = written(len, |out| {
                with_slice(x, |x: &[f32]| {
                    with_slice(delta, |delta: &[f32]| {
                        with_slice(alpha, |alpha: &[f32]| {
                            hearth_kernels::add_rms_norm_uninit(x, delta, alpha, eps, sum, out)
                        })
                    })
                })
                .flatten()
                .flatten()
            });
            out.as_ref().map(|_| ())
        });
        if let (Some(sum), Some(out)) = (sum, out) {
            let tensor = |values| Tensor::from_vec(values, x.shape(), x.device());
            return Ok((tensor(sum)?, tensor(out)?));
        }
    }
    let sum = (x + delta)?.contiguous()?;
    let out = candle_nn::ops::rms_norm(&sum, alpha, eps)?;
    Ok((sum, out))
}

/// Whether the kernels take `x` and `alpha` by their kind: f32 on the CPU, rows of `alpha`'s
/// length, which is not 0 (a crafted header's model; candle's op answers it).
fn covered(x: &Tensor, alpha: &Tensor) -> bool {
    x.device().is_cpu()
        && x.dtype() == DType::F32
        && alpha.dtype() == DType::F32
        && alpha.dims().len() == 1
        && alpha.elem_count() > 0
        && x.dims().last() == alpha.dims().first()
}

#[cfg(test)]
mod tests {
    use candle_core::{D, DType, Device, Tensor};

    use super::{add_rms_norm, rms_norm};
    use crate::model::cpu_memory::f32_bits;

    /// The kernels give candle's `rms_norm` and `+` to the bit, for a decoded token's row and
    /// a prompt chunk's rows.
    #[test]
    fn the_kernels_give_candle_s_values_to_the_bit() {
        let dev = Device::Cpu;
        let eps = 1e-6;
        for rows in [1, 37, 256] {
            let x = (Tensor::randn(0f32, 1.0, (1, rows, 896), &dev).unwrap() * 30.0).unwrap();
            let delta = Tensor::randn(0f32, 3.0, (1, rows, 896), &dev).unwrap();
            let alpha = Tensor::randn(0f32, 1.0, 896, &dev).unwrap();
            let want = candle_nn::ops::rms_norm(&x, &alpha, eps).unwrap();
            let got = rms_norm(&x, &alpha, eps).unwrap();
            assert_eq!(got.dims(), want.dims());
            assert!(f32_bits(&got) == f32_bits(&want), "{rows} rows");
            let want_sum = (&x + &delta).unwrap();
            let want = candle_nn::ops::rms_norm(&want_sum, &alpha, eps).unwrap();
            let (sum, got) = add_rms_norm(&x, &delta, &alpha, eps).unwrap();
            assert!(
                f32_bits(&sum) == f32_bits(&want_sum),
                "{rows} rows: the sum"
            );
            assert!(f32_bits(&got) == f32_bits(&want), "{rows} rows: the norm");
        }
    }

    /// Strided and f16 inputs take candle's ops (a strided one made contiguous for it) and still
    /// give its values.
    #[test]
    fn what_the_kernels_do_not_cover_takes_candle_s_ops() {
        let dev = Device::Cpu;
        let alpha = Tensor::ones(8, DType::F32, &dev).unwrap();
        let wide = Tensor::randn(0f32, 1.0, (1, 3, 16), &dev).unwrap();
        let strided = wide.narrow(D::Minus1, 0, 8).unwrap();
        let want = candle_nn::ops::rms_norm(&strided.contiguous().unwrap(), &alpha, 1e-6);
        let got = rms_norm(&strided, &alpha, 1e-6).unwrap();
        assert!(f32_bits(&got) == f32_bits(&want.unwrap()));
        let half = strided.to_dtype(DType::F16).unwrap();
        let alpha16 = alpha.to_dtype(DType::F16).unwrap();
        assert_eq!(rms_norm(&half, &alpha16, 1e-6).unwrap().dtype(), DType::F16);
    }
}
