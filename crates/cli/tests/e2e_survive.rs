//! Hostile host processes, end to end (issue 5, "Survive"): fork, exit paths
//! and the CFFI constructor case, with the C and Python programs of
//! `tests/c` and `tests/python` against a real mediator on the simulated
//! device. docs/adr/0003-fork-and-exit.md states the semantics asserted here.
//!
//! Every program runs with a deadline, so a hang fails the test. After each
//! one, every worker it caused must exit, and exit cleanly (the supervisor
//! logs `session ended` only for a worker that exited 0).

mod common;
mod e2e_survive_support;

use std::process::Command;
use std::time::Duration;

use common::{wait_gone, Harness, Output};
use e2e_survive_support::{c_program, cc, ended_cleanly, repo_root, wait_log};

/// How long a worker may take to exit after its client is gone.
const WORKER_EXIT: Duration = Duration::from_secs(10);

/// Asserts that the mediator started exactly `n` workers and that each has
/// exited cleanly.
#[track_caller]
fn assert_workers_ended(h: &Harness, n: usize) {
    let m = h.mediator();
    let workers = m.worker_pids();
    assert_eq!(
        workers.len(),
        n,
        "want {n} sessions, the mediator started {workers:?}; log:\n{}",
        m.log_text()
    );
    for w in workers {
        assert!(
            wait_gone(w, WORKER_EXIT),
            "worker {w} still runs {WORKER_EXIT:?} after its client ended; log:\n{}",
            m.log_text()
        );
        wait_log(
            || m.log_text(),
            WORKER_EXIT,
            &format!("session ended worker={w}"),
            |log| ended_cleanly(log, w),
        );
    }
}

/// No `FAIL` line, no Rust panic message from the client library.
#[track_caller]
fn assert_clean(out: &Output) {
    assert!(!out.stdout.contains("FAIL"), "a check failed:\n{out}");
    assert!(
        !out.stderr.contains("panicked"),
        "the client library panicked:\n{out}"
    );
}

#[track_caller]
fn assert_has_line(out: &Output, prefix: &str) {
    assert!(
        out.stdout.lines().any(|l| l.starts_with(prefix)),
        "no line starting {prefix:?}:\n{out}"
    );
}

#[test]
fn fork_child_gets_a_session_of_its_own() {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = c_program(dir.path(), "fork_session");
    let out = h.run(h.command(&exe));
    assert_clean(&out);
    out.assert_success()
        .assert_line("ok parent_ready")
        .assert_line("ok child_not_initialized_before_cuinit")
        .assert_line("ok child_cuinit")
        .assert_line("ok child_starts_without_context")
        .assert_line("ok child_inherited_handles_fail")
        .assert_line("ok child_inherited_pinned_memory_is_pageable")
        .assert_line("ok child_own_session")
        .assert_line("ok child_exited_0")
        .assert_line("ok parent_session_untouched");
    // The parent's session and the child's own.
    assert_workers_ended(&h, 2);
    let log = h.mediator().log_text();
    assert!(
        log.contains("not the base of a live allocation"),
        "the child's cuMemFree of the inherited pointer was not refused by the worker:\n{log}"
    );
}

#[test]
fn fork_while_another_thread_makes_calls() {
    const FORKS: usize = 20;
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = c_program(dir.path(), "fork_session");
    let mut cmd = h.command(&exe);
    cmd.args(["busy", &FORKS.to_string()]);
    let out = common::run(cmd, Duration::from_secs(120));
    assert_clean(&out);
    out.assert_success();
    assert_has_line(&out, &format!("ok busy_forks {FORKS} "));
    println!("{}", out.stdout);
    assert_workers_ended(&h, 1 + FORKS);
}

#[test]
fn python_multiprocessing_fork_children_use_cuda() {
    let h = Harness::start();
    let mut cmd = h.command("python3");
    cmd.arg(repo_root().join("tests/python/fork_pool.py"))
        .args(["3", "6"]);
    let out = common::run(cmd, Duration::from_secs(180));
    assert_clean(&out);
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
    let processes: usize = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("ok children "))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `ok children N processes` line:\n{out}"));
    assert!((1..=3).contains(&processes), "{out}");
    println!("{}", out.stdout);
    // The parent's session, and one per pool process that ran a task.
    assert_workers_ended(&h, 1 + processes);
}

/// Runs `exit_paths MODE`: it must exit 7 (its own code), having printed
/// `ok MODE`, and its one worker must exit cleanly.
fn exit_path(mode: &str) {
    let h = Harness::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = c_program(dir.path(), "exit_paths");
    let mut cmd = h.command(&exe);
    cmd.arg(mode);
    let out = h.run(cmd);
    assert_clean(&out);
    assert_eq!(
        out.status.code(),
        Some(7),
        "exit_paths {mode} did not exit with its own code 7 ({}):\n{out}",
        out.status
    );
    assert_has_line(&out, &format!("ok {mode}"));
    assert_workers_ended(&h, 1);
}

#[test]
fn exit_without_freeing_anything() {
    exit_path("leak");
}

#[test]
fn exit_calling_cuda_from_atexit() {
    exit_path("atexit");
}

#[test]
fn exit_calling_cuda_from_a_tls_destructor() {
    exit_path("tls");
}

#[test]
fn exit_after_dlclose() {
    exit_path("dlclose");
}

#[test]
fn cffi_loads_a_library_whose_constructor_uses_cuda() {
    let h = Harness::start();
    let probe = common::run(
        {
            let mut c = Command::new("python3");
            c.args(["-c", "import cffi"]);
            c
        },
        Duration::from_secs(30),
    );
    assert!(
        probe.status.success(),
        "python3 cannot import cffi (CI's .ci/run installs it: python3 -m pip install cffi):\n{probe}"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let lib = dir.path().join("libctor_lib.so");
    let src = repo_root().join("tests/c/ctor_lib.c");
    let libdir = format!("-L{}", h.lib.path().display());
    cc(&[
        "-std=c11".as_ref(),
        "-O2".as_ref(),
        "-Wall".as_ref(),
        "-Wextra".as_ref(),
        "-Werror".as_ref(),
        "-shared".as_ref(),
        "-fPIC".as_ref(),
        "-o".as_ref(),
        lib.as_os_str(),
        src.as_os_str(),
        libdir.as_ref(),
        "-lcuda".as_ref(),
        "-lpthread".as_ref(),
    ]);
    let mut cmd = h.command("python3");
    cmd.arg(repo_root().join("tests/python/cffi_ctor.py"))
        .arg(&lib);
    let out = h.run(cmd);
    assert_clean(&out);
    out.assert_success()
        .assert_line("ok busy_threads_running 8")
        .assert_line("ok constructor_succeeded on the loading thread")
        .assert_line("cffi ok");
    assert_has_line(&out, "ok dlopen_returned");
    assert_has_line(&out, "ok data_right 1048576 bytes");
    println!("{}", out.stdout);
    assert_workers_ended(&h, 1);
}
