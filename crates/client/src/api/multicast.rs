//! Multicast objects: each call a round trip to the worker (`worker::multicast`).
//! A multicast handle is an id the worker minted among the allocation
//! handles, never the driver's value, so `cuMemRelease` releases it.

use vgpu_abi::types::{CUdevice, CUdeviceptr, CUmemGenericAllocationHandle, CUmulticastObjectProp};
use vgpu_proto::{
    multicast_add_device, multicast_bind_addr, multicast_bind_mem, multicast_create,
    multicast_unbind,
};
use zerocopy::little_endian::{I32, U64};

use super::vmm::bytes_of;
use crate::edge::{non_null, write_out, CuResult};
use crate::runtime::runtime;

/// `cuMulticastCreate`.
///
/// # Safety
/// `handle` must be NULL or writable, `prop` NULL or readable, as the CUDA API defines them.
pub unsafe fn create(
    handle: *mut CUmemGenericAllocationHandle,
    prop: *const CUmulticastObjectProp,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(handle)?;
    non_null(prop)?;
    let r = multicast_create::Request {
        // SAFETY: checked non-NULL; the application's property struct.
        prop: unsafe { bytes_of(prop) },
    };
    let (rep, _) = s.request(&r, &[])?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(handle, rep.handle.get()) }
}

/// `cuMulticastAddDevice`.
pub fn add_device(handle: CUmemGenericAllocationHandle, dev: CUdevice) -> CuResult<()> {
    let s = runtime().session()?;
    let r = multicast_add_device::Request {
        handle: U64::new(handle),
        device: I32::new(dev),
    };
    s.request(&r, &[]).map(drop)
}

/// `cuMulticastBindMem`.
pub fn bind_mem(
    handle: CUmemGenericAllocationHandle,
    mc_offset: usize,
    mem: CUmemGenericAllocationHandle,
    mem_offset: usize,
    size: usize,
    flags: u64,
) -> CuResult<()> {
    let s = runtime().session()?;
    let r = multicast_bind_mem::Request {
        handle: U64::new(handle),
        mc_offset: U64::new(mc_offset as u64),
        mem: U64::new(mem),
        mem_offset: U64::new(mem_offset as u64),
        size: U64::new(size as u64),
        flags: U64::new(flags),
    };
    s.request(&r, &[]).map(drop)
}

/// `cuMulticastBindAddr`.
pub fn bind_addr(
    handle: CUmemGenericAllocationHandle,
    mc_offset: usize,
    ptr: CUdeviceptr,
    size: usize,
    flags: u64,
) -> CuResult<()> {
    let s = runtime().session()?;
    let r = multicast_bind_addr::Request {
        handle: U64::new(handle),
        mc_offset: U64::new(mc_offset as u64),
        ptr: U64::new(ptr),
        size: U64::new(size as u64),
        flags: U64::new(flags),
    };
    s.request(&r, &[]).map(drop)
}

/// `cuMulticastUnbind`.
pub fn unbind(
    handle: CUmemGenericAllocationHandle,
    dev: CUdevice,
    mc_offset: usize,
    size: usize,
) -> CuResult<()> {
    let s = runtime().session()?;
    let r = multicast_unbind::Request {
        handle: U64::new(handle),
        device: I32::new(dev),
        mc_offset: U64::new(mc_offset as u64),
        size: U64::new(size as u64),
    };
    s.request(&r, &[]).map(drop)
}
