//! Virtual memory management: reservations, physical allocations, mappings
//! and access, each a round trip to the worker, which keeps the session's
//! view of them (`worker::vmm`). The client follows the mappings and their
//! access as the worker does, so an asynchronous copy into mapped memory is
//! posted when the worker would accept it.
//!
//! Allocation handles are ids the worker minted, never the driver's values.
//! A reservation is device memory here from the start: `cuMemcpy` never
//! takes an address in one for a host pointer, mapped or not.

use std::ffi::{c_int, c_uint, c_ulonglong, c_void};
use std::os::fd::{BorrowedFd, IntoRawFd};

use vgpu_abi::types::{
    CUarrayMapInfo, CUdeviceptr, CUmemAccessDesc, CUmemAllocationHandleType, CUmemAllocationProp,
    CUmemGenericAllocationHandle, CUmemRangeHandleType, CUstream,
};
use vgpu_proto::{
    mem_address_free, mem_address_reserve, mem_create, mem_export_fd, mem_export_shareable,
    mem_get_allocation_properties, mem_import_fd, mem_import_shareable, mem_map,
    mem_map_array_async, mem_range_handle_fd, mem_release, mem_retain_allocation_handle,
    mem_set_access, mem_unmap,
};
use zerocopy::little_endian::{U32, U64};

use crate::edge::{non_null, write_out, CuError, CuResult};
use crate::runtime::runtime;

/// The bytes of a C struct the application passes by pointer.
///
/// # Safety
/// `p` must be non-NULL and valid for a read of a `T`.
pub(super) unsafe fn bytes_of<T, const N: usize>(p: *const T) -> [u8; N] {
    const { assert!(N == size_of::<T>()) };
    let mut out = [0u8; N];
    // SAFETY: `p` is readable for `N` bytes by this function's contract.
    unsafe { std::ptr::copy_nonoverlapping(p.cast::<u8>(), out.as_mut_ptr(), N) };
    out
}

/// # Safety
/// `ptr` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
pub unsafe fn address_reserve(
    ptr: *mut CUdeviceptr,
    size: usize,
    alignment: usize,
    addr: CUdeviceptr,
    flags: c_ulonglong,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(ptr)?;
    let r = mem_address_reserve::Request {
        size: U64::new(size as u64),
        alignment: U64::new(alignment as u64),
        addr: U64::new(addr),
        flags: U64::new(flags),
    };
    let (rep, _) = s.request(&r, &[])?;
    let p = rep.ptr.get();
    s.objects().reserved.insert(p, size as u64);
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(ptr, p) }
}

pub fn address_free(ptr: CUdeviceptr, size: usize) -> CuResult<()> {
    let s = runtime().session()?;
    let r = mem_address_free::Request {
        ptr: U64::new(ptr),
        size: U64::new(size as u64),
    };
    s.request(&r, &[])?;
    let mut o = s.objects();
    o.reserved.remove(&ptr);
    o.mapped.unmap(ptr, size as u64);
    Ok(())
}

/// # Safety
/// `handle` must be NULL or writable, `prop` NULL or readable, as the CUDA API defines them.
pub unsafe fn create(
    handle: *mut CUmemGenericAllocationHandle,
    size: usize,
    prop: *const CUmemAllocationProp,
    flags: c_ulonglong,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(handle)?;
    non_null(prop)?;
    let r = mem_create::Request {
        size: U64::new(size as u64),
        flags: U64::new(flags),
        // SAFETY: checked non-NULL; the application's property struct.
        prop: unsafe { bytes_of(prop) },
    };
    let (rep, _) = s.request(&r, &[])?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(handle, rep.handle.get()) }
}

pub fn release(handle: CUmemGenericAllocationHandle) -> CuResult<()> {
    let s = runtime().session()?;
    let r = mem_release::Request {
        handle: U64::new(handle),
    };
    s.request(&r, &[]).map(drop)
}

pub fn map(
    ptr: CUdeviceptr,
    size: usize,
    offset: usize,
    handle: CUmemGenericAllocationHandle,
    flags: c_ulonglong,
) -> CuResult<()> {
    let s = runtime().session()?;
    let r = mem_map::Request {
        ptr: U64::new(ptr),
        size: U64::new(size as u64),
        offset: U64::new(offset as u64),
        handle: U64::new(handle),
        flags: U64::new(flags),
    };
    s.request(&r, &[])?;
    s.objects().mapped.map(ptr, size as u64);
    Ok(())
}

pub fn unmap(ptr: CUdeviceptr, size: usize) -> CuResult<()> {
    let s = runtime().session()?;
    let r = mem_unmap::Request {
        ptr: U64::new(ptr),
        size: U64::new(size as u64),
    };
    s.request(&r, &[])?;
    s.objects().mapped.unmap(ptr, size as u64);
    Ok(())
}

/// # Safety
/// `desc` must be NULL or readable for `count` descriptors, as the CUDA API defines it.
pub unsafe fn set_access(
    ptr: CUdeviceptr,
    size: usize,
    desc: *const CUmemAccessDesc,
    count: usize,
) -> CuResult<()> {
    let s = runtime().session()?;
    let n = super::call_len(count)?;
    let blob: Vec<u8> = if count == 0 {
        Vec::new()
    } else {
        non_null(desc)?;
        let len = count
            .checked_mul(size_of::<CUmemAccessDesc>())
            .ok_or(CuError::INVALID_VALUE)?;
        // SAFETY: checked non-NULL; the application promises `count` descriptors.
        unsafe { std::slice::from_raw_parts(desc.cast::<u8>(), len) }.to_vec()
    };
    let r = mem_set_access::Request {
        ptr: U64::new(ptr),
        size: U64::new(size as u64),
        count: U32::new(n),
    };
    s.request(&r, &blob)?;
    // Access is set when some descriptor's flags are not PROT_NONE (0).
    let flags = std::mem::offset_of!(CUmemAccessDesc, flags);
    let access = blob
        .chunks_exact(size_of::<CUmemAccessDesc>())
        .any(|d| d[flags..flags + 4] != [0; 4]);
    s.objects().mapped.set_access(ptr, size as u64, access);
    Ok(())
}

/// # Safety
/// `handle` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
pub unsafe fn retain_allocation_handle(
    handle: *mut CUmemGenericAllocationHandle,
    addr: *mut c_void,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(handle)?;
    let r = mem_retain_allocation_handle::Request {
        addr: U64::new(addr as usize as u64),
    };
    let (rep, _) = s.request(&r, &[])?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(handle, rep.handle.get()) }
}

/// # Safety
/// `prop` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
pub unsafe fn allocation_properties(
    prop: *mut CUmemAllocationProp,
    handle: CUmemGenericAllocationHandle,
) -> CuResult<()> {
    const { assert!(size_of::<CUmemAllocationProp>() == 32) };
    let s = runtime().session()?;
    non_null(prop)?;
    let r = mem_get_allocation_properties::Request {
        handle: U64::new(handle),
    };
    let (rep, _) = s.request(&r, &[])?;
    // SAFETY: checked non-NULL; the application's struct of exactly these
    // 32 bytes (the wire field's size is the struct's).
    unsafe {
        std::ptr::copy_nonoverlapping(rep.prop.as_ptr(), prop.cast::<u8>(), rep.prop.len());
    }
    Ok(())
}

/// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`.
const POSIX_FD: u32 = 1;
/// `CU_MEM_HANDLE_TYPE_FABRIC`: a 64-byte handle.
const FABRIC: u32 = 8;

/// `cuMemExportToShareableHandle`. A POSIX file descriptor is the
/// driver's, passed from the worker to this process (SCM_RIGHTS), so the
/// application can pass it on to another process the same way.
///
/// # Safety
/// `shareable` must be NULL or writable for the handle type's handle (an
/// `int` for a file descriptor, 64 bytes for a fabric handle).
pub unsafe fn export_to_shareable_handle(
    shareable: *mut c_void,
    handle: CUmemGenericAllocationHandle,
    kind: CUmemAllocationHandleType,
    flags: c_ulonglong,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(shareable)?;
    if kind.0 == POSIX_FD {
        if s.remote {
            crate::log::once(
                "cuMemExportToShareableHandle",
                format_args!("cuMemExportToShareableHandle: the mediator is remote (TCP): a descriptor cannot come to this host"),
            );
            return Err(CuError::INVALID_VALUE);
        }
        let r = mem_export_fd::Request {
            handle: U64::new(handle),
            flags: U64::new(flags),
        };
        let (_, fd) = s.request_fd(&r)?;
        // SAFETY: checked non-NULL; the application's `int`.
        return unsafe { write_out(shareable.cast::<c_int>(), fd.into_raw_fd()) };
    }
    let r = mem_export_shareable::Request {
        handle: U64::new(handle),
        kind: U32::new(kind.0),
        flags: U64::new(flags),
    };
    let (rep, _) = s.request(&r, &[])?;
    let len = if kind.0 == FABRIC { 64 } else { 8 };
    // SAFETY: checked non-NULL; writable for the type's handle by contract.
    unsafe { std::ptr::copy_nonoverlapping(rep.data.as_ptr(), shareable.cast::<u8>(), len) };
    Ok(())
}

/// `cuMemImportFromShareableHandle`. A POSIX file descriptor of this
/// process goes to the worker (SCM_RIGHTS); the application keeps its own.
///
/// # Safety
/// `handle` must be NULL or writable; for a fabric handle `os_handle` must
/// be NULL or readable for 64 bytes.
pub unsafe fn import_from_shareable_handle(
    handle: *mut CUmemGenericAllocationHandle,
    os_handle: *mut c_void,
    kind: CUmemAllocationHandleType,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(handle)?;
    let id = if kind.0 == POSIX_FD {
        let Ok(raw) = c_int::try_from(os_handle as usize) else {
            return Err(CuError::UNKNOWN);
        };
        // SAFETY: fcntl(F_GETFD) only asks whether `raw` is an open descriptor.
        if unsafe { libc::fcntl(raw, libc::F_GETFD) } < 0 {
            // Driver 580 answers CUDA_ERROR_UNKNOWN for a descriptor it cannot use.
            return Err(CuError::UNKNOWN);
        }
        if s.remote {
            crate::log::once(
                "cuMemImportFromShareableHandle",
                format_args!("cuMemImportFromShareableHandle: the mediator is remote (TCP): a descriptor of this host cannot reach it"),
            );
            return Err(CuError::UNKNOWN);
        }
        // SAFETY: `raw` is open (checked above) and stays open for the call:
        // the application owns it and is inside this call.
        let fd = unsafe { BorrowedFd::borrow_raw(raw) };
        s.request_passing(&mem_import_fd::Request {}, fd)?
            .handle
            .get()
    } else {
        let mut data = [0u8; 64];
        if kind.0 == FABRIC {
            non_null(os_handle)?;
            // SAFETY: checked non-NULL; readable for 64 bytes by contract.
            unsafe { std::ptr::copy_nonoverlapping(os_handle.cast::<u8>(), data.as_mut_ptr(), 64) };
        }
        let r = mem_import_shareable::Request {
            kind: U32::new(kind.0),
            data,
        };
        s.request(&r, &[])?.0.handle.get()
    };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(handle, id) }
}

/// `cuMemGetHandleForAddressRange`: the driver's dma-buf descriptor,
/// passed from the worker to this process.
///
/// # Safety
/// `handle` must be NULL or writable for an `int`.
pub unsafe fn handle_for_address_range(
    handle: *mut c_void,
    dptr: CUdeviceptr,
    size: usize,
    kind: CUmemRangeHandleType,
    flags: c_ulonglong,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(handle)?;
    if s.remote {
        crate::log::once(
            "cuMemGetHandleForAddressRange",
            format_args!("cuMemGetHandleForAddressRange: the mediator is remote (TCP): a descriptor cannot come to this host"),
        );
        return Err(CuError::INVALID_VALUE);
    }
    let r = mem_range_handle_fd::Request {
        dptr: U64::new(dptr),
        size: U64::new(size as u64),
        kind: U32::new(kind.0),
        flags: U64::new(flags),
    };
    let (_, fd) = s.request_fd(&r)?;
    // SAFETY: checked non-NULL; the application's `int`.
    unsafe { write_out(handle.cast::<c_int>(), fd.into_raw_fd()) }
}

/// The most mappings one `cuMemMapArrayAsync` may carry.
const MAX_ARRAY_MAPS: c_uint = 1024;

/// `cuMemMapArrayAsync` (`per_thread`: the `_ptsz` form): the map infos go
/// to the worker as the application wrote them; their arrays and allocation
/// handles are already this session's ids.
///
/// # Safety
/// `infos` must be NULL or readable for `count` map infos, as the CUDA API defines it.
pub unsafe fn map_array_async(
    infos: *mut CUarrayMapInfo,
    count: c_uint,
    stream: CUstream,
    per_thread: bool,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(infos)?;
    if count == 0 || count > MAX_ARRAY_MAPS {
        return Err(CuError::INVALID_VALUE);
    }
    let len = count as usize * size_of::<CUarrayMapInfo>();
    // SAFETY: `infos` is non-NULL and readable for `count` map infos.
    let blob = unsafe { std::slice::from_raw_parts(infos.cast::<u8>(), len) };
    let sid = if per_thread {
        super::stream::id_ptsz(stream)
    } else {
        super::stream::id(stream)
    };
    let r = mem_map_array_async::Request {
        count: U32::new(count),
        stream: U64::new(sid),
        per_thread: u8::from(per_thread),
    };
    s.request(&r, blob).map(drop)
}
