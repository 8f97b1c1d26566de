//! Real clients in other languages: the Python ctypes and C smoke programs
//! of `tests/python` and `tests/c`, run against the client library, a real
//! mediator and the simulated device.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{Harness, Mediator};

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
    cmd.arg(common::repo_root().join("tests/python/ctypes_smoke.py"));
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

/// `cmd` with the C programs' checks of destroyed and forged handles on
/// (`CU_TEST_INVALID_HANDLES`, see `tests/c/cuda_prelude.h`): vgpu refuses
/// them from its tables, where the real driver may not look.
fn invalid_handle_checks(mut cmd: Command) -> Command {
    cmd.env("CU_TEST_INVALID_HANDLES", "1");
    cmd
}

/// Asserts that a C test printed the same lines through vgpu (`through`) as
/// straight on the simulated device (`direct`), but for the first line,
/// which names the library it loaded.
fn same_as_on_the_sim(through: &common::Output, direct: &common::Output) {
    let body = |s: &str| s.lines().skip(1).map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        body(&through.stdout),
        body(&direct.stdout),
        "through vgpu and straight on the simulated device differ"
    );
}

#[test]
fn c_driver_smoke() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "driver_smoke");
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

/// `tests/c/nvml_info.c`: NVML (vgpu's, as `libnvidia-ml.so.1`) beside the
/// CUDA client in one C program: count and name as CUDA's, an allocation
/// counted in the device's memory, and the process listed with it.
#[test]
fn c_nvml_info() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "nvml_info");
    let mut cmd = invalid_handle_checks(h.command(&exe));
    cmd.arg("processes");
    let out = h.run(cmd);
    out.assert_success()
        .assert_line("ok load libnvidia-ml.so.1")
        .assert_line("ok device_count_matches")
        .assert_line("ok name_matches")
        .assert_line("ok memory_counts_allocation")
        .assert_line("ok nvml_handle_past_count")
        .assert_line("ok nvml_memory_null")
        .assert_line("ok process_listed_with_allocation")
        .assert_line("23 checks, 0 failed");
}

/// A thread that makes a context current with `cuCtxSetCurrent` alone (no
/// round trip) sees it in its next call, even one that takes no context:
/// torch.compile's backward thread failed there with
/// `CUDA_ERROR_INVALID_CONTEXT` from `cuPointerGetAttribute`.
#[test]
fn c_thread_set_current_then_context_free_call() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "thread_context");
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

/// Tensor maps through a real client and mediator: a 2D tiled map over an
/// allocation encodes to 128 bytes not all zero, replacing its address
/// changes it the way encoding at the new address does and replacing it
/// back restores it, and a rank of 0 or 6, a misaligned address, a stride
/// not a multiple of 16 and a NULL map get `CUDA_ERROR_INVALID_VALUE`
/// (`tests/c/tensormap.c`, which a GPU machine also runs natively; its
/// checksum line is the simulated device's own here, so it is not checked).
#[test]
fn c_tensor_maps() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "tensormap");
    let out = h.run(invalid_handle_checks(h.command(&exe)));
    out.assert_success()
        .assert_line("ok encode_tiled_2d")
        .assert_line("ok encode_tiled_2d_not_zero")
        .assert_line("ok encode_deterministic")
        .assert_line("ok replace_address")
        .assert_line("ok replace_address_changes")
        .assert_line("ok replace_equals_encode")
        .assert_line("ok replace_back_restores")
        .assert_line("ok replace_misaligned")
        .assert_line("ok replace_null_map")
        .assert_line("ok rank_0")
        .assert_line("ok rank_6")
        .assert_line("ok misaligned_address")
        .assert_line("ok stride_not_multiple_of_16")
        .assert_line("ok null_map")
        .assert_line("ok encode_fixed_address")
        .assert_line("24 checks, 0 failed");
}

/// The JIT linker through a real client and mediator: a link with log
/// buffers takes inputs from memory and from a file (read where the client
/// runs), completes with an image that loads as a module, and is destroyed;
/// a missing file gets `CUDA_ERROR_FILE_NOT_FOUND`; an input that is not PTX
/// gets `CUDA_ERROR_INVALID_IMAGE` with the error log in the application's
/// buffer, cut and NUL-terminated in a too-small one, and the link (and an
/// empty one) still completes, as driver 580 does; a NULL link state gets
/// `CUDA_ERROR_INVALID_HANDLE` (`tests/c/linker.c`, which a
/// GPU machine also runs natively).
#[test]
fn c_linker() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "linker");
    let out = h.run(invalid_handle_checks(h.command(&exe)));
    out.assert_success()
        .assert_line("ok add_data")
        .assert_line("ok add_file")
        .assert_line("ok add_file_missing")
        .assert_line("ok complete")
        .assert_line("ok complete_image")
        .assert_line("ok load_linked")
        .assert_line("ok get_function")
        .assert_line("ok add_bad_ptx")
        .assert_line("ok bad_ptx_error_log")
        .assert_line("ok bad_ptx_error_log_size")
        .assert_line("ok complete_after_bad")
        .assert_line("ok complete_empty")
        .assert_line("ok small_log_cut")
        .assert_line("ok small_log_no_overflow")
        .assert_line("ok add_data_null_state")
        .assert_line("ok destroy_twice")
        .assert_line("38 checks, 0 failed");
}

/// The occupancy calculator through a real client and mediator:
/// `cuOccupancyMaxPotentialBlockSize(WithFlags)` runs the driver's search in
/// the client, calling the application's shared-memory callback there, and
/// answers what the search over the remoted per-multiprocessor queries
/// gives; `cuOccupancyMaxPotentialClusterSize` answers from the worker
/// (`tests/c/occupancy.c`, which a GPU machine also runs natively).
#[test]
fn c_occupancy() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "occupancy");
    let out = h.run(h.command(&exe));
    out.assert_success()
        .assert_line("ok plain_matches_search")
        .assert_line("ok fixed_smem_matches_search")
        .assert_line("ok callback_matches_search")
        .assert_line("ok callback_ran")
        .assert_line("ok limit_100_matches_search")
        .assert_line("ok limit_100_positive")
        .assert_line("ok with_flags_matches_search")
        .assert_line("ok null_block")
        .assert_line("ok cluster_size")
        .assert_line("ok cluster_size_range")
        .assert_line("33 checks, 0 failed");
}

/// Legacy launches through a real client and mediator: a function's block
/// shape, shared size and `cuParamSet*` buffer drive `cuLaunchGrid`,
/// `cuLaunch` and `cuLaunchGridAsync`, each of which fills exactly the
/// words its grid covers (`tests/c/legacy_launch.c`, which a GPU machine
/// also runs natively).
#[test]
fn c_legacy_launch() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "legacy_launch");
    let out = h.run(h.command(&exe));
    out.assert_success()
        .assert_line("ok param_setv")
        .assert_line("ok param_setf")
        .assert_line("ok launch_grid_filled")
        .assert_line("ok launch_filled")
        .assert_line("ok launch_grid_async_filled")
        .assert_line("35 checks, 0 failed");
}

/// Device `printf` through a real client and mediator: the simulated
/// kernel's lines reach the client's own standard output through the
/// session's output channel, in order, at the synchronization that flushes
/// them, between the host lines printed before and after it, and a flush
/// larger than a megabyte arrives whole (`tests/c/printf.c`, which a GPU
/// machine also runs natively).
#[test]
fn c_printf() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "printf");
    let out = h.run(h.command(&exe));
    out.assert_success().assert_line("16 checks, 0 failed");
    // A flush of megabytes arrives whole.
    let big = out
        .stdout
        .lines()
        .filter(|l| l.ends_with(" value 5"))
        .count();
    assert_eq!(big, 100_000, "lines of the large flush lost:\n{out}");
    let lines: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("host: ") || l.starts_with("thread "))
        .filter(|l| !l.ends_with(" value 5"))
        .collect();
    let want = [
        "host: before ctx sync",
        "thread 0 value 7",
        "thread 1 value 7",
        "thread 2 value 7",
        "thread 3 value 7",
        "host: after ctx sync",
        "thread 0 value 8",
        "thread 1 value 8",
        "thread 2 value 8",
        "thread 3 value 8",
        "host: after stream sync",
    ];
    assert_eq!(lines, want, "device printf lines out of place:\n{out}");
}

/// Device `assert` through a real client and mediator: the simulated
/// kernel's failed assertions give `CUDA_ERROR_ASSERT` and their messages
/// reach the client's own standard error through the session's output
/// channel, once each (`tests/c/assert.c` captures its standard error and
/// checks; a GPU machine also runs it natively).
#[test]
fn c_assert() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "assert");
    let out = h.run(h.command(&exe));
    out.assert_success().assert_line("15 checks, 0 failed");
    assert!(
        !out.stdout.contains("Assertion"),
        "an assertion message reached stdout:\n{out}"
    );
}

/// Process checkpointing through a real client and mediator: the calls
/// name the application's own pid and act on its session's worker, which
/// goes from running through locked, checkpointed and locked back to
/// running, its device memory intact (`tests/c/checkpoint.c`, which a GPU
/// machine also runs natively).
#[test]
fn c_checkpoint() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "checkpoint");
    let out = h.run(h.command(&exe));
    out.assert_success()
        .assert_line("ok running_is")
        .assert_line("ok restore_thread_positive")
        .assert_line("ok state_null")
        .assert_line("ok checkpointed_is")
        .assert_line("ok unlocked_is")
        .assert_line("ok memory_survives")
        .assert_line("26 checks, 0 failed");
}

/// GPU core dump attributes through a real client and mediator: the
/// worker's process-wide defaults are driver 580's, names read back, a
/// context's setting reads back, and NULL pointers get
/// `CUDA_ERROR_INVALID_VALUE` (`tests/c/coredump.c`, which a GPU machine
/// also runs natively).
#[test]
fn c_coredump() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "coredump");
    let out = h.run(invalid_handle_checks(h.command(&exe)));
    out.assert_success()
        .assert_line("ok global_trigger_host_value")
        .assert_line("ok global_on_exception_value")
        .assert_line("ok global_file")
        .assert_line("ok context_on_value")
        .assert_line("ok context_off_value")
        .assert_line("ok null_size")
        .assert_line("24 checks, 0 failed");
}

/// Driver logs through a real client and mediator: a failure in the worker
/// shows in `cuLogsDumpToMemory` from an earlier `cuLogsCurrent`, which
/// advances; a too-small or NULL buffer and bad flags get
/// `CUDA_ERROR_INVALID_VALUE`; `cuLogsDumpToFile` writes where the client
/// runs (`tests/c/logs.c`, which a GPU machine also runs natively).
#[test]
fn c_logs() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "logs");
    let out = h.run(h.command(&exe));
    out.assert_success()
        .assert_line("ok dump_has_lines")
        .assert_line("ok dump_again_empty")
        .assert_line("ok dump_too_small_size")
        .assert_line("ok file_has_lines")
        .assert_line("18 checks, 0 failed");
}

/// Driver log callbacks and async notification registrations through a
/// real client and mediator: the worker driver's log message of a failed
/// call reaches the application's function in the client before the call
/// returns (checked at once, without waiting), with its user data and a
/// non-empty message, and stops once it is unregistered; two functions both
/// get it; a NULL function, an unknown device and handles taken back or never given
/// get the simulated device's codes, as straight on it
/// (`tests/c/log_callbacks.c`, which a GPU machine also runs natively).
#[test]
fn c_log_callbacks() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "log_callbacks");
    let out = h.run(invalid_handle_checks(h.command(&exe)));
    out.assert_success()
        .assert_line("ok log_arrived")
        .assert_line("ok log_not_empty")
        .assert_line("ok log_user_data")
        .assert_line("log callback got message(s) at level 0")
        .assert_line("ok log_none_after_unregister")
        .assert_line("ok log_both_a")
        .assert_line("ok log_both_b")
        .assert_line("ok log_register_null: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok notify_register: CUDA_SUCCESS")
        .assert_line("ok notify_unregister")
        .assert_line("ok notify_register_null: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok notify_register_bad_device: CUDA_ERROR_INVALID_DEVICE")
        .assert_line("ok log_unregister_twice: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok log_unregister_null: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok log_unregister_unknown: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok notify_unregister_twice: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok notify_unregister_unknown: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok notify_register_no_out: CUDA_ERROR_INVALID_VALUE")
        .assert_line("32 checks, 0 failed");
    let mut direct = invalid_handle_checks(h.command(&exe));
    direct.arg(&h.build.sim);
    same_as_on_the_sim(&out, &h.run(direct));
}

/// A log function that blocks holds up the failing call it runs in, as the
/// driver runs it inside the call, and nothing else: thousands of failing
/// calls on another thread return meanwhile, each with its message, so the
/// worker's other lanes go on (`tests/c/log_callbacks.c --blocked`, also
/// straight on the simulated device).
#[test]
fn c_log_callbacks_blocked() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "log_callbacks");
    let mut cmd = h.command(&exe);
    cmd.args(["libcuda.so.1", "--blocked"]);
    let out = h.run(cmd);
    out.assert_success()
        .assert_line("ok blocked_entered")
        .assert_line("ok blocked_call_waits")
        .assert_line("ok blocked_others_returned")
        .assert_line("ok blocked_others_logged")
        .assert_line("ok blocked_call_returned")
        .assert_line("ok blocked_unregister")
        .assert_line("11 checks, 0 failed");
    let mut direct = h.command(&exe);
    direct.arg(&h.build.sim).arg("--blocked");
    same_as_on_the_sim(&out, &h.run(direct));
}

/// A CUDA call from inside a log function runs, as straight on the
/// simulated device: the function runs on the failing call's thread once
/// its lane is free (`tests/c/log_callbacks.c --reenter`).
#[test]
fn c_log_callbacks_reenter() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "log_callbacks");
    let mut cmd = h.command(&exe);
    cmd.args(["libcuda.so.1", "--reenter"]);
    let out = h.run(cmd);
    out.assert_success()
        .assert_line("ok reenter_ran")
        .assert_line("ok reenter_call: CUDA_SUCCESS")
        .assert_line("8 checks, 0 failed");
    let mut direct = h.command(&exe);
    direct.arg(&h.build.sim).arg("--reenter");
    same_as_on_the_sim(&out, &h.run(direct));
}

/// Host callbacks through a real client and mediator: `cuLaunchHostFunc`
/// and `cuStreamAddCallback` run in the client's process, with its userData
/// and stream, exactly once, in stream order (a later copy reads what one
/// wrote; an event after a sleeping one waits for it); a CUDA call from
/// inside one returns instead of deadlocking (`tests/c/callbacks.c`, which a
/// GPU machine also runs natively).
#[test]
fn c_host_callbacks() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "callbacks");
    let out = h.run(h.command(&exe));
    out.assert_success()
        .assert_line("ok host_func_ran_once")
        .assert_line("ok host_func_user_data")
        .assert_line("ok host_func_in_process")
        .assert_line("ok copy_saw_host_func")
        .assert_line("ok callback_stream")
        .assert_line("ok callback_status")
        .assert_line("ok many_in_order")
        .assert_line("ok query_waits_for_sleeper")
        .assert_line("ok inner_call_returned")
        .assert_line("ok last_ran_once")
        .assert_line("50 checks, 0 failed");
}

/// Stream memory operations through vgpu: each form of `cuStreamWriteValue32/64`
/// stores its value in stream order, `cuStreamWaitValue32/64` with a met condition
/// lets later work run, one stream waits for another's flag, an unmet wait holds
/// its stream (`CUDA_ERROR_NOT_READY`) until the host writes the value, a captured write runs
/// at each launch, bad flags get `CUDA_ERROR_INVALID_VALUE` and addresses outside
/// the session's allocations are refused (`tests/c/stream_memops.c`, which a GPU
/// machine also runs natively). Straight on the simulated device it prints the
/// same lines.
#[test]
fn c_stream_memory_operations() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "stream_memops");
    let out = h.run(invalid_handle_checks(h.command(&exe)));
    out.assert_success()
        .assert_line("ok write32_value")
        .assert_line("ok write64_value")
        .assert_line("ok write32_width")
        .assert_line("ok ptsz_values")
        .assert_line("ok work_after_waits_ran")
        .assert_line("ok consumer_saw_producer")
        .assert_line("ok held_query")
        .assert_line("ok released")
        .assert_line("ok captured_batch_mem_op")
        .assert_line("ok capture_did_not_run")
        .assert_line("ok launch_wrote")
        .assert_line("ok write_bad_flags")
        .assert_line("ok wait_bad_flags")
        .assert_line("ok write_past_allocation")
        .assert_line("ok wait_unallocated")
        .assert_line("ok batch_values")
        .assert_line("ok batch_bad_flags")
        .assert_line("ok batch_past_allocation")
        .assert_line("97 checks, 0 failed");
    let mut direct = invalid_handle_checks(h.command(&exe));
    direct.arg(&h.build.sim);
    same_as_on_the_sim(&out, &h.run(direct));
}

/// Typed node parameters through vgpu: event record and wait nodes' events
/// read back and replaced in graphs and executable graphs, a getter of one node
/// type on another with `CUDA_ERROR_INVALID_VALUE`, disabled memset nodes that do
/// not run until enabled, nodes found in clones, child graph nodes that run a
/// copy of their graph, host nodes whose function runs in the client's process at
/// each launch, in order, memcpy nodes between pinned host memory and the device,
/// and destroyed child graphs and executable graphs refused
/// (`tests/c/graph_nodes.c`, which a GPU machine also runs natively). Straight on
/// the simulated device it prints the same lines.
#[test]
fn c_graph_nodes() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "graph_nodes");
    let out = h.run(invalid_handle_checks(h.command(&exe)));
    out.assert_success()
        .assert_line("ok record_set_event")
        .assert_line("ok wait_set_event")
        .assert_line("ok record_get_on_wait")
        .assert_line("ok exec_record_set_on_wait")
        .assert_line("ok exec_set_leaves_graph")
        .assert_line("ok event_recorded")
        .assert_line("ok disabled_did_not_run")
        .assert_line("ok enabled_ran")
        .assert_line("ok find_b_distinct")
        .assert_line("ok find_in_not_clone")
        .assert_line("ok child_graph_is_copy")
        .assert_line("ok child_get_graph_on_memset")
        .assert_line("ok child_ran")
        .assert_line("ok after_child_ran")
        .assert_line("ok child_ran_again")
        .assert_line("ok add_destroyed_child")
        .assert_line("ok launch_destroyed_exec")
        .assert_line("ok launch_uninstantiated")
        .assert_line("ok host_get_params")
        .assert_line("ok host_event_waited")
        .assert_line("ok host_ran_once")
        .assert_line("ok host_user_data")
        .assert_line("ok host_in_process")
        .assert_line("ok host_ran_twice")
        .assert_line("ok host_exec_set_ran")
        .assert_line("ok host_set_params")
        .assert_line("ok host_inner_call_returned")
        .assert_line("ok memcpy_get_params")
        .assert_line("ok memcpy_get_on_host")
        .assert_line("ok memcpy_round_trip")
        .assert_line("ok memcpy_reads_at_launch")
        .assert_line("ok memcpy_set_params")
        .assert_line("ok memcpy_exec_set_ran")
        .assert_line("ok pageable_is_memcpy_node")
        .assert_line("ok pageable_get_params")
        .assert_line("ok pageable_round_trip")
        .assert_line("ok pageable_round_trip_2")
        .assert_line("ok memset_get_params")
        .assert_line("ok memset_exec_set_ran")
        .assert_line("ok memset_graph_kept_params")
        .assert_line("ok memset_set_ran")
        .assert_line("ok memset_get_on_empty")
        .assert_line("ok remove_missing_edge")
        .assert_line("ok exec_child_set_ran")
        .assert_line("ok edges_v2_one_default")
        .assert_line("ok dependencies_v2_a")
        .assert_line("ok dependents_v2_b")
        .assert_line("ok remove_edge_v2_again")
        .assert_line("ok user_alive")
        .assert_line("ok user_graph_keeps_alive")
        .assert_line("ok user_destroyed_with_graph")
        .assert_line("ok user_destructor_in_process")
        .assert_line("ok user_exec_keeps_alive")
        .assert_line("ok user_destroyed_with_exec")
        .assert_line("ok host_capture_ran_nothing")
        .assert_line("ok host_capture_is_host_node")
        .assert_line("ok host_capture_ran_twice")
        .assert_line("ok alloc_node_address")
        .assert_line("ok free_node_not_allocated")
        .assert_line("ok alloc_node_is_alloc")
        .assert_line("ok free_node_is_free")
        .assert_line("ok alloc_node_params")
        .assert_line("ok free_node_params")
        .assert_line("ok alloc_get_on_free")
        .assert_line("ok alloc_node_ran")
        .assert_line("ok alloc_node_ran_2")
        .assert_line("ok graph_mem_used_high_reset")
        .assert_line("ok graph_mem_set_current")
        .assert_line("ok graph_mem_set_high_nonzero")
        .assert_line("ok graph_mem_trim")
        .assert_line("ok graph_mem_bad_device")
        .assert_line("325 checks, 0 failed");
    let mut direct = invalid_handle_checks(h.command(&exe));
    direct.arg(&h.build.sim);
    same_as_on_the_sim(&out, &h.run(direct));
}

/// Kernel node launch attributes: a priority, the cooperative flag and a memory
/// synchronisation domain set on a kernel node read back, another kernel node
/// takes them by `cuGraphKernelNodeCopyAttributes`, and the graph still runs its
/// kernel; batch memory-operation nodes run their write at each launch, and their
/// parameters read back and are replaced in the graph and in an executable graph
/// (`tests/c/graph_nodes2.c`, which a GPU machine also runs natively).
/// Straight on the simulated device it prints the same lines.
#[test]
fn c_graph_nodes2() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "graph_nodes2");
    let out = h.run(invalid_handle_checks(h.command(&exe)));
    out.assert_success()
        .assert_line("ok kattr_priority_read_back")
        .assert_line("ok kattr_cooperative_read_back")
        .assert_line("ok kattr_domain_read_back")
        .assert_line("ok kattr_copied_priority")
        .assert_line("ok kattr_copied_domain")
        .assert_line("ok kattr_kernel_ran")
        .assert_line("ok kattr_clone_priority: -1")
        .assert_line("ok batch_is_batch_node")
        .assert_line("ok batch_get_params")
        .assert_line("ok batch_ran")
        .assert_line("ok batch_exec_set_ran")
        .assert_line("ok batch_set_params")
        .assert_line("ok batch_set_ran")
        .assert_line("ok cond_handles_differ")
        .assert_line("78 checks, 0 failed");
    let mut direct = invalid_handle_checks(h.command(&exe));
    direct.arg(&h.build.sim);
    same_as_on_the_sim(&out, &h.run(direct));
}

/// External-semaphore nodes, the generic node calls and conditional nodes
/// through a real mediator on the simulated device (`tests/c/graph_nodes3.c`,
/// which a GPU machine also runs natively): signal and wait nodes on the
/// simulated device's stand-in timeline semaphore signal and pass at each
/// launch, their parameters read back, and the graph's and the executable
/// graph's setters take effect at the next launch; cuGraphAddNode of every
/// kind of node runs, each result checked on the device, and the kernel
/// node's parameters are replaced through cuGraphNodeSetParams and
/// cuGraphExecNodeSetParams; a memcpy node from pageable memory takes new
/// parameters in the graph and in an executable graph; an IF node of a
/// handle whose default is 1 runs its body, one of 0 does not, a SWITCH
/// picks its case and a WHILE of 0 runs nothing; a destroyed semaphore and
/// NULL parameters are refused. Straight on the simulated device it prints
/// the same lines.
#[test]
fn c_graph_nodes3() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "graph_nodes3");
    let out = h.run(invalid_handle_checks(h.command(&exe)));
    out.assert_success()
        .assert_line("ok extsem_import: CUDA_SUCCESS")
        .assert_line("ok extsem_signal_params")
        .assert_line("ok extsem_wait_params")
        .assert_line("ok extsem_signalled_5")
        .assert_line("ok extsem_wait_passed")
        .assert_line("ok extsem_exec_signalled_12")
        .assert_line("ok extsem_exec_wait_passed")
        .assert_line("ok extsem_graph_keeps_5")
        .assert_line("ok extsem_signal_set_params")
        .assert_line("ok extsem_wait_set_params")
        .assert_line("ok extsem_signalled_8")
        .assert_line("ok extsem_generic_signalled_20")
        .assert_line("ok extsem_capture_did_not_signal")
        .assert_line("ok extsem_captured_params")
        .assert_line("ok extsem_captured_signalled_30")
        .assert_line("ok gen_alloc_address_written")
        .assert_line("ok gen_memcpy_is_memcpy")
        .assert_line("ok gen_kernel_ran")
        .assert_line("ok gen_memset_ran")
        .assert_line("ok gen_child_ran")
        .assert_line("ok gen_memcpy_ran")
        .assert_line("ok gen_host_ran")
        .assert_line("ok gen_batch_ran")
        .assert_line("ok gen_moved_child_ran")
        .assert_line("ok gen_moved_child_is_given_graph: yes")
        .assert_line("ok gen_exec_set_ran")
        .assert_line("ok gen_set_ran")
        .assert_line("ok gen_add_unknown_type: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok cond_bodies_given")
        .assert_line("ok cond_bodies_differ")
        .assert_line("ok cond_body_has_node")
        .assert_line("ok cond_if_1_ran")
        .assert_line("ok cond_if_0_skipped")
        .assert_line("ok cond_switch_picked_1")
        .assert_line("ok cond_while_0_skipped")
        .assert_line("ok pset_copied_a")
        .assert_line("ok pset_get_b")
        .assert_line("ok pset_copied_b")
        .assert_line("ok pset_exec_set_a: CUDA_SUCCESS")
        .assert_line("ok pset_exec_copied_a")
        .assert_line("ok pset_graph_kept_b")
        .assert_line("ok pset_copied_to_host")
        .assert_line("ok pset_copied_device")
        .assert_line("ok extsem_add_destroyed")
        .assert_line("ok gen_add_null_params")
        .assert_line("ok gen_add_self_child")
        .assert_line("ok cond_add_handle_taken: CUDA_ERROR_INVALID_VALUE")
        .assert_line("217 checks, 0 failed");
    let mut direct = invalid_handle_checks(h.command(&exe));
    direct.arg(&h.build.sim);
    same_as_on_the_sim(&out, &h.run(direct));
}

/// Managed memory through a real mediator on the simulated device: CPU
/// stores a kernel reads and kernel stores the CPU reads after
/// synchronization, copies and memsets into managed pages, the pointer
/// attributes of managed memory, advice and prefetches read back with
/// `cuMemRangeGetAttribute(s)`, stream attachment, and the driver's codes
/// for advice on device memory, an unknown device, a bad attribute size
/// (`tests/c/managed.c`, which a GPU machine also runs natively).
#[test]
fn c_managed_memory() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "managed");
    let out = h.run(invalid_handle_checks(h.command(&exe)));
    out.assert_success()
        .assert_line("ok launch_on_managed")
        .assert_line("ok cpu_sees_kernel_writes")
        .assert_line("ok cpu_sees_memset")
        .assert_line("ok dtoh_sees_cpu_store")
        .assert_line("ok pointer_is_managed_value")
        .assert_line("ok range_read_mostly_mixed")
        .assert_line("ok range_preferred_mixed")
        .assert_line("ok range_accessed_by_value")
        .assert_line("ok range_last_prefetch_mixed")
        .assert_line("ok prefetch_invalid_device")
        .assert_line("ok advise_device_memory")
        .assert_line("ok attach_flags")
        .assert_line("ok free_managed_twice");
    assert_all_checks_passed(&out);
}

/// `cuMemHostRegister` through a real mediator on the simulated device: the
/// program's own pages move into pages shared with the worker in place,
/// keep their bytes, serve copies and a kernel, and stay the program's after
/// unregistering; registering twice and unregistering what is not
/// registered give the driver's codes; registrations of disjoint bytes
/// sharing a page are served, each for its own bytes, and stay registered
/// while their neighbours are unregistered (`tests/c/host_register.c`).
#[test]
fn c_host_register() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "host_register");
    let out = h.run(invalid_handle_checks(h.command(&exe)));
    out.assert_success()
        .assert_line("ok register_keeps_bytes")
        .assert_line("ok device_pointer_is_host_pointer")
        .assert_line("ok cpu_sees_kernel_writes")
        .assert_line("ok dtoh_registered_data")
        .assert_line("ok htod_registered_data")
        .assert_line("ok register_twice")
        .assert_line("ok unregister_keeps_bytes")
        .assert_line("ok unregister_twice")
        .assert_line("ok unregister_never_registered")
        .assert_line("ok shared_register_b")
        .assert_line("ok shared_register_c_across_pages")
        .assert_line("ok shared_register_overlap")
        .assert_line("ok shared_flags_b_value")
        .assert_line("ok shared_range_b")
        .assert_line("ok shared_copies_b")
        .assert_line("ok shared_kernel_writes")
        .assert_line("ok shared_flags_a_after: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok shared_copies_b_after_a")
        .assert_line("ok shared_unregister_a_twice: CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED")
        .assert_line("ok shared_copies_b_after_c")
        .assert_line("ok shared_flags_b_after: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok shared_unregister_keeps_bytes")
        .assert_line("ok shared_register_again");
    assert_all_checks_passed(&out);
}

/// `cuMemHostRegister` of mappings of several kinds: a shared file mapping
/// is refused with `CUDA_ERROR_INVALID_VALUE` (driver 580's answer) and keeps
/// its pages; shared and private anonymous mappings are moved in place,
/// keep their bytes and serve a copy (`tests/python/host_register_limits.py`).
#[test]
fn python_host_register_limits() {
    let h = Harness::start();
    let mut cmd = h.command("python3");
    cmd.arg(common::repo_root().join("tests/python/host_register_limits.py"));
    let out = h.run(cmd);
    out.assert_success()
        .assert_line("ok register_file_backed")
        .assert_line("ok file_bytes_kept")
        .assert_line("ok register_shared_anonymous")
        .assert_line("ok shared_bytes_kept")
        .assert_line("ok registered_sees_copy")
        .assert_line("ok usable_after_unregister")
        .assert_line("limits ok");
}

/// The memory-pool family through a real client and mediator: the device's
/// default and current pool, a created pool's attributes of both value
/// types, allocation from it and through `cuMemAllocAsync` once current,
/// trim, destruction with an allocation outstanding, and the driver's code
/// for a forged pool, a pool destroyed twice, a bad or read-only attribute
/// and a pointer freed twice (`tests/c/pools.c`, which a GPU machine also
/// runs natively).
#[test]
fn c_memory_pools() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "pools");
    let out = h.run(invalid_handle_checks(h.command(&exe)));
    out.assert_success()
        .assert_line("ok current_is_default")
        .assert_line("ok destroy_default_pool")
        .assert_line("ok reuse_1_default_enabled")
        .assert_line("ok release_threshold_64_bits")
        .assert_line("ok set_reserved_current_read_only")
        .assert_line("ok get_attribute_99")
        .assert_line("ok alloc_from_pool_data")
        .assert_line("ok pointer_pool_is_pool")
        .assert_line("ok freed_memory_kept")
        .assert_line("ok free_async_twice")
        .assert_line("ok trim_releases")
        .assert_line("ok alloc_async_from_current")
        .assert_line("ok destroy_resets_current")
        .assert_line("ok outstanding_alloc_lives")
        .assert_line("ok free_after_destroy")
        .assert_line("ok destroy_twice")
        .assert_line("ok forged_alloc")
        .assert_line("ok forged_set_current");
    assert!(
        out.stdout.lines().any(|l| l.ends_with(" checks, 0 failed")),
        "{out}"
    );
}

/// Inter-process handles between two client processes, so two sessions and
/// two workers of one mediator (`tests/c/ipc.c`): device memory exported
/// both ways, opened twice (one address, counted), closed; an interprocess
/// event; and bad input with driver 580's codes: handles opened in their
/// exporter, exports outside allocations, of pool memory and of a plain
/// event, an address never opened, bad flags, forged and zero handles, and
/// `cuMemFree` of opened memory. Then a VMM allocation exported as a file
/// descriptor that the worker passes to the client and the application to
/// the other process (SCM_RIGHTS, both hops), imported, mapped and written
/// both ways; descriptors that are no VMM handle (`/dev/null`, a plain
/// memfd, a closed one), fabric and unshareable exports refused as driver
/// 580 refuses them; a dma-buf descriptor of an address range; and a memory
/// pool exported as a descriptor with one of its allocations as export
/// data, imported, read, written and freed by the other process. The
/// simulated devices of the two workers share the pages through memfds.
#[test]
fn c_inter_process_handles() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "ipc");
    // Descriptors follow requests and replies on the lane's socket, beside
    // the shared-memory rings or interleaved with socket frames: both.
    for transport in ["rings", "socket"] {
        let mut cmd = invalid_handle_checks(h.command(&exe));
        cmd.env("VGPU_TRANSPORT", transport);
        let out = h.run(cmd);
        out.assert_success()
            .assert_line("ok export")
            .assert_line("ok open_in_exporter")
            .assert_line("ok close_own_allocation")
            .assert_line("ok export_plain_event")
            .assert_line("ok child_open_bad_flags")
            .assert_line("ok child_reads_parent_bytes")
            .assert_line("ok child_open_again_same_address")
            .assert_line("ok child_still_open")
            .assert_line("ok child_event_synchronize")
            .assert_line("ok child_close_never_opened")
            .assert_line("ok child_open_forged")
            .assert_line("ok child_open_zero")
            .assert_line("ok child_open_zero_event")
            .assert_line("ok open_event_in_exporter")
            .assert_line("ok export_outside_allocations")
            .assert_line("ok export_pool_memory")
            .assert_line("ok child_open_forged_event")
            .assert_line("ok child_free_opened")
            .assert_line("ok child_close_again")
            .assert_line("ok reads_child_bytes")
            .assert_line("ok reads_child_memory")
            .assert_line("ok child_reads_parent_answer")
            .assert_line("ok dma_buf_descriptor")
            .assert_line("ok vmm_export_unshareable")
            .assert_line("ok vmm_export_fabric")
            .assert_line("ok vmm_import_dev_null")
            .assert_line("ok vmm_import_memfd")
            .assert_line("ok vmm_import_closed")
            .assert_line("ok vmm_export_gives_descriptor")
            .assert_line("ok child_import_fd")
            .assert_line("ok child_reads_parent_vmm")
            .assert_line("ok vmm_reads_child_write")
            .assert_line("ok default_pool_export")
            .assert_line("ok child_import_pool")
            .assert_line("ok child_import_pointer")
            .assert_line("ok child_reads_pool_memory")
            .assert_line("ok child_free_imported_pointer")
            .assert_line("ok pool_reads_child_write")
            .assert_line("child: 43 checks, 0 failed")
            .assert_line("56 checks, 0 failed");
    }
}

/// External memory through vgpu (`tests/c/extmem.c`): a VMM allocation's
/// exported descriptor imported as opaque-fd external memory (the descriptor
/// passes to the worker by SCM_RIGHTS), a buffer mapped on it sharing the
/// allocation's bytes both ways, freed with `cuMemFree`; a mipmapped array
/// mapped on it whose levels have halving extents and keep their own bytes,
/// destroyed with `cuMipmappedArrayDestroy`; a buffer past the end, a
/// descriptor that is no exported memory, bad mipmapped array descriptors
/// and a destroyed object refused.
#[test]
fn c_external_memory() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "extmem");
    let out = h.run(invalid_handle_checks(h.command(&exe)));
    // Every line, the refusals of bad handles included, as straight on the
    // simulated device.
    let mut direct = invalid_handle_checks(h.command(&exe));
    direct.arg(&h.build.sim);
    same_as_on_the_sim(&out, &h.run(direct));
    out.assert_success()
        .assert_line("ok import_external_memory")
        .assert_line("ok buffer_reads_allocation")
        .assert_line("ok allocation_reads_buffer")
        .assert_line("ok buffer_past_end")
        .assert_line("ok import_dev_null")
        .assert_line("ok buffer_of_destroyed")
        .assert_line("ok destroy_twice")
        .assert_line("ok mipmap_map")
        .assert_line("ok mipmap_level_shapes")
        .assert_line("ok mipmap_levels_hold_their_bytes")
        .assert_line("ok mipmap_destroy")
        .assert_line("ok mipmap_too_many_levels: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok mipmap_past_end: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok mipmap_destroy_twice: CUDA_ERROR_INVALID_HANDLE")
        .assert_line("55 checks, 0 failed");
}

/// Batched decompression through vgpu (`tests/c/decompress.c`) on the
/// simulated device's Snappy engine: two blocks decompressed on a stream and
/// one on the per-thread stream, their sizes in `dstActBytes`; a corrupt
/// block, a NULL array, no operations, flags, a destination outside the
/// session's memory and an unknown algorithm refused with their error
/// index; the same lines as straight on the simulated device.
#[test]
fn c_batch_decompress() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "decompress");
    let out = h.run(h.command(&exe));
    out.assert_success()
        .assert_line("ok snappy_engine: yes")
        .assert_line("ok hw_decompress_capable: CUDA_SUCCESS 1")
        .assert_line("ok batch_output")
        .assert_line("ok batch_sizes")
        .assert_line("ok batch_ptsz_output")
        .assert_line("ok corrupt_block: CUDA_ERROR_INVALID_VALUE index 1")
        .assert_line("ok null_params: CUDA_ERROR_INVALID_VALUE index SIZE_MAX")
        .assert_line("ok no_operations: CUDA_ERROR_INVALID_VALUE index SIZE_MAX")
        .assert_line("ok flags: CUDA_ERROR_INVALID_VALUE index SIZE_MAX")
        .assert_line("ok destination_outside: CUDA_ERROR_INVALID_VALUE index 1")
        .assert_line("ok unknown_algorithm: CUDA_ERROR_INVALID_VALUE index 0");
    let mut direct = h.command(&exe);
    direct.arg(&h.build.sim);
    same_as_on_the_sim(&out, &h.run(direct));
}

/// External semaphores shared by two client processes on the simulated
/// device (`tests/c/extsem.c`, with its stand-in semaphore descriptor): a
/// timeline signalled by one process and waited for by the other, both
/// ways, through two workers; bad descriptors and handle types, and a
/// destroyed semaphore, refused.
#[test]
fn c_external_semaphores() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "extsem");
    let out = h.run(h.command(&exe));
    out.assert_success()
        .assert_line("ok import_dev_null")
        .assert_line("ok import_win32")
        .assert_line("ok signals_1")
        .assert_line("ok child_waits_for_1")
        .assert_line("ok child_signals_2")
        .assert_line("ok waits_for_child_2")
        .assert_line("ok signal_destroyed")
        .assert_line("child: 6 checks, 0 failed")
        .assert_line("10 checks, 0 failed");
}

/// Virtual memory management through a real mediator: reserve, create, map,
/// set access, fill and copy through the mappings, the driver's answers about
/// a mapped address, and bad input refused as the driver refuses it:
/// mapping over a mapping, sizes off the granularity, a forged allocation
/// handle, a second release, and copies into reserved memory that is not
/// mapped, past a mapping and after an unmap (the worker's check follows the
/// mappings).
#[test]
fn c_virtual_memory_management() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "vmm");
    let out = h.run(invalid_handle_checks(h.command(&exe)));
    out.assert_success()
        .assert_line("ok htod_reads_back")
        .assert_line("ok dtod_reads_back")
        .assert_line("ok memset_async_reads_back")
        .assert_line("ok address_range_is_the_mapping")
        .assert_line("ok attribute_range_holds_the_pointer")
        .assert_line("ok get_access_read_write")
        .assert_line("ok retain_handle_same")
        .assert_line("ok map_over_mapped: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok reserve_misaligned_size: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok create_misaligned_size: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok map_forged_handle: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok release_forged_handle: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok release_second: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok htod_reserved_unmapped: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok htod_past_mapping: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok htod_after_unmap: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok dtoh_after_unmap: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok small_still_mapped")
        .assert_line("ok teardown_size_value")
        .assert_line("67 checks, 0 failed");
}

/// CUDA arrays through vgpu: descriptors, data through every copy form with
/// an array on one side, copies outside an array and a destroyed array
/// refused with the driver's errors, texture and surface objects and their
/// descriptors, mipmapped arrays and their levels (`tests/c/arrays.c`).
#[test]
fn c_arrays_and_their_copies() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "arrays");
    let out = h.run(invalid_handle_checks(h.command(&exe)));
    out.assert_success()
        .assert_line("ok descriptor_1d_values")
        .assert_line("ok atoa_1d_data")
        .assert_line("ok async_1d_data")
        .assert_line("ok htoa_1d_past_end: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok atod_1d_past_end: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok htoa_destroyed: CUDA_ERROR_INVALID_HANDLE")
        .assert_line("ok destroy_destroyed: CUDA_ERROR_INVALID_HANDLE")
        .assert_line("ok memcpy2d_round_trip_data")
        .assert_line("ok memcpy2d_array_rect_data")
        .assert_line("ok memcpy2d_rows_past_end: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok memcpy2d_destroyed: CUDA_ERROR_INVALID_HANDLE")
        .assert_line("ok memcpy3d_round_trip_data")
        .assert_line("ok memcpy3d_box_data")
        .assert_line("ok memcpy3d_slices_past_end: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok create_three_channels")
        .assert_line("ok tex_resource_desc_values")
        .assert_line("ok tex_texture_desc_values")
        .assert_line("ok tex_view_desc_without_view")
        .assert_line("ok tex_linear_resource_values")
        .assert_line("ok tex_objects_distinct")
        .assert_line("ok surf_resource_desc_values")
        .assert_line("ok surf_object_on_plain_array")
        .assert_line("ok tex_object_on_destroyed_array: CUDA_ERROR_INVALID_HANDLE")
        .assert_line("ok tex_object_destroy_again: CUDA_ERROR_INVALID_HANDLE")
        .assert_line("ok mipmap_level_shapes")
        .assert_line("ok mipmap_level_data")
        .assert_line("ok mipmap_tex_resource_values")
        .assert_line("ok mipmap_level_past_last: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok mipmap_destroy_again: CUDA_ERROR_INVALID_HANDLE")
        .assert_line("ok mipmap_level_after_destroy: CUDA_ERROR_INVALID_HANDLE")
        .assert_line("119 checks, 0 failed");
    // The same program on the simulated device itself, without vgpu: every
    // line after the library's name is the same (the worker's checks answer
    // as the driver does).
    let mut direct = invalid_handle_checks(h.command(&exe));
    direct.arg(&h.build.sim);
    same_as_on_the_sim(&out, &h.run(direct));
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
    let exe = common::build_c(dir.path(), "graphs");
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
        .assert_line("ok callback_capturing_stream")
        .assert_line("ok callback_end_invalidated")
        .assert_line("ok callback_not_run")
        .assert_line("ok forbid_end_invalidated")
        .assert_line("ok sync_end_invalidated")
        .assert_line("ok relaxed_mem_alloc")
        .assert_line("ok destroyed_exec_launch")
        .assert_line("ok destroyed_graph_destroy")
        .assert_line("ok kernel_capture_ran_nothing")
        .assert_line("ok kernel_replay_data")
        .assert_line("ok kernel_node_data")
        .assert_line("ok kernel_node_set_data")
        .assert_line("ok kernel_exec_set_data")
        .assert_line("ok kernel_node_params_back")
        .assert_line("ok pageable_not_at_capture")
        .assert_line("ok pageable_round_trip")
        .assert_line("ok pageable_round_trip_2")
        .assert_line("ok pageable_2d_not_at_capture")
        .assert_line("ok pageable_2d_round_trip")
        .assert_line("ok pageable_2d_round_trip_2");
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
    same_as_on_the_sim(&out, &native);
}

#[test]
fn python_ctypes_sixteen_threads() {
    let h = Harness::start();
    let mut cmd = h.command("python3");
    cmd.arg(common::repo_root().join("tests/python/threads_stress.py"))
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
    cmd.arg(common::repo_root().join("tests/python/files_3d.py"))
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

/// The 32-bit first forms of the array calls, refused in a primary context
/// as driver 580 refuses them, the per-thread forms of the
/// array copies, destroyed arrays in copies, a legacy texture reference of
/// its own, batches of linear and 3D copies with a side out of bounds, and tile mappings
/// of an array that is not sparse through vgpu (`tests/c/tail_copies.c`).
#[test]
fn c_first_forms_and_texture_references() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "tail_copies");
    let out = h.run(invalid_handle_checks(h.command(&exe)));
    out.assert_success()
        .assert_line("ok v1_create_1d")
        .assert_line("ok v1_mem_alloc")
        .assert_line("ok v1_mem_free")
        .assert_line("ok v1_mem_alloc_pitch")
        .assert_line("ok v1_mem_get_address_range")
        .assert_line("ok v1_mem_host_get_device_pointer")
        .assert_line("ok texref_set_array_no_flags")
        .assert_line("ok v1_create_3d: CUDA_ERROR_INVALID_CONTEXT")
        .assert_line("ok v1_descriptor: CUDA_ERROR_INVALID_CONTEXT")
        .assert_line("ok v1_descriptor_3d: CUDA_ERROR_INVALID_CONTEXT")
        .assert_line("ok v1_htoa: CUDA_ERROR_INVALID_CONTEXT")
        .assert_line("ok v1_atoh: CUDA_ERROR_INVALID_CONTEXT")
        .assert_line("ok v1_atoa: CUDA_ERROR_INVALID_CONTEXT")
        .assert_line("ok v1_htoa_async: CUDA_ERROR_INVALID_CONTEXT")
        .assert_line("ok v1_atoh_async: CUDA_ERROR_INVALID_CONTEXT")
        .assert_line("ok ptds_round_trip_data")
        .assert_line("ok ptsz_round_trip_data")
        .assert_line("ok ptds_atod_past_end: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok ptds_dtoa_destroyed: CUDA_ERROR_INVALID_HANDLE")
        .assert_line("ok texref_format_values")
        .assert_line("ok texref_border_color_values")
        .assert_line("ok texref_mipmap_clamp_values")
        .assert_line("ok texref_array_value")
        .assert_line("ok texref_array_format_values")
        .assert_line("ok texref_get_array_unbound: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok texref_address_value")
        .assert_line("ok texref_address_2d_value")
        .assert_line("ok texref_set_address_2d_unaligned: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok texref_set_address_past_end: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok texref_destroy_destroyed: CUDA_ERROR_INVALID_HANDLE")
        .assert_line("ok batch_data")
        .assert_line("ok batch_v2_data")
        .assert_line("ok batch_side_past_end: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok batch_side_past_end_index: 1")
        .assert_line("ok batch_legacy_stream: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok batch_attrs_not_from_zero: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok map_array_not_sparse: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok map_array_destroyed: CUDA_ERROR_INVALID_HANDLE")
        .assert_line("ok batch3d_data")
        .assert_line("ok batch3d_zero_extent: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok batch3d_zero_extent_index: 1")
        .assert_line("ok batch3d_past_array: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok batch3d_legacy_stream: CUDA_ERROR_INVALID_VALUE")
        .assert_line("130 checks, 0 failed");
}

/// Peer access and copies between contexts (`cuMemcpyPeer`, `cuMemcpy3DPeer`)
/// through vgpu (`tests/c/peer.c`).
#[test]
fn c_peer_access_and_copies() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "peer");
    let out = h.run(invalid_handle_checks(h.command(&exe)));
    out.assert_success()
        .assert_line("ok can_access_self_value")
        .assert_line("ok p2p_attribute_self: CUDA_ERROR_INVALID_DEVICE")
        .assert_line("ok p2p_atomics_self: CUDA_ERROR_INVALID_DEVICE")
        .assert_line("ok enable_peer_self: CUDA_ERROR_PEER_ACCESS_UNSUPPORTED")
        .assert_line("ok disable_peer_self: CUDA_ERROR_PEER_ACCESS_NOT_ENABLED")
        .assert_line("ok enable_peer_same_device: CUDA_ERROR_PEER_ACCESS_UNSUPPORTED")
        .assert_line("ok disable_peer_not_enabled: CUDA_ERROR_PEER_ACCESS_NOT_ENABLED")
        .assert_line("ok memcpy_peer_data")
        .assert_line("ok memcpy_peer_ptds_data")
        .assert_line("ok memcpy_peer_async_data")
        .assert_line("ok memcpy_peer_past_end: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok memcpy_peer_dst_past_end: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok memcpy_peer_destroyed_context: CUDA_ERROR_INVALID_CONTEXT")
        .assert_line("ok memcpy_3d_peer_data")
        .assert_line("ok memcpy_3d_peer_past_end: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok memcpy_3d_peer_destroyed_context: CUDA_ERROR_INVALID_CONTEXT")
        .assert_line("50 checks, 0 failed");
}

/// One session using three simulated devices at once (`tests/c/multi_device.c`):
/// a thread per device on its own context, peer access between two devices,
/// peer, unified and 3D copies between them with every byte checked, and a
/// stream of one device waiting on an event of the other; and, with a
/// destroyed context current, the VMM calls that need none.
#[test]
fn c_multi_device_session() {
    let mut h = Harness::without_mediator();
    h.mediator = Some(Mediator::start_driver(
        &h.build,
        &h.build.sim,
        &[("VGPU_SIM_DEVICES", "3")],
    ));
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "multi_device");
    let out = h.run(h.command(&exe));
    out.assert_success().assert_line("ok devices: 3");
    for d in 0..3 {
        for check in ["calls", "current_device", "memset", "copies"] {
            out.assert_line(&format!("ok thread_{d}_{check}"));
        }
        out.assert_line(&format!("ok pointer_ordinal_{d}_value"));
    }
    out.assert_line("ok can_access_values: 1 1")
        .assert_line("ok enable_peer_bad_flags")
        .assert_line("ok enable_peer_0_to_1_again")
        .assert_line("ok disable_peer_1_to_0_again")
        .assert_line("ok memcpy_peer_0_to_1_data")
        .assert_line("ok memcpy_peer_async_1_to_0_data")
        .assert_line("ok memcpy_unified_0_to_1_data")
        .assert_line("ok memcpy_async_unified_1_to_0_data")
        .assert_line("ok memcpy_dtod_0_to_1_data")
        .assert_line("ok memcpy_3d_peer_0_to_1_data")
        .assert_line("ok memcpy_peer_past_end")
        .assert_line("ok cross_device_event_data")
        .assert_line("ok granularity_destroyed_current")
        .assert_line("ok mem_create_destroyed_current")
        .assert_line("ok export_destroyed_current_fd")
        .assert_line("ok release_destroyed_current")
        .assert_line("111 checks, 0 failed");
}

/// Multicast objects through vgpu on a device without multicast support,
/// and handles the program was never given (`tests/c/multicast.c`).
#[test]
fn c_multicast_objects() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "multicast");
    let out = h.run(invalid_handle_checks(h.command(&exe)));
    // Every line, the refusals of bad handles included, as straight on the
    // simulated device.
    let mut direct = invalid_handle_checks(h.command(&exe));
    direct.arg(&h.build.sim);
    same_as_on_the_sim(&out, &h.run(direct));
    out.assert_success()
        .assert_line("ok multicast_supported: 0")
        .assert_line("ok granularity_unsupported: CUDA_ERROR_NOT_SUPPORTED")
        .assert_line("ok create_unsupported: CUDA_ERROR_NOT_SUPPORTED")
        .assert_line("ok add_device_forged: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok bind_addr_forged: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok unbind_forged: CUDA_ERROR_INVALID_VALUE")
        .assert_line("ok create_null_prop: CUDA_ERROR_INVALID_VALUE")
        .assert_line("13 checks, 0 failed");
}

/// Green contexts through vgpu: the simulated device's SM resource, splits,
/// a green context, its context and stream used like any other, events, its
/// destruction and a forged green context (`tests/c/green_contexts.c`).
#[test]
fn c_green_contexts() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = common::build_c(dir.path(), "green_contexts");
    let out = h.run(invalid_handle_checks(h.command(&exe)));
    // Every line, the refusals of bad handles included, as straight on the
    // simulated device.
    let mut direct = invalid_handle_checks(h.command(&exe));
    direct.arg(&h.build.sim);
    same_as_on_the_sim(&out, &h.run(direct));
    out.assert_success()
        .assert_line("ok device_sms: 132 min 8 align 8")
        .assert_line("ok device_resource_bad_type: CUDA_ERROR_INVALID_RESOURCE_TYPE")
        .assert_line("ok split_query_groups: 8")
        .assert_line("ok split_two_values: 2 groups of 16, 100 remaining")
        .assert_line("ok split_two_sum")
        .assert_line("ok split_too_large: CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION")
        .assert_line("ok green_resource_sms")
        .assert_line("ok ctx_from_green_same")
        .assert_line("ok green_ctx_device_value")
        .assert_line("ok green_ctx_resource_sms")
        .assert_line("ok stream_get_green_ctx_value")
        .assert_line("ok green_stream_data")
        .assert_line("ok green_event_synchronize")
        .assert_line("ok green_id_destroyed: CUDA_ERROR_INVALID_HANDLE")
        .assert_line("ok green_ctx_after_destroy: CUDA_ERROR_INVALID_CONTEXT")
        .assert_line("ok green_id_forged: CUDA_ERROR_INVALID_HANDLE")
        .assert_line("ok green_destroy_forged: CUDA_ERROR_INVALID_HANDLE")
        .assert_line("55 checks, 0 failed");
}
