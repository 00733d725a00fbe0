//! Lock helpers shared by every module that keeps plain data behind a `std::sync::Mutex`.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, recovering from poisoning: a poisoned lock only means another thread panicked
/// mid-update of plain data, which is still usable; refusing service forever would be worse.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
