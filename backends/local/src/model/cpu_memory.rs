//! Reading a CPU tensor's memory in place, for the kernels that take plain slices.

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
