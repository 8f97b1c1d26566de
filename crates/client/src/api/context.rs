//! Primary and created contexts. The current-context stack is the client's
//! own (`crate::context`); only creation, destruction and queries that the
//! driver must answer cost a round trip.

use std::ffi::{c_int, c_uint};

use vgpu_abi::types::{CUcontext, CUctxCreateParams, CUexecAffinityParam};
use vgpu_proto::{
    ctx_create, ctx_destroy, device_primary_ctx_get_state, device_primary_ctx_release_v2,
    device_primary_ctx_reset_v2, device_primary_ctx_set_flags_v2, primary_ctx_retain,
};
use zerocopy::little_endian::{I32, U32, U64};

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

/// # Safety
/// `pctx` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
pub unsafe fn primary_retain(pctx: *mut CUcontext, dev: c_int) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(pctx)?;
    s.device(dev)?;
    let id = primary_id(dev);
    let r = primary_ctx_retain::Request {
        ctx: U64::new(id),
        device: I32::new(dev),
    };
    let retained = s.request(&r, &[]);
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

/// `cuDevicePrimaryCtxRelease_v2` (and its first version).
pub fn device_primary_ctx_release_v2(dev: c_int) -> CuResult<()> {
    let s = runtime().session()?;
    s.device(dev)?;
    let r = device_primary_ctx_release_v2::Request { dev: I32::new(dev) };
    let released = s.request(&r, &[]);
    primary_state_changed(s);
    released?;
    let last = {
        let mut o = s.objects();
        let refs = o.primary_refs.entry(dev).or_insert(0);
        *refs = refs.saturating_sub(1);
        *refs == 0
    };
    if last {
        run_storage_destructors(primary_id(dev));
    }
    Ok(())
}

/// Answered from the session's answers after the first time: only this
/// session's primary-context calls change the state, and each drops it.
///
/// # Safety
/// `flags` and `active` must be NULL or valid for writes.
pub unsafe fn device_primary_ctx_get_state(
    dev: c_int,
    flags: *mut c_uint,
    active: *mut c_int,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(flags)?;
    non_null(active)?;
    s.device(dev)?;
    let known = s.objects().answers.primary_state.get(&dev).copied();
    let (f, a) = match known {
        Some(state) => state,
        None => {
            let r = device_primary_ctx_get_state::Request { dev: I32::new(dev) };
            let (rep, _) = s.request(&r, &[])?;
            let state = (rep.flags.get(), rep.active.get());
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

/// `cuDevicePrimaryCtxSetFlags_v2` (and its first version).
pub fn device_primary_ctx_set_flags_v2(dev: c_int, flags: c_uint) -> CuResult<()> {
    let s = runtime().session()?;
    s.device(dev)?;
    let r = device_primary_ctx_set_flags_v2::Request {
        dev: I32::new(dev),
        flags: U32::new(flags),
    };
    let set = s.request(&r, &[]);
    primary_state_changed(s);
    set.map(drop)
}

/// `cuDevicePrimaryCtxReset_v2` (and its first version).
pub fn device_primary_ctx_reset_v2(dev: c_int) -> CuResult<()> {
    let s = runtime().session()?;
    s.device(dev)?;
    let r = device_primary_ctx_reset_v2::Request { dev: I32::new(dev) };
    let reset = s.request(&r, &[]);
    primary_state_changed(s);
    reset?;
    s.objects().primary_refs.insert(dev, 0);
    run_storage_destructors(primary_id(dev));
    Ok(())
}

/// Creates a context on `dev`, with `affinity`'s execution-affinity
/// parameters (none: `cuCtxCreate_v2`).
///
/// # Safety
/// `pctx` must be NULL or valid for a write.
pub unsafe fn create(
    pctx: *mut CUcontext,
    flags: c_uint,
    dev: c_int,
    affinity: &[CUexecAffinityParam],
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(pctx)?;
    s.device(dev)?;
    let id = runtime().mint(Kind::Context);
    let r = ctx_create::Request {
        ctx: U64::new(id),
        flags: U32::new(flags),
        device: I32::new(dev),
    };
    // SAFETY: `affinity` is a slice of plain C structs; all of their bytes
    // travel (the worker reads them back as the same type).
    let blob = unsafe {
        std::slice::from_raw_parts(
            affinity.as_ptr().cast::<u8>(),
            std::mem::size_of_val(affinity),
        )
    };
    s.request(&r, blob)?;
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

/// The `count` execution-affinity parameters at `params`.
///
/// # Safety
/// `params` must be valid for `count` elements when `count` > 0.
unsafe fn affinity<'a>(
    params: *const CUexecAffinityParam,
    count: c_int,
) -> CuResult<&'a [CUexecAffinityParam]> {
    let n = usize::try_from(count).map_err(|_| CuError::INVALID_VALUE)?;
    if n == 0 {
        return Ok(&[]);
    }
    non_null(params)?;
    // SAFETY: the caller's promise.
    Ok(unsafe { std::slice::from_raw_parts(params, n) })
}

/// `cuCtxCreate_v3`: with execution-affinity parameters.
///
/// # Safety
/// `pctx` must be NULL or valid for a write; `params` valid for `count`
/// elements.
pub unsafe fn create_v3(
    pctx: *mut CUcontext,
    params: *mut CUexecAffinityParam,
    count: c_int,
    flags: c_uint,
    dev: c_int,
) -> CuResult<()> {
    // SAFETY: the caller's promises, passed on.
    unsafe { create(pctx, flags, dev, affinity(params, count)?) }
}

/// The CUDA 12.5+ form: execution-affinity parameters as `cuCtxCreate_v3`
/// takes them. CUDA-in-graphics parameters name a graphics API's context in
/// the application's process, which the worker cannot reach: refused with
/// `CUDA_ERROR_NOT_SUPPORTED`, logged.
///
/// # Safety
/// `pctx` must be NULL or valid for a write; `params` NULL or a valid
/// parameter struct.
pub unsafe fn create_v4(
    pctx: *mut CUcontext,
    params: *mut CUctxCreateParams,
    flags: c_uint,
    dev: c_int,
) -> CuResult<()> {
    if params.is_null() {
        // SAFETY: same contract as `create`.
        return unsafe { create(pctx, flags, dev, &[]) };
    }
    // SAFETY: non-NULL, and the application passes a valid parameter struct.
    let p = unsafe { &*params };
    if !p.cigParams.is_null() {
        crate::log::line(format_args!(
            "cuCtxCreate_v4: CUDA-in-graphics parameters name a graphics context of this process, \
             which the worker cannot reach (CUDA_ERROR_NOT_SUPPORTED)"
        ));
        return Err(CuError::NOT_SUPPORTED);
    }
    // SAFETY: the application's affinity array of `numExecAffinityParams` entries.
    unsafe {
        create(
            pctx,
            flags,
            dev,
            affinity(p.execAffinityParams, p.numExecAffinityParams)?,
        )
    }
}

pub fn destroy(ctx: CUcontext) -> CuResult<()> {
    let s = runtime().session()?;
    let (id, info) = live(s, ctx)?;
    if info.primary {
        return Err(CuError::INVALID_CONTEXT);
    }
    s.request(&ctx_destroy::Request { ctx: U64::new(id) }, &[])?;
    s.objects().contexts.remove(&id);
    run_storage_destructors(id);
    stack::forget_if_current(id);
    Ok(())
}

pub fn push(ctx: CUcontext) -> CuResult<()> {
    let s = runtime().session()?;
    let (id, _) = live(s, ctx)?;
    stack::push(id);
    Ok(())
}

/// # Safety
/// `pctx` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
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

/// # Safety
/// `pctx` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
pub unsafe fn get_current(pctx: *mut CUcontext) -> CuResult<()> {
    runtime().session()?;
    // SAFETY: the application's out-pointer (NULL is rejected).
    unsafe { write_out(pctx, to_handle(stack::current())) }
}

/// # Safety
/// `dev` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
pub unsafe fn get_device(dev: *mut c_int) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(dev)?;
    let (_, info) = current_info(s)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(dev, info.device) }
}

/// # Safety
/// `dev` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
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

/// # Safety
/// `out` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
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

/// Runs and forgets the storage destructors of `ctx` (destroyed, reset, or
/// its primary context released to zero).
pub fn run_storage_destructors(ctx: u64) {
    let Ok(s) = runtime().session() else { return };
    let entries = s.objects().take_storage(ctx);
    for (key, e) in entries {
        if let Some(dtor) = e.dtor {
            // SAFETY: the runtime registered this destructor for this entry.
            unsafe {
                dtor(
                    to_handle(ctx).cast(),
                    key as *mut std::ffi::c_void,
                    e.value as *mut std::ffi::c_void,
                )
            };
        }
    }
}
