//! Multicast objects: the simulated devices report
//! `CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED` 0, so, as on a device without
//! multicast support, no multicast object is ever made and no handle names
//! one.

use std::ffi::c_ulonglong;

use crate::context;
use crate::cu::{
    CUdevice, CUdeviceptr, CUmemGenericAllocationHandle, CUmulticastGranularity_flags,
    CUmulticastObjectProp, CUresult,
};
use crate::error::{err, Res};
use crate::ffi::{run, Out};
use crate::state;

/// Why nothing multicast is made.
const UNSUPPORTED: &str = "the simulated devices do not support multicast objects";

/// Refuses a multicast handle: none exists on the simulated devices.
fn no_object(handle: CUmemGenericAllocationHandle) -> CUresult {
    run("cuMulticast", || -> Res<()> {
        let st = state::sim()?.lock();
        context::current(&st)?;
        err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{handle:#x} is not a multicast object"),
        )
    })
}

/// Checks the property struct of a create or granularity query.
///
/// # Safety
/// `prop` must be NULL or readable.
unsafe fn check_prop(prop: *const CUmulticastObjectProp) -> Res<CUmulticastObjectProp> {
    if prop.is_null() {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "prop is NULL");
    }
    // SAFETY: non-NULL and readable by this function's contract.
    let p = unsafe { prop.read_unaligned() };
    if p.numDevices == 0 || p.size == 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "numDevices and size must not be 0",
        );
    }
    Ok(p)
}

/// `cuMulticastGetGranularity`: refused, as no multicast object can be made.
///
/// # Safety
/// `prop` must be NULL or readable.
pub(crate) unsafe fn multicast_get_granularity(
    _out: Out<usize>,
    prop: *const CUmulticastObjectProp,
    _option: CUmulticastGranularity_flags,
) -> Res<()> {
    let st = state::sim()?.lock();
    context::current(&st)?;
    // SAFETY: forwarded from this function's contract.
    unsafe { check_prop(prop) }?;
    err(CUresult::CUDA_ERROR_NOT_SUPPORTED, UNSUPPORTED)
}

/// `cuMulticastCreate`: `CUDA_ERROR_NOT_SUPPORTED` once the arguments are valid.
///
/// # Safety
/// `handle` must be NULL or writable, `prop` NULL or readable.
#[no_mangle]
pub unsafe extern "C" fn cuMulticastCreate(
    handle: *mut CUmemGenericAllocationHandle,
    prop: *const CUmulticastObjectProp,
) -> CUresult {
    run("cuMulticastCreate", || {
        // SAFETY: forwarded from this function's contract.
        let _out = unsafe { Out::new(handle, "mcHandle") }?;
        let st = state::sim()?.lock();
        context::current(&st)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { check_prop(prop) }?;
        err(CUresult::CUDA_ERROR_NOT_SUPPORTED, UNSUPPORTED)
    })
}

/// `cuMulticastAddDevice`: no handle names a multicast object.
#[no_mangle]
pub extern "C" fn cuMulticastAddDevice(
    handle: CUmemGenericAllocationHandle,
    _dev: CUdevice,
) -> CUresult {
    no_object(handle)
}

/// `cuMulticastBindMem`: no handle names a multicast object.
#[no_mangle]
pub extern "C" fn cuMulticastBindMem(
    handle: CUmemGenericAllocationHandle,
    _mc_offset: usize,
    _mem: CUmemGenericAllocationHandle,
    _mem_offset: usize,
    _size: usize,
    _flags: c_ulonglong,
) -> CUresult {
    no_object(handle)
}

/// `cuMulticastBindAddr`: no handle names a multicast object.
#[no_mangle]
pub extern "C" fn cuMulticastBindAddr(
    handle: CUmemGenericAllocationHandle,
    _mc_offset: usize,
    _ptr: CUdeviceptr,
    _size: usize,
    _flags: c_ulonglong,
) -> CUresult {
    no_object(handle)
}

/// `cuMulticastUnbind`: no handle names a multicast object.
#[no_mangle]
pub extern "C" fn cuMulticastUnbind(
    handle: CUmemGenericAllocationHandle,
    _dev: CUdevice,
    _mc_offset: usize,
    _size: usize,
) -> CUresult {
    no_object(handle)
}
