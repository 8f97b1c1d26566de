//! `cuPointerGetAttribute` and `cuPointerGetAttributes`.

use std::ffi::{c_uint, c_void};
use std::ptr;

use crate::cu::{CUdeviceptr, CUpointer_attribute, CUresult};
use crate::error::err;
use crate::ffi::run;
use crate::pointer::{self, Value};
use crate::state;

/// Writes a value's bytes through a caller's data pointer.
///
/// # Safety
/// `data` must be valid for `v.len` bytes of writes.
unsafe fn store(data: *mut c_void, v: &Value) {
    // SAFETY: forwarded from this function's contract.
    unsafe { ptr::copy_nonoverlapping(v.bytes.as_ptr(), data.cast::<u8>(), v.len) }
}

/// `cuPointerGetAttribute`: for device allocations and page-locked host memory; any other
/// address, and an attribute that does not apply to it, gives `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
/// `data` must be NULL or valid for writes of the attribute's value.
#[no_mangle]
pub unsafe extern "C" fn cuPointerGetAttribute(
    data: *mut c_void,
    attribute: CUpointer_attribute,
    ptr: CUdeviceptr,
) -> CUresult {
    run("cuPointerGetAttribute", || {
        let sim = state::sim()?;
        if data.is_null() {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "data is NULL");
        }
        let v = pointer::attribute(&mut sim.lock(), ptr, attribute.0, true)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { store(data, &v) };
        Ok(())
    })
}

/// `cuPointerGetAttributes`: as `cuPointerGetAttribute`, but an unknown address or an
/// attribute that does not apply gets its default (NULL, 0, device ordinal -2) and the
/// call succeeds. NULL data pointers are skipped.
///
/// # Safety
/// `attributes` and `data` must be NULL or hold `num_attributes` entries; each non-NULL
/// data pointer must be valid for writes of its attribute's value.
#[no_mangle]
pub unsafe extern "C" fn cuPointerGetAttributes(
    num_attributes: c_uint,
    attributes: *mut CUpointer_attribute,
    data: *mut *mut c_void,
    ptr: CUdeviceptr,
) -> CUresult {
    run("cuPointerGetAttributes", || {
        let sim = state::sim()?;
        if num_attributes == 0 || attributes.is_null() || data.is_null() {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                "no attributes, or NULL attributes or data",
            );
        }
        let n = num_attributes as usize;
        let mut st = sim.lock();
        let mut values = Vec::with_capacity(n);
        for i in 0..n {
            // SAFETY: `i < n` entries are readable by the contract.
            let a = unsafe { attributes.add(i).read_unaligned() };
            values.push(pointer::attribute(&mut st, ptr, a.0, false)?);
        }
        for (i, v) in values.iter().enumerate() {
            // SAFETY: `i < n` entries are readable by the contract.
            let out = unsafe { data.add(i).read_unaligned() };
            if !out.is_null() {
                // SAFETY: forwarded from this function's contract.
                unsafe { store(out, v) };
            }
        }
        Ok(())
    })
}

/// `cuPointerSetAttribute`: `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS` of a device
/// allocation; it reads back through `cuPointerGetAttribute`.
///
/// # Safety
/// `value` must be NULL or valid for a read of an `unsigned int`.
#[no_mangle]
pub unsafe extern "C" fn cuPointerSetAttribute(
    value: *const c_void,
    attribute: CUpointer_attribute,
    ptr: CUdeviceptr,
) -> CUresult {
    run("cuPointerSetAttribute", || {
        let sim = state::sim()?;
        if value.is_null() {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "value is NULL");
        }
        // SAFETY: forwarded from this function's contract.
        let on = unsafe { value.cast::<c_uint>().read_unaligned() } != 0;
        pointer::set_sync_memops(&mut sim.lock(), ptr, attribute.0, on)
    })
}
