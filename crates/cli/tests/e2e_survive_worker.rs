//! What the worker applies and checks for its session, end to end (issue 5,
//! "Survive" 7 and 8):
//! - the environment travels: `CUDA_VISIBLE_DEVICES` (indices and UUIDs),
//!   `CUDA_DEVICE_ORDER` and `CUDA_MODULE_LOADING` set in the CLIENT's
//!   environment change what the client sees, as on the native driver, with
//!   a mediator whose simulated device has 3 GPUs (`VGPU_SIM_DEVICES`);
//! - memory operations are checked against the session's live allocations
//!   and pinned host memory: out-of-bounds, freed and foreign addresses give
//!   CUDA_ERROR_INVALID_VALUE and a mediator log line naming the address (and
//!   the allocation it runs past).
//!
//! Clients are this test binary re-executed (`common::Harness::self_test`),
//! driving the Driver API through cudarc's raw bindings.

mod common;
mod e2e_survive_support;

use std::ffi::{c_char, c_void, CStr};
use std::time::Duration;

use common::cu::{self, Cases};
use common::{is_child, Harness, Output, Running};
use cudarc::driver::sys;
use e2e_survive_support::Supervisor;

const INVALID_VALUE: u32 = vgpu_abi::types::CUresult::CUDA_ERROR_INVALID_VALUE.0;
const NO_DEVICE: u32 = vgpu_abi::types::CUresult::CUDA_ERROR_NO_DEVICE.0;
const MODE_ENV: &str = "VGPU_E2E_MODE";
/// A UUID of the simulated devices, as `nvidia-smi -L` writes it.
fn sim_uuid(physical: u8) -> String {
    format!("GPU-76677075-2d73-696d-0000-0000000000{physical:02x}")
}

/// The PCI bus id of a simulated device.
fn sim_bus(physical: u8) -> String {
    format!("0000:{:02X}:00.0", 0x5E + physical)
}

/// Prints what the client sees: `cuInit N`, then `devices N`, `device I
/// UUID BUS` per device and `loading MODE`.
fn devices_child() {
    // SAFETY: no arguments.
    let r = unsafe { sys::cuInit(0) };
    println!("cuInit {}", cu::code(r));
    if cu::code(r) != 0 {
        return;
    }
    let mut n = 0;
    // SAFETY: the out-pointer is a live local.
    cu::ok(unsafe { sys::cuDeviceGetCount(&mut n) }, "cuDeviceGetCount");
    println!("devices {n}");
    for i in 0..n {
        let mut uuid = sys::CUuuid { bytes: [0; 16] };
        let mut bus = [0 as c_char; 32];
        // SAFETY: the out-pointers are live locals of the right sizes.
        unsafe {
            cu::ok(sys::cuDeviceGetUuid_v2(&mut uuid, i), "cuDeviceGetUuid");
            cu::ok(
                sys::cuDeviceGetPCIBusId(bus.as_mut_ptr(), 32, i),
                "cuDeviceGetPCIBusId",
            );
        }
        let hex: String = uuid
            .bytes
            .iter()
            .map(|b| format!("{:02x}", *b as u8))
            .collect();
        let uuid = format!(
            "GPU-{}-{}-{}-{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..32]
        );
        // SAFETY: cuDeviceGetPCIBusId wrote a NUL-terminated string.
        let bus = unsafe { CStr::from_ptr(bus.as_ptr()) }.to_string_lossy();
        println!("device {i} {uuid} {bus}");
    }
    // Device 0 of the visible set does real work.
    cu::init_context();
    let d = cu::alloc(4096);
    let src = [0x5Au8; 4096];
    let mut back = [0u8; 4096];
    let mut mode = sys::CUmoduleLoadingMode::CU_MODULE_LAZY_LOADING;
    // SAFETY: both buffers hold 4096 bytes, as does d; live out-pointer.
    unsafe {
        cu::ok(
            sys::cuMemcpyHtoD_v2(d, src.as_ptr().cast(), 4096),
            "cuMemcpyHtoD",
        );
        cu::ok(
            sys::cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), d, 4096),
            "cuMemcpyDtoH",
        );
        cu::ok(
            sys::cuModuleGetLoadingMode(&mut mode),
            "cuModuleGetLoadingMode",
        );
    }
    assert_eq!(src, back);
    println!("loading {mode:?}");
}

/// What a client with `env` sees, through `sup`.
fn sees(sup: &Supervisor, test: &str, env: &[(&str, &str)]) -> Output {
    let mut h = Harness::without_mediator();
    h.env("VGPU_MEDIATOR", &sup.endpoint());
    let mut cmd = h.self_test(test);
    cmd.env(MODE_ENV, "devices");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = h.run(cmd);
    out.assert_success();
    out
}

/// The `device I UUID BUS` lines of `out`, as (UUID, BUS).
fn device_lines(out: &Output) -> Vec<(String, String)> {
    out.stdout
        .lines()
        .map(common::strip_libtest)
        .filter_map(|l| l.strip_prefix("device "))
        .map(|r| {
            let f: Vec<&str> = r.split_whitespace().collect();
            (f[1].to_string(), f[2].to_string())
        })
        .collect()
}

#[track_caller]
fn assert_sees(out: &Output, physical: &[u8]) {
    out.assert_line("cuInit 0")
        .assert_line(&format!("devices {}", physical.len()));
    let want: Vec<(String, String)> = physical
        .iter()
        .map(|&p| (sim_uuid(p), sim_bus(p)))
        .collect();
    assert_eq!(device_lines(out), want, "{out}");
}

#[test]
fn cuda_visible_devices_travels_to_the_worker() {
    const TEST: &str = "cuda_visible_devices_travels_to_the_worker";
    if is_child() {
        return devices_child();
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let build = common::build();
    let sup = Supervisor::start(
        &build,
        &dir.path().join("m.sock"),
        &dir.path().join("mediator.log"),
        &[("VGPU_SIM_DEVICES", "3")],
        false,
    );
    let uuid2 = sim_uuid(2);
    assert_sees(&sees(&sup, TEST, &[]), &[0, 1, 2]);
    assert_sees(&sees(&sup, TEST, &[("CUDA_VISIBLE_DEVICES", "1")]), &[1]);
    assert_sees(
        &sees(&sup, TEST, &[("CUDA_VISIBLE_DEVICES", "2,0")]),
        &[2, 0],
    );
    assert_sees(&sees(&sup, TEST, &[("CUDA_VISIBLE_DEVICES", &uuid2)]), &[2]);
    assert_sees(
        &sees(
            &sup,
            TEST,
            &[(
                "CUDA_VISIBLE_DEVICES",
                &format!("{},1", uuid2.to_uppercase()),
            )],
        ),
        &[2, 1],
    );
    // The list ends at the first entry that names no device.
    assert_sees(
        &sees(&sup, TEST, &[("CUDA_VISIBLE_DEVICES", "0,5,1")]),
        &[0],
    );
    for none in ["", "-1", "GPU-00000000-0000-0000-0000-000000000000"] {
        sees(&sup, TEST, &[("CUDA_VISIBLE_DEVICES", none)])
            .assert_line(&format!("cuInit {NO_DEVICE}"));
    }
    let log = sup.log_text();
    assert!(
        log.contains(r#"env=[("CUDA_VISIBLE_DEVICES", "2,0")]"#),
        "the worker did not log the environment it applied:\n{log}"
    );
}

#[test]
fn two_sessions_see_their_own_visible_devices() {
    const TEST: &str = "two_sessions_see_their_own_visible_devices";
    if is_child() {
        if std::env::var(MODE_ENV).is_ok_and(|m| m == "devices") {
            return devices_child();
        }
        // Hold the session open until told to finish, then report.
        let mut line = String::new();
        devices_child();
        println!("ready");
        std::io::stdin().read_line(&mut line).expect("stdin");
        return devices_child();
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let build = common::build();
    let sup = Supervisor::start(
        &build,
        &dir.path().join("m.sock"),
        &dir.path().join("mediator.log"),
        &[("VGPU_SIM_DEVICES", "3")],
        false,
    );
    let mut h = Harness::without_mediator();
    h.env("VGPU_MEDIATOR", &sup.endpoint());
    let mut a = h.self_test(TEST);
    a.env("CUDA_VISIBLE_DEVICES", "2");
    let mut a = Running::spawn(a);
    a.expect_line("ready", Duration::from_secs(30));
    // Another session, live at the same time, with another selection.
    assert_sees(
        &sees(&sup, TEST, &[("CUDA_VISIBLE_DEVICES", "0,1")]),
        &[0, 1],
    );
    a.send("go");
    let out = a.finish(Duration::from_secs(30));
    out.assert_success();
    assert_eq!(
        device_lines(&out),
        vec![(sim_uuid(2), sim_bus(2)), (sim_uuid(2), sim_bus(2))],
        "{out}"
    );
}

#[test]
fn cuda_device_order_and_module_loading_travel_to_the_worker() {
    const TEST: &str = "cuda_device_order_and_module_loading_travel_to_the_worker";
    if is_child() {
        return devices_child();
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let build = common::build();
    let sup = Supervisor::start(
        &build,
        &dir.path().join("m.sock"),
        &dir.path().join("mediator.log"),
        &[("VGPU_SIM_DEVICES", "3")],
        false,
    );
    // Identical devices: both orders are the PCI order; the indices of
    // CUDA_VISIBLE_DEVICES refer to it.
    for order in ["PCI_BUS_ID", "FASTEST_FIRST"] {
        let out = sees(
            &sup,
            TEST,
            &[
                ("CUDA_DEVICE_ORDER", order),
                ("CUDA_VISIBLE_DEVICES", "1,2"),
            ],
        );
        assert_sees(&out, &[1, 2]);
    }
    sees(&sup, TEST, &[]).assert_line("loading CU_MODULE_LAZY_LOADING");
    sees(&sup, TEST, &[("CUDA_MODULE_LOADING", "EAGER")])
        .assert_line("loading CU_MODULE_EAGER_LOADING");
    sees(&sup, TEST, &[("CUDA_MODULE_LOADING", "LAZY")])
        .assert_line("loading CU_MODULE_LAZY_LOADING");
    let log = sup.log_text();
    assert!(
        log.contains(r#"("CUDA_DEVICE_ORDER", "PCI_BUS_ID")"#)
            && log.contains(r#"("CUDA_MODULE_LOADING", "EAGER")"#),
        "the worker did not log the environment it applied:\n{log}"
    );
}

/// The byte at offset `i` of the pinned test pattern.
fn byte(i: usize) -> u8 {
    u8::try_from(i % 251).expect("below 251")
}

/// True if `line` has `want` not followed by another hex digit (so an
/// address is never taken for a longer one).
fn has_token(line: &str, want: &str) -> bool {
    line.match_indices(want).any(|(i, _)| {
        !line[i + want.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_hexdigit())
    })
}

/// A memory case: what to call, and the log text the worker must write.
struct Refusal {
    name: &'static str,
    got: sys::CUresult,
    log: Vec<String>,
}

/// Runs every refused memory operation and prints, per case, `refused
/// NAME|LOG TEXT|LOG TEXT...`; a foreign pointer comes in `VGPU_E2E_FOREIGN`.
fn memcheck_child() {
    if std::env::var(MODE_ENV).is_ok_and(|m| m == "foreign") {
        // Another session: allocate, say where, and hold it until told.
        cu::init_context();
        let d = cu::alloc(96 << 10);
        println!("foreign {d:#x}");
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).expect("stdin");
        return;
    }
    const A: usize = 64 << 10;
    const PINNED: usize = 1 << 20;
    cu::init_context();
    let a = cu::alloc(A);
    let b = cu::alloc(A);
    let mut host = vec![0u8; 2 * A];
    let hp = host.as_mut_ptr();
    let mut refusals: Vec<Refusal> = Vec::new();
    let mut refuse = |name: &'static str, got: sys::CUresult, log: Vec<String>| {
        refusals.push(Refusal { name, got, log });
    };
    let at = |len: usize, p: u64| format!("memory operation refused: {len} bytes at {p:#x}");
    let past = |base: u64| format!("run past the allocation {base:#x}..{:#x}", base + A as u64);
    // SAFETY: the calls below are refused before any byte moves, and host
    // buffers hold the lengths passed anyway.
    unsafe {
        refuse(
            "htod past the end",
            sys::cuMemcpyHtoD_v2(a, hp.cast(), A + 1),
            vec![at(A + 1, a), past(a)],
        );
        refuse(
            "dtoh past the end",
            sys::cuMemcpyDtoH_v2(hp.cast(), a + A as u64 - 100, 4096),
            vec![at(4096, a + A as u64 - 100), past(a)],
        );
        refuse(
            "memset past the end",
            sys::cuMemsetD8_v2(a + A as u64 - 1, 0, 2),
            vec![at(2, a + A as u64 - 1), past(a)],
        );
        refuse(
            "dtod source past the end",
            sys::cuMemcpyDtoD_v2(b, a + 256, A),
            vec![at(A, a + 256), past(a)],
        );
        refuse(
            "memset below every allocation",
            sys::cuMemsetD32_v2(4096, 0, 4),
            vec![at(16, 4096)],
        );
        cu::ok(sys::cuMemFree_v2(b), "cuMemFree");
        refuse(
            "htod into freed memory",
            sys::cuMemcpyHtoD_v2(b, hp.cast(), 16),
            vec![at(16, b)],
        );
        refuse(
            "dtoh from freed memory",
            sys::cuMemcpyDtoH_v2(hp.cast(), b, 16),
            vec![at(16, b)],
        );
    }
    // Another session's pointer.
    if let Some(f) = std::env::var("VGPU_E2E_FOREIGN")
        .ok()
        .and_then(|v| u64::from_str_radix(v.trim_start_matches("0x"), 16).ok())
    {
        if f.wrapping_sub(a) < A as u64 {
            println!("foreign pointer {f:#x} coincides with this session's {a:#x}: not checked");
        } else {
            // SAFETY: host holds 16 bytes and more; the call is refused anyway.
            let got = unsafe { sys::cuMemcpyHtoD_v2(f, hp.cast(), 16) };
            refuse("htod into another session's memory", got, vec![at(16, f)]);
        }
    }
    // Pinned host memory (cuMemHostAlloc), shared with the worker; `c` is
    // freed once it exists.
    let c = cu::alloc(A);
    let mut pinned: *mut c_void = std::ptr::null_mut();
    let mut pd: sys::CUdeviceptr = 0;
    // SAFETY: live out-pointers; the pinned buffer holds PINNED bytes, a
    // holds A bytes.
    unsafe {
        cu::ok(
            sys::cuMemHostAlloc(&mut pinned, PINNED, 0),
            "cuMemHostAlloc",
        );
        cu::ok(
            sys::cuMemHostGetDevicePointer_v2(&mut pd, pinned, 0),
            "cuMemHostGetDevicePointer",
        );
        let bytes = std::slice::from_raw_parts_mut(pinned.cast::<u8>(), A);
        bytes.iter_mut().enumerate().for_each(|(i, b)| *b = byte(i));
        cu::ok(
            sys::cuMemcpyHtoD_v2(a, pinned, A),
            "cuMemcpyHtoD from pinned memory",
        );
        bytes.fill(0);
        cu::ok(
            sys::cuMemcpyDtoH_v2(pinned, a, A),
            "cuMemcpyDtoH into pinned memory",
        );
        assert!(
            bytes.iter().enumerate().all(|(i, &b)| b == byte(i)),
            "pinned round trip"
        );
        refuse(
            "htod from pinned memory past the end of the device allocation",
            sys::cuMemcpyHtoD_v2(a, pinned, 2 * A),
            vec![at(2 * A, a), past(a)],
        );
        // A freed address may be reused by a later allocation of the same
        // session (the worker's pinned mapping above can cover `b`), so this
        // case frees memory only once the pinned pages exist.
        cu::ok(sys::cuMemFree_v2(c), "cuMemFree");
        refuse(
            "dtoh into pinned memory from freed memory",
            sys::cuMemcpyDtoH_v2(pinned, c, 4096),
            vec![at(4096, c)],
        );
        let end = pd + PINNED as u64 - 16;
        refuse(
            "dtod from the pinned pages' device pointer past their end",
            sys::cuMemcpyDtoD_v2(a, end, 64),
            vec![
                at(64, end),
                format!("run past the allocation {pd:#x}..{:#x}", pd + PINNED as u64),
                "Host".into(),
            ],
        );
        cu::ok(sys::cuMemFreeHost(pinned), "cuMemFreeHost");
        refuse(
            "dtod from freed pinned pages",
            sys::cuMemcpyDtoD_v2(a, pd, 16),
            vec![at(16, pd)],
        );
    }
    let mut cases = Cases::default();
    for r in &refusals {
        cases.add(r.name, r.got, INVALID_VALUE);
        println!("refused {}|{}", r.name, r.log.join("|"));
    }
    cases.check();
    println!("memcheck ok");
}

#[test]
fn memory_ops_outside_the_sessions_memory_are_refused_and_logged() {
    const TEST: &str = "memory_ops_outside_the_sessions_memory_are_refused_and_logged";
    if is_child() {
        return memcheck_child();
    }
    let h = Harness::start();
    let mut other = h.self_test(TEST);
    other.env(MODE_ENV, "foreign");
    let mut other = Running::spawn(other);
    let foreign = other.expect_line("foreign ", Duration::from_secs(30));
    let mut cmd = h.self_test(TEST);
    cmd.env("VGPU_E2E_FOREIGN", foreign.trim_start_matches("foreign "));
    let out = h.run(cmd);
    other.send("done");
    other.finish(Duration::from_secs(30)).assert_success();
    out.assert_success().assert_line("memcheck ok");
    let log = h.mediator().log_text();
    let refusals: Vec<&str> = out
        .stdout
        .lines()
        .map(common::strip_libtest)
        .filter_map(|l| l.strip_prefix("refused "))
        .collect();
    assert!(refusals.len() >= 12, "{out}");
    for r in refusals {
        let mut parts = r.split('|');
        let name = parts.next().expect("a case name");
        for want in parts {
            assert!(
                log.lines().any(|l| l.contains("WARN")
                    && l.contains("memory operation refused")
                    && has_token(l, want)),
                "case {name:?}: no mediator log line with {want:?}; log:\n{log}"
            );
        }
    }
    println!("{}", out.stdout);
}
