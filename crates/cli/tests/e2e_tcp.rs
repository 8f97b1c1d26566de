//! The TCP transport end to end: a real mediator that also listens on
//! `tcp://127.0.0.1:<free port>`, the simulated device, and client children
//! (this binary re-executed, cudarc's raw `sys` bindings) that reach it with
//! `VGPU_MEDIATOR=tcp://…`.
//!
//! Covered: copies with data checks (several 4 MiB pieces in flight), a
//! kernel launch, several threads (one TCP lane each), pinned host memory
//! kept in the client, `cuMemHostGetDevicePointer` refused, a lane
//! connection with a wrong token refused while the session goes on,
//! managed memory and host registration refused (no page can be shared), a
//! killed worker, `vgpu status` over TCP, and posted calls handed to the
//! client's sender thread reaching the worker in ticket order.

mod common;

use std::ffi::c_void;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::ptr::null_mut;
use std::thread;
use std::time::{Duration, Instant};

use common::cu::{self, Cases};
use common::{assert_same, is_child, pattern, sigkill, wait_gone, Harness, Running};
use cudarc::driver::sys;

const INVALID_VALUE: u32 = vgpu_abi::types::CUresult::CUDA_ERROR_INVALID_VALUE.0;
use common::SIM_MODULE;
/// Many 4 MiB TCP pieces, and not a multiple of anything.
const BIG: usize = (40 << 20) + 123;

fn log_lines<'a>(text: &'a str, needle: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.contains(needle)).collect()
}

#[test]
fn tcp_session_copies_launches_threads_and_local_pinned_memory() {
    if is_child() {
        return session_child();
    }
    let mut h = Harness::start_tcp();
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("trace.log");
    h.env("VGPU_LOG", "1");
    h.env("VGPU_TRACE", trace.to_str().expect("utf-8"));
    let out = common::run(
        h.self_test("tcp_session_copies_launches_threads_and_local_pinned_memory"),
        Duration::from_secs(120),
    );
    out.assert_success()
        .assert_line("no callback channel ok")
        .assert_line("done");
    let endpoint = h.mediator().tcp_endpoint();
    assert!(
        out.stderr
            .contains(&format!("connected to {endpoint} (from VGPU_MEDIATOR)"))
            && out.stderr.contains("lanes on TCP connections"),
        "{out}"
    );
    // The client said why pinned memory has no device address.
    assert!(
        out.stderr
            .contains("has no device address (CUDA_ERROR_INVALID_VALUE)"),
        "{out}"
    );
    // The main thread and 6 others each opened a TCP lane.
    let trace = std::fs::read_to_string(&trace).expect("trace");
    let lanes = trace
        .lines()
        .find_map(|l| l.strip_prefix("== vgpu lanes: "))
        .unwrap_or_else(|| panic!("no lane summary in the trace:\n{trace}"));
    let opened: u32 = lanes
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("lane count");
    assert!(opened >= 7, "only {opened} lanes: {lanes}");
    assert!(lanes.contains("opened on TCP"), "{lanes}");
    let log = h.mediator().log_text();
    assert_eq!(
        log_lines(&log, "session starting (remote client over TCP").len(),
        1,
        "{log}"
    );
    assert_eq!(
        log_lines(&log, "listening for this session's lanes").len(),
        1,
        "one lane listener per session:\n{log}"
    );
    assert!(
        log_lines(&log, "lane connection refused").is_empty(),
        "{log}"
    );
    // The client never asked the worker to share pages.
    assert!(log_lines(&log, "MemHostAlloc refused").is_empty(), "{log}");
    assert!(log_lines(&log, "MemShare refused").is_empty(), "{log}");
}

/// The same session as on a host of 4 CPUs or more (CI has two): every
/// TCP lane reads ahead (`VGPU_LANE_READAHEAD=1`), so the reader thread
/// hands over every request, in order, and the worker's sender thread
/// sends the large replies (the pieces of the 40 MiB copy back); and the
/// client posts through its sender thread (`VGPU_TCP_SENDER=1`). The
/// results are the same.
#[test]
fn tcp_session_with_lanes_reading_ahead() {
    if is_child() {
        return session_child();
    }
    let mut h = Harness::start_tcp_with_env(&[("VGPU_LANE_READAHEAD", "1")]);
    h.env("VGPU_LOG", "1");
    h.env("VGPU_TCP_SENDER", "1");
    let out = common::run(
        h.self_test("tcp_session_with_lanes_reading_ahead"),
        Duration::from_secs(120),
    );
    out.assert_success()
        .assert_line("no callback channel ok")
        .assert_line("done");
    let log = h.mediator().log_text();
    assert!(
        log_lines(&log, "lane: ").is_empty(),
        "a lane failed:
{log}"
    );
}

/// Posted calls that TCP lanes hand to the sender thread
/// (`VGPU_TCP_SENDER=1`, the default on hosts of 4 CPUs or more) reach the
/// worker before a call of another thread whose fence names them, and
/// before the worker runs anything after a thread that ended with calls
/// held.
#[test]
fn held_posted_calls_reach_the_worker_in_ticket_order() {
    if is_child() {
        return held_calls_child();
    }
    let mut h = Harness::start_tcp();
    h.env("VGPU_TCP_SENDER", "1");
    let out = common::run(
        h.self_test("held_posted_calls_reach_the_worker_in_ticket_order"),
        Duration::from_secs(60),
    );
    out.assert_success()
        .assert_line("held calls seen by another thread ok")
        .assert_line("held calls of an ended thread ok");
}

fn held_calls_child() {
    const WORDS: usize = 1024;
    const POSTS: u32 = 200;
    cu::init_context();
    let mut ctx: sys::CUcontext = null_mut();
    // SAFETY: valid out-pointer.
    cu::ok(unsafe { sys::cuCtxGetCurrent(&mut ctx) }, "cuCtxGetCurrent");
    let ctx = ctx as usize;
    let d = cu::alloc(WORDS * 4);
    // Posts POSTS memsets of `base + 1 ..= base + POSTS` on a stream of its
    // own and tells the main thread, with no synchronizing call; `linger`:
    // the thread then waits for the main thread's word before it ends.
    let poster = move |base: u32, linger: std::sync::mpsc::Receiver<()>| {
        let (posted_tx, posted_rx) = std::sync::mpsc::channel();
        let t = thread::spawn(move || {
            let mut stream: sys::CUstream = null_mut();
            // SAFETY: ctx is the live context of the main thread; valid
            // out-pointer; d holds WORDS words.
            unsafe {
                cu::ok(
                    sys::cuCtxSetCurrent(ctx as sys::CUcontext),
                    "cuCtxSetCurrent",
                );
                cu::ok(sys::cuStreamCreate(&mut stream, 0), "cuStreamCreate");
                for v in 1..=POSTS {
                    cu::ok(
                        sys::cuMemsetD32Async(d, base + v, WORDS, stream),
                        "cuMemsetD32Async",
                    );
                }
            }
            posted_tx.send(()).expect("the main thread waits");
            let _ = linger.recv();
        });
        posted_rx.recv().expect("the poster posted");
        t
    };
    let check = |want: u32, what: &str| {
        let mut got = vec![0u32; WORDS];
        // SAFETY: got holds WORDS words, d as many. A synchronous copy on
        // the legacy default stream waits for the poster's blocking stream.
        cu::ok(
            unsafe { sys::cuMemcpyDtoH_v2(got.as_mut_ptr().cast(), d, WORDS * 4) },
            "cuMemcpyDtoH",
        );
        assert!(got.iter().all(|&v| v == want), "{what}: {:?}", &got[..4]);
        println!("{what} ok");
    };

    // The poster's thread is alive and idle, its last calls held.
    let (go, linger) = std::sync::mpsc::channel();
    let t = poster(0, linger);
    check(POSTS, "held calls seen by another thread");
    go.send(()).expect("the poster lingers");
    assert!(t.join().is_ok(), "the first poster failed");

    // The poster's thread ends at once: its lane writes what it held.
    let (go, linger) = std::sync::mpsc::channel();
    drop(go);
    let t = poster(1000, linger);
    assert!(t.join().is_ok(), "the second poster failed");
    check(1000 + POSTS, "held calls of an ended thread");
}

fn session_child() {
    cu::init_context();
    // Synchronous copies of several pieces each way.
    cu::round_trip(&pattern(1, BIG), "a 40 MiB synchronous round trip");
    cu::round_trip(&pattern(2, 1), "one byte");

    // Asynchronous host-to-device copy (posted pieces), then back.
    let mut stream: sys::CUstream = null_mut();
    // SAFETY: valid out-pointer.
    cu::ok(
        unsafe { sys::cuStreamCreate(&mut stream, 0) },
        "cuStreamCreate",
    );
    let src = pattern(3, BIG);
    let d = cu::alloc(BIG);
    let mut back = vec![0u8; BIG];
    // SAFETY: src, back and d hold BIG bytes; src lives until the sync.
    unsafe {
        cu::ok(
            sys::cuMemcpyHtoDAsync_v2(d, src.as_ptr().cast(), BIG, stream),
            "cuMemcpyHtoDAsync",
        );
        cu::ok(
            sys::cuMemcpyDtoHAsync_v2(back.as_mut_ptr().cast(), d, BIG, stream),
            "cuMemcpyDtoHAsync",
        );
        cu::ok(sys::cuStreamSynchronize(stream), "cuStreamSynchronize");
    }
    assert_same(&src, &back, "an asynchronous 40 MiB round trip");

    // A kernel on the simulated device.
    let n = 100_000usize;
    let mut module: sys::CUmodule = null_mut();
    let mut func: sys::CUfunction = null_mut();
    let mut out_ptr = cu::alloc(n * 4);
    let (mut value, mut count) = (0xC0FF_EE11u32, i32::try_from(n).expect("fits"));
    let mut got = vec![0u32; n];
    // SAFETY: valid out-pointers; the image is NUL-terminated; the launch
    // parameters point at live locals of fill_u32's parameter types.
    unsafe {
        cu::ok(
            sys::cuModuleLoadData(&mut module, SIM_MODULE.as_ptr().cast()),
            "cuModuleLoadData",
        );
        cu::ok(
            sys::cuModuleGetFunction(&mut func, module, c"fill_u32".as_ptr()),
            "cuModuleGetFunction",
        );
        let mut params = [
            (&raw mut out_ptr).cast::<c_void>(),
            (&raw mut value).cast(),
            (&raw mut count).cast(),
        ];
        cu::ok(
            sys::cuLaunchKernel(
                func,
                u32::try_from(n.div_ceil(256)).expect("fits"),
                1,
                1,
                256,
                1,
                1,
                0,
                stream,
                params.as_mut_ptr(),
                null_mut(),
            ),
            "cuLaunchKernel",
        );
        cu::ok(
            sys::cuMemcpyDtoHAsync_v2(got.as_mut_ptr().cast(), out_ptr, n * 4, stream),
            "cuMemcpyDtoHAsync",
        );
        cu::ok(sys::cuStreamSynchronize(stream), "cuStreamSynchronize");
    }
    assert!(got.iter().all(|&v| v == value), "fill_u32 result");
    println!("kernel ok");

    threads();
    pinned(stream);
    no_shared_pages();
    no_callback_channel();
    println!("done");
}

/// Managed memory and host registration need pages the worker shares with
/// this process, which a TCP session cannot have: both are refused with
/// `CUDA_ERROR_NOT_SUPPORTED` (and a logged reason), and nothing is left
/// half-made.
fn no_shared_pages() {
    const NOT_SUPPORTED: u32 = vgpu_abi::types::CUresult::CUDA_ERROR_NOT_SUPPORTED.0;
    let mut dptr = 0;
    let mut page = vec![0u8; 8192];
    let mut c = Cases::default();
    // SAFETY: valid out-pointer; `page` outlives the call, which fails.
    unsafe {
        c.add(
            "cuMemAllocManaged over TCP",
            sys::cuMemAllocManaged(&mut dptr, 4096, 1),
            NOT_SUPPORTED,
        );
        c.add(
            "cuMemHostRegister over TCP",
            sys::cuMemHostRegister_v2(page.as_mut_ptr().cast(), page.len(), 0),
            NOT_SUPPORTED,
        );
        c.add(
            "cuMemHostUnregister over TCP",
            sys::cuMemHostUnregister(page.as_mut_ptr().cast()),
            vgpu_abi::types::CUresult::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED.0,
        );
    }
    c.check();
    assert_eq!(dptr, 0, "nothing written on failure");
    println!("no shared pages ok");
}

/// Async notifications (like host and log callbacks) run over the callback
/// channel, which a TCP session cannot open: registering is
/// `CUDA_ERROR_NOT_SUPPORTED` and writes no handle.
fn no_callback_channel() {
    unsafe extern "C" fn on_notification(
        _: *mut sys::CUasyncNotificationInfo,
        _: *mut c_void,
        _: sys::CUasyncCallbackHandle,
    ) {
    }
    let mut h: sys::CUasyncCallbackHandle = null_mut();
    let mut c = Cases::default();
    // SAFETY: a valid function and out-pointer; the call fails.
    unsafe {
        c.add(
            "cuDeviceRegisterAsyncNotification over TCP",
            sys::cuDeviceRegisterAsyncNotification(0, Some(on_notification), null_mut(), &mut h),
            vgpu_abi::types::CUresult::CUDA_ERROR_NOT_SUPPORTED.0,
        );
    }
    c.check();
    assert!(h.is_null(), "no handle written on failure");
    println!("no callback channel ok");
}

/// Six threads, each on its own lane, copying distinct patterns.
fn threads() {
    let mut ctx: sys::CUcontext = null_mut();
    // SAFETY: valid out-pointer.
    cu::ok(unsafe { sys::cuCtxGetCurrent(&mut ctx) }, "cuCtxGetCurrent");
    let ctx = ctx as usize;
    let workers: Vec<_> = (0..6u64)
        .map(|t| {
            thread::spawn(move || {
                // SAFETY: ctx is the live context of the main thread.
                cu::ok(
                    unsafe { sys::cuCtxSetCurrent(ctx as sys::CUcontext) },
                    "cuCtxSetCurrent",
                );
                for (i, len) in [1, 4096, 1 << 20, (17 << 20) + 5, 333]
                    .into_iter()
                    .enumerate()
                {
                    cu::round_trip(
                        &pattern(100 + t * 10 + i as u64, len),
                        &format!("thread {t} copy {i}"),
                    );
                }
            })
        })
        .collect();
    for (t, w) in workers.into_iter().enumerate() {
        assert!(w.join().is_ok(), "thread {t} failed");
    }
    println!("threads ok");
}

/// Pinned host memory on a TCP session: local pages, copies through the
/// byte path, no device address.
fn pinned(stream: sys::CUstream) {
    use sys::CUpointer_attribute::*;
    let len = (3 << 20) + 17;
    let flags = 0x1 | 0x2; // PORTABLE | DEVICEMAP
    let (mut a, mut b): (*mut c_void, *mut c_void) = (null_mut(), null_mut());
    let mut c = Cases::default();
    // SAFETY: valid out-pointers.
    unsafe {
        cu::ok(sys::cuMemHostAlloc(&mut a, len, flags), "cuMemHostAlloc");
        cu::ok(sys::cuMemAllocHost_v2(&mut b, len), "cuMemAllocHost");
    }
    assert!(!a.is_null() && !b.is_null());
    // SAFETY: both allocations hold len bytes, and nothing else uses them.
    let (sa, sb) = unsafe {
        (
            std::slice::from_raw_parts_mut(a.cast::<u8>(), len),
            std::slice::from_raw_parts_mut(b.cast::<u8>(), len),
        )
    };
    assert!(
        sa.iter().all(|&x| x == 0),
        "new pinned memory reads as zeros"
    );
    let src = pattern(77, len);
    sa.copy_from_slice(&src);
    let d = cu::alloc(len);
    // SAFETY: a, b and d hold len bytes; the stream is live.
    unsafe {
        cu::ok(
            sys::cuMemcpyHtoDAsync_v2(d, a.cast_const(), len, stream),
            "cuMemcpyHtoDAsync from pinned memory",
        );
        cu::ok(
            sys::cuMemcpyDtoHAsync_v2(b, d, len, stream),
            "cuMemcpyDtoHAsync into pinned memory",
        );
        cu::ok(sys::cuStreamSynchronize(stream), "cuStreamSynchronize");
    }
    assert_same(&src, sb, "pinned to device to pinned");
    // A pointer inside the allocation is host memory of this process.
    let inside = a as u64 + 4096;
    let (mut got_flags, mut mem_type, mut host, mut start, mut size) =
        (0u32, 0u32, 0u64, 0u64, 0usize);
    let mut dptr: sys::CUdeviceptr = 0;
    // SAFETY: every out-pointer is a live local of the attribute's size.
    unsafe {
        c.add(
            "cuMemHostGetFlags",
            sys::cuMemHostGetFlags(&mut got_flags, a),
            0,
        );
        c.add(
            "MEMORY_TYPE",
            sys::cuPointerGetAttribute(
                (&raw mut mem_type).cast(),
                CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                inside,
            ),
            0,
        );
        c.add(
            "HOST_POINTER",
            sys::cuPointerGetAttribute(
                (&raw mut host).cast(),
                CU_POINTER_ATTRIBUTE_HOST_POINTER,
                inside,
            ),
            0,
        );
        c.add(
            "RANGE_START_ADDR",
            sys::cuPointerGetAttribute(
                (&raw mut start).cast(),
                CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                inside,
            ),
            0,
        );
        c.add(
            "RANGE_SIZE",
            sys::cuPointerGetAttribute(
                (&raw mut size).cast(),
                CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                inside,
            ),
            0,
        );
        // No device address: refused, never made up.
        c.add(
            "cuMemHostGetDevicePointer",
            sys::cuMemHostGetDevicePointer_v2(&mut dptr, a, 0),
            INVALID_VALUE,
        );
        c.add(
            "DEVICE_POINTER",
            sys::cuPointerGetAttribute(
                (&raw mut dptr).cast(),
                CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                inside,
            ),
            INVALID_VALUE,
        );
    }
    c.check();
    assert_eq!(got_flags, flags, "cuMemHostGetFlags");
    assert_eq!(mem_type, 1, "CU_MEMORYTYPE_HOST");
    assert_eq!(host, inside, "HOST_POINTER");
    assert_eq!(
        (start, size),
        (a as u64, len),
        "RANGE_START_ADDR, RANGE_SIZE"
    );
    assert_eq!(dptr, 0, "nothing written on failure");
    // SAFETY: a and b came from cuMemHostAlloc/cuMemAllocHost; d from cuMemAlloc.
    unsafe {
        cu::ok(sys::cuMemFreeHost(a), "cuMemFreeHost");
        cu::ok(sys::cuMemFreeHost(b), "cuMemFreeHost");
        cu::ok(sys::cuMemFree_v2(d), "cuMemFree");
        let mut c2 = Cases::default();
        c2.add("cuMemFreeHost twice", sys::cuMemFreeHost(a), INVALID_VALUE);
        c2.add(
            "cuMemHostGetFlags after free",
            sys::cuMemHostGetFlags(&mut got_flags, b),
            INVALID_VALUE,
        );
        c2.check();
    }
    println!("pinned ok");
}

/// The port of the worker's lane listener, from the mediator log.
fn lane_port(h: &Harness) -> u16 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = h.mediator().log_text();
        let port = log.lines().find_map(|l| {
            let (_, rest) = l.split_once("listening for this session's lanes lanes=")?;
            rest.trim().rsplit_once(':')?.1.parse().ok()
        });
        if let Some(p) = port {
            return p;
        }
        assert!(Instant::now() < deadline, "no lane listener logged:\n{log}");
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn lane_connections_with_a_wrong_token_are_refused() {
    if is_child() {
        return wrong_token_child();
    }
    let h = Harness::start_tcp();
    let mut client = Running::spawn(h.self_test("lane_connections_with_a_wrong_token_are_refused"));
    client.expect_line("ready", Duration::from_secs(30));
    let port = lane_port(&h);
    // Two strangers reach the lane port before the client's next lane: one
    // with 16 wrong bytes, one with too few.
    let mut wrong = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    wrong.write_all(&[0x5a; 16]).expect("write");
    let mut short = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    short.write_all(b"short").expect("write");
    drop(short);
    client.send("go");
    client
        .finish(Duration::from_secs(60))
        .assert_success()
        .assert_line("second lane ok");
    let log = h.mediator().log_text();
    let refused = log_lines(&log, "lane connection refused");
    assert_eq!(refused.len(), 2, "{log}");
    assert!(refused[0].contains("wrong token"), "{log}");
    assert!(refused[1].contains("no token"), "{log}");
    // The worker closed the stranger's connection.
    wrong
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut buf = [0u8; 16];
    match wrong.read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("the refused connection is still open: {other:?}"),
    }
}

fn wrong_token_child() {
    cu::init_context();
    cu::round_trip(&pattern(5, 1 << 20), "first lane");
    println!("ready");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).expect("read stdin");
    let mut ctx: sys::CUcontext = null_mut();
    // SAFETY: valid out-pointer.
    cu::ok(unsafe { sys::cuCtxGetCurrent(&mut ctx) }, "cuCtxGetCurrent");
    let ctx = ctx as usize;
    thread::spawn(move || {
        // SAFETY: ctx is the live context of the main thread.
        cu::ok(
            unsafe { sys::cuCtxSetCurrent(ctx as sys::CUcontext) },
            "cuCtxSetCurrent",
        );
        cu::round_trip(&pattern(6, (20 << 20) + 1), "second lane");
    })
    .join()
    .expect("the second lane's thread");
    cu::round_trip(&pattern(7, 4096), "first lane again");
    println!("second lane ok");
}

#[test]
fn killed_worker_gives_device_unavailable_over_tcp() {
    if is_child() {
        if std::env::var("VGPU_E2E_MODE").is_ok_and(|m| m == "quick") {
            cu::init_context();
            cu::round_trip(&pattern(9, 3 << 20), "a new client");
            println!("quick client ok");
            return;
        }
        return common::loss::after_loss_child(false);
    }
    let h = Harness::start_tcp();
    let test = "killed_worker_gives_device_unavailable_over_tcp";
    let mut client = Running::spawn(h.self_test(test));
    client.expect_line("ready", Duration::from_secs(30));
    let worker = h.mediator().wait_worker(1, Duration::from_secs(10));
    assert!(
        common::is_mediator_process(worker),
        "worker {worker} is not running"
    );
    sigkill(worker);
    assert!(
        wait_gone(worker, Duration::from_secs(5)),
        "worker {worker} survived SIGKILL"
    );
    // A dead leader thread is a zombie while other threads still hold the
    // descriptors; once the supervisor has reaped the worker, every one of
    // its connections is closed and its FIN sent.
    assert!(
        wait_reaped(worker, Duration::from_secs(5)),
        "worker {worker} was not reaped"
    );
    client.send("go");
    client
        .finish(Duration::from_secs(30))
        .assert_success()
        .assert_line("all calls failed fast");
    // The supervisor is unharmed: a new TCP session works, also with
    // VGPU_TRANSPORT=socket (auto is what the rest of this file uses).
    for transport in ["auto", "socket"] {
        let mut cmd = h.self_test(test);
        cmd.env("VGPU_E2E_MODE", "quick")
            .env("VGPU_TRANSPORT", transport);
        h.run(cmd).assert_success().assert_line("quick client ok");
    }
}

/// Waits until `pid` is gone from `/proc` (reaped); false after `timeout`.
fn wait_reaped(pid: u32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(5));
    }
    true
}

#[test]
fn vgpu_status_and_doctor_answer_over_tcp() {
    let h = Harness::start_tcp();
    let endpoint = h.mediator().tcp_endpoint();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_vgpu"));
    cmd.args(["status", "--mediator", &endpoint]);
    let out = common::run(cmd, Duration::from_secs(60));
    out.assert_success();
    assert!(
        out.stdout.contains("answered the handshake") && out.stdout.contains("1 device(s)"),
        "{out}"
    );
    // doctor's verdict depends on the machine; its mediator line must not.
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_vgpu"));
    cmd.args(["doctor", "--mediator", &endpoint]);
    let out = common::run(cmd, Duration::from_secs(60));
    assert!(
        out.stdout.lines().any(|l| l.starts_with("ok")
            && l[4..].trim_start().starts_with("mediator ")
            && l.contains("answered the handshake")),
        "{out}"
    );
    // Both probes were real sessions over TCP.
    let log = h.mediator().log_text();
    assert_eq!(
        log_lines(&log, "session starting (remote client over TCP").len(),
        2,
        "{log}"
    );
}
