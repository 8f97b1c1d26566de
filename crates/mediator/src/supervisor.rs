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
