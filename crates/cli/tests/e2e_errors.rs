//! Bad input gets the real driver's error codes, through the client library
//! and a real mediator: NULL out-pointers, unknown and destroyed handles,
//! double frees, copies outside an allocation, calls before `cuInit`, no
//! mediator, and entry points vgpu does not implement.
//!
//! Each test re-executes this binary as the client child (cudarc's raw
//! `sys` bindings, loaded from the harness's lib dir); the child collects
//! every case and asserts them together, so one run names every wrong code.

mod common;

use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::time::{Duration, Instant};

use common::cu::{self, Cases};
use common::{is_child, Harness};
use cudarc::driver::sys;

const INVALID_VALUE: u32 = vgpu_abi::types::CUresult::CUDA_ERROR_INVALID_VALUE.0;
const NOT_INITIALIZED: u32 = vgpu_abi::types::CUresult::CUDA_ERROR_NOT_INITIALIZED.0;
const NO_DEVICE: u32 = vgpu_abi::types::CUresult::CUDA_ERROR_NO_DEVICE.0;
const INVALID_HANDLE: u32 = vgpu_abi::types::CUresult::CUDA_ERROR_INVALID_HANDLE.0;
const NOT_SUPPORTED: u32 = vgpu_abi::types::CUresult::CUDA_ERROR_NOT_SUPPORTED.0;

use common::SIM_MODULE;

/// A handle value no API call ever returned.
const BOGUS: usize = 0x5eed_0000_0bad_f00d;

/// Runs the child of `test` against a fresh mediator; asserts it passed.
fn run_child(test: &str) -> common::Output {
    let h = Harness::start();
    let out = h.run(h.self_test(test));
    out.assert_success();
    out
}

#[test]
fn null_out_pointers_give_invalid_value() {
    if !is_child() {
        run_child("null_out_pointers_give_invalid_value");
        return;
    }
    let mut c = Cases::default();
    let ctx = cu::init_context();
    let d = cu::alloc(64);
    let mut module: sys::CUmodule = null_mut();
    let (mut start, mut end): (sys::CUevent, sys::CUevent) = (null_mut(), null_mut());
    // SAFETY: every pointer passed is NULL (the case under test) or a valid
    // local; the handles are live.
    unsafe {
        cu::ok(
            sys::cuModuleLoadData(&mut module, SIM_MODULE.as_ptr().cast()),
            "load",
        );
        cu::ok(sys::cuEventCreate(&mut start, 0), "cuEventCreate");
        cu::ok(sys::cuEventCreate(&mut end, 0), "cuEventCreate");
        cu::ok(sys::cuEventRecord(start, null_mut()), "cuEventRecord");
        cu::ok(sys::cuEventRecord(end, null_mut()), "cuEventRecord");
        cu::ok(sys::cuEventSynchronize(end), "cuEventSynchronize");

        c.add(
            "cuDriverGetVersion",
            sys::cuDriverGetVersion(null_mut()),
            INVALID_VALUE,
        );
        c.add(
            "cuDeviceGetCount",
            sys::cuDeviceGetCount(null_mut()),
            INVALID_VALUE,
        );
        c.add(
            "cuDeviceGet",
            sys::cuDeviceGet(null_mut(), 0),
            INVALID_VALUE,
        );
        c.add(
            "cuDeviceGetName",
            sys::cuDeviceGetName(null_mut(), 64, 0),
            INVALID_VALUE,
        );
        c.add(
            "cuDeviceTotalMem",
            sys::cuDeviceTotalMem_v2(null_mut(), 0),
            INVALID_VALUE,
        );
        c.add(
            "cuDeviceGetAttribute",
            sys::cuDeviceGetAttribute(
                null_mut(),
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                0,
            ),
            INVALID_VALUE,
        );
        c.add(
            "cuCtxCreate",
            sys::cuCtxCreate_v2(null_mut(), 0, 0),
            INVALID_VALUE,
        );
        c.add(
            "cuCtxGetCurrent",
            sys::cuCtxGetCurrent(null_mut()),
            INVALID_VALUE,
        );
        c.add(
            "cuDevicePrimaryCtxRetain",
            sys::cuDevicePrimaryCtxRetain(null_mut(), 0),
            INVALID_VALUE,
        );
        c.add(
            "cuMemAlloc",
            sys::cuMemAlloc_v2(null_mut(), 16),
            INVALID_VALUE,
        );
        c.add(
            "cuMemcpyDtoH dst",
            sys::cuMemcpyDtoH_v2(null_mut(), d, 16),
            INVALID_VALUE,
        );
        c.add(
            "cuStreamCreate",
            sys::cuStreamCreate(null_mut(), 0),
            INVALID_VALUE,
        );
        c.add(
            "cuEventCreate",
            sys::cuEventCreate(null_mut(), 0),
            INVALID_VALUE,
        );
        c.add(
            "cuEventElapsedTime",
            sys::cuEventElapsedTime(null_mut(), start, end),
            INVALID_VALUE,
        );
        c.add(
            "cuModuleLoadData module",
            sys::cuModuleLoadData(null_mut(), SIM_MODULE.as_ptr().cast()),
            INVALID_VALUE,
        );
        c.add(
            "cuModuleLoadData image",
            sys::cuModuleLoadData(&mut module, null()),
            INVALID_VALUE,
        );
        c.add(
            "cuModuleGetFunction",
            sys::cuModuleGetFunction(null_mut(), module, c"saxpy".as_ptr()),
            INVALID_VALUE,
        );
        c.add(
            "cuGetErrorName",
            sys::cuGetErrorName(sys::CUresult::CUDA_SUCCESS, null_mut()),
            INVALID_VALUE,
        );
        c.add(
            "cuGetErrorString",
            sys::cuGetErrorString(sys::CUresult::CUDA_SUCCESS, null_mut()),
            INVALID_VALUE,
        );
        let _ = sys::cuCtxDestroy_v2(ctx);
    }
    c.check();
}

#[test]
fn unknown_and_destroyed_streams_and_events_give_invalid_handle() {
    if !is_child() {
        run_child("unknown_and_destroyed_streams_and_events_give_invalid_handle");
        return;
    }
    let mut c = Cases::default();
    cu::init_context();
    let d = cu::alloc(64);
    let host = [0u8; 64];
    let bogus_stream = BOGUS as sys::CUstream;
    let bogus_event = BOGUS as sys::CUevent;
    let (mut dead_stream, mut live_stream): (sys::CUstream, sys::CUstream) =
        (null_mut(), null_mut());
    let (mut dead_event, mut live_event): (sys::CUevent, sys::CUevent) = (null_mut(), null_mut());
    let mut ms = 0f32;
    // SAFETY: the handles are live, destroyed or never issued (the cases
    // under test); the pointers are valid locals.
    unsafe {
        cu::ok(sys::cuStreamCreate(&mut dead_stream, 0), "cuStreamCreate");
        cu::ok(sys::cuStreamCreate(&mut live_stream, 0), "cuStreamCreate");
        cu::ok(sys::cuEventCreate(&mut dead_event, 0), "cuEventCreate");
        cu::ok(sys::cuEventCreate(&mut live_event, 0), "cuEventCreate");
        cu::ok(sys::cuEventRecord(live_event, live_stream), "cuEventRecord");
        cu::ok(sys::cuStreamDestroy_v2(dead_stream), "cuStreamDestroy");
        cu::ok(sys::cuEventDestroy_v2(dead_event), "cuEventDestroy");

        // The NULL stream is the default stream, not a bad handle.
        c.add("cuStreamQuery NULL", sys::cuStreamQuery(null_mut()), 0);
        for (what, s) in [("unknown", bogus_stream), ("destroyed", dead_stream)] {
            c.add(
                format!("{what} cuStreamSynchronize"),
                sys::cuStreamSynchronize(s),
                INVALID_HANDLE,
            );
            c.add(
                format!("{what} cuStreamQuery"),
                sys::cuStreamQuery(s),
                INVALID_HANDLE,
            );
            c.add(
                format!("{what} cuStreamWaitEvent on stream"),
                sys::cuStreamWaitEvent(s, live_event, 0),
                INVALID_HANDLE,
            );
            c.add(
                format!("{what} cuMemcpyHtoDAsync"),
                sys::cuMemcpyHtoDAsync_v2(d, host.as_ptr().cast(), 64, s),
                INVALID_HANDLE,
            );
            c.add(
                format!("{what} cuEventRecord on stream"),
                sys::cuEventRecord(live_event, s),
                INVALID_HANDLE,
            );
            c.add(
                format!("{what} cuStreamDestroy"),
                sys::cuStreamDestroy_v2(s),
                INVALID_HANDLE,
            );
        }
        for (what, e) in [("unknown", bogus_event), ("destroyed", dead_event)] {
            c.add(
                format!("{what} cuEventQuery"),
                sys::cuEventQuery(e),
                INVALID_HANDLE,
            );
            c.add(
                format!("{what} cuEventSynchronize"),
                sys::cuEventSynchronize(e),
                INVALID_HANDLE,
            );
            c.add(
                format!("{what} cuEventRecord"),
                sys::cuEventRecord(e, null_mut()),
                INVALID_HANDLE,
            );
            c.add(
                format!("{what} cuStreamWaitEvent on event"),
                sys::cuStreamWaitEvent(live_stream, e, 0),
                INVALID_HANDLE,
            );
            c.add(
                format!("{what} cuEventElapsedTime"),
                sys::cuEventElapsedTime(&mut ms, e, live_event),
                INVALID_HANDLE,
            );
            c.add(
                format!("{what} cuEventDestroy"),
                sys::cuEventDestroy_v2(e),
                INVALID_HANDLE,
            );
        }
        // The live handles still work after all that.
        c.add(
            "live cuStreamSynchronize",
            sys::cuStreamSynchronize(live_stream),
            0,
        );
        c.add("live cuEventQuery", sys::cuEventQuery(live_event), 0);
    }
    c.check();
}

/// Launches `fill_u32(d, v, n)` on `stream`.
///
/// # Safety
/// `f` is a live `fill_u32` and `d` holds `n` u32s.
unsafe fn fill(
    f: sys::CUfunction,
    d: sys::CUdeviceptr,
    v: u32,
    n: i32,
    stream: sys::CUstream,
) -> sys::CUresult {
    let (mut p, mut v, mut n) = (d, v, n);
    let mut params: [*mut c_void; 3] = [
        (&raw mut p).cast(),
        (&raw mut v).cast(),
        (&raw mut n).cast(),
    ];
    // SAFETY: as the caller promises; the parameters are live locals.
    unsafe {
        sys::cuLaunchKernel(
            f,
            1,
            1,
            1,
            64,
            1,
            1,
            0,
            stream,
            params.as_mut_ptr(),
            null_mut(),
        )
    }
}

#[test]
fn launches_after_their_stream_or_module_is_gone_give_invalid_handle() {
    if !is_child() {
        run_child("launches_after_their_stream_or_module_is_gone_give_invalid_handle");
        return;
    }
    // The worker keeps each lane's translations of the function and stream
    // ids it launched with; these launches reuse ids that lane has just
    // translated, after the stream or module behind them is gone.
    let mut c = Cases::default();
    cu::init_context();
    let d = cu::alloc(256);
    let (mut module, mut f) = (null_mut(), null_mut());
    let (mut dead, mut live): (sys::CUstream, sys::CUstream) = (null_mut(), null_mut());
    // SAFETY: live handles or ones destroyed on purpose (the cases under
    // test); `d` holds 64 u32s; out-pointers are live locals.
    unsafe {
        cu::ok(
            sys::cuModuleLoadData(&mut module, SIM_MODULE.as_ptr().cast()),
            "cuModuleLoadData",
        );
        cu::ok(
            sys::cuModuleGetFunction(&mut f, module, c"fill_u32".as_ptr()),
            "cuModuleGetFunction",
        );
        cu::ok(sys::cuStreamCreate(&mut dead, 0), "cuStreamCreate");
        cu::ok(sys::cuStreamCreate(&mut live, 0), "cuStreamCreate");
        c.add("launch on the doomed stream", fill(f, d, 1, 64, dead), 0);
        c.add("launch on the live stream", fill(f, d, 2, 64, live), 0);
        c.add("sync the doomed stream", sys::cuStreamSynchronize(dead), 0);
        cu::ok(sys::cuStreamDestroy_v2(dead), "cuStreamDestroy");
        c.add(
            "launch on the destroyed stream",
            fill(f, d, 3, 64, dead),
            INVALID_HANDLE,
        );
        c.add(
            "launch on the live stream again",
            fill(f, d, 4, 64, live),
            0,
        );
        c.add("sync the live stream", sys::cuStreamSynchronize(live), 0);
        let got = read_back(d, 256);
        assert!(
            got.chunks(4).all(|w| w == 4u32.to_le_bytes()),
            "the live stream's last fill landed: {got:?}"
        );
        cu::ok(sys::cuModuleUnload(module), "cuModuleUnload");
        c.add(
            "launch of an unloaded function",
            fill(f, d, 5, 64, live),
            INVALID_HANDLE,
        );
        c.add(
            "the live stream still works",
            sys::cuStreamSynchronize(live),
            0,
        );
    }
    c.check();
}

#[test]
fn double_free_gives_invalid_value() {
    if !is_child() {
        run_child("double_free_gives_invalid_value");
        return;
    }
    let mut c = Cases::default();
    cu::init_context();
    let d = cu::alloc(4096);
    let keep = cu::alloc(4096);
    // SAFETY: frees of a live, a freed and a never-allocated pointer: the
    // driver checks them against its allocation table.
    unsafe {
        c.add("first cuMemFree", sys::cuMemFree_v2(d), 0);
        c.add("second cuMemFree", sys::cuMemFree_v2(d), INVALID_VALUE);
        c.add(
            "cuMemFree inside an allocation",
            sys::cuMemFree_v2(keep + 16),
            INVALID_VALUE,
        );
        c.add(
            "cuMemFree of a wild pointer",
            sys::cuMemFree_v2(0x7_dead_0000),
            INVALID_VALUE,
        );
        c.add("cuMemFree of the survivor", sys::cuMemFree_v2(keep), 0);
    }
    c.check();
}

/// Device bytes of `d` (`len` of them).
fn read_back(d: sys::CUdeviceptr, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    // SAFETY: v holds len bytes; d is an allocation of at least len bytes.
    cu::ok(
        unsafe { sys::cuMemcpyDtoH_v2(v.as_mut_ptr().cast(), d, len) },
        "read back",
    );
    v
}

#[test]
fn copies_outside_an_allocation_give_invalid_value_and_touch_nothing() {
    if !is_child() {
        run_child("copies_outside_an_allocation_give_invalid_value_and_touch_nothing");
        return;
    }
    const LEN: usize = 4096;
    let mut c = Cases::default();
    cu::init_context();
    // Three neighbours: whatever lies past `a` is `b` or `z`, and every byte
    // of all three is checked afterwards.
    let (a, b, z) = (cu::alloc(LEN), cu::alloc(LEN), cu::alloc(LEN));
    let src = [0xEEu8; 2 * LEN];
    let mut dst = vec![0xC3u8; 2 * LEN];
    let mut stream: sys::CUstream = null_mut();
    // SAFETY: host buffers are valid for the lengths passed where a copy
    // could touch them (2 * LEN); device ranges are the cases under test.
    unsafe {
        for (d, v) in [(a, 0x11u8), (b, 0x22), (z, 0x33)] {
            cu::ok(sys::cuMemsetD8_v2(d, v, LEN), "fill");
        }
        cu::ok(sys::cuStreamCreate(&mut stream, 0), "cuStreamCreate");
        let s = src.as_ptr().cast::<c_void>();
        let o = dst.as_mut_ptr().cast::<c_void>();
        let end = a + LEN as u64;
        c.add(
            "HtoD across the end",
            sys::cuMemcpyHtoD_v2(end - 16, s, 64),
            INVALID_VALUE,
        );
        c.add(
            "HtoD one past the end",
            sys::cuMemcpyHtoD_v2(end, s, 1),
            INVALID_VALUE,
        );
        c.add(
            "HtoD whole+1",
            sys::cuMemcpyHtoD_v2(a, s, LEN + 1),
            INVALID_VALUE,
        );
        c.add(
            "DtoH across the end",
            sys::cuMemcpyDtoH_v2(o, a + 16, LEN),
            INVALID_VALUE,
        );
        c.add(
            "DtoH whole+1",
            sys::cuMemcpyDtoH_v2(o, a, LEN + 1),
            INVALID_VALUE,
        );
        c.add(
            "DtoD source across",
            sys::cuMemcpyDtoD_v2(b, a + 1, LEN),
            INVALID_VALUE,
        );
        c.add(
            "DtoD dest across",
            sys::cuMemcpyDtoD_v2(a + 1, b, LEN),
            INVALID_VALUE,
        );
        c.add(
            "MemsetD8 across",
            sys::cuMemsetD8_v2(end - 100, 0x77, 101),
            INVALID_VALUE,
        );
        c.add(
            "MemsetD16 across",
            sys::cuMemsetD16_v2(end - 2, 0x7777, 2),
            INVALID_VALUE,
        );
        c.add(
            "MemsetD32 across",
            sys::cuMemsetD32_v2(end - 4, 0x7777_7777, 2),
            INVALID_VALUE,
        );
        c.add(
            "HtoDAsync across",
            sys::cuMemcpyHtoDAsync_v2(end - 8, s, 16, stream),
            INVALID_VALUE,
        );
        c.add(
            "MemsetD32Async across",
            sys::cuMemsetD32Async(end - 4, 0x7777_7777, 2, stream),
            INVALID_VALUE,
        );
        c.add("stream still fine", sys::cuStreamSynchronize(stream), 0);
    }
    let untouched = |d, v: u8| read_back(d, LEN).iter().all(|&x| x == v);
    assert!(untouched(a, 0x11), "bytes of the allocation changed");
    assert!(untouched(b, 0x22), "bytes of a neighbour changed");
    assert!(untouched(z, 0x33), "bytes of a neighbour changed");
    assert!(
        dst.iter().all(|&x| x == 0xC3),
        "a refused DtoH wrote host memory"
    );
    c.check();
}

#[test]
fn calls_before_init_give_not_initialized() {
    if !is_child() {
        run_child("calls_before_init_give_not_initialized");
        return;
    }
    let mut c = Cases::default();
    let mut n = 0i32;
    let mut dev: sys::CUdevice = 0;
    let mut ctx: sys::CUcontext = null_mut();
    let mut p: sys::CUdeviceptr = 0;
    let mut s: sys::CUstream = null_mut();
    let mut m: sys::CUmodule = null_mut();
    let mut name = [0 as std::ffi::c_char; 64];
    let mut msg: *const std::ffi::c_char = null();
    // SAFETY: the out-pointers are valid locals.
    unsafe {
        // These two need no cuInit in the real driver.
        c.add("cuDriverGetVersion", sys::cuDriverGetVersion(&mut n), 0);
        c.add(
            "cuGetErrorString",
            sys::cuGetErrorString(sys::CUresult::CUDA_ERROR_INVALID_VALUE, &mut msg),
            0,
        );
        c.add(
            "cuDeviceGetCount",
            sys::cuDeviceGetCount(&mut n),
            NOT_INITIALIZED,
        );
        c.add(
            "cuDeviceGet",
            sys::cuDeviceGet(&mut dev, 0),
            NOT_INITIALIZED,
        );
        c.add(
            "cuDeviceGetName",
            sys::cuDeviceGetName(name.as_mut_ptr(), 64, 0),
            NOT_INITIALIZED,
        );
        c.add(
            "cuCtxCreate",
            sys::cuCtxCreate_v2(&mut ctx, 0, 0),
            NOT_INITIALIZED,
        );
        c.add(
            "cuCtxGetCurrent",
            sys::cuCtxGetCurrent(&mut ctx),
            NOT_INITIALIZED,
        );
        c.add("cuCtxSynchronize", sys::cuCtxSynchronize(), NOT_INITIALIZED);
        c.add(
            "cuMemAlloc",
            sys::cuMemAlloc_v2(&mut p, 16),
            NOT_INITIALIZED,
        );
        c.add(
            "cuStreamCreate",
            sys::cuStreamCreate(&mut s, 0),
            NOT_INITIALIZED,
        );
        c.add(
            "cuModuleLoadData",
            sys::cuModuleLoadData(&mut m, SIM_MODULE.as_ptr().cast()),
            NOT_INITIALIZED,
        );
        // And cuInit still works afterwards.
        c.add("cuInit", sys::cuInit(0), 0);
        c.add(
            "cuDeviceGetCount after cuInit",
            sys::cuDeviceGetCount(&mut n),
            0,
        );
    }
    c.check();
}

#[test]
fn init_without_a_mediator_gives_no_device() {
    if is_child() {
        let mut c = Cases::default();
        let t = Instant::now();
        // SAFETY: cuInit takes no pointers.
        unsafe {
            c.add("first cuInit", sys::cuInit(0), NO_DEVICE);
            c.add("second cuInit", sys::cuInit(0), NO_DEVICE);
        }
        c.check();
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "cuInit took {:?}",
            t.elapsed()
        );
        return;
    }
    // Nothing at the socket path.
    let h = Harness::without_mediator();
    h.run(h.self_test("init_without_a_mediator_gives_no_device"))
        .assert_success();
    // A stale socket file nobody listens on.
    let dir = tempfile::tempdir().expect("temp dir");
    let sock = dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&sock).expect("bind"));
    assert!(sock.exists());
    let mut cmd = h.self_test("init_without_a_mediator_gives_no_device");
    cmd.env("VGPU_MEDIATOR", format!("unix:{}", sock.display()));
    h.run(cmd).assert_success();
}

#[test]
fn unimplemented_export_gives_not_supported_and_names_itself_once() {
    if is_child() {
        let mut c = Cases::default();
        cu::init_context();
        // Graphics interop is not remoted (the worker cannot reach the
        // application's graphics objects).
        // SAFETY: the call is refused before its argument is read.
        unsafe {
            c.add(
                "first cuGraphicsUnregisterResource",
                sys::cuGraphicsUnregisterResource(null_mut()),
                NOT_SUPPORTED,
            );
            c.add(
                "second cuGraphicsUnregisterResource",
                sys::cuGraphicsUnregisterResource(null_mut()),
                NOT_SUPPORTED,
            );
        }
        c.check();
        return;
    }
    let mut h = Harness::start();
    h.env("VGPU_LOG", "1");
    let out = h.run(h.self_test("unimplemented_export_gives_not_supported_and_names_itself_once"));
    out.assert_success();
    // Whole-word matches only (not cuGraphicsUnregisterResourceX).
    let mentions = out
        .stderr
        .match_indices("cuGraphicsUnregisterResource")
        .filter(|(i, m)| {
            !out.stderr[i + m.len()..]
                .starts_with(|ch: char| ch.is_ascii_alphanumeric() || ch == '_')
        })
        .count();
    assert_eq!(
        mentions, 1,
        "cuGraphicsUnregisterResource must be named exactly once:\n{out}"
    );
}
