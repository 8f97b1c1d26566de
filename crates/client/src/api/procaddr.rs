//! `cuGetProcAddress` and `cuGetProcAddress_v2`, answered from the generated
//! function table with the real driver's rules (see `vgpu_abi::procaddr`).

use std::ffi::{c_char, c_int, c_void, CStr};

use vgpu_abi::types::{cuuint64_t, CUdriverProcAddressQueryResult};
use vgpu_abi::{resolve, ProcResolution};

use crate::edge::{non_null, write_out, CuError, CuResult};
use crate::runtime::runtime;

/// Flag bits the driver understands (default, legacy stream, per-thread stream).
const KNOWN_FLAGS: u64 = 0b11;

/// Version the driver reports: the worker's once connected, else the ABI's.
fn driver_version() -> c_int {
    runtime().session().map_or(13000, |s| s.driver_version)
}

/// # Safety
/// `symbol` must be NULL or NUL-terminated; `pfn` and `status` NULL or writable.
pub unsafe fn get(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: cuuint64_t,
    status: Option<*mut CUdriverProcAddressQueryResult>,
) -> CuResult<()> {
    non_null(symbol)?;
    non_null(pfn)?;
    if flags & !KNOWN_FLAGS != 0 || version > driver_version() {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: checked non-NULL; the application passes a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(symbol) }.to_str().unwrap_or("");
    let (found, code) = match resolve(name, version, flags) {
        ProcResolution::Found(desc) => (crate::exports::address(desc.name), 0),
        ProcResolution::SymbolNotFound => (None, 1),
        ProcResolution::VersionNotSufficient => (None, 2),
    };
    if code != 0 {
        crate::log::line(format_args!(
            "cuGetProcAddress({name}, {version}, {flags}): status {code}"
        ));
    }
    let found = found.map_or(std::ptr::null_mut(), |f| f as *mut c_void);
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(pfn, found)? };
    match status {
        Some(st) if !st.is_null() => {
            // SAFETY: checked non-NULL; the application's out-pointer.
            unsafe { write_out(st, CUdriverProcAddressQueryResult(code)) }
        }
        // The first version has no status: a miss is an error.
        None if code != 0 => Err(CuError::NOT_FOUND),
        _ => Ok(()),
    }
}
