//! The supervisor: accepts connections and starts one worker per session.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Command;

use vgpu_transport::{Address, Channel, Listener, TransportError};

use crate::config::ServeArgs;
use crate::MediatorError;

/// Listens on every `args.listen` address and serves until killed.
pub fn run(args: &ServeArgs) -> Result<(), MediatorError> {
    let mut listeners = Vec::new();
    let mut sockets = Vec::new();
    let exe = std::env::current_exe()?;
    for text in &args.listen {
        if let Some(path) = text.strip_prefix("ivshmem:") {
            let listener = crate::ivshmem::bind(Path::new(path))
                .map_err(|e| MediatorError::Config(format!("--listen {text}: {e}")))?;
            tracing::info!("listening on {text} (QEMU ivshmem-doorbell devices)");
            sockets.push(PathBuf::from(path));
            let (args, exe) = (args.clone(), exe.clone());
            std::thread::Builder::new()
                .name("ivshmem".into())
                .spawn(move || crate::ivshmem::serve(&listener, &args, &exe))?;
            continue;
        }
        let (listener, bound, socket) = bind(text)?;
        if let Some(path) = socket {
            sockets.push(path);
        } else {
            tracing::warn!(
                "{bound} is plain TCP: nothing is encrypted and any host that reaches it can \
                 start a session; use it on trusted networks only"
            );
        }
        tracing::info!("listening on {bound}");
        listeners.push(listener);
    }
    let signals = shutdown_signals();
    // Block them in every thread; one thread waits for them. Workers get the
    // default mask back before exec (see `spawn_worker`).
    // SAFETY: `signals` is an initialised set; the old mask is not needed.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &signals, std::ptr::null_mut()) };
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || wait_for_shutdown(signals, &sockets))?;
    tracing::info!(
        listen = ?args.listen,
        driver = %args.driver,
        version = env!("CARGO_PKG_VERSION"),
        "vgpu-mediator supervisor ready"
    );
    std::thread::Builder::new()
        .name("reaper".into())
        .spawn(reap_workers)?;
    loop {
        for i in ready(&listeners) {
            let conn = match listeners[i].accept() {
                Ok(c) => c,
                Err(TransportError::Io(e)) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    continue
                }
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    continue;
                }
            };
            let peer = conn.peer_addr();
            match (spawn_worker(&exe, args, conn), peer) {
                (Ok(pid), Some(peer)) => tracing::info!(worker = pid, %peer, "session accepted"),
                (Ok(pid), None) => tracing::info!(worker = pid, "session accepted"),
                (Err(e), _) => tracing::error!("could not start a worker: {e}"),
            }
        }
    }
}

/// Binds one `--listen` address, non-blocking (the accept loop polls every
/// listener); returns it with the address it is bound to (a TCP port 0
/// replaced by the port the kernel picked) and a Unix socket's path.
fn bind(text: &str) -> Result<(Listener, String, Option<PathBuf>), MediatorError> {
    let cannot = |e: &dyn std::fmt::Display| MediatorError::Config(format!("--listen {text}: {e}"));
    let addr: Address = text.parse().map_err(|e| cannot(&e))?;
    let listener = match &addr {
        Address::Unix(path) => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| cannot(&e))?;
            }
            Listener::bind(path)
        }
        Address::Tcp { host, port } => Listener::bind_tcp(host, *port),
    }
    .map_err(|e| cannot(&e))?;
    listener.set_nonblocking(true)?;
    let bound = match listener.local_addr() {
        Some(a) => format!("tcp://{a}"),
        None => addr.to_string(),
    };
    let socket = match addr {
        Address::Unix(path) => Some(path),
        Address::Tcp { .. } => None,
    };
    Ok((listener, bound, socket))
}

/// The listeners with a connection waiting (poll(2), without a time limit).
fn ready(listeners: &[Listener]) -> Vec<usize> {
    use rustix::event::{poll, PollFd, PollFlags};
    let mut fds: Vec<PollFd<'_>> = listeners
        .iter()
        .map(|l| PollFd::new(l, PollFlags::IN))
        .collect();
    match poll(&mut fds, None) {
        Ok(_) => fds
            .iter()
            .enumerate()
            .filter(|(_, f)| !f.revents().is_empty())
            .map(|(i, _)| i)
            .collect(),
        Err(rustix::io::Errno::INTR) => Vec::new(),
        Err(e) => {
            tracing::warn!("poll failed: {e}");
            std::thread::sleep(std::time::Duration::from_millis(100));
            Vec::new()
        }
    }
}

fn spawn_worker(exe: &Path, args: &ServeArgs, conn: Channel) -> Result<u32, MediatorError> {
    let fd = conn.into_fd().ok_or(MediatorError::Config(
        "an accepted connection without a socket".into(),
    ))?;
    spawn(exe, args, vec![fd], &[])
}

/// Starts `vgpu-mediator … worker --fd 3 EXTRA`, whose descriptors 3, 4, …
/// are `inherit` in order. Only the child gets them, by `dup2` between
/// fork and exec: no descriptor is ever made inheritable in this process,
/// where threads serving other listeners start workers of their own.
pub(crate) fn spawn(
    exe: &Path,
    args: &ServeArgs,
    inherit: Vec<OwnedFd>,
    extra: &[String],
) -> Result<u32, MediatorError> {
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
        cmd.arg("--log").arg(log);
    }
    if let Some(dir) = &args.ipc_dir {
        cmd.arg("--ipc-dir").arg(dir);
    }
    cmd.arg("worker").arg("--fd").arg(FIRST_FD.to_string());
    cmd.args(extra);
    let raw: Vec<i32> = inherit.iter().map(AsRawFd::as_raw_fd).collect();
    // SAFETY: the closure only calls fcntl, dup2, sigprocmask-family
    // functions and setsid, which are async-signal-safe, as code between
    // fork and exec must be; `raw` is a copy made before the fork.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
            // Copies above every target first, so no dup2 overwrites a
            // descriptor still to be moved; they close at exec.
            let mut high = [0i32; 8];
            for (i, fd) in raw.iter().enumerate().take(high.len()) {
                high[i] = libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, 64);
                if high[i] < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for (target, fd) in (FIRST_FD..).zip(high.iter().take(raw.len())) {
                // dup2's copy has close-on-exec clear: it is inherited.
                if libc::dup2(*fd, target) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            let signals = shutdown_signals();
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &signals, std::ptr::null_mut());
            // A session and process group of its own: a signal to the
            // supervisor's group (Ctrl-C in its terminal, a service manager
            // signalling the group) or its terminal's hangup stops the
            // supervisor, never the live sessions.
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    drop(inherit);
    Ok(child.id())
}

/// The descriptor number of a worker's first inherited descriptor.
const FIRST_FD: i32 = 3;

/// Collects exited workers so none linger as zombies, and logs how they ended.
fn reap_workers() {
    loop {
        match rustix::process::wait(rustix::process::WaitOptions::empty()) {
            Ok(Some((pid, status))) => {
                let pid = pid.as_raw_nonzero().get();
                if status.exited() && status.exit_status() == Some(0) {
                    tracing::info!(worker = pid, "session ended");
                } else {
                    tracing::warn!(worker = pid, ?status, "worker ended abnormally");
                }
            }
            _ => std::thread::sleep(std::time::Duration::from_millis(200)),
        }
    }
}

/// SIGTERM and SIGINT: the supervisor's shutdown requests.
fn shutdown_signals() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the zeroed set; sigaddset adds valid signals.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        set
    }
}

/// Waits for a shutdown signal, removes the Unix sockets and exits 0.
/// Workers are separate processes and keep serving their sessions.
fn wait_for_shutdown(signals: libc::sigset_t, sockets: &[PathBuf]) {
    let mut sig: libc::c_int = 0;
    // SAFETY: `signals` is initialised and blocked in every thread; `sig` is a live local.
    if unsafe { libc::sigwait(&signals, &mut sig) } == 0 {
        tracing::info!(
            signal = sig,
            "shutting down; live sessions keep their workers"
        );
        for socket in sockets {
            let _ = std::fs::remove_file(socket);
        }
        std::process::exit(0);
    }
}
