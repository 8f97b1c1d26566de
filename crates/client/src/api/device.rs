//! Device queries, all answered from the snapshot taken at `cuInit`.

use std::ffi::{c_char, c_int, c_uint};

use vgpu_abi::types::{CUdevice_attribute, CUuuid};

use crate::edge::{non_null, write_out, CuError, CuResult};
use crate::runtime::runtime;

const ATTR_COMPUTE_CAPABILITY_MAJOR: usize = 75;
const ATTR_COMPUTE_CAPABILITY_MINOR: usize = 76;

/// # Safety
/// `d` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
pub unsafe fn get(d: *mut c_int, ordinal: c_int) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(d)?;
    s.device(ordinal)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(d, ordinal) }
}

/// # Safety
/// `n` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
pub unsafe fn count(n: *mut c_int) -> CuResult<()> {
    let s = runtime().session()?;
    let count = c_int::try_from(s.devices.len()).map_err(|_| CuError::UNKNOWN)?;
    // SAFETY: the application's out-pointer (NULL is rejected).
    unsafe { write_out(n, count) }
}

/// Copies `text` into a C buffer of `len` bytes, truncating and NUL-terminating.
///
/// # Safety
/// `buf` must be valid for `len` bytes of writes.
unsafe fn copy_c_string(buf: *mut c_char, len: c_int, text: &str) -> CuResult<()> {
    non_null(buf)?;
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l > 0)
        .ok_or(CuError::INVALID_VALUE)?;
    let n = text.len().min(len - 1);
    // SAFETY: `buf` holds `len > n` bytes; the source is a live string.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), buf, n);
        buf.add(n).write(0);
    }
    Ok(())
}

/// # Safety
/// `buf` must be NULL or writable for the length passed with it.
pub unsafe fn name(buf: *mut c_char, len: c_int, dev: c_int) -> CuResult<()> {
    let s = runtime().session()?;
    let d = s.device(dev)?;
    // SAFETY: the application promises `buf` holds `len` bytes.
    unsafe { copy_c_string(buf, len, d.name_str()) }
}

/// # Safety
/// `buf` must be NULL or writable for the length passed with it.
pub unsafe fn pci_bus_id(buf: *mut c_char, len: c_int, dev: c_int) -> CuResult<()> {
    let s = runtime().session()?;
    let d = s.device(dev)?;
    // SAFETY: the application promises `buf` holds `len` bytes.
    unsafe { copy_c_string(buf, len, d.pci_bus_id_str()) }
}

/// # Safety
/// `out` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
pub unsafe fn uuid(out: *mut CUuuid, dev: c_int) -> CuResult<()> {
    let s = runtime().session()?;
    let d = s.device(dev)?;
    let bytes = d.uuid.map(|b| b as c_char);
    // SAFETY: the application's out-pointer (NULL is rejected).
    unsafe { write_out(out, CUuuid { bytes }) }
}

/// # Safety
/// `out` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
pub unsafe fn total_mem(out: *mut usize, dev: c_int) -> CuResult<()> {
    let s = runtime().session()?;
    let total = usize::try_from(s.device(dev)?.total_mem.get()).map_err(|_| CuError::UNKNOWN)?;
    // SAFETY: the application's out-pointer (NULL is rejected).
    unsafe { write_out(out, total) }
}

/// The CUDA 2.0 form with a 32-bit result, saturated.
///
/// # Safety
/// `out` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
pub unsafe fn total_mem_v1(out: *mut c_uint, dev: c_int) -> CuResult<()> {
    let s = runtime().session()?;
    let total = c_uint::try_from(s.device(dev)?.total_mem.get()).unwrap_or(c_uint::MAX);
    // SAFETY: the application's out-pointer (NULL is rejected).
    unsafe { write_out(out, total) }
}

/// # Safety
/// `pi` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
pub unsafe fn attribute(pi: *mut c_int, attr: CUdevice_attribute, dev: c_int) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(pi)?;
    let d = s.device(dev)?;
    let value = d.attr(attr.0 as usize).ok_or(CuError::INVALID_VALUE)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(pi, value) }
}

/// # Safety
/// `major`, `minor` must each be NULL or valid for a write of its pointee, as the CUDA API defines them.
pub unsafe fn compute_capability(major: *mut c_int, minor: *mut c_int, dev: c_int) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(major)?;
    non_null(minor)?;
    let d = s.device(dev)?;
    let ma = d
        .attr(ATTR_COMPUTE_CAPABILITY_MAJOR)
        .ok_or(CuError::INVALID_VALUE)?;
    let mi = d
        .attr(ATTR_COMPUTE_CAPABILITY_MINOR)
        .ok_or(CuError::INVALID_VALUE)?;
    // SAFETY: both checked non-NULL; the application's out-pointers.
    unsafe {
        write_out(major, ma)?;
        write_out(minor, mi)
    }
}
