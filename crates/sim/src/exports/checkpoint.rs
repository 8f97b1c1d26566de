//! Process checkpointing (`cuCheckpointProcess*`) of the simulator's own
//! process: a state machine (running, locked, checkpointed) that checks the
//! order of the calls; nothing is saved, as simulated memory is host memory.

use std::ffi::c_int;

use crate::cu::{
    CUcheckpointCheckpointArgs, CUcheckpointLockArgs, CUcheckpointRestoreArgs,
    CUcheckpointUnlockArgs, CUprocessState, CUresult,
};
use crate::error::{err, Res};
use crate::ffi::{run, Out};
use crate::state;

const RUNNING: u32 = CUprocessState::CU_PROCESS_STATE_RUNNING.0;
const LOCKED: u32 = CUprocessState::CU_PROCESS_STATE_LOCKED.0;
const CHECKPOINTED: u32 = CUprocessState::CU_PROCESS_STATE_CHECKPOINTED.0;

/// Only this process is known.
fn own(pid: c_int) -> Res<()> {
    if i64::from(pid) != i64::from(std::process::id()) {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "pid is not this process",
        );
    }
    Ok(())
}

/// Moves from state `from` to `to`; another state is `CUDA_ERROR_ILLEGAL_STATE`.
fn step(pid: c_int, from: u32, to: u32, what: &str) -> Res<()> {
    let sim = state::sim()?;
    own(pid)?;
    let mut st = sim.lock();
    if st.ext.checkpoint_state != from {
        return err(
            CUresult::CUDA_ERROR_ILLEGAL_STATE,
            format!("{what} in process state {}", st.ext.checkpoint_state),
        );
    }
    st.ext.checkpoint_state = to;
    Ok(())
}

/// `cuCheckpointProcessGetState`.
///
/// # Safety
/// `state` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuCheckpointProcessGetState(
    pid: c_int,
    state: *mut CUprocessState,
) -> CUresult {
    run("cuCheckpointProcessGetState", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(state, "state") }?;
        own(pid)?;
        out.write(CUprocessState(sim.lock().ext.checkpoint_state));
        Ok(())
    })
}

/// `cuCheckpointProcessGetRestoreThreadId`: the process's main thread.
///
/// # Safety
/// `tid` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuCheckpointProcessGetRestoreThreadId(
    pid: c_int,
    tid: *mut c_int,
) -> CUresult {
    run("cuCheckpointProcessGetRestoreThreadId", || {
        state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(tid, "tid") }?;
        own(pid)?;
        out.write(pid);
        Ok(())
    })
}

/// `cuCheckpointProcessLock`: running to locked.
#[no_mangle]
pub extern "C" fn cuCheckpointProcessLock(
    pid: c_int,
    _args: *mut CUcheckpointLockArgs,
) -> CUresult {
    run("cuCheckpointProcessLock", || {
        step(pid, RUNNING, LOCKED, "lock")
    })
}

/// `cuCheckpointProcessCheckpoint`: locked to checkpointed.
#[no_mangle]
pub extern "C" fn cuCheckpointProcessCheckpoint(
    pid: c_int,
    _args: *mut CUcheckpointCheckpointArgs,
) -> CUresult {
    run("cuCheckpointProcessCheckpoint", || {
        step(pid, LOCKED, CHECKPOINTED, "checkpoint")
    })
}

/// `cuCheckpointProcessRestore`: checkpointed to locked.
#[no_mangle]
pub extern "C" fn cuCheckpointProcessRestore(
    pid: c_int,
    _args: *mut CUcheckpointRestoreArgs,
) -> CUresult {
    run("cuCheckpointProcessRestore", || {
        step(pid, CHECKPOINTED, LOCKED, "restore")
    })
}

/// `cuCheckpointProcessUnlock`: locked to running.
#[no_mangle]
pub extern "C" fn cuCheckpointProcessUnlock(
    pid: c_int,
    _args: *mut CUcheckpointUnlockArgs,
) -> CUresult {
    run("cuCheckpointProcessUnlock", || {
        step(pid, LOCKED, RUNNING, "unlock")
    })
}
