//! Reading a CPU tensor's memory in place, for the kernels that take plain slices.

use std::mem::MaybeUninit;

use candle_core::{Storage, Tensor, WithDType};

/// Runs `f` on the tensor's values when they are one contiguous run of CPU memory of `T`;
/// `None` otherwise (another device or dtype, a strided view), for the caller's other path.
pub(crate) fn with_slice<T: WithDType, R>(t: &Tensor, f: impl FnOnce(&[T]) -> R) -> Option<R> {
    let (storage, layout) = t.storage_and_layout();
    let Storage::Cpu(cpu) = &*storage else {
        return None;
    };
    let (start, end) = layout.contiguous_offsets()?;
    let data = cpu.as_slice::<T>().ok()?;
    Some(f(data.get(start..end)?))
}

/// Runs `f` on a `(1, rows, width)` tensor's rows where they lie in CPU memory of `T`, each
/// `width` values long but `stride` apart (a part of a wider output, such as the queries of a
/// q/k/v projection's): `f(values, stride)` with row `t` at `values[t · stride..][..width]`.
/// `None` for another device or dtype, or a layout whose rows are not runs of values.
pub(crate) fn with_rows<T: WithDType, R>(
    t: &Tensor,
    f: impl FnOnce(&[T], usize) -> R,
) -> Option<R> {
    let (_, rows, width) = t.dims3().ok()?;
    let (storage, layout) = t.storage_and_layout();
    let Storage::Cpu(cpu) = &*storage else {
        return None;
    };
    let &[_, stride, 1] = layout.stride() else {
        return None;
    };
    let data = cpu.as_slice::<T>().ok()?;
    let start = layout.start_offset();
    let end = match rows {
        0 => start,
        rows => start + (rows - 1) * stride + width,
    };
    Some(f(data.get(start..end)?, stride))
}

/// `len` values from `write`, which writes every one of them into memory that holds none yet
/// (a kernel's `_uninit` form): the engine's outputs are megabytes a layer for a prompt chunk,
/// which zeroing first would write twice. `None` (nothing written) where `write` says it did
/// not run.
pub(crate) fn written(
    len: usize,
    write: impl FnOnce(&mut [MaybeUninit<f32>]) -> Option<()>,
) -> Option<Vec<f32>> {
    let mut values = Vec::with_capacity(len);
    write(&mut values.spare_capacity_mut()[..len])?;
    // SAFETY: `write` ran, and a kernel that runs writes all `len` values (it panics rather
    // than return with an output it does not fill).
    unsafe { values.set_len(len) };
    Some(values)
}

/// A tensor's values as their f32 bits, for tests that hold a kernel to candle's op exactly.
#[cfg(test)]
pub(crate) fn f32_bits(t: &Tensor) -> Vec<u32> {
    let values = t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
    values.iter().map(|v| v.to_bits()).collect()
}
