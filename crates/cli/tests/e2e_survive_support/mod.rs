//! What the `e2e_survive*` tests share beyond `common`: the C programs of
//! `tests/c` built into a temporary directory, and a supervisor that a test
//! starts itself, on a socket and with an environment of its choosing, so
//! that it can stop it, restart it, or give it a process group of its own.

#![allow(dead_code)] // each test binary uses its own part

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::common::{self, Build};

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `cc ARGS` with a deadline; panics with its output unless it succeeds.
#[track_caller]
pub fn cc(args: &[&std::ffi::OsStr]) {
    let mut cmd = Command::new("cc");
    cmd.args(args);
    let out = common::run(cmd, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "cc {args:?} failed (CI installs gcc):\n{out}"
    );
}

/// Builds `tests/c/NAME.c` into `dir/NAME`: `-Werror`, with libdl and
/// libpthread, and returns the executable.
pub fn c_program(dir: &Path, name: &str) -> PathBuf {
    let exe = dir.join(name);
    let src = repo_root().join(format!("tests/c/{name}.c"));
    cc(&[
        "-std=c11".as_ref(),
        "-O2".as_ref(),
        "-Wall".as_ref(),
        "-Wextra".as_ref(),
        "-Werror".as_ref(),
        "-o".as_ref(),
        exe.as_os_str(),
        src.as_os_str(),
        "-ldl".as_ref(),
        "-lpthread".as_ref(),
    ]);
    exe
}

/// The pids of `session accepted worker=PID` lines of a mediator log.
pub fn logged_workers(log: &str) -> Vec<u32> {
    log.lines()
        .filter_map(|l| l.split_once("session accepted worker=").map(|(_, r)| r))
        .filter_map(|r| {
            r.split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|d| d.parse().ok())
        })
        .collect()
}

/// True once the log has the supervisor's `session ended worker=PID` line:
/// the worker was reaped and had exited 0.
pub fn ended_cleanly(log: &str, worker: u32) -> bool {
    let want = format!("session ended worker={worker}");
    log.lines()
        .any(|l| l.trim_end().ends_with(&want) && l.contains(" INFO "))
}

/// Waits until `what(log)` holds; panics with the log after `timeout`.
#[track_caller]
pub fn wait_log(
    read: impl Fn() -> String,
    timeout: Duration,
    what: &str,
    ok: impl Fn(&str) -> bool,
) {
    let deadline = Instant::now() + timeout;
    loop {
        let log = read();
        if ok(&log) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not in the mediator log after {timeout:?}:\n{log}"
        );
        thread::sleep(Duration::from_millis(10));
    }
}

/// A `vgpu-mediator --driver sim` supervisor that the test controls. Dropping
/// it SIGKILLs it and every worker its log names that still runs.
pub struct Supervisor {
    child: Option<Child>,
    pub socket: PathBuf,
    pub log: PathBuf,
}

impl Supervisor {
    /// Starts a supervisor on `socket`, logging (appending) to `log`, with
    /// `env` added to its environment; in a process group of its own when
    /// `own_group`. Waits (10 s at most) for the socket.
    pub fn start(
        build: &Build,
        socket: &Path,
        log: &Path,
        env: &[(&str, &str)],
        own_group: bool,
    ) -> Supervisor {
        let mut cmd = Command::new(&build.mediator);
        cmd.arg("--listen")
            .arg(format!("unix:{}", socket.display()))
            .args(["--driver", "sim", "--sim-lib"])
            .arg(&build.sim)
            .arg("--log")
            .arg(log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("VGPU_") || k.to_string_lossy().starts_with("CUDA_")
            {
                cmd.env_remove(k);
            }
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        if own_group {
            std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        }
        let child = cmd.spawn().expect("spawn vgpu-mediator");
        let mut s = Supervisor {
            child: Some(child),
            socket: socket.to_path_buf(),
            log: log.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !s.socket.exists() {
            if let Some(st) = s.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                panic!("vgpu-mediator exited early ({st}); log:\n{}", s.log_text());
            }
            assert!(
                Instant::now() < deadline,
                "vgpu-mediator did not create {} within 10 s; log:\n{}",
                s.socket.display(),
                s.log_text()
            );
            thread::sleep(Duration::from_millis(10));
        }
        s
    }

    pub fn endpoint(&self) -> String {
        format!("unix:{}", self.socket.display())
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends `sig` to the supervisor alone.
    pub fn signal(&self, sig: libc::c_int) {
        let pid = libc::pid_t::try_from(self.pid()).expect("pid fits pid_t");
        // SAFETY: kill(2) has no memory effects; the pid is our own child.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill {pid}");
    }

    /// Sends `sig` to the supervisor's whole process group (it must have
    /// been started with `own_group`), as a terminal's Ctrl-C or a service
    /// manager that signals the group does.
    pub fn signal_group(&self, sig: libc::c_int) {
        let pid = libc::pid_t::try_from(self.pid()).expect("pid fits pid_t");
        // SAFETY: kill(2) has no memory effects; the group is our child's own.
        assert_eq!(unsafe { libc::kill(-pid, sig) }, 0, "kill -{pid}");
    }

    /// Waits for the supervisor to exit; panics after `timeout`.
    #[track_caller]
    pub fn wait(&mut self, timeout: Duration) -> ExitStatus {
        let child = self.child.as_mut().expect("the supervisor is still ours");
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(st) = child.try_wait().expect("try_wait") {
                self.child = None;
                return st;
            }
            assert!(
                Instant::now() < deadline,
                "the supervisor did not exit within {timeout:?}; log:\n{}",
                self.log_text()
            );
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        kill_logged_workers(&self.log_text());
    }
}

/// SIGKILLs every worker named in `log` that still runs.
pub fn kill_logged_workers(log: &str) {
    for w in logged_workers(log) {
        if common::is_mediator_process(w) {
            common::sigkill(w);
        }
    }
}
