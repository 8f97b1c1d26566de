//! GPU core dump attributes (`cuCoredump*Attribute*`).
//!
//! Core dumps are written by the driver of the process that owns the GPU
//! state, the session's worker, so the attributes are the worker driver's:
//! for the current context or, with the `Global` forms, for the whole
//! worker. `CU_COREDUMP_FILE` and `CU_COREDUMP_PIPE` name paths on the
//! worker's host, and that is where dumps land.

use std::ffi::c_void;

use vgpu_abi::types::CUcoredumpSettings;
use vgpu_proto::coredump_attribute;
use zerocopy::little_endian::{U32, U64};

use crate::edge::{non_null, write_out, CuError, CuResult};
use crate::runtime::runtime;

/// Largest attribute value carried (file and pipe names are paths).
const MAX_VALUE: usize = 4096;

/// `cuCoredumpGetAttribute` (`global` false) and
/// `cuCoredumpGetAttributeGlobal`.
///
/// # Safety
/// `value` must be NULL or valid for writes of `*size` bytes; `size` NULL
/// or valid for a read and a write.
pub unsafe fn get(
    attrib: CUcoredumpSettings,
    value: *mut c_void,
    size: *mut usize,
    global: bool,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(value)?;
    non_null(size)?;
    // SAFETY: checked non-NULL; the application's size.
    let cap = unsafe { size.read_unaligned() };
    let r = coredump_attribute::Request {
        attrib: U32::new(attrib.0),
        global: u8::from(global),
        set: 0,
        size: U64::new(cap.min(MAX_VALUE) as u64),
    };
    let (rep, bytes) = s.request(&r, &[])?;
    if bytes.len() > cap {
        return Err(CuError::UNKNOWN);
    }
    // SAFETY: `value` holds `cap >= bytes.len()` bytes; `size` is checked.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), value.cast::<u8>(), bytes.len());
        write_out(
            size,
            usize::try_from(rep.size.get()).map_err(|_| CuError::UNKNOWN)?,
        )
    }
}

/// `cuCoredumpSetAttribute` (`global` false) and
/// `cuCoredumpSetAttributeGlobal`.
///
/// # Safety
/// `value` must be NULL or hold `*size` readable bytes; `size` NULL or
/// valid for a read and a write.
pub unsafe fn set(
    attrib: CUcoredumpSettings,
    value: *mut c_void,
    size: *mut usize,
    global: bool,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(value)?;
    non_null(size)?;
    // SAFETY: checked non-NULL; the application's size.
    let len = unsafe { size.read_unaligned() };
    if len > MAX_VALUE {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: `value` holds `len` bytes by the contract.
    let bytes = unsafe { std::slice::from_raw_parts(value.cast::<u8>(), len) };
    let r = coredump_attribute::Request {
        attrib: U32::new(attrib.0),
        global: u8::from(global),
        set: 1,
        size: U64::new(len as u64),
    };
    let (rep, _) = s.request(&r, bytes)?;
    // SAFETY: checked non-NULL.
    unsafe {
        write_out(
            size,
            usize::try_from(rep.size.get()).map_err(|_| CuError::UNKNOWN)?,
        )
    }
}
