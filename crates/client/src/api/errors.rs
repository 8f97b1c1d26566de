//! `cuGetErrorName` and `cuGetErrorString`, answered locally from the
//! driver's table (`vgpu_abi::errors`, shared with the simulated device).

use std::ffi::{c_char, CStr};

use vgpu_abi::errors;
use vgpu_abi::types::CUresult;

use crate::edge::{non_null, write_out, CuError, CuResult};

fn answer(
    e: CUresult,
    s: *mut *const c_char,
    pick: fn(CUresult) -> Option<&'static CStr>,
) -> CuResult<()> {
    non_null(s)?;
    match pick(e) {
        // SAFETY: checked non-NULL; the application's out-pointer.
        Some(text) => unsafe { write_out(s, text.as_ptr()) },
        None => {
            // SAFETY: as above; the driver stores NULL for unknown codes.
            unsafe { write_out(s, std::ptr::null())? };
            Err(CuError::INVALID_VALUE)
        }
    }
}

pub fn get_name(e: CUresult, s: *mut *const c_char) -> CuResult<()> {
    answer(e, s, errors::name)
}

pub fn get_string(e: CUresult, s: *mut *const c_char) -> CuResult<()> {
    answer(e, s, errors::description)
}
