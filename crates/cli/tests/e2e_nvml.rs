//! The NVML library, `libvgpu-nvml.so` as `libnvidia-ml.so.1`, answering
//! through a real mediator on the simulated device: from Python ctypes and
//! from pynvml (`tests/python/nvml_*.py`), each answer checked against the
//! CUDA Driver API of the same process; and its exports against the real
//! library's.

mod common;

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

use common::Harness;

/// `python3 tests/python/nvml_ctypes.py ARGS` in the harness's environment.
fn ctypes_script(h: &Harness, args: &[&str]) -> Command {
    let mut cmd = h.command("python3");
    cmd.arg(common::repo_root().join("tests/python/nvml_ctypes.py"))
        .args(args);
    cmd
}

/// The summary line `N checks, 0 failed`, with at least `min` checks.
fn assert_checks_passed(out: &common::Output, min: u32) {
    let summary = out
        .stdout
        .lines()
        .find(|l| l.ends_with(" failed") && l.contains(" checks, "))
        .unwrap_or_else(|| panic!("no summary line:\n{out}"));
    let (checks, failed) = summary.split_once(" checks, ").expect("summary shape");
    let checks: u32 = checks.parse().expect("check count");
    assert!(checks >= min, "only {checks} checks ran:\n{out}");
    assert_eq!(failed, "0 failed", "{out}");
}

#[test]
fn ctypes_answers_and_bad_input() {
    let h = Harness::start();
    let out = h.run(ctypes_script(&h, &["basic"]));
    out.assert_success()
        .assert_line("ok name matches cuDeviceGetName")
        .assert_line("ok uuid matches cuDeviceGetUuid")
        .assert_line("ok pci location matches cuDeviceGetPCIBusId")
        .assert_line("ok memory total matches cuDeviceTotalMem")
        .assert_line("ok compute_capability matches the driver's")
        .assert_line("ok handle bad index")
        .assert_line("ok name short buffer")
        .assert_line("ok shutdown too many");
    assert_checks_passed(&out, 60);
}

#[test]
fn ctypes_over_tcp() {
    let h = Harness::start_tcp();
    let out = h.run(ctypes_script(&h, &["basic"]));
    out.assert_success()
        .assert_line("ok name matches cuDeviceGetName")
        .assert_line("ok memory total matches cuDeviceTotalMem");
    assert_checks_passed(&out, 60);
}

#[test]
fn every_call_before_init_is_uninitialized() {
    let h = Harness::start();
    let out = h.run(ctypes_script(&h, &["uninit"]));
    out.assert_success();
    assert_checks_passed(&out, 7);
}

#[test]
fn init_without_a_mediator_fails_at_once() {
    let h = Harness::without_mediator();
    let started = std::time::Instant::now();
    let out = h.run(ctypes_script(&h, &["uninit", "no-mediator"]));
    out.assert_success()
        .assert_line("ok init without a mediator");
    assert_checks_passed(&out, 9);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn a_mediator_that_goes_away_is_gpu_is_lost() {
    let mut h = Harness::start();
    let mut child = common::Running::spawn(ctypes_script(&h, &["lost"]));
    child.expect_line("ready", Duration::from_secs(30));
    let workers = h.mediator().worker_pids();
    assert!(!workers.is_empty(), "no worker logged");
    h.mediator_mut().kill();
    for w in workers {
        assert!(
            common::wait_gone(w, Duration::from_secs(10)),
            "worker {w} still runs"
        );
    }
    child.send("go");
    let out = child.finish(Duration::from_secs(30));
    out.assert_success()
        .assert_line("ok name after the mediator went")
        .assert_line("ok memory after the mediator went");
    assert_checks_passed(&out, 7);
}

#[test]
fn pynvml() {
    let h = Harness::start();
    let mut cmd = h.command("python3");
    cmd.arg(common::repo_root().join("tests/python/nvml_pynvml.py"));
    let out = h.run(cmd);
    out.assert_success()
        .assert_line("ok name")
        .assert_line("ok compute capability")
        .assert_line("ok memory total");
    assert_checks_passed(&out, 20);
}

/// The host values: the worker loads a stand-in for the host's NVML
/// (`tests/c/host_nvml.c`, found by name through the mediator's
/// `LD_LIBRARY_PATH`) and passes each shape of call through.
#[test]
fn host_values_pass_through_from_the_hosts_nvml() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cc = Command::new("cc");
    cc.args(["-shared", "-fPIC", "-Wall", "-Werror", "-o"])
        .arg(dir.path().join("libnvidia-ml.so.1"))
        .arg(common::repo_root().join("tests/c/host_nvml.c"));
    let built = common::run(cc, Duration::from_secs(120));
    assert!(built.status.success(), "cc host_nvml.c failed:\n{built}");
    let mut h = Harness::without_mediator();
    let lib_path = dir.path().to_str().expect("UTF-8 temp path");
    h.mediator = Some(common::Mediator::start_env(
        &h.build,
        &[("LD_LIBRARY_PATH", lib_path)],
    ));
    let out = h.run(ctypes_script(&h, &["host"]));
    out.assert_success()
        .assert_line("ok temperature value")
        .assert_line("ok clock 3")
        .assert_line("ok ecc errors value")
        .assert_line("ok inforom version value")
        .assert_line("ok bar1 values");
    assert_checks_passed(&out, 25);
    assert!(
        h.mediator().log_text().contains("host NVML loaded"),
        "{}",
        h.mediator().log_text()
    );
}

/// A CUDA client's allocation counts in its uid's memory, and its process
/// is listed once with that memory: the mediator's registry of live
/// sessions (`crates/mediator/src/sessions.rs`) answers both.
#[test]
fn a_cuda_allocation_shows_in_memory_and_processes() {
    let h = Harness::start();
    let out = h.run(ctypes_script(&h, &["usage"]));
    out.assert_success()
        .assert_line("ok used counts the allocation")
        .assert_line("ok this process listed once")
        .assert_line("ok its memory counts the allocation");
    assert_checks_passed(&out, 15);
}

/// Memory and processes by device, on three simulated devices: an
/// allocation on device 1 shows there only; a client with
/// `CUDA_VISIBLE_DEVICES=2,1` allocating on its device 0 shows on the
/// host's device 2; a context with no memory lists its process; and
/// `cuMemCreate` counts on the device its location names.
#[test]
fn memory_and_processes_are_per_device() {
    let mut h = Harness::without_mediator();
    h.mediator = Some(common::Mediator::start_env(
        &h.build,
        &[("VGPU_SIM_DEVICES", "3")],
    ));
    let mut cmd = ctypes_script(&h, &["devices"]);
    cmd.env_remove("CUDA_VISIBLE_DEVICES");
    let out = h.run(cmd);
    out.assert_success()
        .assert_line("ok memory by device")
        .assert_line("ok this process on 1 only")
        .assert_line("ok the child on the host's 2")
        .assert_line("ok a context alone lists the process")
        .assert_line("ok a released context is gone")
        .assert_line("ok cuMemCreate counts on its location");
    assert_checks_passed(&out, 30);
}

/// The functions the real `libnvidia-ml.so.1` of driver 580 exports.
fn real_exports() -> BTreeSet<String> {
    std::fs::read_to_string(common::repo_root().join("fixtures/libnvidia-ml-580-exports.txt"))
        .expect("the export fixture")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn exports_every_function_of_the_real_library_and_its_soname() {
    let b = common::build();
    let nm = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&b.nvml)
        .output()
        .expect("run nm");
    let exported: BTreeSet<String> = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_owned))
        .filter(|s| s.starts_with("nvml") || s.starts_with("vgpu_"))
        .collect();
    let mut want = real_exports();
    assert!(want.len() > 400, "only {} names in the fixture", want.len());
    want.insert("vgpu_nvml_marker".into());
    assert_eq!(exported, want, "exports differ from the real library's");
    let readelf = Command::new("readelf")
        .arg("-d")
        .arg(&b.nvml)
        .output()
        .expect("run readelf");
    assert!(
        String::from_utf8_lossy(&readelf.stdout).contains("[libnvidia-ml.so.1]"),
        "SONAME is not libnvidia-ml.so.1"
    );
}
