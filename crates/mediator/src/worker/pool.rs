//! Memory pools: the operations a table line cannot say. A pool is a handle
//! of the session's tables (`HandleKind::MemPool`): its id is minted here
//! when the driver first hands the pool out (`cuMemPoolCreate` and the
//! calls that name a device's pools, generated), and an id the tables do not
//! hold, forged or destroyed, is refused with the driver's
//! `CUDA_ERROR_INVALID_VALUE` before the driver sees it. Pools belong to
//! their device, not to a context; those a session leaves behind go with the
//! worker process, as everything the session held does.
//!
//! Pools and their allocations pass between sessions as VMM allocations do
//! (`vmm::share`): a pool's POSIX file descriptor travels by SCM_RIGHTS and
//! is recorded in the host's registry; a pointer's export data is the
//! driver's 64 bytes, usable only with the imported pool.

use std::ffi::c_void;
use std::os::fd::AsRawFd;

use vgpu_abi::types::{
    CUmemAllocationHandleType, CUmemPoolPtrExportData, CUmemPool_attribute, CUmemoryPool,
};
use vgpu_abi::values::mem_pool_attribute_size;
use vgpu_abi::HandleKind;
use vgpu_proto::{
    pool_alloc_async, pool_destroy, pool_export_fd, pool_export_pointer, pool_export_shareable,
    pool_get_attribute, pool_import_fd, pool_import_pointer, pool_import_shareable,
    pool_set_attribute, Request,
};
use zerocopy::little_endian::U64;

use super::calls::{as_ptr, message, ok, size, Reply};
use super::exec::Lane;
use super::status::INVALID_VALUE;
use super::tables::as_handle;
use super::vmm::share;
use super::Session;
use crate::driver::{entry, DevPtr, Status};

/// The driver's handle behind pool id `id`.
fn pool(s: &Session, id: u64) -> Result<CUmemoryPool, Status> {
    Ok(as_ptr(s.tables().handle(HandleKind::MemPool, id)?))
}

/// An attribute and the size of its value; an attribute outside CUDA 13.0's
/// list is refused, as the driver refuses it.
fn attribute(attr: u32) -> Result<(CUmemPool_attribute, usize), Status> {
    let a = CUmemPool_attribute(attr);
    let n = mem_pool_attribute_size(a).ok_or(INVALID_VALUE)?;
    Ok((a, n))
}

/// `cuMemPoolDestroy`; the id is forgotten once the driver has destroyed
/// the pool. Its outstanding allocations stay live, as on the driver, and
/// stay in the session's ranges until freed.
pub fn pool_destroy(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &pool_destroy::Request = message(req)?;
    let id = r.pool.get();
    let p = pool(s, id)?;
    // SAFETY: `p` is a live pool of this session, or NULL, which the driver judges.
    ok(unsafe { entry(s.driver.cuMemPoolDestroy)?(p) })?;
    s.tables().forget_other(HandleKind::MemPool, id);
    Ok(Reply::default())
}

/// `cuMemPoolGetAttribute` into a buffer of the attribute's size.
pub fn pool_get_attribute(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &pool_get_attribute::Request = message(req)?;
    let (attr, n) = attribute(r.attr.get())?;
    let p = pool(s, r.pool.get())?;
    let value = if n == 4 {
        let mut v: i32 = 0;
        // SAFETY: a live pool (or NULL); `v` is an `int`, the attribute's type.
        ok(unsafe {
            entry(s.driver.cuMemPoolGetAttribute)?(p, attr, (&raw mut v).cast::<c_void>())
        })?;
        u64::from(v.cast_unsigned())
    } else {
        let mut v: u64 = 0;
        // SAFETY: a live pool (or NULL); `v` is a `cuuint64_t`, the attribute's type.
        ok(unsafe {
            entry(s.driver.cuMemPoolGetAttribute)?(p, attr, (&raw mut v).cast::<c_void>())
        })?;
        v
    };
    Ok(Reply::new(
        &pool_get_attribute::Reply {
            value: U64::new(value),
        },
        Vec::new(),
    ))
}

/// `cuMemPoolSetAttribute` from a buffer of the attribute's size.
pub fn pool_set_attribute(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &pool_set_attribute::Request = message(req)?;
    let (attr, n) = attribute(r.attr.get())?;
    let p = pool(s, r.pool.get())?;
    let wide = r.value.get();
    if n == 4 {
        // The client read an `int`: its 32 bits, zero-extended.
        let mut v = u32::try_from(wide)
            .map_err(|_| INVALID_VALUE)?
            .cast_signed();
        // SAFETY: a live pool (or NULL); `v` is an `int`, the attribute's type.
        ok(unsafe {
            entry(s.driver.cuMemPoolSetAttribute)?(p, attr, (&raw mut v).cast::<c_void>())
        })?;
    } else {
        let mut v = wide;
        // SAFETY: a live pool (or NULL); `v` is a `cuuint64_t`, the attribute's type.
        ok(unsafe {
            entry(s.driver.cuMemPoolSetAttribute)?(p, attr, (&raw mut v).cast::<c_void>())
        })?;
    }
    Ok(Reply::default())
}

/// `cuMemAllocFromPoolAsync`; the range joins the session's live
/// allocations, so copies and memsets reach it and `cuMemFreeAsync` frees it.
pub fn pool_alloc_async(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &pool_alloc_async::Request = message(req)?;
    let bytes = size(r.bytes.get())?;
    let p = pool(s, r.pool.get())?;
    let st = as_handle(s.tables().stream(r.stream.get())?);
    let mut d: DevPtr = 0;
    // SAFETY: live out-pointer; a live pool of this session (or NULL); a
    // live stream of this session or a sentinel.
    ok(unsafe { entry(s.driver.cuMemAllocFromPoolAsync)?(&mut d, bytes, p, st.cast()) })?;
    let device = super::held::device_of(s, d);
    s.tables().insert_alloc(d, bytes as u64, req.ctx, device);
    Ok(Reply::new(
        &pool_alloc_async::Reply { dptr: U64::new(d) },
        Vec::new(),
    ))
}

/// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`.
const POSIX_FD: u32 = 1;

/// A pool the driver handed out: its id in this session.
fn pool_id(s: &Session, real: CUmemoryPool, ctx: u64) -> u64 {
    s.tables().id_of(HandleKind::MemPool, real as usize, ctx)
}

/// `cuMemPoolExportToShareableHandle` as a POSIX file descriptor, which
/// follows the reply; recorded in the host's registry as a VMM export is.
pub fn pool_export_fd(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &pool_export_fd::Request = message(req)?;
    let p = pool(s, r.pool.get())?;
    let mut raw: i32 = -1;
    // SAFETY: the out-pointer is a live `int`, the type's handle; a live pool.
    ok(unsafe {
        entry(s.driver.cuMemPoolExportToShareableHandle)?(
            (&raw mut raw).cast::<c_void>(),
            p,
            CUmemAllocationHandleType(POSIX_FD),
            r.flags.get(),
        )
    })?;
    let fd = share::owned(raw)?;
    share::record(s, &fd);
    Ok(Reply {
        fd: Some(fd),
        ..Reply::default()
    })
}

/// `cuMemPoolExportToShareableHandle` of another type: the driver's answer.
pub fn pool_export_shareable(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &pool_export_shareable::Request = message(req)?;
    if r.kind.get() == POSIX_FD {
        return Err(INVALID_VALUE);
    }
    let p = pool(s, r.pool.get())?;
    let mut data = [0u8; 64];
    // SAFETY: 64 bytes, room for any type's handle; a live pool.
    ok(unsafe {
        entry(s.driver.cuMemPoolExportToShareableHandle)?(
            data.as_mut_ptr().cast::<c_void>(),
            p,
            CUmemAllocationHandleType(r.kind.get()),
            r.flags.get(),
        )
    })?;
    Ok(Reply::new(
        &pool_export_shareable::Reply { data },
        Vec::new(),
    ))
}

/// `cuMemPoolImportFromShareableHandle` of the descriptor that followed the
/// request; the worker closes it after the driver's call.
pub fn pool_import_fd(lane: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &pool_import_fd::Request = message(req)?;
    let fd = lane.fd_in.take().ok_or(INVALID_VALUE)?;
    share::admit(s, &fd)?;
    let mut p: CUmemoryPool = std::ptr::null_mut();
    let os_handle = fd.as_raw_fd() as usize as *mut c_void;
    // SAFETY: live out-pointer; the descriptor is open for the call.
    ok(unsafe {
        entry(s.driver.cuMemPoolImportFromShareableHandle)?(
            &mut p,
            os_handle,
            CUmemAllocationHandleType(POSIX_FD),
            r.flags.get(),
        )
    })?;
    let pool = U64::new(pool_id(s, p, req.ctx));
    Ok(Reply::new(&pool_import_fd::Reply { pool }, Vec::new()))
}

/// `cuMemPoolImportFromShareableHandle` of another type.
pub fn pool_import_shareable(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &pool_import_shareable::Request = message(req)?;
    if r.kind.get() == POSIX_FD {
        return Err(INVALID_VALUE);
    }
    let mut data = r.data;
    let mut p: CUmemoryPool = std::ptr::null_mut();
    // SAFETY: live out-pointer; the handle's bytes are a live local.
    ok(unsafe {
        entry(s.driver.cuMemPoolImportFromShareableHandle)?(
            &mut p,
            data.as_mut_ptr().cast::<c_void>(),
            CUmemAllocationHandleType(r.kind.get()),
            r.flags.get(),
        )
    })?;
    let pool = U64::new(pool_id(s, p, req.ctx));
    Ok(Reply::new(
        &pool_import_shareable::Reply { pool },
        Vec::new(),
    ))
}

/// `cuMemPoolExportPointer` of an allocation of this session.
pub fn pool_export_pointer(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &pool_export_pointer::Request = message(req)?;
    let dptr = r.dptr.get();
    s.tables().check(dptr, 1)?;
    let mut out = CUmemPoolPtrExportData { reserved: [0; 64] };
    // SAFETY: live out-pointer; `dptr` is in a live range of this session.
    ok(unsafe { entry(s.driver.cuMemPoolExportPointer)?(&mut out, dptr) })?;
    Ok(Reply::new(
        &pool_export_pointer::Reply { data: out.reserved },
        Vec::new(),
    ))
}

/// `cuMemPoolImportPointer` from a pool of this session; the allocation
/// joins the session's live ranges, freed by `cuMemFree(Async)` as the
/// driver frees it.
pub fn pool_import_pointer(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &pool_import_pointer::Request = message(req)?;
    let p = pool(s, r.pool.get())?;
    let mut data = CUmemPoolPtrExportData { reserved: r.data };
    let mut d: DevPtr = 0;
    // SAFETY: live out-pointer and export data; a live pool of this session.
    ok(unsafe { entry(s.driver.cuMemPoolImportPointer)?(&mut d, p, &mut data) })?;
    let (mut base, mut bytes) = (0, 0);
    // SAFETY: live out-pointers; `d` was just imported.
    let st = unsafe { entry(s.driver.cuMemGetAddressRange_v2)?(&mut base, &mut bytes, d) };
    if ok(st).is_err() || base != d {
        // SAFETY: `d` was imported above and is freed once.
        unsafe { entry(s.driver.cuMemFree_v2)?(d) };
        return Err(INVALID_VALUE);
    }
    let device = super::held::device_of(s, d);
    s.tables().insert_alloc(d, bytes as u64, req.ctx, device);
    let reply = pool_import_pointer::Reply {
        dptr: U64::new(d),
        size: U64::new(bytes as u64),
    };
    Ok(Reply::new(&reply, Vec::new()))
}
