//! Memory pools: the operations a table line cannot say. A pool is a handle
//! of the session's tables (`HandleKind::MemPool`): its id is minted here
//! when the driver first hands the pool out (`cuMemPoolCreate` and the
//! calls that name a device's pools, generated), and an id the tables do not
//! hold, forged or destroyed, is refused with the driver's
//! `CUDA_ERROR_INVALID_VALUE` before the driver sees it. Pools belong to
//! their device, not to a context; those a session leaves behind go with the
//! worker process, as everything the session held does.

use std::ffi::c_void;

use vgpu_abi::types::{CUmemPool_attribute, CUmemoryPool};
use vgpu_abi::values::mem_pool_attribute_size;
use vgpu_abi::HandleKind;
use vgpu_proto::{pool_alloc_async, pool_destroy, pool_get_attribute, pool_set_attribute, Request};
use zerocopy::little_endian::U64;

use super::calls::{as_ptr, message, ok, size, Reply};
use super::exec::Lane;
use super::status::INVALID_VALUE;
use super::tables::as_handle;
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
    s.tables().insert_alloc(d, bytes as u64, req.ctx);
    Ok(Reply::new(
        &pool_alloc_async::Reply { dptr: U64::new(d) },
        Vec::new(),
    ))
}
