//! Memory pools. A pool handle is an id the worker minted (`cuMemPoolCreate`
//! and the calls that name a device's pools are generated from the remoting
//! table); the worker translates it, so a forged or destroyed pool gets the
//! driver's error there.
//!
//! Written here: the attribute calls, whose value travels through a `void *`
//! sized by the attribute (`vgpu_abi::values::mem_pool_attribute_size`), the
//! destruction, after which the worker forgets the id, and the stream-ordered
//! allocation from a pool, whose range joins the session's known device
//! memory as `cuMemAllocAsync`'s does. Pools and their allocations pass
//! between processes as VMM allocations do (`docs/adr/0005-ipc.md`): a pool's
//! POSIX file descriptor travels by SCM_RIGHTS; a pointer's export data is
//! the driver's 64 bytes.

use std::ffi::{c_int, c_ulonglong, c_void};
use std::os::fd::{BorrowedFd, IntoRawFd};

use vgpu_abi::types::{
    CUdeviceptr, CUmemAllocationHandleType, CUmemPoolPtrExportData, CUmemPool_attribute,
    CUmemoryPool,
};
use vgpu_abi::values::mem_pool_attribute_size;
use vgpu_proto::{
    pool_alloc_async, pool_destroy, pool_export_fd, pool_export_pointer, pool_export_shareable,
    pool_get_attribute, pool_import_fd, pool_import_pointer, pool_import_shareable,
    pool_set_attribute,
};
use zerocopy::little_endian::{U32, U64};

use crate::edge::{non_null, wire, write_out, CuError, CuResult};
use crate::runtime::runtime;

/// The pool id the wire carries: the handle's value.
pub fn id(p: CUmemoryPool) -> u64 {
    p as usize as u64
}

/// The value's size for `attr`. An attribute outside CUDA 13.0's list has no
/// known size, so its value cannot be carried: the driver refuses such an
/// attribute with `CUDA_ERROR_INVALID_VALUE`, and so does the client.
fn value_size(attr: CUmemPool_attribute) -> CuResult<usize> {
    mem_pool_attribute_size(attr).ok_or(CuError::INVALID_VALUE)
}

/// `cuMemPoolDestroy`.
pub fn destroy(pool: u64) -> CuResult<()> {
    let s = runtime().session()?;
    let r = pool_destroy::Request {
        pool: U64::new(pool),
    };
    s.request(&r, &[])?;
    Ok(())
}

/// `cuMemPoolGetAttribute`: writes 4 bytes (`int`) or 8 (`cuuint64_t`).
///
/// # Safety
/// `value` must be NULL or valid for a write of the attribute's value type.
pub unsafe fn get_attribute(
    pool: u64,
    attr: CUmemPool_attribute,
    value: *mut c_void,
) -> CuResult<()> {
    let s = runtime().session()?;
    let size = value_size(attr)?;
    non_null(value)?;
    let r = pool_get_attribute::Request {
        pool: U64::new(pool),
        attr: U32::new(attr.0),
    };
    let (rep, _) = s.request(&r, &[])?;
    let v = rep.value.get();
    // SAFETY: checked non-NULL; the application's buffer holds the
    // attribute's value type, of `size` bytes.
    unsafe {
        if size == 4 {
            let narrow = u32::try_from(v).map_err(|_| CuError::UNKNOWN)?;
            write_out(value.cast::<u32>(), narrow)
        } else {
            write_out(value.cast::<u64>(), v)
        }
    }
}

/// `cuMemPoolSetAttribute`: reads 4 bytes (`int`) or 8 (`cuuint64_t`).
///
/// # Safety
/// `value` must be NULL or valid for a read of the attribute's value type.
pub unsafe fn set_attribute(
    pool: u64,
    attr: CUmemPool_attribute,
    value: *mut c_void,
) -> CuResult<()> {
    let s = runtime().session()?;
    let size = value_size(attr)?;
    non_null(value)?;
    // SAFETY: checked non-NULL; the application's buffer holds the
    // attribute's value type, of `size` bytes (alignment not assumed).
    let v = unsafe {
        if size == 4 {
            u64::from(value.cast::<u32>().read_unaligned())
        } else {
            value.cast::<u64>().read_unaligned()
        }
    };
    let r = pool_set_attribute::Request {
        pool: U64::new(pool),
        attr: U32::new(attr.0),
        value: U64::new(v),
    };
    s.request(&r, &[])?;
    Ok(())
}

/// `cuMemAllocFromPoolAsync`: stream-ordered allocation from `pool`.
///
/// # Safety
/// `dptr` must be NULL or valid for a write of its pointee.
pub unsafe fn alloc_async(
    dptr: *mut CUdeviceptr,
    size: usize,
    pool: u64,
    sid: u64,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(dptr)?;
    if size == 0 {
        return Err(CuError::INVALID_VALUE);
    }
    let r = pool_alloc_async::Request {
        bytes: U64::new(size as u64),
        pool: U64::new(pool),
        stream: U64::new(sid),
    };
    let (rep, _) = s.request(&r, &[])?;
    let p = rep.dptr.get();
    s.objects().device_ranges.insert(p, size as u64);
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(dptr, p) }
}

/// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`.
const POSIX_FD: u32 = 1;
/// `CU_MEM_HANDLE_TYPE_FABRIC`: a 64-byte handle.
const FABRIC: u32 = 8;

/// `cuMemPoolExportToShareableHandle`: a POSIX file descriptor comes from the
/// worker by SCM_RIGHTS, as for `cuMemExportToShareableHandle`.
///
/// # Safety
/// `out` must be NULL or writable for the type's handle.
pub unsafe fn export_to_shareable_handle(
    out: *mut c_void,
    pool: CUmemoryPool,
    kind: CUmemAllocationHandleType,
    flags: c_ulonglong,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(out)?;
    if kind.0 == POSIX_FD {
        if s.remote {
            return Err(CuError::INVALID_VALUE);
        }
        let r = pool_export_fd::Request {
            pool: U64::new(id(pool)),
            flags: U64::new(flags),
        };
        let (_, fd) = s.request_fd(&r)?;
        // SAFETY: checked non-NULL; the application's `int`.
        return unsafe { write_out(out.cast::<c_int>(), fd.into_raw_fd()) };
    }
    let r = pool_export_shareable::Request {
        pool: U64::new(id(pool)),
        kind: U32::new(kind.0),
        flags: U64::new(flags),
    };
    let (rep, _) = s.request(&r, &[])?;
    let len = if kind.0 == FABRIC { 64 } else { 8 };
    // SAFETY: checked non-NULL; writable for the type's handle by contract.
    unsafe { std::ptr::copy_nonoverlapping(rep.data.as_ptr(), out.cast::<u8>(), len) };
    Ok(())
}

/// `cuMemPoolImportFromShareableHandle`: the application's descriptor goes
/// to the worker by SCM_RIGHTS; it keeps its own.
///
/// # Safety
/// `pool` must be NULL or writable; for a fabric handle `handle` must be NULL
/// or readable for 64 bytes.
pub unsafe fn import_from_shareable_handle(
    pool: *mut CUmemoryPool,
    handle: *mut c_void,
    kind: CUmemAllocationHandleType,
    flags: c_ulonglong,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(pool)?;
    let id = if kind.0 == POSIX_FD {
        let Ok(raw) = c_int::try_from(handle as usize) else {
            return Err(CuError::INVALID_VALUE);
        };
        // SAFETY: fcntl(F_GETFD) only asks whether `raw` is an open descriptor.
        if s.remote || unsafe { libc::fcntl(raw, libc::F_GETFD) } < 0 {
            return Err(CuError::INVALID_VALUE);
        }
        // SAFETY: `raw` is open (checked above) and stays open for the call.
        let fd = unsafe { BorrowedFd::borrow_raw(raw) };
        let r = pool_import_fd::Request {
            flags: U64::new(flags),
        };
        s.request_passing(&r, fd)?.pool.get()
    } else {
        let mut data = [0u8; 64];
        if kind.0 == FABRIC {
            non_null(handle)?;
            // SAFETY: checked non-NULL; readable for 64 bytes by contract.
            unsafe { std::ptr::copy_nonoverlapping(handle.cast::<u8>(), data.as_mut_ptr(), 64) };
        }
        let r = pool_import_shareable::Request {
            kind: U32::new(kind.0),
            flags: U64::new(flags),
            data,
        };
        s.request(&r, &[])?.0.pool.get()
    };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(pool, wire::handle(id)) }
}

/// `cuMemPoolExportPointer`.
///
/// # Safety
/// `out` must be NULL or writable.
pub unsafe fn export_pointer(out: *mut CUmemPoolPtrExportData, dptr: CUdeviceptr) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(out)?;
    let r = pool_export_pointer::Request {
        dptr: U64::new(dptr),
    };
    let (rep, _) = s.request(&r, &[])?;
    let data = CUmemPoolPtrExportData { reserved: rep.data };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(out, data) }
}

/// `cuMemPoolImportPointer`: the allocation joins the session's known device
/// memory until it is freed.
///
/// # Safety
/// `dptr` must be NULL or writable, `data` NULL or readable.
pub unsafe fn import_pointer(
    dptr: *mut CUdeviceptr,
    pool: CUmemoryPool,
    data: *mut CUmemPoolPtrExportData,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(dptr)?;
    non_null(data)?;
    let r = pool_import_pointer::Request {
        pool: U64::new(id(pool)),
        // SAFETY: checked non-NULL; readable by contract.
        data: unsafe { data.read_unaligned() }.reserved,
    };
    let (rep, _) = s.request(&r, &[])?;
    let (p, size) = (rep.dptr.get(), rep.size.get());
    s.objects().device_ranges.insert(p, size);
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(dptr, p) }
}
