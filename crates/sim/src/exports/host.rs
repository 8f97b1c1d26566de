//! Page-locked host memory: registration, allocation and device pointers (unified
//! addressing: a host range's device pointer is its host pointer).

use std::ffi::{c_uint, c_void};

use crate::cu::{CUdeviceptr, CUresult};
use crate::ffi::{run, Out};
use crate::hostmem;
use crate::state;

/// `cuMemHostRegister_v2`: page-locks `[p, p + bytesize)` for the current context. The
/// range then serves device copies, memsets and kernels at its own address.
/// `CU_MEMHOSTREGISTER_IOMEMORY` gives `CUDA_ERROR_INVALID_VALUE` (there is no I/O
/// memory); overlapping a registered range gives
/// `CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED`, a `cuMemHostAlloc` block
/// `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
/// `p` must stay valid for `bytesize` bytes of reads and writes until it is unregistered
/// or its context is destroyed.
#[no_mangle]
pub unsafe extern "C" fn cuMemHostRegister_v2(
    p: *mut c_void,
    bytesize: usize,
    flags: c_uint,
) -> CUresult {
    run("cuMemHostRegister_v2", || {
        hostmem::register(&mut state::sim()?.lock(), p, bytesize, flags)
    })
}

/// `cuMemHostUnregister`: `p` must be the base of a registered range
/// (`CUDA_ERROR_INVALID_VALUE` elsewhere in page-locked memory,
/// `CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED` outside it).
#[no_mangle]
pub extern "C" fn cuMemHostUnregister(p: *mut c_void) -> CUresult {
    run("cuMemHostUnregister", || {
        hostmem::unregister(&mut state::sim()?.lock(), p)
    })
}

/// `cuMemHostGetDevicePointer_v2`: `p` itself, for page-locked memory; flags must be 0.
///
/// # Safety
/// `pdptr` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemHostGetDevicePointer_v2(
    pdptr: *mut CUdeviceptr,
    p: *mut c_void,
    flags: c_uint,
) -> CUresult {
    run("cuMemHostGetDevicePointer_v2", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(pdptr, "pdptr") }?;
        out.write(hostmem::device_pointer(&sim.lock(), p, flags)?);
        Ok(())
    })
}

/// `cuMemHostAlloc`: zeroed, page-aligned, page-locked host memory.
///
/// # Safety
/// `pp` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemHostAlloc(
    pp: *mut *mut c_void,
    bytesize: usize,
    flags: c_uint,
) -> CUresult {
    run("cuMemHostAlloc", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(pp, "pp") }?;
        out.write(hostmem::alloc(&mut sim.lock(), bytesize, flags)?);
        Ok(())
    })
}

/// `cuMemAllocHost_v2`: `cuMemHostAlloc` with flags 0.
///
/// # Safety
/// `pp` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemAllocHost_v2(pp: *mut *mut c_void, bytesize: usize) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe { cuMemHostAlloc(pp, bytesize, 0) }
}

/// `cuMemFreeHost`: `p` must come from `cuMemHostAlloc`/`cuMemAllocHost`.
#[no_mangle]
pub extern "C" fn cuMemFreeHost(p: *mut c_void) -> CUresult {
    run("cuMemFreeHost", || {
        hostmem::free(&mut state::sim()?.lock(), p)
    })
}

/// `cuMemHostGetFlags`: the `CU_MEMHOSTALLOC_*` flags `p`'s block was allocated with;
/// `DEVICEMAP` (with `PORTABLE` if so registered) for registered memory.
///
/// # Safety
/// `flags` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemHostGetFlags(flags: *mut c_uint, p: *mut c_void) -> CUresult {
    run("cuMemHostGetFlags", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(flags, "pFlags") }?;
        out.write(hostmem::flags(&sim.lock(), p)?);
        Ok(())
    })
}
