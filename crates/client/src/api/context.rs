//! Primary and created contexts. The current-context stack is the client's
//! own (`crate::context`); only creation, destruction and queries that the
//! driver must answer cost a round trip.

use std::ffi::{c_int, c_uint};

use vgpu_abi::types::{CUcontext, CUctxCreateParams, CUlimit};
use vgpu_proto::Op;

use crate::context as stack;
use crate::edge::{non_null, wire, write_out, CuError, CuResult};
use crate::objects::CtxInfo;
use crate::runtime::{runtime, Kind, Session};

/// The id of device `dev`'s primary context: fixed per device, so every
/// retain hands out the same handle, as the driver does.
pub fn primary_id(dev: c_int) -> u64 {
    (u64::from(Kind::Context as u8) << 56) | (1 << 48) | u64::from(dev.unsigned_abs())
}

pub fn to_handle(id: u64) -> CUcontext {
    wire::handle(id)
}

/// A context handle from the application must name a live context.
fn live(s: &Session, ctx: CUcontext) -> CuResult<(u64, CtxInfo)> {
    let id = ctx as usize as u64;
    let info = s.objects().contexts.get(&id).copied();
    info.map(|i| (id, i)).ok_or(CuError::INVALID_CONTEXT)
}

fn current_info(s: &Session) -> CuResult<(u64, CtxInfo)> {
    let id = stack::current();
    let info = s.objects().contexts.get(&id).copied();
    match info {
        Some(i) => Ok((id, i)),
        None if id == 0 => Err(CuError::INVALID_CONTEXT),
        None => Err(CuError::CONTEXT_IS_DESTROYED),
    }
}

pub unsafe fn primary_retain(pctx: *mut CUcontext, dev: c_int) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(pctx)?;
    s.device(dev)?;
    let id = primary_id(dev);
    let retained = s.call(Op::PrimaryCtxRetain, &[id, dev as u64], &[], None);
    primary_state_changed(s);
    retained?;
    {
        let mut o = s.objects();
        o.add_context(
            id,
            CtxInfo {
                device: dev,
                primary: true,
            },
        );
        *o.primary_refs.entry(dev).or_insert(0) += 1;
    }
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(pctx, to_handle(id)) }
}

pub fn primary_release(dev: c_int) -> CuResult<()> {
    let s = runtime().session()?;
    s.device(dev)?;
    let released = s.call(Op::PrimaryCtxRelease, &[dev as u64], &[], None);
    primary_state_changed(s);
    released?;
    let last = {
        let mut o = s.objects();
        let refs = o.primary_refs.entry(dev).or_insert(0);
        *refs = refs.saturating_sub(1);
        *refs == 0
    };
    if last {
        super::dark::run_storage_destructors(primary_id(dev));
    }
    Ok(())
}

/// Answered from the session's answers after the first time: only this
/// session's primary-context calls change the state, and each drops it.
pub unsafe fn primary_state(dev: c_int, flags: *mut c_uint, active: *mut c_int) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(flags)?;
    non_null(active)?;
    s.device(dev)?;
    let known = s.objects().answers.primary_state.get(&dev).copied();
    let (f, a) = match known {
        Some(state) => state,
        None => {
            let (outs, _) = s.call(Op::PrimaryCtxGetState, &[dev as u64], &[], None)?;
            // The driver's own 32-bit values, widened on the wire.
            let state = (wire::u32(outs[0]), wire::i32(outs[1]));
            s.objects().answers.primary_state.insert(dev, state);
            state
        }
    };
    // SAFETY: both checked non-NULL; the application's out-pointers.
    unsafe {
        write_out(flags, f)?;
        write_out(active, a)
    }
}

/// Drops the primary-context states the session knows: called by every
/// call that may change one (retain, release, flags, reset, the runtime's
/// own primary-context look-up), whatever its outcome.
pub fn primary_state_changed(s: &Session) {
    s.objects().answers.primary_state.clear();
}

pub fn primary_set_flags(dev: c_int, flags: c_uint) -> CuResult<()> {
    let s = runtime().session()?;
    s.device(dev)?;
    let set = s.call(
        Op::PrimaryCtxSetFlags,
        &[dev as u64, u64::from(flags)],
        &[],
        None,
    );
    primary_state_changed(s);
    set.map(drop)
}

pub fn primary_reset(dev: c_int) -> CuResult<()> {
    let s = runtime().session()?;
    s.device(dev)?;
    let reset = s.call(Op::PrimaryCtxReset, &[dev as u64], &[], None);
    primary_state_changed(s);
    reset?;
    s.objects().primary_refs.insert(dev, 0);
    super::dark::run_storage_destructors(primary_id(dev));
    Ok(())
}

pub unsafe fn create(pctx: *mut CUcontext, flags: c_uint, dev: c_int) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(pctx)?;
    s.device(dev)?;
    let id = runtime().mint(Kind::Context);
    s.call(
        Op::CtxCreate,
        &[id, u64::from(flags), dev as u64],
        &[],
        None,
    )?;
    s.objects().add_context(
        id,
        CtxInfo {
            device: dev,
            primary: false,
        },
    );
    stack::push(id);
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(pctx, to_handle(id)) }
}

/// The CUDA 12.5+ form; plain creation when no execution-affinity or CIG
/// parameters are given.
pub unsafe fn create_v4(
    pctx: *mut CUcontext,
    params: *mut CUctxCreateParams,
    flags: c_uint,
    dev: c_int,
) -> CuResult<()> {
    if !params.is_null() {
        // SAFETY: non-NULL, and the application passes a valid parameter struct.
        let p = unsafe { &*params };
        if p.numExecAffinityParams != 0 || !p.cigParams.is_null() {
            crate::log::line(format_args!(
                "cuCtxCreate_v4: execution affinity and CIG are not supported"
            ));
            return Err(CuError::NOT_SUPPORTED);
        }
    }
    // SAFETY: same contract as `create`.
    unsafe { create(pctx, flags, dev) }
}

pub fn destroy(ctx: CUcontext) -> CuResult<()> {
    let s = runtime().session()?;
    let (id, info) = live(s, ctx)?;
    if info.primary {
        return Err(CuError::INVALID_CONTEXT);
    }
    s.call(Op::CtxDestroy, &[id], &[], None)?;
    s.objects().contexts.remove(&id);
    super::dark::run_storage_destructors(id);
    stack::forget_if_current(id);
    Ok(())
}

pub fn push(ctx: CUcontext) -> CuResult<()> {
    let s = runtime().session()?;
    let (id, _) = live(s, ctx)?;
    stack::push(id);
    Ok(())
}

pub unsafe fn pop(pctx: *mut CUcontext) -> CuResult<()> {
    runtime().session()?;
    let id = stack::pop().ok_or(CuError::INVALID_CONTEXT)?;
    if !pctx.is_null() {
        // SAFETY: checked non-NULL; the application's out-pointer.
        unsafe { write_out(pctx, to_handle(id))? };
    }
    Ok(())
}

pub fn set_current(ctx: CUcontext) -> CuResult<()> {
    let s = runtime().session()?;
    if ctx.is_null() {
        stack::set_current(0);
        return Ok(());
    }
    let (id, _) = live(s, ctx)?;
    stack::set_current(id);
    Ok(())
}

pub unsafe fn get_current(pctx: *mut CUcontext) -> CuResult<()> {
    runtime().session()?;
    // SAFETY: the application's out-pointer (NULL is rejected).
    unsafe { write_out(pctx, to_handle(stack::current())) }
}

pub unsafe fn get_device(dev: *mut c_int) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(dev)?;
    let (_, info) = current_info(s)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(dev, info.device) }
}

pub unsafe fn get_device_of(dev: *mut c_int, ctx: CUcontext) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(dev)?;
    let (_, info) = if ctx.is_null() {
        current_info(s)?
    } else {
        live(s, ctx)?
    };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(dev, info.device) }
}

pub fn synchronize() -> CuResult<()> {
    let s = runtime().session()?;
    s.call(Op::CtxSynchronize, &[], &[], None).map(drop)
}

pub fn synchronize_ctx(ctx: CUcontext) -> CuResult<()> {
    let s = runtime().session()?;
    let (id, _) = if ctx.is_null() {
        current_info(s)?
    } else {
        live(s, ctx)?
    };
    s.call_in(id, Op::CtxSynchronize, &[], &[], None).map(drop)
}

pub unsafe fn get_flags(flags: *mut c_uint) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(flags)?;
    let (outs, _) = s.call(Op::CtxGetFlags, &[], &[], None)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(flags, wire::u32(outs[0])) }
}

pub unsafe fn api_version(ctx: CUcontext, v: *mut c_uint) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(v)?;
    let (id, _) = if ctx.is_null() {
        current_info(s)?
    } else {
        live(s, ctx)?
    };
    let (outs, _) = s.call_in(id, Op::CtxGetApiVersion, &[], &[], None)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(v, wire::u32(outs[0])) }
}

pub unsafe fn get_limit(v: *mut usize, limit: CUlimit) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(v)?;
    let (outs, _) = s.call(Op::CtxGetLimit, &[u64::from(limit.0)], &[], None)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(v, wire::usize(outs[0])) }
}

pub fn set_limit(limit: CUlimit, v: usize) -> CuResult<()> {
    let s = runtime().session()?;
    s.call(Op::CtxSetLimit, &[u64::from(limit.0), v as u64], &[], None)
        .map(drop)
}

pub unsafe fn priority_range(least: *mut c_int, greatest: *mut c_int) -> CuResult<()> {
    let s = runtime().session()?;
    let (outs, _) = s.call(Op::CtxGetStreamPriorityRange, &[], &[], None)?;
    // SAFETY: each pointer is written only when non-NULL, as the driver does.
    unsafe {
        if !least.is_null() {
            write_out(least, wire::i32(outs[0]))?;
        }
        if !greatest.is_null() {
            write_out(greatest, wire::i32(outs[1]))?;
        }
    }
    Ok(())
}

/// The context's unique id, as `cuCtxGetId` reports it.
pub fn unique_id(ctx: u64) -> CuResult<u64> {
    let s = runtime().session()?;
    let o = s.objects();
    o.unique_ids
        .get(&ctx)
        .copied()
        .filter(|_| o.contexts.contains_key(&ctx))
        .ok_or(CuError::INVALID_CONTEXT)
}

pub unsafe fn get_id(ctx: CUcontext, out: *mut std::ffi::c_ulonglong) -> CuResult<()> {
    non_null(out)?;
    let id = if ctx.is_null() {
        stack::current()
    } else {
        ctx as u64
    };
    if id == 0 {
        return Err(CuError::INVALID_CONTEXT);
    }
    let uid = unique_id(id)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(out, uid) }
}
