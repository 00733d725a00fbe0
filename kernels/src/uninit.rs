//! Outputs that hold no values yet: a kernel that writes every value of its output takes it
//! as `MaybeUninit`, so the engine need not zero megabytes a layer only to overwrite them.

use std::mem::MaybeUninit;

/// `values` as memory to be written: sound, since only initialized values are written to it.
pub(crate) fn as_uninit(values: &mut [f32]) -> &mut [MaybeUninit<f32>] {
    // SAFETY: `MaybeUninit<f32>` has `f32`'s layout, and every `f32` is a valid one; the
    // borrow keeps `values` from being read while it lasts.
    unsafe { &mut *(std::ptr::from_mut(values) as *mut [MaybeUninit<f32>]) }
}

/// `values`, every one of them written, as the floats they now hold.
///
/// # Safety
/// Every value of `values` is initialized.
pub(crate) unsafe fn assume_init(values: &mut [MaybeUninit<f32>]) -> &mut [f32] {
    // SAFETY: the caller's; `MaybeUninit<f32>` has `f32`'s layout.
    unsafe { &mut *(std::ptr::from_mut(values) as *mut [f32]) }
}
