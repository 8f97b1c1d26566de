//! Event sets: `nvmlEventSetCreate`, `nvmlEventSetFree`,
//! `nvmlDeviceGetSupportedEventTypes`, `nvmlDeviceRegisterEvents` and
//! `nvmlEventSetWait(_v2)`.
//!
//! vgpu delivers no device events (XID errors, clock changes, …) to a
//! client: a device supports no event type, registering any is
//! `NVML_ERROR_NOT_SUPPORTED`, and a wait on a set sees none and ends with
//! `NVML_ERROR_TIMEOUT` when its time is up. A set is still a real object
//! with a lifetime: `nvidia-smi` creates one as it starts and stops with
//! "Internal NVML error" if it cannot.

use std::collections::HashSet;
use std::ffi::{c_uint, c_ulonglong};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use super::device;
use crate::edge::{non_null, write_out, NvmlError, Res};
use crate::generated::types::{nvmlDevice_t, nvmlEventData_t, nvmlEventSet_t};

/// The addresses of the live sets this process created.
fn live() -> MutexGuard<'static, HashSet<usize>> {
    static LIVE: OnceLock<Mutex<HashSet<usize>>> = OnceLock::new();
    LIVE.get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// The longest a wait sleeps in one go, so that a set freed meanwhile is
/// noticed.
const NAP: Duration = Duration::from_millis(100);

/// A live set of this process, or `NVML_ERROR_INVALID_ARGUMENT`.
fn known(set: nvmlEventSet_t) -> Res<()> {
    crate::session::current()?;
    if live().contains(&(set as usize)) {
        Ok(())
    } else {
        Err(NvmlError::INVALID_ARGUMENT)
    }
}

/// `nvmlEventSetCreate`.
///
/// # Safety
/// `set` must be NULL or valid for a write of a set handle.
pub unsafe fn create(set: *mut nvmlEventSet_t) -> Res<()> {
    crate::session::current()?;
    non_null(set)?;
    // One byte of our own: its address is the handle, never dereferenced.
    let handle = Box::into_raw(Box::new(0u8)) as usize;
    live().insert(handle);
    // SAFETY: non-NULL, valid by the caller's contract.
    unsafe { write_out(set, handle as nvmlEventSet_t) }
}

/// `nvmlEventSetFree`.
pub fn free(set: nvmlEventSet_t) -> Res<()> {
    crate::session::current()?;
    if !live().remove(&(set as usize)) {
        return Err(NvmlError::INVALID_ARGUMENT);
    }
    // SAFETY: the address came from `Box::into_raw` in `create` and left
    // the live set just now, so it is freed once.
    drop(unsafe { Box::from_raw(set as usize as *mut u8) });
    Ok(())
}

/// `nvmlDeviceGetSupportedEventTypes`: none.
///
/// # Safety
/// `types` must be NULL or valid for a write.
pub unsafe fn supported(d: nvmlDevice_t, types: *mut c_ulonglong) -> Res<()> {
    device::lookup(d)?;
    // SAFETY: the caller's contract; NULL is refused.
    unsafe { write_out(types, 0) }
}

/// `nvmlDeviceRegisterEvents`: no event type can be delivered.
pub fn register(d: nvmlDevice_t, _types: c_ulonglong, set: nvmlEventSet_t) -> Res<()> {
    device::lookup(d)?;
    known(set)?;
    Err(NvmlError::NOT_SUPPORTED)
}

/// `nvmlEventSetWait(_v2)`: no event comes; `NVML_ERROR_TIMEOUT` after
/// `timeout_ms`.
pub fn wait(set: nvmlEventSet_t, data: *mut nvmlEventData_t, timeout_ms: c_uint) -> Res<()> {
    known(set)?;
    non_null(data)?;
    let mut left = Duration::from_millis(u64::from(timeout_ms));
    while !left.is_zero() {
        let nap = left.min(NAP);
        std::thread::sleep(nap);
        left -= nap;
        known(set)?;
    }
    Err(NvmlError::TIMEOUT)
}
