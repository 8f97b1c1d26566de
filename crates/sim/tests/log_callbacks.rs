//! Log callbacks run inside the failing call, on its thread, before it
//! returns, as driver 580 runs them: a function that blocks holds the call.
//! One test function, so nothing else touches the simulator's global state.

use std::ffi::{c_char, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use vgpu_abi::types::{CUlogLevel, CUlogsCallbackHandle, CUresult};
use vgpu_sim::exports::*;

/// The threads the function ran on, in order.
static THREADS: Mutex<Vec<ThreadId>> = Mutex::new(Vec::new());

unsafe extern "C" fn record(_: *mut c_void, _: CUlogLevel, _: *mut c_char, _: usize) {
    THREADS
        .lock()
        .expect("lock")
        .push(std::thread::current().id());
}

/// Whether the blocked function may return.
static GATE: Mutex<bool> = Mutex::new(false);
static OPENED: Condvar = Condvar::new();
static ENTERED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn blocked(_: *mut c_void, _: CUlogLevel, _: *mut c_char, _: usize) {
    ENTERED.fetch_add(1, Ordering::SeqCst);
    let mut open = GATE.lock().expect("lock");
    while !*open {
        open = OPENED.wait(open).expect("lock");
    }
}

#[test]
fn log_functions_run_inside_the_failing_call_on_its_thread() {
    assert_eq!(cuInit(0), CUresult::CUDA_SUCCESS);
    let mut h: CUlogsCallbackHandle = null_mut();
    // SAFETY: a valid out-pointer.
    let r = unsafe { cuLogsRegisterCallback(Some(record), null_mut(), &mut h) };
    assert_eq!(r, CUresult::CUDA_SUCCESS);
    // SAFETY: a NULL out-pointer is the failure wanted.
    let r = unsafe { cuDeviceGetCount(null_mut()) };
    assert_eq!(r, CUresult::CUDA_ERROR_INVALID_VALUE);
    assert_eq!(
        *THREADS.lock().expect("lock"),
        vec![std::thread::current().id()],
        "ran once, on the failing call's thread, before it returned"
    );
    assert_eq!(cuLogsUnregisterCallback(h), CUresult::CUDA_SUCCESS);

    // SAFETY: a valid out-pointer.
    let r = unsafe { cuLogsRegisterCallback(Some(blocked), null_mut(), &mut h) };
    assert_eq!(r, CUresult::CUDA_SUCCESS);
    let returned = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // SAFETY: a NULL out-pointer is the failure wanted.
            let r = unsafe { cuDeviceGetCount(null_mut()) };
            assert_eq!(r, CUresult::CUDA_ERROR_INVALID_VALUE);
            returned.store(true, Ordering::SeqCst);
        });
        for _ in 0..500 {
            if ENTERED.load(Ordering::SeqCst) != 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(ENTERED.load(Ordering::SeqCst), 1, "the function ran");
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !returned.load(Ordering::SeqCst),
            "the failing call waits for its blocked log function"
        );
        *GATE.lock().expect("lock") = true;
        OPENED.notify_all();
    });
    assert!(returned.load(Ordering::SeqCst));
    assert_eq!(cuLogsUnregisterCallback(h), CUresult::CUDA_SUCCESS);
}
