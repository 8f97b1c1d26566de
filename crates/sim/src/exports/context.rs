//! Contexts and the per-thread current-context stack.

use std::ffi::{c_int, c_uint};

use crate::context::{self, API_VERSION};
use crate::cu::{CUcontext, CUdevice, CUlimit, CUresult};
use crate::ffi::{handle, key, run, Out};
use crate::state;
use crate::stream::{GREATEST_PRIORITY, LEAST_PRIORITY};

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
        context::destroy(&mut sim.lock(), key(ctx))
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

/// `cuCtxSynchronize`: all work already ran; reports the sticky error, if any.
#[no_mangle]
pub extern "C" fn cuCtxSynchronize() -> CUresult {
    run("cuCtxSynchronize", || {
        let sim = state::sim()?;
        context::current_usable(&sim.lock()).map(|_| ())
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

/// `cuCtxGetFlags`.
///
/// # Safety
/// `flags` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuCtxGetFlags(flags: *mut c_uint) -> CUresult {
    run("cuCtxGetFlags", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(flags, "flags") }?;
        let st = sim.lock();
        out.write(context::live(&st, context::current(&st)?)?.flags);
        Ok(())
    })
}

/// `cuCtxGetApiVersion`: 3020; a NULL `ctx` means the current one.
///
/// # Safety
/// `version` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuCtxGetApiVersion(ctx: CUcontext, version: *mut c_uint) -> CUresult {
    run("cuCtxGetApiVersion", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(version, "version") }?;
        let st = sim.lock();
        let k = match key(ctx) {
            0 => context::current(&st)?,
            k => k,
        };
        context::live(&st, k)?;
        out.write(API_VERSION);
        Ok(())
    })
}

/// `cuCtxGetLimit`.
///
/// # Safety
/// `pvalue` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuCtxGetLimit(pvalue: *mut usize, limit: CUlimit) -> CUresult {
    run("cuCtxGetLimit", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(pvalue, "pvalue") }?;
        out.write(context::get_limit(&sim.lock(), limit.0)?);
        Ok(())
    })
}

/// `cuCtxSetLimit`.
#[no_mangle]
pub extern "C" fn cuCtxSetLimit(limit: CUlimit, value: usize) -> CUresult {
    run("cuCtxSetLimit", || {
        let sim = state::sim()?;
        context::set_limit(&mut sim.lock(), limit.0, value)
    })
}

/// `cuCtxGetStreamPriorityRange`: least 0, greatest -5, as on an H100. Either pointer may
/// be NULL.
///
/// # Safety
/// `least` and `greatest` must each be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuCtxGetStreamPriorityRange(
    least: *mut c_int,
    greatest: *mut c_int,
) -> CUresult {
    run("cuCtxGetStreamPriorityRange", || {
        let sim = state::sim()?;
        context::current(&sim.lock())?;
        // SAFETY: forwarded from this function's contract.
        let (l, g) = unsafe { (Out::optional(least), Out::optional(greatest)) };
        if let Some(l) = l {
            l.write(LEAST_PRIORITY);
        }
        if let Some(g) = g {
            g.write(GREATEST_PRIORITY);
        }
        Ok(())
    })
}
