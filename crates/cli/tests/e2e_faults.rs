//! Concurrency and faults, end to end: many client threads in one process,
//! a client killed in the middle of a large copy, and a worker or the whole
//! mediator killed under a live client.
//!
//! Each test re-executes this binary as the client child (cudarc's raw
//! `sys` bindings, loaded from the harness's lib dir). `VGPU_E2E_MODE=quick`
//! turns a child into a short "does a new client work" check instead.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use common::cu;
use common::{assert_same, is_alive, is_child, pattern, sigkill, wait_gone, Harness, Running};
use cudarc::driver::sys;

const MODE_ENV: &str = "VGPU_E2E_MODE";

fn quick_mode() -> bool {
    std::env::var(MODE_ENV).is_ok_and(|m| m == "quick")
}

/// `cuInit` is among the calls checked after the loss.
fn init_mode() -> bool {
    std::env::var(MODE_ENV).is_ok_and(|m| m == "init")
}

/// A short client: allocate, copy a pattern in and out, check, free.
fn quick_client() {
    cu::init_context();
    cu::round_trip(&pattern(99, 3 << 20), "a new client");
    println!("quick client ok");
}

/// Asserts that a fresh client of `h` works.
fn assert_new_client_works(h: &Harness, test: &str) {
    let mut cmd = h.self_test(test);
    cmd.env(MODE_ENV, "quick");
    h.run(cmd).assert_success().assert_line("quick client ok");
}

#[test]
fn sixteen_threads_copy_distinct_patterns() {
    if is_child() {
        return threads_child();
    }
    let h = Harness::start();
    let out = common::run(
        h.self_test("sixteen_threads_copy_distinct_patterns"),
        Duration::from_secs(300),
    );
    out.assert_success().assert_line("threads ok");
    println!("{}", out.stdout);
}

fn threads_child() {
    const THREADS: usize = 16;
    const ITERS: usize = 200;
    const MAX: usize = 1 << 20;
    let ctx = cu::init_context() as usize;
    let t0 = Instant::now();
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            thread::spawn(move || {
                // SAFETY: ctx is the live context made by init_context.
                cu::ok(
                    unsafe { sys::cuCtxSetCurrent(ctx as sys::CUcontext) },
                    "cuCtxSetCurrent",
                );
                let mut rng =
                    0x9E37_79B9_7F4A_7C15u64 ^ (t as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
                let mut bytes = 0usize;
                for i in 0..ITERS {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    // Log-uniform sizes from 1 B to 1 MiB, both ends included.
                    let len = match i {
                        0 => 1,
                        1 => MAX,
                        _ => {
                            let base = 1usize << (rng % 21);
                            (base + (rng >> 8) as usize % base).min(MAX)
                        }
                    };
                    let src = pattern((t * ITERS + i) as u64 + 1000, len);
                    let mut back = vec![0u8; len];
                    let d = cu::alloc(len);
                    // SAFETY: both host buffers hold len bytes; d holds len bytes.
                    unsafe {
                        cu::ok(
                            sys::cuMemcpyHtoD_v2(d, src.as_ptr().cast(), len),
                            "cuMemcpyHtoD",
                        );
                        cu::ok(
                            sys::cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), d, len),
                            "cuMemcpyDtoH",
                        );
                        cu::ok(sys::cuMemFree_v2(d), "cuMemFree");
                    }
                    assert_same(
                        &src,
                        &back,
                        &format!("thread {t} iteration {i} ({len} bytes at {d:#x})"),
                    );
                    bytes += len;
                }
                bytes
            })
        })
        .collect();
    let mut total = 0;
    let mut failed = Vec::new();
    for (t, w) in workers.into_iter().enumerate() {
        match w.join() {
            Ok(b) => total += b,
            Err(_) => failed.push(t),
        }
    }
    assert!(failed.is_empty(), "threads {failed:?} failed");
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "{THREADS} threads x {ITERS} iterations: {total} bytes each way in {secs:.2} s ({:.0} MB/s both ways)",
        2.0 * total as f64 / secs / 1e6
    );
    println!("threads ok");
}

#[test]
fn client_killed_mid_copy_frees_its_worker() {
    if is_child() {
        if quick_mode() {
            return quick_client();
        }
        return copy_loop_child();
    }
    let h = Harness::start();
    let mut client = Running::spawn(h.self_test("client_killed_mid_copy_frees_its_worker"));
    client.expect_line("copied 1", Duration::from_secs(60));
    let worker = h.mediator().wait_worker(1, Duration::from_secs(10));
    assert!(is_alive(worker), "worker {worker} is not running");
    // Land inside a copy: the loop does nothing else.
    thread::sleep(Duration::from_millis(37));
    client.kill();
    let t = Instant::now();
    assert!(
        wait_gone(worker, Duration::from_secs(5)),
        "worker {worker} still runs 5 s after its client was killed; mediator log:\n{}",
        h.mediator().log_text()
    );
    println!(
        "worker {worker} exited {:?} after its client was killed",
        t.elapsed()
    );
    assert_new_client_works(&h, "client_killed_mid_copy_frees_its_worker");
    let second = h.mediator().wait_worker(2, Duration::from_secs(5));
    assert_ne!(second, worker);
}

/// A client killed while its host callback runs (the worker's trampoline
/// waits for its answer on the callback channel) leaves a worker that exits
/// cleanly at once, and the mediator serves the next client.
#[test]
fn client_killed_in_callback_frees_its_worker() {
    if is_child() {
        if quick_mode() {
            return quick_client();
        }
        return callback_child();
    }
    let h = Harness::start();
    let mut client = Running::spawn(h.self_test("client_killed_in_callback_frees_its_worker"));
    client.expect_line("in callback", Duration::from_secs(60));
    let worker = h.mediator().wait_worker(1, Duration::from_secs(10));
    assert!(is_alive(worker), "worker {worker} is not running");
    client.kill();
    assert!(
        wait_gone(worker, Duration::from_secs(5)),
        "worker {worker} still runs 5 s after its client was killed in a callback; mediator log:\n{}",
        h.mediator().log_text()
    );
    assert_new_client_works(&h, "client_killed_in_callback_frees_its_worker");
}

/// A CUDA call from inside a host callback, even a synchronizing one on the
/// very stream that waits for the callback, returns at once with
/// `CUDA_ERROR_NOT_PERMITTED` (what the driver documents it may return)
/// instead of deadlocking the client.
#[test]
fn cuda_call_inside_callback_is_not_permitted() {
    if is_child() {
        return inner_call_child();
    }
    let h = Harness::start();
    let out = h.run(h.self_test("cuda_call_inside_callback_is_not_permitted"));
    out.assert_success().assert_line("inner 800 800");
}

fn inner_call_child() {
    use std::sync::atomic::{AtomicU32, Ordering};
    static INFO: AtomicU32 = AtomicU32::new(0);
    static SYNC: AtomicU32 = AtomicU32::new(0);
    unsafe extern "C" fn inner(_: *mut std::ffi::c_void) {
        let (mut free, mut total) = (0, 0);
        // SAFETY: out-pointers to locals.
        let r = unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) };
        INFO.store(cu::code(r), Ordering::SeqCst);
        // SAFETY: the NULL stream, the one this callback holds up.
        let r = unsafe { sys::cuStreamSynchronize(std::ptr::null_mut()) };
        SYNC.store(cu::code(r), Ordering::SeqCst);
    }
    cu::init_context();
    // SAFETY: a function that takes no data; the NULL stream.
    cu::ok(
        unsafe { sys::cuLaunchHostFunc(std::ptr::null_mut(), Some(inner), std::ptr::null_mut()) },
        "cuLaunchHostFunc",
    );
    // SAFETY: the NULL stream.
    cu::ok(
        unsafe { sys::cuStreamSynchronize(std::ptr::null_mut()) },
        "cuStreamSynchronize",
    );
    println!(
        "inner {} {}",
        INFO.load(Ordering::SeqCst),
        SYNC.load(Ordering::SeqCst)
    );
}

/// Enqueues a host function that announces itself and then sleeps until
/// killed (or 60 s pass), and waits for it.
fn callback_child() {
    unsafe extern "C" fn block(_: *mut std::ffi::c_void) {
        println!("in callback");
        thread::sleep(Duration::from_secs(60));
    }
    cu::init_context();
    // SAFETY: a function that takes no data; the NULL stream.
    cu::ok(
        unsafe { sys::cuLaunchHostFunc(std::ptr::null_mut(), Some(block), std::ptr::null_mut()) },
        "cuLaunchHostFunc",
    );
    // SAFETY: the NULL stream.
    cu::ok(
        unsafe { sys::cuStreamSynchronize(std::ptr::null_mut()) },
        "cuStreamSynchronize",
    );
    panic!("nobody killed the client in its callback");
}

/// Copies 64 MiB host-to-device in a loop, printing `copied N` after each,
/// until killed (or 60 s pass).
fn copy_loop_child() {
    const LEN: usize = 64 << 20;
    cu::init_context();
    let d = cu::alloc(LEN);
    let src = pattern(7, LEN);
    let t0 = Instant::now();
    for i in 1.. {
        // SAFETY: src holds LEN bytes; d holds LEN bytes.
        cu::ok(
            unsafe { sys::cuMemcpyHtoD_v2(d, src.as_ptr().cast(), LEN) },
            "cuMemcpyHtoD",
        );
        println!("copied {i}");
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "nobody killed the copy loop"
        );
    }
}

#[test]
fn killed_worker_gives_device_unavailable() {
    if is_child() {
        if quick_mode() {
            return quick_client();
        }
        return common::loss::after_loss_child(init_mode());
    }
    let h = Harness::start();
    let mut client = Running::spawn(h.self_test("killed_worker_gives_device_unavailable"));
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
    client.send("go");
    client
        .finish(Duration::from_secs(30))
        .assert_success()
        .assert_line("all calls failed fast");
    // The supervisor is unharmed: a new session works.
    assert_new_client_works(&h, "killed_worker_gives_device_unavailable");
}

#[test]
fn killed_mediator_gives_device_unavailable() {
    if is_child() {
        return common::loss::after_loss_child(init_mode());
    }
    kill_mediator_under_a_client("killed_mediator_gives_device_unavailable", false);
}

#[test]
fn cuinit_after_mediator_loss_gives_device_unavailable() {
    if is_child() {
        return common::loss::after_loss_child(init_mode());
    }
    kill_mediator_under_a_client("cuinit_after_mediator_loss_gives_device_unavailable", true);
}

/// Starts `test`'s child, kills the supervisor and the worker once it is
/// ready, and asserts that the child saw every call fail fast.
fn kill_mediator_under_a_client(test: &str, with_init: bool) {
    let mut h = Harness::start();
    if with_init {
        h.env(MODE_ENV, "init");
    }
    let mut client = Running::spawn(h.self_test(test));
    client.expect_line("ready", Duration::from_secs(30));
    let worker = h.mediator().wait_worker(1, Duration::from_secs(10));
    h.mediator_mut().kill();
    assert!(
        wait_gone(worker, Duration::from_secs(5)),
        "worker {worker} survived SIGKILL"
    );
    client.send("go");
    client
        .finish(Duration::from_secs(30))
        .assert_success()
        .assert_line("all calls failed fast");
}
