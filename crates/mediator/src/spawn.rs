//! Starting the supervisor's children: a session's worker
//! ([`spawn`]), and what every child does between fork and exec
//! ([`detach_in_child`]).

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::process::Command;

use crate::config::ServeArgs;
use crate::privilege::Credentials;
use crate::sessions;
use crate::MediatorError;

/// Starts `vgpu-mediator … worker --fd N EXTRA`, where `N` is the number of
/// `inherit[0]`; the worker inherits every descriptor of `inherit` under its
/// own number (`EXTRA` may name them), then the session table when `slot`
/// names the worker's slot in it; `env` is added to its environment. Only the child clears their close-on-exec
/// flags, between fork and exec: no descriptor is ever made inheritable in
/// this process, where threads serving other listeners start workers of
/// their own, and nothing is renumbered over a descriptor the child's exec
/// still needs. With `run_as`, the child becomes that user before exec
/// ([`crate::privilege`]). The worker's log goes to its standard error,
/// the `--log` file opened here when there is one.
pub fn spawn(
    exe: &Path,
    args: &ServeArgs,
    inherit: Vec<OwnedFd>,
    extra: &[String],
    env: &[(String, String)],
    (slot, run_as): (Option<usize>, Option<Credentials>),
) -> Result<u32, MediatorError> {
    let mut raw: Vec<i32> = inherit.iter().map(AsRawFd::as_raw_fd).collect();
    let first = *raw
        .first()
        .ok_or_else(|| MediatorError::Config("a worker needs its connection".into()))?;
    let mut cmd = Command::new(exe);
    cmd.arg("--driver").arg(args.driver.to_string());
    cmd.arg("--log-level").arg(&args.log_level);
    for listen in &args.listen {
        cmd.arg("--listen").arg(listen);
    }
    if let Some(ports) = args.lane_ports {
        cmd.arg("--lane-ports").arg(ports.to_string());
    }
    if let Some(sim) = &args.sim_lib {
        cmd.arg("--sim-lib").arg(sim);
    }
    if let Some(log) = &args.log {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)?;
        cmd.stderr(file);
    }
    if let Some(dir) = &args.ipc_dir {
        cmd.arg("--ipc-dir").arg(dir);
    }
    cmd.args(args.limits.to_args());
    cmd.arg("worker").arg("--fd").arg(first.to_string());
    cmd.args(extra);
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    if let (Some(table), Some(slot)) = (sessions::table(), slot) {
        let fd = table.fd().as_raw_fd();
        raw.push(fd);
        cmd.arg("--session-table").arg(fd.to_string());
        cmd.arg("--session-slot").arg(slot.to_string());
    }
    // SAFETY: the closure only calls fcntl, sigprocmask-family functions,
    // setsid and the credential calls of `become_user`, which are
    // async-signal-safe, as code between fork and
    // exec must be; `raw` is a copy made before the fork, and every number
    // in it is open (`inherit` and the table outlive the spawn).
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
            for &fd in &raw {
                if libc::fcntl(fd, libc::F_SETFD, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            detach_in_child(run_as.as_ref())
        });
    }
    let child = cmd.spawn()?;
    drop(inherit);
    Ok(child.id())
}

/// In a child between fork and exec (only async-signal-safe calls): gives
/// back the signals the supervisor blocks, starts a session and process
/// group of its own, and becomes `run_as` when given. In its own session a
/// signal to the supervisor's group (Ctrl-C in its terminal, a service
/// manager signalling the group) or its terminal's hangup stops the
/// supervisor, never the live sessions or MPS daemons.
pub fn detach_in_child(run_as: Option<&Credentials>) -> std::io::Result<()> {
    let signals = shutdown_signals();
    // SAFETY: plain system calls on an initialised signal set.
    unsafe {
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &signals, std::ptr::null_mut());
        if libc::setsid() < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    match run_as {
        Some(creds) => crate::privilege::become_user(creds),
        None => Ok(()),
    }
}

/// SIGTERM and SIGINT: the supervisor's shutdown requests.
pub fn shutdown_signals() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the zeroed set; sigaddset adds valid signals.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        set
    }
}
