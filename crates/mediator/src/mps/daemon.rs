//! The groups' control daemons: finding the control program, preparing
//! the folders, starting a daemon and telling it to quit.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{lock, Group, Mps, Settings, CONTROL, MAX_BACKOFF, START_WAIT};
use crate::privilege::Credentials;
use crate::MediatorError;

impl Mps {
    /// Starts group `i`'s daemon and waits for its control socket. The
    /// sessions of earlier starts end first: their server is gone, or no
    /// longer watched.
    pub(super) fn start(&self, i: usize) {
        let g = &self.groups[i];
        let generation = lock(&g.state).generation;
        self.end_members(i, generation);
        let _ = std::fs::remove_file(g.pipe.join("control"));
        let pid = match self.spawn_daemon(g) {
            Ok(pid) => pid,
            Err(e) => {
                let mut s = lock(&g.state);
                s.quick_exits += 1;
                let wait = backoff(s.quick_exits);
                tracing::error!(
                    group = g.name,
                    "cannot start the MPS control daemon {}: {e}; trying again in {wait:?}",
                    self.control.display()
                );
                s.next_start = Some(Instant::now() + wait);
                return;
            }
        };
        {
            let mut s = lock(&g.state);
            s.daemon = Some(pid);
            s.started = Some(Instant::now());
        }
        let deadline = Instant::now() + START_WAIT;
        while Instant::now() < deadline {
            let mut s = lock(&g.state);
            if s.daemon != Some(pid) {
                return; // It exited already; `reaped` logged it.
            }
            if g.pipe.join("control").exists() {
                s.generation += 1;
                s.ready = true;
                g.changed.notify_all();
                tracing::info!(
                    group = g.name,
                    daemon = pid,
                    start = s.generation,
                    "MPS control daemon ready"
                );
                return;
            }
            drop(s);
            std::thread::sleep(Duration::from_millis(20));
        }
        tracing::error!(
            group = g.name,
            daemon = pid,
            "MPS control daemon opened no control socket within {START_WAIT:?}; killing it"
        );
        lock(&g.state).quitting = true;
        kill_group(pid);
    }

    /// `control -f` for group `g`: in a session of its own (so its server
    /// follows it into `kill_group`), with the supervisor's blocked
    /// signals unblocked, as the worker user.
    pub(super) fn spawn_daemon(&self, g: &Group) -> std::io::Result<u32> {
        let mut cmd = Command::new(&self.control);
        cmd.arg("-f")
            .env("CUDA_MPS_PIPE_DIRECTORY", &g.pipe)
            .env("CUDA_MPS_LOG_DIRECTORY", &g.log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .current_dir(&g.log);
        let run_as = self.run_as.clone();
        // SAFETY: `detach_in_child` makes only async-signal-safe calls, as
        // code between fork and exec must.
        unsafe {
            cmd.pre_exec(move || crate::spawn::detach_in_child(run_as.as_ref()));
        }
        Ok(cmd.spawn()?.id())
    }

    /// Sends `quit` to group `g`'s daemon and waits up to `wait` for the
    /// reaper to collect it.
    pub(super) fn ask_quit(&self, g: &Group, wait: Duration) -> Result<(), String> {
        lock(&g.state).quitting = true;
        let mut cmd = Command::new(&self.control);
        cmd.env("CUDA_MPS_PIPE_DIRECTORY", &g.pipe)
            .env("CUDA_MPS_LOG_DIRECTORY", &g.log)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(c) = &self.run_as {
            cmd.uid(c.uid).gid(c.gid);
        }
        let mut child = {
            // Registered before the reaper can see it exit.
            let mut quitters = lock(&self.quitters);
            let child = cmd.spawn().map_err(|e| format!("cannot run it: {e}"))?;
            quitters.push(child.id());
            child
        };
        if let Some(mut stdin) = child.stdin.take() {
            use std::io::Write;
            let _ = stdin.write_all(b"quit\n");
        }
        // The reaper thread collects `child`, as it does every child.
        drop(child);
        let s = lock(&g.state);
        let (s, _) = g
            .changed
            .wait_timeout_while(s, wait, |s| s.daemon.is_some())
            .unwrap_or_else(|e| e.into_inner());
        match s.daemon {
            None => Ok(()),
            Some(pid) => Err(format!("daemon {pid} still runs after {wait:?}")),
        }
    }
}

/// The groups `tenants` name, in the order first named.
pub(super) fn group_names(tenants: &[crate::tenants::Tenant]) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for t in tenants.iter().filter_map(|t| t.mps.as_ref()) {
        if !names.contains(&t.group.as_str()) {
            names.push(&t.group);
        }
    }
    names
}

/// The control program the groups of `tenants` need: `[mps] control`, or
/// [`CONTROL`] on `PATH`; `None` when no tenant names a group; an error
/// when it is missing.
pub fn control_program(
    settings: &Settings,
    tenants: &[crate::tenants::Tenant],
) -> Result<Option<PathBuf>, MediatorError> {
    let names = group_names(tenants);
    if names.is_empty() {
        return Ok(None);
    }
    let control = match &settings.control {
        Some(p) => p.clone(),
        None => find_on_path(CONTROL).ok_or_else(|| {
            MediatorError::Config(format!(
                "tenants name MPS groups ({}), but {CONTROL} is not on PATH: install the \
                 NVIDIA driver's MPS tools, or set [mps] control",
                names.join(", ")
            ))
        })?,
    };
    if !is_executable(&control) {
        return Err(MediatorError::Config(format!(
            "[mps] control: {} is not an executable file",
            control.display()
        )));
    }
    Ok(Some(control))
}

/// Sends SIGKILL to the process group of `pid` (a daemon leads its own).
pub(super) fn kill_group(pid: u32) {
    if let Some(p) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
    }
}

pub(super) fn backoff(quick_exits: u32) -> Duration {
    match quick_exits {
        0 => Duration::ZERO,
        n => (Duration::from_secs(1) * 2u32.saturating_pow(n - 1)).min(MAX_BACKOFF),
    }
}

/// `/run/vgpu/mps` for root, else `$XDG_RUNTIME_DIR/vgpu/mps`, else
/// `/tmp/vgpu-mps-UID`.
pub(super) fn default_dir() -> PathBuf {
    let uid = rustix::process::geteuid().as_raw();
    if uid == 0 {
        return PathBuf::from("/run/vgpu/mps");
    }
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) => PathBuf::from(d).join("vgpu/mps"),
        None => PathBuf::from(format!("/tmp/vgpu-mps-{uid}")),
    }
}

/// Makes `dir` (and its parents) with `mode`, owned by `owner` if given.
pub(super) fn make_dir(
    dir: &Path,
    mode: u32,
    owner: Option<&Credentials>,
) -> Result<(), MediatorError> {
    let fail = |e: std::io::Error| {
        MediatorError::Config(format!("[mps] dir: cannot prepare {}: {e}", dir.display()))
    };
    std::fs::create_dir_all(dir).map_err(fail)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).map_err(fail)?;
    if let Some(c) = owner {
        std::os::unix::fs::chown(dir, Some(c.uid), Some(c.gid)).map_err(fail)?;
    }
    Ok(())
}

pub(super) fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

pub(super) fn is_executable(p: &Path) -> bool {
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
