//! Streams and events.

use std::ffi::{c_int, c_uint};

use crate::cu::{CUevent, CUresult, CUstream};
use crate::event;
use crate::ffi::{handle, key, run, Out};
use crate::state;
use crate::stream;

/// `cuStreamCreate`.
///
/// # Safety
/// `ph_stream` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuStreamCreate(ph_stream: *mut CUstream, flags: c_uint) -> CUresult {
    // SAFETY: same contract.
    unsafe { create_stream("cuStreamCreate", ph_stream, flags, 0) }
}

/// `cuStreamCreateWithPriority`: priorities outside [-5, 0] are clamped.
///
/// # Safety
/// `ph_stream` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuStreamCreateWithPriority(
    ph_stream: *mut CUstream,
    flags: c_uint,
    priority: c_int,
) -> CUresult {
    // SAFETY: same contract.
    unsafe { create_stream("cuStreamCreateWithPriority", ph_stream, flags, priority) }
}

/// # Safety
/// `ph_stream` must be NULL or valid for writes.
unsafe fn create_stream(
    name: &str,
    ph_stream: *mut CUstream,
    flags: c_uint,
    priority: c_int,
) -> CUresult {
    run(name, || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(ph_stream, "phStream") }?;
        let k = stream::create(&mut sim.lock(), flags, priority)?;
        out.write(handle(k));
        Ok(())
    })
}

/// `cuStreamDestroy_v2`.
#[no_mangle]
pub extern "C" fn cuStreamDestroy_v2(h_stream: CUstream) -> CUresult {
    run("cuStreamDestroy_v2", || {
        stream::destroy(&mut state::sim()?.lock(), key(h_stream))
    })
}

/// `cuStreamSynchronize`: work already ran; reports the sticky error, if any.
#[no_mangle]
pub extern "C" fn cuStreamSynchronize(h_stream: CUstream) -> CUresult {
    run("cuStreamSynchronize", || {
        stream::synchronize(&state::sim()?.lock(), key(h_stream))
    })
}

/// `cuStreamQuery`: always complete (`CUDA_SUCCESS`) unless the context has a sticky error.
#[no_mangle]
pub extern "C" fn cuStreamQuery(h_stream: CUstream) -> CUresult {
    run("cuStreamQuery", || {
        stream::synchronize(&state::sim()?.lock(), key(h_stream))
    })
}

/// `cuStreamWaitEvent`.
#[no_mangle]
pub extern "C" fn cuStreamWaitEvent(
    h_stream: CUstream,
    h_event: CUevent,
    flags: c_uint,
) -> CUresult {
    run("cuStreamWaitEvent", || {
        stream::wait_event(&state::sim()?.lock(), key(h_stream), key(h_event), flags)
    })
}

/// `cuStreamGetFlags`.
///
/// # Safety
/// `flags` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuStreamGetFlags(h_stream: CUstream, flags: *mut c_uint) -> CUresult {
    run("cuStreamGetFlags", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(flags, "flags") }?;
        out.write(stream::flags(&sim.lock(), key(h_stream))?);
        Ok(())
    })
}

/// `cuStreamGetPriority`.
///
/// # Safety
/// `priority` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuStreamGetPriority(h_stream: CUstream, priority: *mut c_int) -> CUresult {
    run("cuStreamGetPriority", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(priority, "priority") }?;
        out.write(stream::priority(&sim.lock(), key(h_stream))?);
        Ok(())
    })
}

/// `cuEventCreate`.
///
/// # Safety
/// `ph_event` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuEventCreate(ph_event: *mut CUevent, flags: c_uint) -> CUresult {
    run("cuEventCreate", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(ph_event, "phEvent") }?;
        let k = event::create(&mut sim.lock(), flags)?;
        out.write(handle(k));
        Ok(())
    })
}

/// `cuEventDestroy_v2`.
#[no_mangle]
pub extern "C" fn cuEventDestroy_v2(h_event: CUevent) -> CUresult {
    run("cuEventDestroy_v2", || {
        event::destroy(&mut state::sim()?.lock(), key(h_event))
    })
}

/// `cuEventRecord`: stamps the monotonic clock now (earlier work already ran).
#[no_mangle]
pub extern "C" fn cuEventRecord(h_event: CUevent, h_stream: CUstream) -> CUresult {
    run("cuEventRecord", || {
        event::record(&mut state::sim()?.lock(), key(h_event), key(h_stream))
    })
}

/// `cuEventSynchronize`.
#[no_mangle]
pub extern "C" fn cuEventSynchronize(h_event: CUevent) -> CUresult {
    run("cuEventSynchronize", || {
        event::synchronize(&state::sim()?.lock(), key(h_event))
    })
}

/// `cuEventQuery`.
#[no_mangle]
pub extern "C" fn cuEventQuery(h_event: CUevent) -> CUresult {
    run("cuEventQuery", || {
        event::synchronize(&state::sim()?.lock(), key(h_event))
    })
}

/// `cuEventElapsedTime`: milliseconds between two recorded events.
///
/// # Safety
/// `ms` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuEventElapsedTime(
    ms: *mut f32,
    h_start: CUevent,
    h_end: CUevent,
) -> CUresult {
    // SAFETY: same contract.
    unsafe { elapsed("cuEventElapsedTime", ms, h_start, h_end) }
}

/// `cuEventElapsedTime_v2`: as `cuEventElapsedTime`.
///
/// # Safety
/// `ms` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuEventElapsedTime_v2(
    ms: *mut f32,
    h_start: CUevent,
    h_end: CUevent,
) -> CUresult {
    // SAFETY: same contract.
    unsafe { elapsed("cuEventElapsedTime_v2", ms, h_start, h_end) }
}

/// # Safety
/// `ms` must be NULL or valid for writes.
unsafe fn elapsed(name: &str, ms: *mut f32, h_start: CUevent, h_end: CUevent) -> CUresult {
    run(name, || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(ms, "pMilliseconds") }?;
        out.write(event::elapsed_ms(&sim.lock(), key(h_start), key(h_end))?);
        Ok(())
    })
}
