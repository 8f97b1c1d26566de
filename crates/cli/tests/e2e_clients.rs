//! Real clients in other languages: the Python ctypes and C smoke programs
//! of `tests/python` and `tests/c`, run against the client library, a real
//! mediator and the simulated device.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::Harness;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The summary line of the smoke programs, `N checks, 0 failed`, with N > 0.
fn assert_all_checks_passed(out: &common::Output) {
    let summary = out
        .stdout
        .lines()
        .find(|l| l.ends_with(" failed") && l.contains(" checks, "))
        .unwrap_or_else(|| panic!("no summary line:\n{out}"));
    let (checks, failed) = summary
        .split_once(" checks, ")
        .expect("summary shape `N checks, M failed`");
    let checks: u32 = checks.parse().expect("check count");
    assert!(checks > 50, "only {checks} checks ran:\n{out}");
    assert_eq!(failed, "0 failed", "{out}");
    assert!(!out.stdout.contains("\nFAIL"), "{out}");
}

#[test]
fn python_ctypes_smoke() {
    let h = Harness::start();
    let mut cmd = h.command("python3");
    cmd.arg(repo_root().join("tests/python/ctypes_smoke.py"));
    let out = h.run(cmd);
    out.assert_success()
        .assert_line("ok load libcuda.so.1")
        .assert_line("ok init")
        .assert_line("ok primary_ctx_retain")
        .assert_line("ok memcpy_round_trip")
        .assert_line("ok mem_free_twice")
        .assert_line("ok stream_round_trip")
        .assert_line("ok stream_synchronize_destroyed")
        .assert_line("ok launch_result");
    assert_all_checks_passed(&out);
}

/// Compiles `tests/c/<name>.c` into `dir`.
fn build_c(dir: &std::path::Path, name: &str) -> PathBuf {
    let exe = dir.join(name);
    let mut cc = Command::new("cc");
    cc.args([
        "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread", "-o",
    ])
    .arg(&exe)
    .arg(repo_root().join(format!("tests/c/{name}.c")))
    .arg("-ldl");
    let cc = common::run(cc, Duration::from_secs(120));
    assert!(
        cc.status.success(),
        "cc {name}.c failed (CI installs gcc):\n{cc}"
    );
    exe
}

#[test]
fn c_driver_smoke() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = build_c(dir.path(), "driver_smoke");
    let out = h.run(h.command(&exe));
    out.assert_success()
        .assert_line("ok load libcuda.so.1")
        .assert_line("ok init")
        .assert_line("ok memcpy_round_trip")
        .assert_line("ok memcpy_htod_beyond_allocation")
        .assert_line("ok stream_ordered_result")
        .assert_line("ok launch_result")
        .assert_line("ok mem_alloc_without_context");
    assert_all_checks_passed(&out);
}

/// A thread that makes a context current with `cuCtxSetCurrent` alone (no
/// round trip) sees it in its next call, even one that takes no context:
/// torch.compile's backward thread failed there with
/// `CUDA_ERROR_INVALID_CONTEXT` from `cuPointerGetAttribute`.
#[test]
fn c_thread_set_current_then_context_free_call() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = build_c(dir.path(), "thread_context");
    let out = h.run(h.command(&exe));
    out.assert_success()
        .assert_line("ok bare_thread_pointer_attribute")
        .assert_line("ok thread_set_current")
        .assert_line("ok thread_pointer_attribute")
        .assert_line("ok thread_pointer_attribute_value")
        .assert_line("ok thread_memset_data")
        .assert_line("ok main_sees_thread_memset")
        .assert_line("21 checks, 0 failed");
}

/// Stream capture and graphs through vgpu: captured memsets, a copy, an
/// event record and a kernel launch run only when the instantiated graph is
/// launched, each time; a forbidden call during a global capture and the
/// invalidated end of capture come back with the driver's codes; destroyed
/// and forged graph handles are refused. The same program run straight on
/// the simulated device (the driver vgpu carries) prints the same lines, as
/// gpu runs compare it natively and through vgpu.
#[test]
fn c_stream_capture_and_graphs() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = build_c(dir.path(), "graphs");
    let trace = dir.path().join("trace.txt");
    let mut through = h.command(&exe);
    through
        .args(["--kernel", "--handles"])
        .env("VGPU_TRACE", &trace);
    let out = h.run(through);
    out.assert_success()
        .assert_line("ok capture_ran_nothing_a")
        .assert_line("ok capture_ran_nothing_b")
        .assert_line("ok replay_2_a")
        .assert_line("ok replay_2_b")
        .assert_line("ok info_v2_start_values")
        .assert_line("ok info_v3_one_dependency")
        .assert_line("ok dependency_is_memset")
        .assert_line("ok update_dependencies")
        .assert_line("ok info_after_none")
        .assert_line("ok to_graph_same_graph")
        .assert_line("ok to_graph_instantiate_result")
        .assert_line("ok to_graph_data")
        .assert_line("ok built_types")
        .assert_line("ok built_add_edge")
        .assert_line("ok built_two_roots")
        .assert_line("ok built_three_edges")
        .assert_line("ok built_wait_two_deps")
        .assert_line("ok built_root_one_dependent")
        .assert_line("ok built_dot_file")
        .assert_line("ok built_update_same_result")
        .assert_line("ok built_update_changed_result")
        .assert_line("ok memset_node_data")
        .assert_line("ok memset_node_out_of_range")
        .assert_line("ok built_event_sync")
        .assert_line("ok forbid_mem_alloc")
        .assert_line("ok forbid_is_capturing_invalidated")
        .assert_line("ok forbid_end_invalidated")
        .assert_line("ok sync_end_invalidated")
        .assert_line("ok relaxed_mem_alloc")
        .assert_line("ok destroyed_exec_launch")
        .assert_line("ok destroyed_graph_destroy")
        .assert_line("ok kernel_capture_ran_nothing")
        .assert_line("ok kernel_replay_data")
        .assert_line("ok kernel_node_data")
        .assert_line("ok kernel_node_set_data")
        .assert_line("ok kernel_node_params_back");
    // Launches of a live executable graph outside capture are posted (7 of
    // them), as are the stream's and the event's creation and destruction.
    let text = std::fs::read_to_string(&trace).expect("the trace file");
    let summary = text
        .lines()
        .find(|l| l.starts_with("== vgpu lanes:"))
        .unwrap_or_else(|| panic!("no lane summary in the trace:\n{text}"));
    let posted: u64 = summary
        .split(", ")
        .find_map(|part| part.strip_suffix(" posted"))
        .and_then(|n| n.trim().rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no posted count in {summary:?}"));
    assert!(posted >= 7 + 4, "{posted} posted: {summary}");
    let mut direct = h.command(&exe);
    direct.arg(&h.build.sim).args(["--kernel", "--handles"]);
    let native = h.run(direct);
    native.assert_success();
    let body = |s: &str| s.lines().skip(1).map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        body(&out.stdout),
        body(&native.stdout),
        "through vgpu and straight on the simulated device differ"
    );
    // vgpu's one refusal the driver does not make: a copy through the
    // worker's own buffer into a captured graph.
    let mut pageable = h.command(&exe);
    pageable.arg("--pageable");
    h.run(pageable)
        .assert_success()
        .assert_line("ok pageable_copy_refused")
        .assert_line("ok pageable_end");
}

#[test]
fn python_ctypes_sixteen_threads() {
    let h = Harness::start();
    let mut cmd = h.command("python3");
    cmd.arg(repo_root().join("tests/python/threads_stress.py"))
        .args(["16", "200"]);
    let out = common::run(cmd, Duration::from_secs(300));
    out.assert_success();
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("threads ok: 16 threads x 200 iterations")),
        "{out}"
    );
    println!("{}", out.stdout);
}

/// Module loads from files and fat binaries, 3D copies, and trace arguments.
#[test]
fn python_files_and_3d_copies() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("trace.log");
    let mut cmd = h.command("python3");
    cmd.arg(repo_root().join("tests/python/files_3d.py"))
        .env("VGPU_TRACE", &trace);
    let out = h.run(cmd);
    out.assert_success()
        .assert_line("ok module_load_file_function")
        .assert_line("ok module_load_missing_file")
        .assert_line("ok library_load_file")
        .assert_line("ok memcpy3d_htod_data")
        .assert_line("ok memcpy3d_dtoh_data")
        .assert_line("ok memcpy3d_out_of_bounds")
        .assert_line("ok trace_has_arguments")
        .assert_line("0 failed");
}
