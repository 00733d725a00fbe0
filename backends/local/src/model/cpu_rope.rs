//! The rotary embedding of the query and key heads on the CPU, through hearth-kernels' one-pass
//! kernel over the q/k/v projection's output where it lies: no copy to make the part
//! contiguous, none to put the heads first. Anything the kernel does not cover (another device
//! or dtype, rows it cannot read in place) takes candle's ops through [`Rope::apply`], which
//! give the same values.

use candle_core::{DType, Tensor};
use hearth_kernels::{HeadRows, rotate_heads};

use crate::error::EngineError;
use crate::model::Rope;
use crate::model::cpu_memory::{with_rows, with_slice, written};

/// `part`, `(1, L, heads · dim)` (the queries or the keys of a projection's output, which may
/// be a view into it), rotated for positions `offset..offset + L` and laid out
/// `(1, heads, L, dim)`; `None` where the kernel does not apply.
pub(crate) fn rotated(
    part: &Tensor,
    rope: &Rope,
    (heads, dim): (usize, usize),
    offset: usize,
) -> Result<Option<Tensor>, EngineError> {
    let (_, rows, width) = part.dims3()?;
    if !part.device().is_cpu()
        || part.dtype() != DType::F32
        || width != heads * dim
        || dim == 0
        || !dim.is_multiple_of(2)
    {
        return Ok(None);
    }
    let (cos, sin) = rope.tables(offset, rows)?;
    if cos.dtype() != DType::F32 {
        return Ok(None);
    }
    let out = written(heads * rows * dim, |out| {
        with_rows(part, |values: &[f32], row_stride| {
            with_slice(&cos, |cos: &[f32]| {
                with_slice(&sin, |sin: &[f32]| {
                    let part = HeadRows {
                        values,
                        row_stride,
                        rows,
                        heads,
                        dim,
                    };
                    rotate_heads(part, cos, sin, rope.pairs(), out)
                })
            })
        })
        .flatten()
        .flatten()
    });
    let Some(out) = out else {
        return Ok(None);
    };
    Ok(Some(Tensor::from_vec(
        out,
        (1, heads, rows, dim),
        part.device(),
    )?))
}

#[cfg(test)]
mod tests {
    use candle_core::{D, Device, Tensor};

    use super::rotated;
    use crate::model::Rope;
    use crate::model::cpu_memory::f32_bits;

    /// The queries and keys of a joined q/k/v output (views into it), at a decoded token's
    /// position and over a prompt chunk, either pairing: candle's transposed `rope` to the bit.
    #[test]
    fn the_kernel_gives_candle_s_rotation_to_the_bit() {
        let dev = Device::Cpu;
        let (heads, kv_heads, dim) = (14, 2, 64);
        for interleaved in [false, true] {
            let rope = Rope::new(dim, 1_000_000.0, 4096, interleaved, &dev).unwrap();
            for (rows, offset) in [(1, 3000), (37, 0), (256, 1024)] {
                let width = (heads + 2 * kv_heads) * dim;
                let joined =
                    (Tensor::randn(0f32, 1.0, (1, rows, width), &dev).unwrap() * 3.0).unwrap();
                let parts = [
                    (joined.narrow(D::Minus1, 0, heads * dim).unwrap(), heads),
                    (
                        joined
                            .narrow(D::Minus1, heads * dim, kv_heads * dim)
                            .unwrap(),
                        kv_heads,
                    ),
                ];
                for (part, n) in parts {
                    let got = rotated(&part, &rope, (n, dim), offset)
                        .unwrap()
                        .expect("the kernel takes a view into the rows");
                    let heads_first = part.reshape((1, rows, n, dim)).unwrap();
                    let want = rope
                        .apply(&heads_first.transpose(1, 2).unwrap(), offset)
                        .unwrap();
                    assert_eq!(got.dims(), want.dims());
                    assert!(
                        f32_bits(&got) == f32_bits(&want),
                        "{rows} rows at {offset}, {n} heads, interleaved {interleaved}"
                    );
                }
            }
        }
    }

    /// Positions past the tables are the same error as candle's path gives; other dtypes stay
    /// on candle's ops.
    #[test]
    fn what_the_kernel_does_not_cover_is_left_or_refused() {
        let dev = Device::Cpu;
        let rope = Rope::new(8, 10_000.0, 16, false, &dev).unwrap();
        let part = Tensor::zeros((1, 4, 16), candle_core::DType::F32, &dev).unwrap();
        assert!(rotated(&part, &rope, (2, 8), 14).is_err());
        let f16 = part.to_dtype(candle_core::DType::F16).unwrap();
        assert!(rotated(&f16, &rope, (2, 8), 0).unwrap().is_none());
        assert!(rotated(&part, &rope, (3, 8), 0).unwrap().is_none());
    }
}
