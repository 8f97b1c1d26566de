//! A crashed worker and a restarted supervisor, end to end (issue 5,
//! "Survive" 4 and 5), beyond what `e2e_faults.rs` covers (SIGKILLed workers
//! and mediators between calls):
//! - a worker that crashes (SIGABRT) in the middle of a client's copy: the
//!   call in flight and every later one, `cuInit` included, return
//!   CUDA_ERROR_DEVICE_UNAVAILABLE at once;
//! - a supervisor stopped with SIGTERM (it exits 0 and removes its socket)
//!   and a new one started on the same socket: the live session keeps
//!   working, since its worker is a process of its own, and new clients
//!   reach the new supervisor;
//! - a SIGTERM or SIGINT to the supervisor's whole process group (a
//!   terminal's Ctrl-C, a service manager) stops the supervisor only.
//!
//! Clients are this test binary re-executed (`common::Harness::self_test`),
//! driving the Driver API through cudarc's raw bindings; `VGPU_E2E_MODE`
//! picks what a child does.

mod common;
mod e2e_survive_support;

use std::io::BufRead;
use std::time::{Duration, Instant};

use common::cu;
use common::{is_alive, is_child, pattern, wait_gone, Harness, Running};
use cudarc::driver::sys;
use e2e_survive_support::{logged_workers, wait_log, Supervisor};

const DEVICE_UNAVAILABLE: u32 = vgpu_abi::types::CUresult::CUDA_ERROR_DEVICE_UNAVAILABLE.0;
const NO_DEVICE: u32 = vgpu_abi::types::CUresult::CUDA_ERROR_NO_DEVICE.0;
const MODE_ENV: &str = "VGPU_E2E_MODE";
/// How long any call may take once the worker is gone.
const QUICK: Duration = Duration::from_secs(2);

fn mode() -> String {
    std::env::var(MODE_ENV).unwrap_or_default()
}

fn htod(d: sys::CUdeviceptr, src: &[u8]) -> sys::CUresult {
    // SAFETY: src is a live buffer of src.len() bytes.
    unsafe { sys::cuMemcpyHtoD_v2(d, src.as_ptr().cast(), src.len()) }
}

fn dtoh(dst: &mut [u8], d: sys::CUdeviceptr) -> sys::CUresult {
    // SAFETY: dst is a live buffer of dst.len() bytes.
    unsafe { sys::cuMemcpyDtoH_v2(dst.as_mut_ptr().cast(), d, dst.len()) }
}

/// Allocates, writes `seed`'s pattern, reads it back and checks it.
fn round_trip(len: usize, seed: u64) -> sys::CUdeviceptr {
    let d = cu::alloc(len);
    let src = pattern(seed, len);
    let mut back = vec![0u8; len];
    cu::ok(htod(d, &src), "cuMemcpyHtoD");
    cu::ok(dtoh(&mut back, d), "cuMemcpyDtoH");
    assert!(back == src, "the data read back differs (seed {seed})");
    d
}

fn read_stdin_line() -> String {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .expect("read stdin");
    line
}

#[test]
fn worker_crash_mid_copy_gives_device_unavailable() {
    if is_child() {
        return crash_child();
    }
    let h = Harness::start();
    let mut client = Running::spawn(h.self_test("worker_crash_mid_copy_gives_device_unavailable"));
    client.expect_line("copied 2", Duration::from_secs(60));
    let worker = crash_worker(&h, 1);
    let out = client.finish(Duration::from_secs(30));
    out.assert_success().assert_line("every call failed fast");
    println!("{}", out.stdout);
    let m = h.mediator();
    wait_log(
        || m.log_text(),
        Duration::from_secs(5),
        "the supervisor reaping the crashed worker",
        |log| log.contains(&format!("worker ended abnormally worker={worker}")),
    );
    // Other and later sessions are unharmed.
    let mut quick = h.self_test("worker_crash_mid_copy_gives_device_unavailable");
    quick.env(MODE_ENV, "quick");
    h.run(quick).assert_success().assert_line("quick client ok");
}

/// Copies 32 MiB host-to-device in a loop until a copy fails (the worker
/// crashed under it); then every call, `cuInit` first, must return
/// CUDA_ERROR_DEVICE_UNAVAILABLE within [`QUICK`], twice over.
fn crash_child() {
    if mode() == "quick" {
        cu::init_context();
        let d = round_trip(1 << 20, 5);
        // SAFETY: d is a live allocation.
        cu::ok(unsafe { sys::cuMemFree_v2(d) }, "cuMemFree");
        println!("quick client ok");
        return;
    }
    const LEN: usize = 32 << 20;
    cu::init_context();
    let d = cu::alloc(LEN);
    let src = pattern(3, LEN);
    let t0 = Instant::now();
    let mut copies = 0;
    let failed = loop {
        let t = Instant::now();
        let r = htod(d, &src);
        if cu::code(r) != 0 {
            break (r, t.elapsed());
        }
        copies += 1;
        println!("copied {copies}");
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "nobody crashed the worker"
        );
    };
    assert_eq!(
        cu::code(failed.0),
        DEVICE_UNAVAILABLE,
        "the copy in flight returned {:?}",
        failed.0
    );
    println!(
        "the copy in flight failed with {:?} after {copies} copies, {:?} into the call",
        failed.0, failed.1
    );
    let mut cases = cu::Cases::default();
    let mut slow = Vec::new();
    for round in ["", " again"] {
        let mut timed = |name: &str, call: &mut dyn FnMut() -> sys::CUresult| {
            let t = Instant::now();
            let r = call();
            if t.elapsed() > QUICK {
                slow.push(format!("{name}{round} took {:?}", t.elapsed()));
            }
            cases.add(format!("{name}{round}"), r, DEVICE_UNAVAILABLE);
        };
        let mut fresh: sys::CUdeviceptr = 0;
        let mut back = vec![0u8; 4096];
        let mut ctx = std::ptr::null_mut();
        // SAFETY: out-pointers are live locals; buffers hold their lengths.
        unsafe {
            timed("cuInit", &mut || sys::cuInit(0));
            timed("cuMemAlloc", &mut || sys::cuMemAlloc_v2(&mut fresh, 256));
            timed("cuMemcpyDtoH", &mut || dtoh(&mut back, d));
            timed("cuMemcpyHtoD", &mut || htod(d, &src[..4096]));
            timed("cuMemsetD8", &mut || sys::cuMemsetD8_v2(d, 0, 4096));
            timed("cuCtxSynchronize", &mut || sys::cuCtxSynchronize());
            timed("cuCtxCreate", &mut || sys::cuCtxCreate_v2(&mut ctx, 0, 0));
            timed("cuMemFree", &mut || sys::cuMemFree_v2(d));
        }
    }
    assert!(
        slow.is_empty(),
        "calls were slow after the crash: {slow:#?}"
    );
    cases.check();
    // Answered from the connect-time snapshot, as docs/adr/0003 says.
    let mut count = 0;
    // SAFETY: the out-pointer is a live local.
    cu::ok(
        unsafe { sys::cuDeviceGetCount(&mut count) },
        "cuDeviceGetCount after the crash",
    );
    assert_eq!(count, 1);
    println!("every call failed fast");
}

/// A client of the restart tests: a session with memory; `ready`; then, for
/// each line on stdin, a check that the old memory is intact and new memory
/// works (`still works N`), until stdin closes.
fn live_session_child() {
    cu::init_context();
    let kept = round_trip(4 << 20, 1);
    println!("ready");
    let mut n = 0;
    while !read_stdin_line().is_empty() {
        n += 1;
        let mut back = vec![0u8; 4 << 20];
        cu::ok(dtoh(&mut back, kept), "cuMemcpyDtoH of the kept memory");
        assert!(back == pattern(1, 4 << 20), "the kept memory changed");
        let d = round_trip(1 << 20, 10 + n);
        // SAFETY: d is a live allocation.
        cu::ok(unsafe { sys::cuMemFree_v2(d) }, "cuMemFree");
        println!("still works {n}");
    }
}

/// A client that only checks `cuInit` against a mediator that is not there.
fn no_supervisor_child() {
    let t = Instant::now();
    // SAFETY: no arguments.
    let r = unsafe { sys::cuInit(0) };
    assert!(t.elapsed() < QUICK, "cuInit took {:?}", t.elapsed());
    assert_eq!(cu::code(r), NO_DEVICE, "cuInit returned {r:?}");
    println!("no supervisor: cuInit fails fast");
}

fn quick_child() {
    cu::init_context();
    let d = round_trip(1 << 20, 77);
    // SAFETY: d is a live allocation.
    cu::ok(unsafe { sys::cuMemFree_v2(d) }, "cuMemFree");
    println!("quick client ok");
}

fn restart_child() {
    match mode().as_str() {
        "quick" => quick_child(),
        "none" => no_supervisor_child(),
        _ => live_session_child(),
    }
}

/// A harness whose clients find `sup`.
fn harness_for(sup: &Supervisor) -> Harness {
    let mut h = Harness::without_mediator();
    h.env("VGPU_MEDIATOR", &sup.endpoint());
    h
}

#[track_caller]
fn run_mode(h: &Harness, test: &str, mode: &str) -> common::Output {
    let mut cmd = h.self_test(test);
    cmd.env(MODE_ENV, mode);
    let out = h.run(cmd);
    out.assert_success();
    out
}

#[test]
fn supervisor_restart_keeps_live_sessions() {
    const TEST: &str = "supervisor_restart_keeps_live_sessions";
    if is_child() {
        return restart_child();
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let (socket, log) = (dir.path().join("m.sock"), dir.path().join("mediator.log"));
    let build = common::build();
    let mut first = Supervisor::start(&build, &socket, &log, &[], false);
    let h = harness_for(&first);
    let mut live = Running::spawn(h.self_test(TEST));
    live.expect_line("ready", Duration::from_secs(30));
    let worker = *logged_workers(&first.log_text())
        .first()
        .expect("the first supervisor logged the live session's worker");

    first.signal(libc::SIGTERM);
    let status = first.wait(Duration::from_secs(10));
    assert!(
        status.success(),
        "the supervisor exited {status} on SIGTERM, want 0"
    );
    assert!(
        !socket.exists(),
        "the supervisor left its socket behind on SIGTERM"
    );
    assert!(
        is_alive(worker),
        "worker {worker} died with its supervisor; log:\n{}",
        first.log_text()
    );
    live.send("go");
    live.expect_line("still works 1", Duration::from_secs(30));
    run_mode(&h, TEST, "none").assert_line("no supervisor: cuInit fails fast");

    let second = Supervisor::start(&build, &socket, &log, &[], false);
    live.send("go");
    live.expect_line("still works 2", Duration::from_secs(30));
    run_mode(&h, TEST, "quick").assert_line("quick client ok");
    let workers = logged_workers(&second.log_text());
    assert_eq!(workers.len(), 2, "log:\n{}", second.log_text());
    assert_ne!(workers[1], worker);
    live.send("go");
    live.expect_line("still works 3", Duration::from_secs(30));

    live.finish(Duration::from_secs(30)).assert_success();
    assert!(
        wait_gone(worker, Duration::from_secs(10)),
        "worker {worker} of the stopped supervisor outlived its client"
    );
    drop(first);
}

/// Starts a supervisor in a process group of its own with a live session,
/// signals the whole group with `sig`, and checks that only the supervisor
/// stopped.
fn group_signal_spares_workers(test: &str, sig: libc::c_int) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (socket, log) = (dir.path().join("m.sock"), dir.path().join("mediator.log"));
    let build = common::build();
    let mut sup = Supervisor::start(&build, &socket, &log, &[], true);
    let h = harness_for(&sup);
    let mut live = Running::spawn(h.self_test(test));
    live.expect_line("ready", Duration::from_secs(30));
    let worker = *logged_workers(&sup.log_text())
        .first()
        .expect("the supervisor logged the worker");

    sup.signal_group(sig);
    let status = sup.wait(Duration::from_secs(10));
    assert!(status.success(), "the supervisor exited {status}, want 0");
    // Give a dying worker time to be gone before looking.
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        is_alive(worker),
        "worker {worker} died from a signal to its supervisor's process group; log:\n{}",
        sup.log_text()
    );
    live.send("go");
    live.expect_line("still works 1", Duration::from_secs(30));
    live.finish(Duration::from_secs(30)).assert_success();
    assert!(wait_gone(worker, Duration::from_secs(10)));
}

#[test]
fn sigterm_to_the_supervisors_group_spares_workers() {
    const TEST: &str = "sigterm_to_the_supervisors_group_spares_workers";
    if is_child() {
        return restart_child();
    }
    group_signal_spares_workers(TEST, libc::SIGTERM);
}

#[test]
fn ctrl_c_on_the_supervisors_group_spares_workers() {
    const TEST: &str = "ctrl_c_on_the_supervisors_group_spares_workers";
    if is_child() {
        return restart_child();
    }
    group_signal_spares_workers(TEST, libc::SIGINT);
}

/// SIGABRTs (a crash, as an abort in the driver is) worker number `n` of `h`'s mediator once it runs, and waits for
/// it to be gone; returns its pid.
fn crash_worker(h: &Harness, n: usize) -> u32 {
    let worker = h.mediator().wait_worker(n, Duration::from_secs(10));
    assert!(
        common::is_mediator_process(worker),
        "worker {worker} is not running"
    );
    let pid = libc::pid_t::try_from(worker).expect("pid fits pid_t");
    // SAFETY: kill(2) has no memory effects; the pid is a live worker of
    // this test's mediator (checked just above).
    assert_eq!(unsafe { libc::kill(pid, libc::SIGABRT) }, 0);
    assert!(
        wait_gone(worker, Duration::from_secs(5)),
        "worker {worker} survived SIGABRT"
    );
    worker
}

#[test]
fn c_client_survives_its_worker_crashing_mid_copy() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = e2e_survive_support::c_program(dir.path(), "worker_loss");
    let mut client = Running::spawn(h.command(&exe));
    client.expect_line("copied 2", Duration::from_secs(60));
    crash_worker(&h, 1);
    let out = client.finish(Duration::from_secs(30));
    assert!(
        out.status.success(),
        "the C client did not survive its worker's crash ({}):\n{out}",
        out.status
    );
    out.assert_line("every call failed fast");
}

#[test]
fn cuinit_first_after_a_worker_crash_gives_device_unavailable() {
    const TEST: &str = "cuinit_first_after_a_worker_crash_gives_device_unavailable";
    if is_child() {
        cu::init_context();
        let d = round_trip(1 << 20, 9);
        println!("ready");
        read_stdin_line();
        let t = Instant::now();
        // SAFETY: no arguments.
        let r = unsafe { sys::cuInit(0) };
        assert!(t.elapsed() < QUICK, "cuInit took {:?}", t.elapsed());
        let mut back = vec![0u8; 4096];
        let r2 = dtoh(&mut back, d);
        println!("cuInit {} then cuMemcpyDtoH {}", cu::code(r), cu::code(r2));
        return;
    }
    let h = Harness::start();
    let mut client = Running::spawn(h.self_test(TEST));
    client.expect_line("ready", Duration::from_secs(30));
    crash_worker(&h, 1);
    let out = client.finish(Duration::from_secs(30));
    out.assert_success().assert_line(&format!(
        "cuInit {DEVICE_UNAVAILABLE} then cuMemcpyDtoH {DEVICE_UNAVAILABLE}"
    ));
}
