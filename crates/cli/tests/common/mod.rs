//! Shared harness of the end-to-end tests: the built vgpu artifacts, a lib
//! directory that serves the client as `libcuda.so.1`, a real mediator on a
//! temporary socket with the simulated device, and child processes that run
//! with a deadline (a hang is a failure, never a stuck CI).
//!
//! Client code runs in CHILD processes only: the loader reads
//! `LD_LIBRARY_PATH` at process start, and a dead or wedged client must not
//! take the test runner with it. A test can re-execute its own test binary as
//! such a child (see [`is_child`] and [`Harness::self_test`]).

#![allow(dead_code)] // each test binary uses its own part of the harness

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// Set in the environment of a test binary re-executed as a client child.
pub const CHILD_ENV: &str = "VGPU_E2E_CHILD";

/// The default deadline of a child process.
pub const CHILD_TIMEOUT: Duration = Duration::from_secs(60);

/// True in a test binary re-executed by [`Harness::self_test`]: the test
/// body then plays the client instead of the harness.
pub fn is_child() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

/// The built artifacts under `target/<profile>/`.
#[derive(Debug, Clone)]
pub struct Build {
    pub dir: PathBuf,
    /// `libvgpu_cuda.so`, the client (SONAME `libcuda.so.1`).
    pub client: PathBuf,
    /// `libvgpu_sim.so`, the simulated device.
    pub sim: PathBuf,
    /// The `vgpu-mediator` binary.
    pub mediator: PathBuf,
    /// `libvgpu_recorder.so`, the recording test driver.
    pub recorder: PathBuf,
    /// `libvgpu_nvml.so`, the NVML library (SONAME `libnvidia-ml.so.1`).
    pub nvml: PathBuf,
}

/// Finds `target/<profile>/` from the running test binary
/// (`target/<profile>/deps/<test>-<hash>`) and checks that the workspace's
/// cdylibs and the mediator are built there.
pub fn build() -> Build {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("test binary has a directory");
    let dir = if deps.file_name().is_some_and(|n| n == "deps") {
        deps.parent().expect("deps has a parent").to_path_buf()
    } else {
        deps.to_path_buf()
    };
    let b = Build {
        client: dir.join("libvgpu_cuda.so"),
        sim: dir.join("libvgpu_sim.so"),
        mediator: dir.join("vgpu-mediator"),
        recorder: dir.join("libvgpu_recorder.so"),
        nvml: dir.join("libvgpu_nvml.so"),
        dir,
    };
    for p in [&b.client, &b.sim, &b.mediator, &b.recorder, &b.nvml] {
        assert!(
            p.is_file(),
            "{} is missing: run `cargo build --workspace` first (with the same profile \
             and target directory as the tests)",
            p.display()
        );
    }
    b
}

/// A temporary directory where `libcuda.so.1` and `libcuda.so` are symlinks
/// to the client library, and `libnvidia-ml.so.1` and `libnvidia-ml.so` to
/// the NVML library.
pub struct LibDir {
    dir: TempDir,
}

impl LibDir {
    pub fn new(build: &Build) -> LibDir {
        let dir = tempfile::Builder::new()
            .prefix("vgpu-e2e-lib")
            .tempdir()
            .expect("temp lib dir");
        for name in ["libcuda.so.1", "libcuda.so"] {
            symlink(&build.client, dir.path().join(name)).expect("symlink client");
        }
        for name in ["libnvidia-ml.so.1", "libnvidia-ml.so"] {
            symlink(&build.nvml, dir.path().join(name)).expect("symlink NVML");
        }
        LibDir { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// A real `vgpu-mediator --driver sim` on a temporary socket. Dropping it
/// kills the supervisor and the workers it logged.
pub struct Mediator {
    child: Option<Child>,
    dir: TempDir,
    socket: PathBuf,
    log: PathBuf,
}

impl Mediator {
    /// Starts the mediator and waits (10 s at most) until its socket exists.
    pub fn start(build: &Build) -> Mediator {
        Mediator::start_with(build, &[])
    }

    /// [`Mediator::start`] with `extra` flags after the usual ones (e.g. a
    /// second `--listen`).
    pub fn start_with(build: &Build, extra: &[&str]) -> Mediator {
        let sim = [
            "--driver".into(),
            "sim".into(),
            "--sim-lib".into(),
            build.sim.clone().into_os_string(),
        ];
        Mediator::spawn(build, &sim, extra, &[])
    }

    /// [`Mediator::start_with`] and [`Mediator::start_env`] at once.
    pub fn start_with_env(build: &Build, extra: &[&str], env: &[(&str, &str)]) -> Mediator {
        let sim = [
            "--driver".into(),
            "sim".into(),
            "--sim-lib".into(),
            build.sim.clone().into_os_string(),
        ];
        Mediator::spawn(build, &sim, extra, env)
    }

    /// [`Mediator::start`] with `env` added to the mediator's environment
    /// (and its workers').
    pub fn start_env(build: &Build, env: &[(&str, &str)]) -> Mediator {
        let sim = [
            "--driver".into(),
            "sim".into(),
            "--sim-lib".into(),
            build.sim.clone().into_os_string(),
        ];
        Mediator::spawn(build, &sim, &[], env)
    }

    /// A mediator whose workers load the driver library at `driver`, with
    /// `env` added to its environment (and its workers').
    pub fn start_driver(build: &Build, driver: &Path, env: &[(&str, &str)]) -> Mediator {
        let args = ["--driver".into(), driver.as_os_str().to_owned()];
        Mediator::spawn(build, &args, &[], env)
    }

    fn spawn(
        build: &Build,
        driver: &[std::ffi::OsString],
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Mediator {
        let dir = tempfile::Builder::new()
            .prefix("vgpu-e2e-med")
            .tempdir()
            .expect("temp mediator dir");
        let socket = dir.path().join("m.sock");
        let log = dir.path().join("mediator.log");
        let child = Command::new(&build.mediator)
            .arg("--listen")
            .arg(format!("unix:{}", socket.display()))
            .args(worker_user_flag(build))
            .args(driver)
            .envs(env.iter().copied())
            .arg("--log")
            .arg(&log)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn vgpu-mediator");
        let mut m = Mediator {
            child: Some(child),
            dir,
            socket,
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !m.socket.exists() {
            if let Some(st) = m.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                panic!("vgpu-mediator exited early ({st}); log:\n{}", m.log_text());
            }
            assert!(
                Instant::now() < deadline,
                "vgpu-mediator did not create {} within 10 s; log:\n{}",
                m.socket.display(),
                m.log_text()
            );
            thread::sleep(Duration::from_millis(10));
        }
        m
    }

    /// The value for `VGPU_MEDIATOR`.
    pub fn endpoint(&self) -> String {
        format!("unix:{}", self.socket.display())
    }

    /// The address of the first TCP listener (`tcp://IP:PORT`), from the
    /// log's `listening on tcp://…` line (10 s at most).
    pub fn tcp_endpoint(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let found = self.log_text().lines().find_map(|l| {
                l.split_once("listening on tcp://")
                    .map(|(_, rest)| format!("tcp://{}", rest.trim()))
            });
            if let Some(endpoint) = found {
                return endpoint;
            }
            assert!(
                Instant::now() < deadline,
                "the mediator logged no TCP listener within 10 s:\n{}",
                self.log_text()
            );
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// The supervisor's pid.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The worker pids of the `session accepted worker=PID` log lines, in
    /// order.
    pub fn worker_pids(&self) -> Vec<u32> {
        self.log_text()
            .lines()
            .filter_map(|l| l.split_once("session accepted worker=").map(|(_, r)| r))
            .filter_map(|r| {
                r.split(|c: char| !c.is_ascii_digit())
                    .next()
                    .and_then(|d| d.parse().ok())
            })
            .collect()
    }

    /// The supervisor's live child processes (its workers), from
    /// `/proc/PID/task/*/children`.
    pub fn child_pids(&self) -> Vec<u32> {
        let pid = self.pid();
        let mut kids: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
            .flat_map(|s| {
                s.split_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .collect::<Vec<u32>>()
            })
            .collect();
        kids.sort_unstable();
        kids
    }

    /// Waits until the log names at least `n` workers; returns the `n`-th.
    /// Without such log lines, the `n`-th child process of the supervisor
    /// stands in (in pid order).
    pub fn wait_worker(&self, n: usize, timeout: Duration) -> u32 {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(&pid) = self.worker_pids().get(n - 1) {
                return pid;
            }
            if self.worker_pids().is_empty() {
                if let Some(&pid) = self.child_pids().get(n - 1) {
                    return pid;
                }
            }
            assert!(
                Instant::now() < deadline,
                "the mediator log names fewer than {n} workers after {timeout:?}:\n{}",
                self.log_text()
            );
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGKILLs the supervisor and every worker it logged that still runs.
    pub fn kill(&mut self) {
        let workers = self.worker_pids();
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        for w in workers {
            if is_mediator_process(w) {
                sigkill(w);
            }
        }
    }
}

impl Drop for Mediator {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `--worker-user=` (workers keep root) when the build directory is out of
/// reach of other users (a checkout under a private home directory): a
/// root mediator's unprivileged workers could not run the binaries there,
/// and the mediator would refuse to start. Nothing otherwise, so workers
/// run as the mediator's default worker user, as in production.
fn worker_user_flag(build: &Build) -> Vec<&'static str> {
    use std::os::unix::fs::PermissionsExt;
    let reachable = |p: &Path, bits: u32| {
        std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & bits == bits)
    };
    let dirs_ok = build
        .mediator
        .ancestors()
        .skip(1)
        .filter(|d| !d.as_os_str().is_empty())
        .all(|d| reachable(d, 0o001));
    if dirs_ok && reachable(&build.mediator, 0o001) && reachable(&build.sim, 0o004) {
        Vec::new()
    } else {
        eprintln!(
            "the build directory is private: mediators of this test keep root for workers \
             (--worker-user=)"
        );
        vec!["--worker-user="]
    }
}

/// True while `pid` is a live (not zombie) `vgpu-mediator` process: guards
/// the kill of a logged worker pid against pid reuse.
pub fn is_mediator_process(pid: u32) -> bool {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
    is_alive(pid)
        && exe
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("vgpu-mediator"))
}

/// True while `pid` exists and is not a zombie.
pub fn is_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// Waits until `pid` has exited (or is a zombie); false after `timeout`.
pub fn wait_gone(pid: u32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while is_alive(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(10));
    }
    true
}

pub fn sigkill(pid: u32) {
    let pid = libc::pid_t::try_from(pid).expect("pid fits pid_t");
    // SAFETY: kill(2) has no memory effects; the pid is one this test
    // started (directly, or as a mediator worker checked by the caller).
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

/// A line of a re-executed test binary without libtest's `test NAME ... `
/// prefix (the child's first output line shares the line with it).
pub fn strip_libtest(line: &str) -> &str {
    match line
        .strip_prefix("test ")
        .and_then(|r| r.split_once(" ... "))
    {
        Some((_, rest)) => rest,
        None => line,
    }
}

/// What a finished child left behind.
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Output {
    /// Panics with the whole output unless the child exited 0.
    #[track_caller]
    pub fn assert_success(&self) -> &Output {
        assert!(
            self.status.success(),
            "child failed ({}):\n{self}",
            self.status
        );
        self
    }

    /// Panics unless stdout has a line equal to `line` (after trimming).
    #[track_caller]
    pub fn assert_line(&self, line: &str) -> &Output {
        assert!(
            self.stdout.lines().any(|l| strip_libtest(l).trim() == line),
            "no line {line:?} in the child's output:\n{self}"
        );
        self
    }
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--- stdout ---\n{}--- stderr ---\n{}--- ({:?}) ---",
            self.stdout, self.stderr, self.elapsed
        )
    }
}

/// A running child with piped stdin/stdout/stderr; killed on drop.
pub struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
    started: Instant,
    what: String,
}

impl Running {
    pub fn spawn(mut cmd: Command) -> Running {
        let what = format!("{cmd:?}");
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {what}: {e}"));
        let stdin = child.stdin.take();
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().expect("piped stdout");
        let err = child.stderr.take().expect("piped stderr");
        let (so, se) = (stdout.clone(), stderr.clone());
        let readers = vec![
            thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    let mut s = so.lock().expect("stdout lock");
                    s.push_str(&line);
                    s.push('\n');
                    drop(s);
                    let _ = tx.send(line);
                }
            }),
            thread::spawn(move || {
                let mut buf = Vec::new();
                let mut err = err;
                let mut chunk = [0u8; 4096];
                while let Ok(n) = err.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    *se.lock().expect("stderr lock") = String::from_utf8_lossy(&buf).into();
                }
            }),
        ];
        Running {
            child,
            stdin,
            lines,
            stdout,
            stderr,
            readers,
            started: Instant::now(),
            what,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the child has printed so far.
    pub fn output_so_far(&self) -> String {
        format!(
            "--- stdout ---\n{}--- stderr ---\n{}",
            self.stdout.lock().expect("stdout lock"),
            self.stderr.lock().expect("stderr lock")
        )
    }

    /// Waits for a stdout line that starts with `prefix`; returns it.
    #[track_caller]
    pub fn expect_line(&mut self, prefix: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if strip_libtest(&line).starts_with(prefix) => {
                    return strip_libtest(&line).to_string()
                }
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.child.kill();
                    panic!(
                        "no line starting {prefix:?} from {} within {timeout:?}:\n{}",
                        self.what,
                        self.output_so_far()
                    );
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let _ = self.child.wait();
                    panic!(
                        "{} closed its stdout before a line starting {prefix:?}:\n{}",
                        self.what,
                        self.output_so_far()
                    );
                }
            }
        }
    }

    /// Writes one line to the child's stdin.
    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        writeln!(stdin, "{line}").expect("write to child stdin");
        stdin.flush().expect("flush child stdin");
    }

    /// SIGKILLs the child and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the child to exit; kills it and panics after `timeout`.
    #[track_caller]
    pub fn finish(mut self, timeout: Duration) -> Output {
        drop(self.stdin.take());
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(st) = self.child.try_wait().expect("try_wait") {
                break st;
            }
            if Instant::now() >= deadline {
                self.kill();
                for r in self.readers.drain(..) {
                    let _ = r.join();
                }
                panic!(
                    "{} did not finish within {timeout:?} (killed):\n{}",
                    self.what,
                    self.output_so_far()
                );
            }
            thread::sleep(Duration::from_millis(5));
        };
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        let stdout = self.stdout.lock().expect("stdout lock").clone();
        let stderr = self.stderr.lock().expect("stderr lock").clone();
        Output {
            status,
            stdout,
            stderr,
            elapsed: self.started.elapsed(),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill();
        }
    }
}

/// Runs `cmd` to completion with a deadline.
#[track_caller]
pub fn run(cmd: Command, timeout: Duration) -> Output {
    Running::spawn(cmd).finish(timeout)
}

/// The pieces one end-to-end test needs: the build, a lib dir serving the
/// client, and (usually) a mediator.
pub struct Harness {
    pub build: Build,
    pub lib: LibDir,
    pub mediator: Option<Mediator>,
    /// Where `VGPU_MEDIATOR` points when there is no mediator.
    nowhere: TempDir,
    /// Extra environment for every child.
    env: Vec<(String, String)>,
}

impl Harness {
    /// Build, lib dir and a running mediator.
    pub fn start() -> Harness {
        let mut h = Harness::without_mediator();
        h.mediator = Some(Mediator::start(&h.build));
        h
    }

    /// Build, lib dir and a running mediator that also listens on TCP
    /// (loopback, a free port); `VGPU_MEDIATOR` is its `tcp://` address.
    pub fn start_tcp() -> Harness {
        Harness::start_tcp_with_env(&[])
    }

    /// [`Harness::start_tcp`] with `env` in the mediator's environment.
    pub fn start_tcp_with_env(env: &[(&str, &str)]) -> Harness {
        let mut h = Harness::without_mediator();
        let m = Mediator::start_with_env(&h.build, &["--listen", "tcp://127.0.0.1:0"], env);
        let endpoint = m.tcp_endpoint();
        h.mediator = Some(m);
        h.env("VGPU_MEDIATOR", &endpoint);
        h
    }

    /// Build and lib dir; `VGPU_MEDIATOR` names a socket nobody listens on.
    pub fn without_mediator() -> Harness {
        let build = build();
        let lib = LibDir::new(&build);
        let nowhere = tempfile::Builder::new()
            .prefix("vgpu-e2e-none")
            .tempdir()
            .expect("temp dir");
        Harness {
            build,
            lib,
            mediator: None,
            nowhere,
            env: Vec::new(),
        }
    }

    pub fn mediator(&self) -> &Mediator {
        self.mediator
            .as_ref()
            .expect("this harness runs a mediator")
    }

    pub fn mediator_mut(&mut self) -> &mut Mediator {
        self.mediator
            .as_mut()
            .expect("this harness runs a mediator")
    }

    /// Adds `key=value` to the environment of every later child.
    pub fn env(&mut self, key: &str, value: &str) -> &mut Harness {
        self.env.push((key.into(), value.into()));
        self
    }

    /// A command for `program` in the client environment: the lib dir first
    /// on `LD_LIBRARY_PATH`, `VGPU_MEDIATOR` set, and no `VGPU_*`, `CUDA_*`
    /// or child switch inherited from the test runner.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        for (k, _) in std::env::vars_os() {
            let key = k.to_string_lossy();
            if key.starts_with("VGPU_") || key.starts_with("CUDA_") || key == "LD_PRELOAD" {
                cmd.env_remove(&k);
            }
        }
        let mut ld = std::ffi::OsString::from(self.lib.path());
        if let Some(old) = std::env::var_os("LD_LIBRARY_PATH").filter(|v| !v.is_empty()) {
            ld.push(":");
            ld.push(old);
        }
        cmd.env("LD_LIBRARY_PATH", ld);
        let endpoint = match &self.mediator {
            Some(m) => m.endpoint(),
            None => format!("unix:{}", self.nowhere.path().join("none.sock").display()),
        };
        cmd.env("VGPU_MEDIATOR", endpoint);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// This test binary re-executed as a client child that runs only
    /// `test` (`--exact TEST --nocapture --include-ignored`) with [`CHILD_ENV`] set.
    pub fn self_test(&self, test: &str) -> Command {
        let exe = std::env::current_exe().expect("current_exe");
        let mut cmd = self.command(exe);
        cmd.args([
            "--exact",
            test,
            "--nocapture",
            "--include-ignored",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1");
        cmd
    }

    /// Runs `cmd` to completion with [`CHILD_TIMEOUT`].
    #[track_caller]
    pub fn run(&self, cmd: Command) -> Output {
        run(cmd, CHILD_TIMEOUT)
    }
}

/// Helpers for client children that drive the Driver API through cudarc's
/// raw bindings (`cudarc::driver::sys`, loaded at run time from the
/// `libcuda.so` the loader finds: the lib dir of the harness).
/// The simulated device's module of three kernels.
pub const SIM_MODULE: &std::ffi::CStr =
    c"VGPU-SIM-MODULE 1\nkernel vector_add\nkernel saxpy\nkernel fill_u32\n";

pub mod loss;

/// The repository's root (the test programs' sources are under it).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds `tests/c/NAME.c` into `dir` as every C test program is built
/// (C11, warnings are errors, threads, `-ldl`) and returns the program.
pub fn build_c(dir: &Path, name: &str) -> PathBuf {
    let exe = dir.join(name);
    let mut cc = Command::new("cc");
    cc.args([
        "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread", "-o",
    ])
    .arg(&exe)
    .arg(repo_root().join(format!("tests/c/{name}.c")))
    .arg("-ldl");
    let cc = run(cc, Duration::from_secs(120));
    assert!(
        cc.status.success(),
        "cc {name}.c failed (CI installs gcc):\n{cc}"
    );
    exe
}

/// `len` pseudo-random bytes from `seed` (xorshift64, eight bytes a step):
/// distinct per seed, never periodic at small powers of two.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    v
}

/// Panics with the first differing byte unless `back == src`.
#[track_caller]
pub fn assert_same(src: &[u8], back: &[u8], what: &str) {
    assert_eq!(src.len(), back.len(), "{what}: lengths");
    if let Some(j) = (0..src.len()).find(|&j| src[j] != back[j]) {
        panic!(
            "{what}: byte {j} of {} reads back as {}, wrote {}",
            src.len(),
            back[j],
            src[j]
        );
    }
}

pub mod cu {
    use cudarc::driver::sys;

    /// The numeric `CUresult`.
    pub fn code(r: sys::CUresult) -> u32 {
        r as u32
    }

    /// Panics unless `r` is `CUDA_SUCCESS`.
    #[track_caller]
    pub fn ok(r: sys::CUresult, what: &str) {
        assert_eq!(code(r), 0, "{what} returned {r:?}");
    }

    /// `cuInit`, then a context on device 0 made current; returns it.
    pub fn init_context() -> sys::CUcontext {
        let mut dev: sys::CUdevice = 0;
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: the out-pointers are valid locals.
        unsafe {
            ok(sys::cuInit(0), "cuInit");
            ok(sys::cuDeviceGet(&mut dev, 0), "cuDeviceGet");
            ok(sys::cuCtxCreate_v2(&mut ctx, 0, dev), "cuCtxCreate_v2");
        }
        ctx
    }

    /// Allocates `bytes` of device memory.
    pub fn alloc(bytes: usize) -> sys::CUdeviceptr {
        let mut d: sys::CUdeviceptr = 0;
        // SAFETY: the out-pointer is a valid local.
        ok(
            unsafe { sys::cuMemAlloc_v2(&mut d, bytes) },
            "cuMemAlloc_v2",
        );
        d
    }

    /// Copies `src` to fresh device memory and back synchronously, checks
    /// the bytes, and frees the memory.
    #[track_caller]
    pub fn round_trip(src: &[u8], what: &str) {
        let d = alloc(src.len());
        let mut back = vec![0u8; src.len()];
        // SAFETY: both host buffers and d hold src.len() bytes.
        unsafe {
            ok(
                sys::cuMemcpyHtoD_v2(d, src.as_ptr().cast(), src.len()),
                "cuMemcpyHtoD",
            );
            ok(
                sys::cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), d, src.len()),
                "cuMemcpyDtoH",
            );
            ok(sys::cuMemFree_v2(d), "cuMemFree");
        }
        super::assert_same(src, &back, what);
    }

    /// One bad-input case: a name, what the call returned, what the real
    /// driver returns.
    pub struct Case {
        pub name: String,
        pub got: u32,
        pub want: u32,
    }

    /// Collects cases; [`Cases::check`] asserts them all at once.
    #[derive(Default)]
    pub struct Cases(Vec<Case>);

    impl Cases {
        pub fn add(&mut self, name: impl Into<String>, got: sys::CUresult, want: u32) {
            let name = name.into();
            println!("case {name}: got {} ({got:?}) want {want}", code(got));
            self.0.push(Case {
                name,
                got: code(got),
                want,
            });
        }

        /// Asserts that every case returned what it should.
        #[track_caller]
        pub fn check(&self) {
            let wrong: Vec<String> = self
                .0
                .iter()
                .filter(|c| c.got != c.want)
                .map(|c| format!("{}: got {} want {}", c.name, c.got, c.want))
                .collect();
            assert!(wrong.is_empty(), "wrong CUDA results: {wrong:#?}");
        }
    }
}
