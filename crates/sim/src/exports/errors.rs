//! Error names and descriptions (`cuGetErrorName`, `cuGetErrorString`).

use std::ffi::c_char;

use crate::cu::CUresult;
use crate::error::{err, Res};
use crate::ffi::{run, Out};
use vgpu_abi::errors;

/// `cuGetErrorName`. Unknown codes give `CUDA_ERROR_INVALID_VALUE` and `*p_str = NULL`.
///
/// # Safety
/// `p_str` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuGetErrorName(error: CUresult, p_str: *mut *const c_char) -> CUresult {
    run("cuGetErrorName", || {
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(p_str, "pStr") }?;
        describe(out, errors::name(error), error)
    })
}

/// `cuGetErrorString`. Unknown codes give `CUDA_ERROR_INVALID_VALUE` and `*p_str = NULL`.
///
/// # Safety
/// `p_str` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuGetErrorString(error: CUresult, p_str: *mut *const c_char) -> CUresult {
    run("cuGetErrorString", || {
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(p_str, "pStr") }?;
        describe(out, errors::description(error), error)
    })
}

fn describe(
    out: Out<*const c_char>,
    text: Option<&'static std::ffi::CStr>,
    code: CUresult,
) -> Res<()> {
    match text {
        Some(s) => {
            out.write(s.as_ptr());
            Ok(())
        }
        None => {
            out.write(std::ptr::null());
            err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("unknown CUresult {}", code.0),
            )
        }
    }
}
