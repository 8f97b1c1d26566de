//! `cuInit` and `cuDriverGetVersion`.

use std::ffi::{c_int, c_uint};

use crate::edge::{write_out, CuError, CuResult};
use crate::runtime::runtime;

/// The CUDA version whose ABI this library was generated from; reported by
/// `cuDriverGetVersion` before a session exists.
const ABI_CUDA_VERSION: c_int = 13000;

/// # Safety
/// The arguments must be what the CUDA API requires of its caller.
pub unsafe fn init(flags: c_uint) -> CuResult<()> {
    if flags != 0 {
        return Err(CuError::INVALID_VALUE);
    }
    runtime().init()
}

/// # Safety
/// `v` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
pub unsafe fn driver_version(v: *mut c_int) -> CuResult<()> {
    let version = runtime()
        .session()
        .map_or(ABI_CUDA_VERSION, |s| s.driver_version);
    // SAFETY: `v` is the application's out-pointer (NULL is rejected).
    unsafe { write_out(v, version) }
}
