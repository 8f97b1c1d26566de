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

/// `cmd` with the C programs' checks of destroyed and forged handles on
/// (`CU_TEST_INVALID_HANDLES`, see `tests/c/cuda_prelude.h`): vgpu refuses
/// them from its tables, where the real driver may not look.
fn invalid_handle_checks(mut cmd: Command) -> Command {
    cmd.env("CU_TEST_INVALID_HANDLES", "1");
    cmd
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
    let exe = build_c(dir.path(), "tensormap");
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
    let exe = build_c(dir.path(), "callbacks");
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
    let exe = build_c(dir.path(), "stream_memops");
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
        .assert_line("91 checks, 0 failed");
    let mut direct = invalid_handle_checks(h.command(&exe));
    direct.arg(&h.build.sim);
    let native = h.run(direct);
    let body = |s: &str| s.lines().skip(1).map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        body(&out.stdout),
        body(&native.stdout),
        "through vgpu and straight on the sim differ"
    );
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
    let exe = build_c(dir.path(), "graph_nodes");
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
        .assert_line("ok graph_mem_used_high_zero")
        .assert_line("ok graph_mem_set_current")
        .assert_line("ok graph_mem_set_high_nonzero")
        .assert_line("ok graph_mem_trim")
        .assert_line("ok graph_mem_bad_device")
        .assert_line("324 checks, 0 failed");
    let mut direct = invalid_handle_checks(h.command(&exe));
    direct.arg(&h.build.sim);
    let native = h.run(direct);
    let body = |s: &str| s.lines().skip(1).map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        body(&out.stdout),
        body(&native.stdout),
        "through vgpu and straight on the sim differ"
    );
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
    let exe = build_c(dir.path(), "pools");
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
    let exe = build_c(dir.path(), "vmm");
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
    let exe = build_c(dir.path(), "arrays");
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
    direct.arg(common::build().sim);
    let native = h.run(direct);
    let body = |text: &str| text.lines().skip(1).map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(body(&native.stdout), body(&out.stdout), "{native}");
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
        .assert_line("ok kernel_exec_set_data")
        .assert_line("ok kernel_node_params_back")
        .assert_line("ok pageable_not_at_capture")
        .assert_line("ok pageable_round_trip")
        .assert_line("ok pageable_round_trip_2");
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
