//! The live sessions of this mediator.
//!
//! PLACEHOLDER: this version knows only the session of the worker that asks
//! (recorded by [`set_own`] when the worker starts), so [`list`] returns that
//! one session, with no device memory. The registry of every live session,
//! with the same [`SessionInfo`] and [`list`], replaces this file.

use std::sync::OnceLock;
use std::time::SystemTime;

/// One live session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// The worker process serving it.
    pub worker_pid: u32,
    /// The client process.
    pub client_pid: u32,
    /// The client's uid.
    pub uid: u32,
    /// How the client is connected (`unix`, `tcp`, ...).
    pub transport: String,
    /// Device memory the session holds, in bytes.
    pub device_memory: u64,
    /// When the session started.
    pub started: SystemTime,
}

static OWN: OnceLock<SessionInfo> = OnceLock::new();

/// Records this worker's own session (placeholder only; the first call wins).
pub fn set_own(info: SessionInfo) {
    let _ = OWN.set(info);
}

/// Every live session this process knows of: here, its own (if recorded).
pub fn list() -> Vec<SessionInfo> {
    OWN.get().cloned().into_iter().collect()
}
