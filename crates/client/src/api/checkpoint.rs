//! Process checkpointing (`cuCheckpointProcess*`).
//!
//! The driver checkpoints the process that owns it, which for a vgpu
//! application is its session's worker: the GPU state to save and restore
//! lives there. So the pid the application passes must be its own; the
//! call then acts on its worker (`CheckpointProcess`), and the state and
//! restore thread id it reports are the worker's. Another pid cannot be
//! reached from here (it names another process, with a session and worker
//! of its own): it is `CUDA_ERROR_INVALID_VALUE`, with a log line saying
//! why. A checkpoint of the application's own CPU state (CRIU, for
//! instance) does not include the worker.

use std::ffi::c_int;

use vgpu_abi::types::{
    CUcheckpointCheckpointArgs, CUcheckpointGpuPair, CUcheckpointLockArgs, CUcheckpointRestoreArgs,
    CUcheckpointUnlockArgs, CUprocessState,
};
use vgpu_proto::checkpoint_process;
use zerocopy::little_endian::U32;

use crate::edge::{non_null, write_out, CuError, CuResult};
use crate::runtime::runtime;

/// What `CheckpointProcess` asks of the worker's driver.
#[derive(Clone, Copy)]
enum Action {
    GetState = 0,
    GetRestoreThreadId = 1,
    Lock = 2,
    Checkpoint = 3,
    Restore = 4,
    Unlock = 5,
}

/// Most GPU pairs a restore may remap.
const MAX_GPU_PAIRS: u32 = 64;

/// Only the application's own process has a worker this client can reach.
fn own(pid: c_int) -> CuResult<()> {
    if i64::from(pid) == i64::from(std::process::id()) {
        return Ok(());
    }
    crate::log::line(format_args!(
        "checkpoint of pid {pid} refused: only the calling process (its session's worker) can be reached"
    ));
    Err(CuError::INVALID_VALUE)
}

/// Sends the action; the reply's (state, restore thread id).
fn ask(action: Action, timeout_ms: u32, pairs: &[u8], count: u32) -> CuResult<(u32, i32)> {
    let s = runtime().session()?;
    let r = checkpoint_process::Request {
        action: action as u8,
        timeout_ms: U32::new(timeout_ms),
        gpu_pairs: U32::new(count),
    };
    let (rep, _) = s.request(&r, pairs)?;
    Ok((rep.state.get(), rep.tid.get()))
}

/// # Safety
/// `state` must be NULL or valid for a write.
pub unsafe fn get_state(pid: c_int, state: *mut CUprocessState) -> CuResult<()> {
    runtime().session()?;
    non_null(state)?;
    own(pid)?;
    let (st, _) = ask(Action::GetState, 0, &[], 0)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(state, CUprocessState(st)) }
}

/// # Safety
/// `tid` must be NULL or valid for a write.
pub unsafe fn get_restore_thread_id(pid: c_int, tid: *mut c_int) -> CuResult<()> {
    runtime().session()?;
    non_null(tid)?;
    own(pid)?;
    let (_, t) = ask(Action::GetRestoreThreadId, 0, &[], 0)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(tid, t) }
}

/// # Safety
/// `args` must be NULL or valid for a read.
pub unsafe fn lock(pid: c_int, args: *mut CUcheckpointLockArgs) -> CuResult<()> {
    runtime().session()?;
    own(pid)?;
    // SAFETY: the application's optional arguments.
    let timeout = unsafe { args.as_ref() }.map_or(0, |a| a.timeoutMs);
    ask(Action::Lock, timeout, &[], 0).map(drop)
}

/// `args` carries nothing but reserved fields.
pub fn checkpoint(pid: c_int, _args: *mut CUcheckpointCheckpointArgs) -> CuResult<()> {
    runtime().session()?;
    own(pid)?;
    ask(Action::Checkpoint, 0, &[], 0).map(drop)
}

/// # Safety
/// `args` must be NULL or valid for a read, its `gpuPairs` NULL or holding
/// `gpuPairsCount` pairs.
pub unsafe fn restore(pid: c_int, args: *mut CUcheckpointRestoreArgs) -> CuResult<()> {
    runtime().session()?;
    own(pid)?;
    // SAFETY: the application's optional arguments.
    let (pairs, count) = match unsafe { args.as_ref() } {
        Some(a) if a.gpuPairsCount > 0 => {
            if a.gpuPairs.is_null() || a.gpuPairsCount > MAX_GPU_PAIRS {
                return Err(CuError::INVALID_VALUE);
            }
            let bytes = a.gpuPairsCount as usize * std::mem::size_of::<CUcheckpointGpuPair>();
            // SAFETY: `gpuPairs` holds `gpuPairsCount` plain-data pairs.
            let raw = unsafe { std::slice::from_raw_parts(a.gpuPairs.cast::<u8>(), bytes) };
            (raw.to_vec(), a.gpuPairsCount)
        }
        _ => (Vec::new(), 0),
    };
    ask(Action::Restore, 0, &pairs, count).map(drop)
}

/// `args` carries nothing but reserved fields.
pub fn unlock(pid: c_int, _args: *mut CUcheckpointUnlockArgs) -> CuResult<()> {
    runtime().session()?;
    own(pid)?;
    ask(Action::Unlock, 0, &[], 0).map(drop)
}
