//! Green contexts. The worker keeps the driver's green contexts and resource
//! descriptors under ids it mints (the generated calls); the client knows
//! each green context's device, and adopts its context
//! (`cuCtxFromGreenCtx`) and its streams (`cuGreenCtxStreamCreate`) like
//! those it creates, so every other call takes them.

use std::ffi::{c_int, c_uint};

use vgpu_abi::types::{
    CUcontext, CUdevResource, CUdevResourceDesc, CUdevice, CUgreenCtx, CUstream,
};
use vgpu_proto::{
    ctx_from_green_ctx, green_ctx_create, green_ctx_destroy, green_ctx_stream_create,
    sm_resource_split,
};
use zerocopy::little_endian::{I32, U32, U64};

use crate::context::current;
use crate::edge::{non_null, wire, write_out, CuError, CuResult};
use crate::objects::CtxInfo;
use crate::runtime::runtime;

/// The bytes of a `CUdevResource` on the wire.
const RESOURCE: usize = 144;
const _: () = assert!(size_of::<CUdevResource>() == RESOURCE);

/// `cuGreenCtxCreate`.
///
/// # Safety
/// `ph` must be NULL or valid for a write.
pub unsafe fn green_ctx_create(
    ph: *mut CUgreenCtx,
    desc: CUdevResourceDesc,
    dev: CUdevice,
    flags: c_uint,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(ph)?;
    let r = green_ctx_create::Request {
        desc: U64::new(desc as usize as u64),
        dev: I32::new(dev),
        flags: U32::new(flags),
    };
    let (rep, _) = s.request(&r, &[])?;
    let id = rep.ph_ctx.get();
    s.objects().greens.insert(id, (dev, None));
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(ph, wire::handle::<std::ffi::c_void>(id).cast()) }
}

/// `cuGreenCtxDestroy`: its context, if the client adopted it, goes with it.
pub fn green_ctx_destroy(g: CUgreenCtx) -> CuResult<()> {
    let s = runtime().session()?;
    let id = g as usize as u64;
    let r = green_ctx_destroy::Request {
        green: U64::new(id),
    };
    s.request(&r, &[])?;
    let mut o = s.objects();
    if let Some((_, Some(ctx))) = o.greens.remove(&id) {
        o.contexts.remove(&ctx);
        o.streams.retain(|_, c| *c != ctx);
        o.events.retain(|_, c| *c != ctx);
    }
    Ok(())
}

/// `cuCtxFromGreenCtx`: the worker's id for the green context's context,
/// adopted as a context of the green context's device.
///
/// # Safety
/// `pctx` must be NULL or valid for a write.
pub unsafe fn ctx_from_green_ctx(pctx: *mut CUcontext, g: CUgreenCtx) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(pctx)?;
    let id = g as usize as u64;
    let r = ctx_from_green_ctx::Request { hctx: U64::new(id) };
    let (rep, _) = s.request(&r, &[])?;
    let ctx = rep.pcontext.get();
    {
        let mut o = s.objects();
        let device = o.greens.get_mut(&id).map(|entry| {
            entry.1 = Some(ctx);
            entry.0
        });
        if !o.contexts.contains_key(&ctx) {
            // A green context the client did not see made (none so far):
            // the device of the calling thread's context.
            let device = device
                .or_else(|| o.contexts.get(&current()).map(|i| i.device))
                .unwrap_or(0);
            o.contexts.insert(
                ctx,
                CtxInfo {
                    device,
                    primary: false,
                },
            );
        }
    }
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(pctx, wire::handle(ctx)) }
}

/// `cuGreenCtxStreamCreate`: the stream belongs to the green context's
/// context (the worker checks every use against the driver).
///
/// # Safety
/// `ph` must be NULL or valid for a write.
pub unsafe fn green_ctx_stream_create(
    ph: *mut CUstream,
    g: CUgreenCtx,
    flags: c_uint,
    priority: c_int,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(ph)?;
    let r = green_ctx_stream_create::Request {
        green_ctx: U64::new(g as usize as u64),
        flags: U32::new(flags),
        priority: I32::new(priority),
    };
    let (rep, _) = s.request(&r, &[])?;
    let sid = rep.ph_stream.get();
    // Work on it is posted only in the green context's own context, once
    // the client knows it; otherwise every call waits for the driver's answer.
    let mut o = s.objects();
    if let Some(&(_, Some(ctx))) = o.greens.get(&(g as usize as u64)) {
        o.streams.insert(sid, ctx);
    }
    drop(o);
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(ph, wire::handle(sid)) }
}

/// `cuDevSmResourceSplitByCount`.
///
/// # Safety
/// `result` must be NULL or hold `*nb_groups` writable resources, `input`
/// be NULL or readable, `remaining` NULL or writable.
pub unsafe fn dev_sm_resource_split_by_count(
    result: *mut CUdevResource,
    nb_groups: *mut c_uint,
    input: *const CUdevResource,
    remaining: *mut CUdevResource,
    use_flags: c_uint,
    min_count: c_uint,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(nb_groups)?;
    non_null(input)?;
    // SAFETY: checked non-NULL; the application's count.
    let groups = unsafe { nb_groups.read() };
    let mut bytes = [0u8; RESOURCE];
    // SAFETY: `input` is non-NULL and readable for one resource.
    unsafe { std::ptr::copy_nonoverlapping(input.cast::<u8>(), bytes.as_mut_ptr(), RESOURCE) };
    let r = sm_resource_split::Request {
        input: bytes,
        groups: U32::new(groups),
        want_result: u8::from(!result.is_null()),
        want_remaining: u8::from(!remaining.is_null()),
        use_flags: U32::new(use_flags),
        min_count: U32::new(min_count),
    };
    let (rep, back) = s.request(&r, &[])?;
    let got = rep.groups.get();
    if !result.is_null() {
        let n = (got as usize).min(groups as usize);
        if back.len() != n * RESOURCE {
            return Err(CuError::UNKNOWN);
        }
        // SAFETY: the application's array holds `groups` >= `n` resources.
        unsafe { std::ptr::copy_nonoverlapping(back.as_ptr(), result.cast::<u8>(), back.len()) };
    }
    if !remaining.is_null() {
        // SAFETY: non-NULL and writable for one resource.
        unsafe {
            std::ptr::copy_nonoverlapping(rep.remaining.as_ptr(), remaining.cast::<u8>(), RESOURCE);
        }
    }
    // SAFETY: checked non-NULL; the application's count.
    unsafe { write_out(nb_groups, got) }
}
