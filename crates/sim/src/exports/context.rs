//! Contexts, primary contexts and the per-thread current-context stack.

use std::ffi::{c_int, c_uint};

use crate::context::{self, API_VERSION, SHARED_FOUR_BYTE};
use crate::cu::{
    CUcontext, CUdevice, CUevent, CUexecAffinityParam, CUexecAffinityParam_st__bindgen_ty_1,
    CUexecAffinitySmCount, CUexecAffinityType, CUfunc_cache, CUlimit, CUresult, CUsharedconfig,
};
use crate::error::{err, Res};
use crate::event;
use crate::ffi::{handle, key, run, Out};
use crate::funcattr::SMS;
use crate::state;
use crate::stream::{GREATEST_PRIORITY, LEAST_PRIORITY};

/// `cuDevicePrimaryCtxRetain`.
///
/// # Safety
/// `pctx` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(pctx: *mut CUcontext, dev: CUdevice) -> CUresult {
    run("cuDevicePrimaryCtxRetain", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(pctx, "pctx") }?;
        let d = sim.check_device(dev)?;
        let key = context::primary_retain(&mut sim.lock(), d)?;
        out.write(handle(key));
        Ok(())
    })
}

/// `cuCtxCreate_v2`: creates a context on `dev` and makes it current.
///
/// # Safety
/// `pctx` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuCtxCreate_v2(
    pctx: *mut CUcontext,
    flags: c_uint,
    dev: CUdevice,
) -> CUresult {
    run("cuCtxCreate_v2", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(pctx, "pctx") }?;
        let d = sim.check_device(dev)?;
        let k = context::create(&mut sim.lock(), flags, d)?;
        out.write(handle(k));
        Ok(())
    })
}

/// `cuCtxDestroy_v2`: destroys a created context and everything it owns.
#[no_mangle]
pub extern "C" fn cuCtxDestroy_v2(ctx: CUcontext) -> CUresult {
    run("cuCtxDestroy_v2", || {
        let sim = state::sim()?;
        let mut st = sim.lock();
        crate::printf::flush(&mut st);
        context::destroy(&mut st, key(ctx))
    })
}

/// `cuCtxPushCurrent_v2`.
#[no_mangle]
pub extern "C" fn cuCtxPushCurrent_v2(ctx: CUcontext) -> CUresult {
    run("cuCtxPushCurrent_v2", || {
        let sim = state::sim()?;
        context::push_current(&sim.lock(), key(ctx))
    })
}

/// `cuCtxPopCurrent_v2`: `pctx` may be NULL.
///
/// # Safety
/// `pctx` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuCtxPopCurrent_v2(pctx: *mut CUcontext) -> CUresult {
    run("cuCtxPopCurrent_v2", || {
        state::sim()?;
        let k = context::pop_current()?;
        // SAFETY: forwarded from this function's contract.
        if let Some(out) = unsafe { Out::optional(pctx) } {
            out.write(handle(k));
        }
        Ok(())
    })
}

/// `cuCtxSetCurrent`: replaces the top of the stack; NULL unbinds it.
#[no_mangle]
pub extern "C" fn cuCtxSetCurrent(ctx: CUcontext) -> CUresult {
    run("cuCtxSetCurrent", || {
        let sim = state::sim()?;
        let k = Some(key(ctx)).filter(|&k| k != 0);
        context::set_current(&sim.lock(), k)
    })
}

/// `cuCtxGetCurrent`: NULL when the stack is empty.
///
/// # Safety
/// `pctx` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuCtxGetCurrent(pctx: *mut CUcontext) -> CUresult {
    run("cuCtxGetCurrent", || {
        state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(pctx, "pctx") }?;
        out.write(handle(context::top().unwrap_or(0)));
        Ok(())
    })
}

/// `cuCtxGetDevice`.
///
/// # Safety
/// `device` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuCtxGetDevice(device: *mut CUdevice) -> CUresult {
    run("cuCtxGetDevice", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(device, "device") }?;
        let st = sim.lock();
        let d = context::live(&st, context::current(&st)?)?.device;
        out.write(CUdevice::try_from(d).unwrap_or(0));
        Ok(())
    })
}

/// `cuCtxGetApiVersion`: 3020; a NULL `ctx` means the current one.
pub(crate) fn ctx_get_api_version(ctx: CUcontext, version: Out<c_uint>) -> Res<()> {
    let sim = state::sim()?;
    let out = version;
    let st = sim.lock();
    let k = match key(ctx) {
        0 => context::current(&st)?,
        k => k,
    };
    context::live(&st, k)?;
    out.write(API_VERSION);
    Ok(())
}

/// `cuCtxGetFlags`.
pub(crate) fn ctx_get_flags(flags: Out<c_uint>) -> Res<()> {
    let sim = state::sim()?;
    let out = flags;
    let st = sim.lock();
    out.write(context::live(&st, context::current(&st)?)?.flags);
    Ok(())
}

/// `cuCtxGetLimit`.
pub(crate) fn ctx_get_limit(pvalue: Out<usize>, limit: CUlimit) -> Res<()> {
    let sim = state::sim()?;
    let out = pvalue;
    out.write(context::get_limit(&sim.lock(), limit.0)?);
    Ok(())
}

/// `cuCtxGetStreamPriorityRange`: least 0, greatest -5, as on an H100. Either pointer may
/// be NULL.
pub(crate) fn ctx_get_stream_priority_range(
    least: Option<Out<c_int>>,
    greatest: Option<Out<c_int>>,
) -> Res<()> {
    let sim = state::sim()?;
    context::current(&sim.lock())?;
    let (l, g) = (least, greatest);
    if let Some(l) = l {
        l.write(LEAST_PRIORITY);
    }
    if let Some(g) = g {
        g.write(GREATEST_PRIORITY);
    }
    Ok(())
}

/// `cuCtxSetLimit`.
pub(crate) fn ctx_set_limit(limit: CUlimit, value: usize) -> Res<()> {
    let sim = state::sim()?;
    context::set_limit(&mut sim.lock(), limit.0, value)
}

/// `cuCtxSynchronize`: all work already ran; reports the sticky error, if any.
pub(crate) fn ctx_synchronize() -> Res<()> {
    let sim = state::sim()?;
    let mut st = sim.lock();
    // Flushed first: a failed assertion's message comes out with the
    // sticky error that reports it.
    crate::printf::flush(&mut st);
    context::current_usable(&st)?;
    crate::graph::forbid_unsafe(&mut st, "cuCtxSynchronize")
}

/// `cuDevicePrimaryCtxGetState`.
pub(crate) fn device_primary_ctx_get_state(
    dev: CUdevice,
    flags: Out<c_uint>,
    active: Out<c_int>,
) -> Res<()> {
    let sim = state::sim()?;
    let d = sim.check_device(dev)?;
    let (f, a) = context::primary_state(&sim.lock(), d);
    flags.write(f);
    active.write(c_int::from(a));
    Ok(())
}

/// `cuDevicePrimaryCtxRelease_v2`.
pub(crate) fn device_primary_ctx_release_v2(dev: CUdevice) -> Res<()> {
    let sim = state::sim()?;
    let d = sim.check_device(dev)?;
    context::primary_release(&mut sim.lock(), d)
}

/// `cuDevicePrimaryCtxReset_v2`.
pub(crate) fn device_primary_ctx_reset_v2(dev: CUdevice) -> Res<()> {
    let sim = state::sim()?;
    let d = sim.check_device(dev)?;
    context::primary_reset(&mut sim.lock(), d);
    Ok(())
}

/// `cuDevicePrimaryCtxSetFlags_v2`.
pub(crate) fn device_primary_ctx_set_flags_v2(dev: CUdevice, flags: c_uint) -> Res<()> {
    let sim = state::sim()?;
    let d = sim.check_device(dev)?;
    context::primary_set_flags(&mut sim.lock(), d, flags)
}

/// `cuCtxSynchronize_v2`: as `cuCtxSynchronize`, for `ctx` (NULL: the current one).
pub(crate) fn ctx_synchronize_v2(ctx: CUcontext) -> Res<()> {
    let sim = state::sim()?;
    let mut st = sim.lock();
    let k = match key(ctx) {
        0 => context::current(&st)?,
        k => k,
    };
    crate::printf::flush(&mut st);
    context::live(&st, k)?.usable()
}

/// `cuCtxAttach` (deprecated): counts one more use of the current context, which it
/// returns; `flags` must be 0.
pub(crate) fn ctx_attach(pctx: Out<CUcontext>, flags: c_uint) -> Res<()> {
    let sim = state::sim()?;
    let k = context::attach(&mut sim.lock(), flags)?;
    pctx.write(handle(k));
    Ok(())
}

/// `cuCtxDetach` (deprecated): drops one use of `ctx`, which must be current; the last
/// use of a created context destroys it.
pub(crate) fn ctx_detach(ctx: CUcontext) -> Res<()> {
    context::detach(&mut state::sim()?.lock(), key(ctx))
}

/// `cuCtxGetCacheConfig`: the current context's preference (`PREFER_NONE` at creation).
pub(crate) fn ctx_get_cache_config(pconfig: Out<CUfunc_cache>) -> Res<()> {
    let c = context::cache_config(&state::sim()?.lock())?;
    pconfig.write(CUfunc_cache(c));
    Ok(())
}

/// `cuCtxSetCacheConfig`: kept per context; values past `PREFER_EQUAL` are invalid.
pub(crate) fn ctx_set_cache_config(config: CUfunc_cache) -> Res<()> {
    context::set_cache_config(&mut state::sim()?.lock(), config.0)
}

/// `cuCtxGetSharedMemConfig`: compute capability 9.0 has fixed 4-byte banks, and the
/// driver reports the fixed bank size on such devices.
pub(crate) fn ctx_get_shared_mem_config(p_config: Out<CUsharedconfig>) -> Res<()> {
    let sim = state::sim()?;
    context::current(&sim.lock())?;
    p_config.write(CUsharedconfig(SHARED_FOUR_BYTE));
    Ok(())
}

/// `cuCtxSetSharedMemConfig`: checks the value; "does nothing on devices with fixed
/// shared memory bank size", as the driver documents.
pub(crate) fn ctx_set_shared_mem_config(config: CUsharedconfig) -> Res<()> {
    let sim = state::sim()?;
    context::check_shared_config(config.0)?;
    context::current(&sim.lock()).map(|_| ())
}

/// `cuCtxGetExecAffinity`: contexts are never limited (no MPS), so the SM count is the
/// whole device's.
pub(crate) fn ctx_get_exec_affinity(
    p_exec_affinity: Out<CUexecAffinityParam>,
    type_: CUexecAffinityType,
) -> Res<()> {
    let sim = state::sim()?;
    if type_ != CUexecAffinityType::CU_EXEC_AFFINITY_TYPE_SM_COUNT {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{} is not a CUexecAffinityType", type_.0),
        );
    }
    context::current(&sim.lock())?;
    p_exec_affinity.write(CUexecAffinityParam {
        type_,
        param: CUexecAffinityParam_st__bindgen_ty_1 {
            smCount: CUexecAffinitySmCount { val: SMS },
        },
    });
    Ok(())
}

/// `cuCtxSetFlags`: replaces the current context's flags (checked as at creation).
pub(crate) fn ctx_set_flags(flags: c_uint) -> Res<()> {
    context::set_flags(&mut state::sim()?.lock(), flags)
}

/// `cuCtxResetPersistingL2Cache`: the simulator has no L2 cache, so no line persists;
/// needs a current context.
pub(crate) fn ctx_reset_persisting_l2_cache() -> Res<()> {
    let sim = state::sim()?;
    context::current_usable(&sim.lock()).map(|_| ())
}

/// `cuCtxRecordEvent`: stamps the event now, as `cuEventRecord` does (the context's work
/// already ran). A NULL `h_ctx` means the current context.
pub(crate) fn ctx_record_event(h_ctx: CUcontext, h_event: CUevent) -> Res<()> {
    let sim = state::sim()?;
    let mut st = sim.lock();
    let ctx = context::given_or_current(&st, key(h_ctx))?;
    event::record_context(&mut st, key(h_event), ctx)
}

/// `cuCtxWaitEvent`: checks both handles; recorded work has always completed.
pub(crate) fn ctx_wait_event(h_ctx: CUcontext, h_event: CUevent) -> Res<()> {
    let sim = state::sim()?;
    let st = sim.lock();
    let ctx = context::given_or_current(&st, key(h_ctx))?;
    event::context_wait(&st, key(h_event), ctx)
}
