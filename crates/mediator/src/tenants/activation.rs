//! Socket activation: listening sockets a service manager opened and passed
//! to the mediator (systemd's `LISTEN_FDS` protocol, `sd_listen_fds(3)`).
//!
//! When `LISTEN_PID` is this process and `LISTEN_FDS` is `N`, descriptors
//! `3..3+N` are listening sockets; `LISTEN_FDNAMES` may name them (the
//! `FileDescriptorName=` of the unit). The supervisor then serves them
//! instead of binding its `listen` addresses. The variables are removed
//! from the environment so that workers never see them.

use std::os::fd::{FromRawFd, OwnedFd};

/// The first inherited descriptor.
const FIRST_FD: i32 = 3;
/// More than this many inherited sockets is a mistake, not a config.
const MAX_FDS: usize = 64;

/// One inherited listening socket and the name the service manager gave it.
#[derive(Debug)]
pub struct Inherited {
    pub fd: OwnedFd,
    pub name: Option<String>,
}

/// Takes the sockets passed to this process, if any: `Ok(empty)` when none
/// were (no `LISTEN_PID`, or another process's).
pub fn take() -> Result<Vec<Inherited>, String> {
    let var = |k: &str| std::env::var(k).ok();
    let (pid, fds, names) = (var("LISTEN_PID"), var("LISTEN_FDS"), var("LISTEN_FDNAMES"));
    // Single-threaded here (the supervisor's first step): nothing else
    // reads the environment at the same time.
    for k in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] {
        std::env::remove_var(k);
    }
    let (Some(pid), Some(fds)) = (pid, fds) else {
        return Ok(Vec::new());
    };
    if pid.trim().parse::<u32>().ok() != Some(std::process::id()) {
        return Ok(Vec::new());
    }
    let n: usize = fds
        .trim()
        .parse()
        .ok()
        .filter(|&n| n <= MAX_FDS)
        .ok_or_else(|| {
            format!("LISTEN_FDS={fds:?}: a count of inherited sockets up to {MAX_FDS}")
        })?;
    let names: Vec<String> =
        names.map_or_else(Vec::new, |n| n.split(':').map(str::to_owned).collect());
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let raw = FIRST_FD + i32::try_from(i).map_err(|e| e.to_string())?;
        // SAFETY: the service manager passed descriptors 3..3+N to this
        // process for exactly this use; nothing else here owns them.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC)
            .map_err(|e| format!("LISTEN_FDS: descriptor {raw}: {e}"))?;
        let listening = rustix::net::sockopt::socket_acceptconn(&fd)
            .map_err(|e| format!("LISTEN_FDS: descriptor {raw}: {e}"))?;
        if !listening {
            return Err(format!(
                "LISTEN_FDS: descriptor {raw} is not a listening socket"
            ));
        }
        out.push(Inherited {
            fd,
            name: names.get(i).filter(|s| !s.is_empty()).cloned(),
        });
    }
    Ok(out)
}
