//! Process checkpointing: the client's `cuCheckpointProcess*` act on this
//! worker, the process that owns the session's GPU state (see
//! `client/src/api/checkpoint.rs`).

use std::ffi::c_int;
use std::ptr;

use vgpu_abi::types::{
    CUcheckpointCheckpointArgs, CUcheckpointGpuPair, CUcheckpointLockArgs, CUcheckpointRestoreArgs,
    CUcheckpointUnlockArgs, CUprocessState,
};
use vgpu_proto::{checkpoint_process, Request};
use zerocopy::little_endian::{I32, U32};

use super::calls::{message, ok, Reply};
use super::exec::Lane;
use super::status::INVALID_VALUE;
use super::Session;
use crate::driver::{entry, Status};

/// The GPU pairs of a restore, from their bytes on the wire.
fn gpu_pairs(blob: &[u8], count: u32) -> Result<Vec<CUcheckpointGpuPair>, Status> {
    let size = std::mem::size_of::<CUcheckpointGpuPair>();
    if blob.len() != count as usize * size {
        return Err(INVALID_VALUE);
    }
    Ok(blob
        .chunks_exact(size)
        .map(|c| {
            let mut pair = CUcheckpointGpuPair::default();
            // SAFETY: `pair` is plain data of exactly `size` bytes, `c` holds `size` bytes.
            unsafe { ptr::copy_nonoverlapping(c.as_ptr(), ptr::from_mut(&mut pair).cast(), size) };
            pair
        })
        .collect())
}

/// `CheckpointProcess`: the action on this process.
pub fn checkpoint_process(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &checkpoint_process::Request = message(req)?;
    let pid = c_int::try_from(std::process::id()).map_err(|_| INVALID_VALUE)?;
    let (mut state, mut tid) = (CUprocessState(0), 0);
    let d = &s.driver;
    // SAFETY: every pointer is a live local of the type the driver expects.
    let st = unsafe {
        match r.action {
            0 => entry(d.cuCheckpointProcessGetState)?(pid, &mut state),
            1 => entry(d.cuCheckpointProcessGetRestoreThreadId)?(pid, &mut tid),
            2 => {
                let mut args = CUcheckpointLockArgs {
                    timeoutMs: r.timeout_ms.get(),
                    ..Default::default()
                };
                entry(d.cuCheckpointProcessLock)?(pid, &mut args)
            }
            3 => {
                let mut args = CUcheckpointCheckpointArgs::default();
                entry(d.cuCheckpointProcessCheckpoint)?(pid, &mut args)
            }
            4 => {
                let mut pairs = gpu_pairs(&req.blob, r.gpu_pairs.get())?;
                let mut args = CUcheckpointRestoreArgs {
                    gpuPairs: if pairs.is_empty() {
                        ptr::null_mut()
                    } else {
                        pairs.as_mut_ptr()
                    },
                    gpuPairsCount: r.gpu_pairs.get(),
                    reserved: [0; 44],
                    reserved1: 0,
                };
                entry(d.cuCheckpointProcessRestore)?(pid, &mut args)
            }
            5 => {
                let mut args = CUcheckpointUnlockArgs::default();
                entry(d.cuCheckpointProcessUnlock)?(pid, &mut args)
            }
            _ => return Err(INVALID_VALUE),
        }
    };
    ok(st)?;
    Ok(Reply::new(
        &checkpoint_process::Reply {
            state: U32::new(state.0),
            tid: I32::new(tid),
        },
        Vec::new(),
    ))
}
