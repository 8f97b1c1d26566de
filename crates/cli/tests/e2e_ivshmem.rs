//! The ivshmem transport end to end, without QEMU: a real mediator that
//! listens on `ivshmem:PATH` with the simulated device, a stand-in for QEMU
//! (`FakeQemu`: it connects as QEMU does, and lays out a fake sysfs tree
//! whose `resource2` is the guest's shared memfd and whose `resource0` is a
//! file whose doorbell writes it forwards to the mediator's eventfd), and
//! client children that find the device as a guest process would (by
//! `VGPU_MEDIATOR=pci:BDF`, or by the sysfs scan with no `VGPU_MEDIATOR`).
//!
//! Covered: the C smoke program (init, device queries, alloc, copies both
//! ways with every byte checked, a kernel, error cases), two clients at
//! once, cudarc copies of several pieces each way with the bytes checked,
//! a kernel, the lane limit, the region limit at `cuInit`, a killed guest
//! process's region reclaimed, a region given back at exit, killing the
//! fake QEMU leaving the mediator serving the next one, and NVML through the
//! device.

mod common;

use std::ffi::c_void;
use std::path::PathBuf;
use std::ptr::null_mut;
use std::time::{Duration, Instant};

use common::cu;
use common::{is_child, pattern, wait_gone, Harness, Mediator, Running, SIM_MODULE};
use cudarc::driver::sys;
use vgpu_transport::ivshmem::server::FakeQemu;

const BDF: &str = "0000:00:05.0";
const OUT_OF_MEMORY: u32 = vgpu_abi::types::CUresult::CUDA_ERROR_OUT_OF_MEMORY.0;
/// Two 16 MiB socket pieces and a bit, not a multiple of anything.
const BIG: usize = (33 << 20) + 77;

/// A mediator listening on `ivshmem:` with `mib` of shared memory per
/// guest, a fake QEMU connected to it, and the harness's children pointed
/// at its device. Returns the harness, the fake, the socket and the sysfs
/// root (kept alive by the returned temp dir).
fn start(mib: &str) -> (Harness, FakeQemu, PathBuf, tempfile::TempDir) {
    let mut h = Harness::without_mediator();
    let dir = tempfile::tempdir().expect("temp dir");
    let socket = dir.path().join("ivshmem.sock");
    let listen = format!("ivshmem:{}", socket.display());
    let m = Mediator::start_with(&h.build, &["--listen", &listen, "--ivshmem-mib", mib]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        assert!(
            Instant::now() < deadline,
            "no ivshmem socket:\n{}",
            m.log_text()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    h.mediator = Some(m);
    let sysfs = dir.path().join("sys");
    let fake = FakeQemu::start(&socket, &sysfs, BDF, 1).expect("fake QEMU connects");
    h.env("VGPU_MEDIATOR", &format!("pci:{BDF}"));
    h.env("VGPU_SYSFS_ROOT", sysfs.to_str().expect("utf-8"));
    h.env("VGPU_CLIENT_CONFIG", "/nonexistent/vgpu-client.toml");
    h.env("VGPU_LOG", "1");
    (h, fake, socket, dir)
}

fn smoke_passed(out: &common::Output) {
    out.assert_success()
        .assert_line("ok init")
        .assert_line("ok memcpy_round_trip")
        .assert_line("ok memcpy_htod_beyond_allocation")
        .assert_line("ok launch_result")
        .assert_line("ok mem_alloc_without_context");
    assert!(
        out.stdout.lines().any(|l| l.ends_with(" 0 failed")),
        "{out}"
    );
    assert!(
        out.stderr.contains("lanes on rings in the ivshmem BAR"),
        "{out}"
    );
}

fn wait_for_log(m: &Mediator, needle: &str, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = m.log_text();
        if log.matches(needle).count() >= count {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no {count} × {needle:?} in:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn c_smoke_by_name_and_by_scan_two_at_once_and_a_killed_qemu() {
    if is_child() {
        return hold_session();
    }
    let (mut h, mut fake, socket, dir) = start("16");
    let exe = common::build_c(dir.path(), "driver_smoke");
    let mut cmd = h.command(&exe);
    cmd.env("CU_TEST_INVALID_HANDLES", "1");
    let out = h.run(cmd);
    smoke_passed(&out);
    assert!(
        out.stderr.contains(&format!("connected to pci:{BDF}")),
        "{out}"
    );

    // `vgpu doctor` in the guest: the device, its BARs and a real handshake.
    let mut doctor = h.command(h.build.dir.join("vgpu"));
    doctor.arg("doctor");
    let out = h.run(doctor);
    for needle in [
        "BAR2 16 MiB (shared memory), peer id 1",
        "3 session regions",
        "8 lanes each",
        "host to guest by polling with backoff",
        "answered the handshake",
    ] {
        assert!(
            out.stdout.contains(needle),
            "doctor lacks {needle:?}:\n{out}"
        );
    }

    // Two at once, found by the sysfs scan alone.
    let scan = || {
        let mut c = h.command(&exe);
        c.env_remove("VGPU_MEDIATOR");
        Running::spawn(c)
    };
    let (a, b) = (scan(), scan());
    for out in [
        a.finish(Duration::from_secs(60)),
        b.finish(Duration::from_secs(60)),
    ] {
        smoke_passed(&out);
        assert!(out.stderr.contains("vGPU PCI device found under"), "{out}");
    }
    let m = h.mediator();
    wait_for_log(m, "session starting (process in a VM guest over ivshmem", 3);
    wait_for_log(m, "ivshmem session ended", 3);

    // A live session when QEMU dies: its worker exits.
    let mut holder =
        Running::spawn(h.self_test("c_smoke_by_name_and_by_scan_two_at_once_and_a_killed_qemu"));
    holder.expect_line("holding", Duration::from_secs(30));
    let worker = *m.worker_pids().last().expect("a worker");
    fake.kill();
    wait_for_log(m, "ivshmem guest disconnected", 1);
    assert!(
        wait_gone(worker, Duration::from_secs(10)),
        "the worker outlived its guest"
    );
    drop(holder);

    // The mediator serves the next guest.
    let sysfs = dir.path().join("sys2");
    let _next = FakeQemu::start(&socket, &sysfs, BDF, 1).expect("a second fake QEMU");
    h.env("VGPU_SYSFS_ROOT", sysfs.to_str().expect("utf-8"));
    smoke_passed(&h.run(h.command(&exe)));
}

/// A child that starts a session and holds it until killed.
fn hold_session() {
    cu::init_context();
    println!("holding");
    std::thread::sleep(Duration::from_secs(120));
}

#[test]
fn copies_a_kernel_and_the_lane_limit() {
    if is_child() {
        return session_child();
    }
    let (h, _fake, _socket, _dir) = start("16");
    let out = h.run(h.self_test("copies_a_kernel_and_the_lane_limit"));
    out.assert_success()
        .assert_line("kernel ok")
        .assert_line("lanes ok")
        .assert_line("done");
}

fn session_child() {
    let ctx = cu::init_context();
    cu::round_trip(&pattern(1, BIG), "a 33 MiB synchronous round trip");
    cu::round_trip(&pattern(2, 1), "one byte");
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
            "HtoDAsync",
        );
        cu::ok(
            sys::cuMemcpyDtoHAsync_v2(back.as_mut_ptr().cast(), d, BIG, stream),
            "DtoHAsync",
        );
        cu::ok(sys::cuStreamSynchronize(stream), "cuStreamSynchronize");
    }
    common::assert_same(&src, &back, "an asynchronous round trip");

    let n = 50_000usize;
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
            "load",
        );
        cu::ok(
            sys::cuModuleGetFunction(&mut func, module, c"fill_u32".as_ptr()),
            "function",
        );
        let mut params = [
            (&raw mut out_ptr).cast::<c_void>(),
            (&raw mut value).cast(),
            (&raw mut count).cast(),
        ];
        let blocks = u32::try_from(n.div_ceil(256)).expect("fits");
        cu::ok(
            sys::cuLaunchKernel(
                func,
                blocks,
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
            "DtoH",
        );
        cu::ok(sys::cuStreamSynchronize(stream), "cuStreamSynchronize");
    }
    assert!(got.iter().all(|&v| v == value), "fill_u32 result");
    println!("kernel ok");
    lanes(ctx);
    println!("done");
}

/// A region has 8 lanes: this thread's and 7 others' fit; a ninth thread's
/// call fails with `CUDA_ERROR_OUT_OF_MEMORY`, and the session goes on.
fn lanes(ctx: sys::CUcontext) {
    let ctx = ctx as usize;
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
    let call = move || {
        let mut free = 0usize;
        let mut total = 0usize;
        // SAFETY: ctx is a live context; valid out-pointers.
        unsafe {
            let r = sys::cuCtxSetCurrent(ctx as sys::CUcontext);
            if cu::code(r) != 0 {
                return cu::code(r);
            }
            cu::code(sys::cuMemGetInfo_v2(&mut free, &mut total))
        }
    };
    let threads: Vec<_> = (0..7)
        .map(|_| {
            let b = std::sync::Arc::clone(&barrier);
            std::thread::spawn(move || {
                let r = call();
                b.wait(); // All hold their lanes until the ninth has tried.
                b.wait();
                r
            })
        })
        .collect();
    barrier.wait();
    let ninth = std::thread::spawn(call).join().expect("ninth thread");
    barrier.wait();
    for t in threads {
        assert_eq!(t.join().expect("thread"), 0, "one of 8 lanes failed");
    }
    assert_eq!(ninth, OUT_OF_MEMORY, "a ninth lane");
    // Lanes come back when their threads end.
    assert_eq!(
        std::thread::spawn(call).join().expect("again"),
        0,
        "a lane after others ended"
    );
    cu::round_trip(&pattern(9, 4096), "the session after the lane limit");
    println!("lanes ok");
}

#[test]
fn the_region_limit_a_killed_process_and_release_at_exit() {
    if is_child() {
        return match std::env::var("IVSHMEM_CHILD").as_deref() {
            Ok("hold") => hold_session(),
            // SAFETY: plain cuInit.
            _ => println!("cuInit {}", cu::code(unsafe { sys::cuInit(0) })),
        };
    }
    // 8 MiB holds one region.
    let (h, _fake, _socket, _dir) = start("8");
    let child = |what: &str| {
        let mut c = h.self_test("the_region_limit_a_killed_process_and_release_at_exit");
        c.env("IVSHMEM_CHILD", what);
        c
    };
    let mut holder = Running::spawn(child("hold"));
    holder.expect_line("holding", Duration::from_secs(30));
    let out = h.run(child("init"));
    out.assert_success()
        .assert_line(&format!("cuInit {OUT_OF_MEMORY}"));
    assert!(
        out.stderr.contains("sessions of this VM are in use"),
        "{out}"
    );
    // A killed holder's region goes to the next process.
    common::sigkill(holder.pid());
    holder.kill();
    h.run(child("init"))
        .assert_success()
        .assert_line("cuInit 0");
    // That one gave its region back at exit: its worker ends without waiting
    // for a later process (2 sessions ended: the killed one, the one that exited).
    let m = h.mediator();
    wait_for_log(m, "ivshmem session ended", 2);
    h.run(child("init"))
        .assert_success()
        .assert_line("cuInit 0");
}

/// Python through ctypes, and `multiprocessing` children forked from a
/// process with a session: each child claims a region of its own (the
/// parent's stays the parent's), and the parent's session still works.
#[test]
fn python_ctypes_and_forked_children() {
    // 32 MiB holds 6 regions: the parent and up to 3 children at once, and
    // room for children's regions that wait to be reclaimed.
    let (h, _fake, _socket, _dir) = start("32");
    let mut cmd = h.command("python3");
    cmd.arg(common::repo_root().join("tests/python/ctypes_smoke.py"));
    let out = h.run(cmd);
    out.assert_success()
        .assert_line("ok init")
        .assert_line("ok memcpy_round_trip")
        .assert_line("ok launch_result");
    assert!(!out.stdout.contains("\nFAIL"), "{out}");

    let mut cmd = h.command("python3");
    cmd.arg(common::repo_root().join("tests/python/fork_pool.py"))
        .args(["3", "6"]);
    let out = common::run(cmd, Duration::from_secs(180));
    out.assert_success()
        .assert_line("ok parent_ready")
        .assert_line("ok parent_session_untouched")
        .assert_line("fork pool ok");
    let tasks = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("ok task "))
        .count();
    assert_eq!(tasks, 6, "{out}");
}

/// NVML through the guest's device: `libnvidia-ml.so.1` (vgpu's) opens a
/// session in a region of its own, as the CUDA client does, and shows the
/// guest process's own allocation and pid, and none of a host process of
/// the same uid that holds memory meanwhile.
#[test]
fn nvml_through_the_guest_device() {
    let (h, _fake, _socket, _dir) = start("16");
    let nvml_script = |mode: &str| {
        let mut cmd = h.command("python3");
        cmd.arg(common::repo_root().join("tests/python/nvml_ctypes.py"))
            .arg(mode);
        cmd
    };
    let mut host = nvml_script("hold");
    host.env("VGPU_MEDIATOR", h.mediator().endpoint());
    let mut host = Running::spawn(host);
    host.expect_line("held", Duration::from_secs(60));
    let guest = h.run(nvml_script("exact"));
    for line in [
        "ok nothing used before",
        "ok used is the allocation",
        "ok this process alone",
        "15 checks, 0 failed",
    ] {
        guest.assert_line(line);
    }
    host.finish(Duration::from_secs(60)).assert_success();
    let log = h.mediator().log_text();
    assert!(
        log.matches("ivshmem session accepted").count() >= 2,
        "the guest process's CUDA and NVML sessions:\n{log}"
    );
}

/// The guest is untrusted: forged claims over rings that were never laid
/// out, and garbage over a region's rings, cost the host a worker that
/// refuses the region and ends; the regions come back, and a real client
/// is served afterwards.
#[test]
fn a_hostile_guest_breaks_only_its_own_sessions() {
    use std::os::fd::AsFd;
    use vgpu_transport::ivshmem::{owner_word, Owner, TABLE_END};
    use vgpu_transport::shm_ring::SharedMem;

    let (h, fake, _socket, dir) = start("16");
    let bar2 = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(fake.device_dir().join("resource2"))
        .expect("resource2");
    let mem = SharedMem::map(bar2.as_fd(), 16 << 20).expect("map");
    // Region 1's rings: garbage, including indices and record tags.
    let junk: Vec<u8> = pattern(77, 1 << 20);
    assert!(mem.write(TABLE_END + 5_000_000, &junk));
    for r in 0..3 {
        let forged = Owner {
            generation: 40 + r,
            ready: true,
            pid: 4_000_000 + r,
        };
        owner_word(&mem, usize::try_from(r).expect("small"))
            .expect("entry")
            .store(forged.encode(), std::sync::atomic::Ordering::Release);
    }
    // Ring the doorbell as a guest would: the fake forwards it.
    let regs = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(fake.device_dir().join("resource0"))
        .expect("resource0");
    let regs = SharedMem::map(regs.as_fd(), 4096).expect("map regs");
    regs.u32_at(12)
        .expect("doorbell")
        .store(0, std::sync::atomic::Ordering::Release);
    let m = h.mediator();
    wait_for_log(m, "ivshmem session ended", 3);
    // The forged owners are dead pids: the next client drains their
    // regions if the host has not freed them yet, and gets one.
    let exe = common::build_c(dir.path(), "driver_smoke");
    smoke_passed(&h.run(h.command(&exe)));
    assert!(common::is_alive(m.pid()), "the mediator survived");
}
