//! Contexts the client creates, retains or looks up, under its own ids.
//! The queries on contexts are table calls (`generated/mod.rs`).

use std::ptr;
use std::sync::atomic::Ordering;

use vgpu_proto::{ctx_create, ctx_destroy, primary_ctx_get, primary_ctx_retain, Request};

use vgpu_abi::types::CUexecAffinityParam;

use super::calls::{elements, message, ok, Reply};
use super::exec::Lane;
use super::status::INVALID_VALUE;
use super::tables::{as_handle, Tables};
use super::Session;
use crate::driver::{entry, Status};

/// Registers real context `real` under the client's `id`.
fn register(s: &Session, id: u64, real: usize) {
    s.tables().ctxs.insert(id, real);
    s.contexts_changed.fetch_add(1, Ordering::SeqCst);
}

/// Most execution-affinity parameters one creation may carry.
const MAX_AFFINITY: usize = 16;

/// `cuCtxCreate_v2` under the client's id, or `cuCtxCreate_v3` with the
/// execution-affinity parameters of the blob; the context becomes current
/// on the lane, as on the calling thread.
pub fn ctx_create(lane: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &ctx_create::Request = message(req)?;
    let id = r.ctx.get();
    Tables::fresh(&s.tables().ctxs, id)?;
    let (flags, dev) = (r.flags.get(), r.device.get());
    let size = std::mem::size_of::<CUexecAffinityParam>();
    let n = req.blob.len() / size;
    if !req.blob.len().is_multiple_of(size) || n > MAX_AFFINITY {
        return Err(INVALID_VALUE);
    }
    // SAFETY: `CUexecAffinityParam` is a C struct of integers.
    let mut params: Vec<CUexecAffinityParam> = unsafe { elements(&req.blob) };
    let mut ctx = ptr::null_mut();
    // SAFETY: the out-pointer is a live local; `params` holds `n` entries.
    ok(unsafe {
        if n == 0 {
            entry(s.driver.cuCtxCreate_v2)?(&mut ctx, flags, dev)
        } else {
            let count = i32::try_from(n).map_err(|_| INVALID_VALUE)?;
            entry(s.driver.cuCtxCreate_v3)?(&mut ctx, params.as_mut_ptr(), count, flags, dev)
        }
    })?;
    register(s, id, ctx as usize);
    if let Ok(d) = u32::try_from(dev) {
        s.tables().created_ctxs.insert(id, d);
    }
    lane.made_current(id);
    Ok(Reply::default())
}

/// `cuCtxDestroy_v2`; everything the context owned leaves the tables.
pub fn ctx_destroy(lane: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &ctx_destroy::Request = message(req)?;
    let id = r.ctx.get();
    let real = s.tables().ctx(id).ok_or(INVALID_VALUE)?;
    // SAFETY: `real` is a live context created by this session.
    ok(unsafe { entry(s.driver.cuCtxDestroy_v2)?(as_handle(real).cast()) })?;
    {
        let mut t = s.tables();
        t.ctxs.remove(&id);
        t.created_ctxs.remove(&id);
        t.forget_context_resources(id);
    }
    s.contexts_changed.fetch_add(1, Ordering::SeqCst);
    lane.forget_context(id);
    Ok(Reply::default())
}

/// `cuDevicePrimaryCtxRetain` under the client's id for the device's
/// primary context.
pub fn primary_ctx_retain(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &primary_ctx_retain::Request = message(req)?;
    let mut ctx = ptr::null_mut();
    // SAFETY: the out-pointer is a live local.
    ok(unsafe { entry(s.driver.cuDevicePrimaryCtxRetain)?(&mut ctx, r.device.get()) })?;
    register(s, r.ctx.get(), ctx as usize);
    Ok(Reply::default())
}

/// The device's primary context under the client's id, not retained (the
/// CUDA runtime's private interface).
pub fn primary_ctx_get(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &primary_ctx_get::Request = message(req)?;
    let ctx = s.driver.primary_context_unretained(r.device.get())?;
    register(s, r.ctx.get(), ctx as usize);
    Ok(Reply::default())
}
