//! The CUDA 12 entry points beyond the basics, through the client library, a
//! real mediator and the simulated device: libraries and kernels, function
//! and kernel attributes, occupancy, `cuLaunchKernelEx` with cooperative,
//! cluster and event attributes, cooperative launches, stream capture
//! queries, the module loading mode, stream-ordered allocation, 2D copies,
//! pinned host memory and pointer attributes. The client is the C program
//! `tests/c/runtime_api.c`, which checks data and error codes itself.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::Harness;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Compiles `tests/c/runtime_api.c` into `dir`.
fn compile(dir: &Path) -> PathBuf {
    let exe = dir.join("runtime_api");
    let mut cc = Command::new("cc");
    cc.args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(repo_root().join("tests/c/runtime_api.c"))
        .arg("-ldl");
    let cc = common::run(cc, Duration::from_secs(120));
    assert!(
        cc.status.success(),
        "cc runtime_api.c failed (CI installs gcc):\n{cc}"
    );
    exe
}

/// The summary line `N checks, 0 failed`, with N above `at_least`.
fn assert_all_checks_passed(out: &common::Output, at_least: u32) {
    let summary = out
        .stdout
        .lines()
        .find(|l| l.ends_with(" failed") && l.contains(" checks, "))
        .unwrap_or_else(|| panic!("no summary line:\n{out}"));
    let (checks, failed) = summary
        .split_once(" checks, ")
        .expect("summary shape `N checks, M failed`");
    let checks: u32 = checks.parse().expect("check count");
    assert!(checks > at_least, "only {checks} checks ran:\n{out}");
    assert_eq!(failed, "0 failed", "{out}");
    assert!(!out.stdout.contains("\nFAIL"), "{out}");
}

#[test]
fn c_runtime_api() {
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = compile(dir.path());

    let mut h = Harness::start();
    h.env("VGPU_LOG", "1");
    let out = h.run(h.command(&exe));
    out.assert_success()
        .assert_line("ok load libcuda.so.1")
        .assert_line("ok loading_mode_lazy")
        .assert_line("ok library_load_info_log")
        .assert_line("ok kernel_handle_result")
        .assert_line("ok library_module_result")
        .assert_line("ok library_global_value")
        .assert_line("ok launch_64k_shared_with_opt_in")
        .assert_line("ok func_attr_of_kernel_function_value")
        .assert_line("ok occupancy_blocks_256")
        .assert_line("ok occupancy_dynamic_smem_value")
        .assert_line("ok occupancy_clusters_value")
        .assert_line("ok launch_ex_result")
        .assert_line("ok launch_ex_cooperative_too_large")
        .assert_line("ok launch_cooperative_too_large")
        .assert_line("ok launch_ex_cluster_not_dividing_grid")
        .assert_line("ok launch_ex_cluster_non_portable_allowed")
        .assert_line("ok launch_ex_completion_event")
        .assert_line("ok launch_ex_many_result")
        .assert_line("ok stream_is_capturing_none")
        .assert_line("ok mem_async_data")
        .assert_line("ok mem_free_async_twice")
        .assert_line("ok copy2d_htod_data")
        .assert_line("ok copy2d_round_trip")
        .assert_line("ok copy2d_failed_copies_touch_nothing")
        .assert_line("ok copy2d_big_last_row")
        .assert_line("ok pinned_kernel_data")
        .assert_line("ok pinned_round_trip")
        .assert_line("ok pointer_pinned_host_pointer_value")
        .assert_line("ok pointer_context_value")
        .assert_line("ok pointer_attributes_unknown_defaults")
        .assert_line("ok pointer_attributes_device_values");
    assert_all_checks_passed(&out, 200);

    // CUDA_MODULE_LOADING travels in the handshake and reaches the driver.
    h.env("CUDA_MODULE_LOADING", "EAGER");
    let out = h.run(h.command(&exe));
    out.assert_success().assert_line("ok loading_mode_eager");
    assert_all_checks_passed(&out, 200);
}
