//! Host callbacks: `cuLaunchHostFunc` and `cuStreamAddCallback`.
//!
//! The simulated device runs work when it is enqueued, so a stream's earlier
//! work is done when a callback is enqueued, and its later work cannot start
//! until the callback returns: the callback runs at once, on the calling
//! thread, in stream order. It runs without the device's lock held, so a
//! callback that blocks (a worker waiting for its client) stalls only its
//! caller.

use std::ffi::{c_uint, c_void};

use super::stream::ptsz;
use crate::cu::{CUhostFn, CUresult, CUstream, CUstreamCallback};
use crate::error::{err, Res};
use crate::ffi::{key, run};
use crate::state;
use crate::stream;

/// Checks that stream `k` can take work (its context is live and free of a
/// sticky error).
fn enqueue_check(k: usize) -> Res<()> {
    let sim = state::sim()?;
    let st = sim.lock();
    stream::usable(&st, k).map(drop)
}

fn launch_host_func(k: usize, f: CUhostFn, user_data: *mut c_void) -> Res<()> {
    let Some(f) = f else {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "the host function is NULL",
        );
    };
    {
        let sim = state::sim()?;
        let mut st = sim.lock();
        stream::usable(&st, k)?;
        // On a capturing stream the function becomes a host node of the graph.
        let node = || crate::graph::Work::Host {
            f,
            data: user_data as usize,
        };
        if crate::graph::captured(&mut st, k, node)? {
            return Ok(());
        }
    }
    // SAFETY: the application's function with its own argument, called as
    // the driver calls it, with no lock of ours held.
    unsafe { f(user_data) };
    Ok(())
}

fn add_callback(
    h: CUstream,
    k: usize,
    f: CUstreamCallback,
    user_data: *mut c_void,
    flags: c_uint,
) -> Res<()> {
    let Some(f) = f else {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "the callback is NULL");
    };
    if flags != 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "callback flags must be 0",
        );
    }
    enqueue_check(k)?;
    {
        // The driver refuses stream callbacks during capture and
        // invalidates the capture.
        let sim = state::sim()?;
        let mut st = sim.lock();
        if let Some(c) = st.ext.graphs.captures.get_mut(&k) {
            c.invalidated = true;
            return err(
                CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                "cuStreamAddCallback is not permitted on a capturing stream",
            );
        }
    }
    // SAFETY: as for `launch_host_func`; every earlier piece of work succeeded
    // (a failure would have been reported at its enqueue), so the status is
    // `CUDA_SUCCESS`.
    unsafe { f(h, CUresult::CUDA_SUCCESS, user_data) };
    Ok(())
}

/// `cuLaunchHostFunc`.
///
/// # Safety
/// `f` must be callable with `user_data`.
#[no_mangle]
pub unsafe extern "C" fn cuLaunchHostFunc(
    h: CUstream,
    f: CUhostFn,
    user_data: *mut c_void,
) -> CUresult {
    run("cuLaunchHostFunc", || {
        launch_host_func(key(h), f, user_data)
    })
}

/// `cuLaunchHostFunc_ptsz`: the NULL stream is the per-thread stream.
///
/// # Safety
/// `f` must be callable with `user_data`.
#[no_mangle]
pub unsafe extern "C" fn cuLaunchHostFunc_ptsz(
    h: CUstream,
    f: CUhostFn,
    user_data: *mut c_void,
) -> CUresult {
    run("cuLaunchHostFunc_ptsz", || {
        launch_host_func(ptsz(h), f, user_data)
    })
}

/// `cuStreamAddCallback`.
///
/// # Safety
/// `f` must be callable with `user_data`.
#[no_mangle]
pub unsafe extern "C" fn cuStreamAddCallback(
    h: CUstream,
    f: CUstreamCallback,
    user_data: *mut c_void,
    flags: c_uint,
) -> CUresult {
    run("cuStreamAddCallback", || {
        add_callback(h, key(h), f, user_data, flags)
    })
}

/// `cuStreamAddCallback_ptsz`.
///
/// # Safety
/// `f` must be callable with `user_data`.
#[no_mangle]
pub unsafe extern "C" fn cuStreamAddCallback_ptsz(
    h: CUstream,
    f: CUstreamCallback,
    user_data: *mut c_void,
    flags: c_uint,
) -> CUresult {
    run("cuStreamAddCallback_ptsz", || {
        add_callback(h, ptsz(h), f, user_data, flags)
    })
}
