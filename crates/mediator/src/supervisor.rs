//! The supervisor: accepts connections and starts one worker per session.

use std::os::fd::{AsFd, AsRawFd};
use std::path::Path;
use std::process::Command;

use vgpu_transport::{Address, Channel, Listener};

use crate::config::ServeArgs;
use crate::MediatorError;

/// Listens on `args.listen` and serves until killed.
pub fn run(args: &ServeArgs) -> Result<(), MediatorError> {
    let addr: Address = args.listen.parse()?;
    let Address::Unix(path) = &addr;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let listener = Listener::bind(path)?;
    let signals = shutdown_signals();
    // Block them in every thread; one thread waits for them. Workers get the
    // default mask back before exec (see `spawn_worker`).
    // SAFETY: `signals` is an initialised set; the old mask is not needed.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &signals, std::ptr::null_mut()) };
    let socket = path.clone();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || wait_for_shutdown(signals, &socket))?;
    tracing::info!(
        listen = %addr,
        driver = %args.driver,
        version = env!("CARGO_PKG_VERSION"),
        "vgpu-mediator supervisor ready"
    );
    std::thread::Builder::new()
        .name("reaper".into())
        .spawn(reap_workers)?;
    let exe = std::env::current_exe()?;
    loop {
        let conn = match listener.accept() {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                continue;
            }
        };
        match spawn_worker(&exe, args, conn) {
            Ok(pid) => tracing::info!(worker = pid, "session accepted"),
            Err(e) => tracing::error!("could not start a worker: {e}"),
        }
    }
}

fn spawn_worker(exe: &Path, args: &ServeArgs, conn: Channel) -> Result<u32, MediatorError> {
    let fd = conn.as_fd().as_raw_fd();
    // The worker inherits exactly this descriptor: clear close-on-exec on it
    // alone. The accept loop is single-threaded, so no other exec races it.
    rustix::io::fcntl_setfd(&conn, rustix::io::FdFlags::empty()).map_err(std::io::Error::from)?;
    let mut cmd = Command::new(exe);
    cmd.arg("--driver").arg(args.driver.to_string());
    cmd.arg("--log-level").arg(&args.log_level);
    cmd.arg("--listen").arg(&args.listen);
    if let Some(sim) = &args.sim_lib {
        cmd.arg("--sim-lib").arg(sim);
    }
    if let Some(log) = &args.log {
        cmd.arg("--log").arg(log);
    }
    cmd.arg("worker").arg("--fd").arg(fd.to_string());
    // SAFETY: the closure only calls sigprocmask-family functions and
    // setsid, which are async-signal-safe, as code between fork and exec must be.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
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
    drop(conn);
    Ok(child.id())
}

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

/// Waits for a shutdown signal, removes the socket and exits 0. Workers are
/// separate processes and keep serving their sessions.
fn wait_for_shutdown(signals: libc::sigset_t, socket: &Path) {
    let mut sig: libc::c_int = 0;
    // SAFETY: `signals` is initialised and blocked in every thread; `sig` is a live local.
    if unsafe { libc::sigwait(&signals, &mut sig) } == 0 {
        tracing::info!(
            signal = sig,
            "shutting down; live sessions keep their workers"
        );
        let _ = std::fs::remove_file(socket);
        std::process::exit(0);
    }
}
