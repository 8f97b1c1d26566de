//! External semaphores on the simulated device (`cuImportExternalSemaphore`,
//! `cuSignalExternalSemaphoresAsync`, `cuWaitExternalSemaphoresAsync`,
//! `cuDestroyExternalSemaphore`).
//!
//! The simulated device has no Vulkan or Direct3D to export semaphores. As their
//! stand-in it imports, as an opaque (binary) or timeline semaphore file descriptor, a
//! memfd named `vgpu-sim-semaphore` whose first 8 bytes hold the semaphore's value, so
//! two processes that share the memfd share the semaphore. Any other descriptor or
//! handle type is `CUDA_ERROR_INVALID_VALUE`. A timeline signal sets the value (never
//! lowering it), a binary signal sets 1; a timeline wait waits until the value reaches
//! the given one, a binary wait until it is nonzero, then takes it back to 0. Work on
//! the simulated device has always completed, so a wait blocks the calling thread
//! (without the simulator's lock) until the value is there, as the stream would wait.
//! On a capturing stream a signal or wait is an external-semaphore node of the capture's
//! graph instead, run as these are at each launch (`crate::graph::Work::ExtSem`).

use std::os::fd::{FromRawFd, OwnedFd};
use std::time::Duration;

use crate::cu::CUresult;
use crate::error::{err, Error, Res};
use crate::state::State;

/// `CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD` (binary).
const OPAQUE_FD: u32 = 1;
/// `CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD`.
const TIMELINE_FD: u32 = 9;
/// The memfd name of the stand-in semaphores.
const NAME: &str = "/memfd:vgpu-sim-semaphore (deleted)";

fn io(e: impl std::fmt::Display) -> Error {
    Error {
        code: CUresult::CUDA_ERROR_UNKNOWN,
        why: format!("semaphore memfd: {e}").into(),
    }
}

/// `cuImportExternalSemaphore`: the descriptor belongs to CUDA once imported.
pub(crate) fn import(st: &mut State, kind: u32, fd: i32) -> Res<usize> {
    if kind != OPAQUE_FD && kind != TIMELINE_FD {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("handle type {kind}: only semaphore file descriptors are simulated"),
        );
    }
    let named =
        std::fs::read_link(format!("/proc/self/fd/{fd}")).is_ok_and(|t| t.as_os_str() == NAME);
    if !named {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("descriptor {fd} is not a simulated semaphore (a `vgpu-sim-semaphore` memfd)"),
        );
    }
    // SAFETY: `fd` is open (its /proc link was just read); the caller gives it up now.
    let own = unsafe { OwnedFd::from_raw_fd(fd) };
    let key = st.mint();
    st.ext
        .ipc
        .semaphores
        .insert(key, (own, kind == TIMELINE_FD));
    Ok(key)
}

/// The memfds and kinds of semaphores `keys`, for use without the lock.
pub(crate) fn resolve(st: &State, keys: &[usize]) -> Res<Vec<(OwnedFd, bool)>> {
    keys.iter()
        .map(|k| match st.ext.ipc.semaphores.get(k) {
            Some((fd, timeline)) => Ok((fd.try_clone().map_err(io)?, *timeline)),
            None => err(
                CUresult::CUDA_ERROR_INVALID_HANDLE,
                format!("{k:#x} is not a live external semaphore"),
            ),
        })
        .collect()
}

fn value(fd: &OwnedFd) -> Res<u64> {
    let mut b = [0u8; 8];
    let n = rustix::io::pread(fd, &mut b, 0).map_err(io)?;
    Ok(if n == 8 { u64::from_le_bytes(b) } else { 0 })
}

fn store(fd: &OwnedFd, v: u64) -> Res<()> {
    rustix::io::pwrite(fd, &v.to_le_bytes(), 0).map_err(io)?;
    Ok(())
}

/// Signals each semaphore with its value (`values`, fence values).
pub(crate) fn signal(sems: &[(OwnedFd, bool)], values: &[u64]) -> Res<()> {
    for ((fd, timeline), &v) in sems.iter().zip(values) {
        let now = value(fd)?;
        store(fd, if *timeline { now.max(v) } else { 1 })?;
    }
    Ok(())
}

/// Waits for each semaphore in turn (`values`, fence values).
pub(crate) fn wait(sems: &[(OwnedFd, bool)], values: &[u64]) -> Res<()> {
    for ((fd, timeline), &v) in sems.iter().zip(values) {
        let want = if *timeline { v } else { 1 };
        while value(fd)? < want {
            std::thread::sleep(Duration::from_millis(1));
        }
        if !*timeline {
            store(fd, 0)?;
        }
    }
    Ok(())
}

/// `cuDestroyExternalSemaphore`.
pub(crate) fn destroy(st: &mut State, key: usize) -> Res<()> {
    match st.ext.ipc.semaphores.remove(&key) {
        Some(_) => Ok(()),
        None => err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            format!("{key:#x} is not a live external semaphore"),
        ),
    }
}
