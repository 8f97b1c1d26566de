//! Stream memory operations: the model functions of the generated exports
//! (`generated/mod.rs`) and `cuStreamBatchMemOp`. The `_ptsz` forms read NULL as the
//! per-thread stream. Driver 580 refuses the first forms of the waits and
//! writes (those without `_v2`) with `CUDA_ERROR_NOT_SUPPORTED`, and so does
//! the simulated device.

use std::ffi::c_uint;

use crate::cu::{CUdeviceptr, CUresult, CUstream, CUstreamBatchMemOpParams};
use crate::error::{err, Res};
use crate::ffi::{key, run};
use crate::memop::{enqueue, enqueue_all, MemOp};
use crate::state;

use super::stream::ptsz;

fn write(stream: usize, addr: CUdeviceptr, value: u64, width: usize, flags: u32) -> Res<()> {
    let op = MemOp::write(addr, value, width, flags)?;
    enqueue(&mut state::sim()?.lock(), stream, op)
}

fn wait(stream: usize, addr: CUdeviceptr, value: u64, width: usize, flags: u32) -> Res<()> {
    let op = MemOp::wait(addr, value, width, flags)?;
    enqueue(&mut state::sim()?.lock(), stream, op)
}

/// The first forms' answer on driver 580 (an H200 run of stream_memops.c).
fn first_form() -> Res<()> {
    err(
        CUresult::CUDA_ERROR_NOT_SUPPORTED,
        "the first forms of the stream waits and writes are not supported; use the _v2 forms",
    )
}

/// Defines the model functions of one operation's four forms.
macro_rules! forms {
    ($op:ident, $width:literal, $ty:ty: $first:ident, $first_ptsz:ident, $v2:ident, $v2_ptsz:ident) => {
        #[doc = concat!("`cuStream", stringify!($op), "` of ", stringify!($width), " bytes, first form: refused.")]
        pub(crate) fn $first(_: CUstream, _: CUdeviceptr, _: $ty, _: u32) -> Res<()> {
            first_form()
        }
        #[doc = "The `_ptsz` first form: refused."]
        pub(crate) fn $first_ptsz(_: CUstream, _: CUdeviceptr, _: $ty, _: u32) -> Res<()> {
            first_form()
        }
        #[doc = "The `_v2` form."]
        pub(crate) fn $v2(s: CUstream, addr: CUdeviceptr, value: $ty, flags: u32) -> Res<()> {
            $op(key(s), addr, u64::from(value), $width, flags)
        }
        #[doc = "The `_v2_ptsz` form."]
        pub(crate) fn $v2_ptsz(s: CUstream, addr: CUdeviceptr, value: $ty, flags: u32) -> Res<()> {
            $op(ptsz(s), addr, u64::from(value), $width, flags)
        }
    };
}

forms!(write, 4, u32: stream_write_value32, stream_write_value32_ptsz,
    stream_write_value32_v2, stream_write_value32_v2_ptsz);
forms!(write, 8, u64: stream_write_value64, stream_write_value64_ptsz,
    stream_write_value64_v2, stream_write_value64_v2_ptsz);
forms!(wait, 4, u32: stream_wait_value32, stream_wait_value32_ptsz,
    stream_wait_value32_v2, stream_wait_value32_v2_ptsz);
forms!(wait, 8, u64: stream_wait_value64, stream_wait_value64_ptsz,
    stream_wait_value64_v2, stream_wait_value64_v2_ptsz);

/// Bytes of one `CUstreamBatchMemOpParams`.
const OP: usize = core::mem::size_of::<CUstreamBatchMemOpParams>();

/// The operations of a batch: waits and writes; memory barriers and remote-write
/// flushes order nothing more on the simulated device, which runs work in order.
///
/// # Safety
/// `params` must be NULL or hold `count` operations.
pub(crate) unsafe fn batch(
    params: *const CUstreamBatchMemOpParams,
    count: c_uint,
    flags: c_uint,
) -> Res<Vec<MemOp>> {
    if flags != 0 || count == 0 || params.is_null() {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "a batch needs operations and flags 0",
        );
    }
    let mut ops = Vec::new();
    for i in 0..count as usize {
        // SAFETY: `count` readable operations by the contract.
        let raw = unsafe { params.add(i).cast::<[u8; OP]>().read_unaligned() };
        let word = |at: usize| u32::from_ne_bytes([raw[at], raw[at + 1], raw[at + 2], raw[at + 3]]);
        let long = |at: usize| u64::from(word(at)) | (u64::from(word(at + 4)) << 32);
        let (addr, op_flags) = (long(8), word(24));
        ops.push(match word(0) {
            1 => MemOp::wait(addr, u64::from(word(16)), 4, op_flags)?,
            2 => MemOp::write(addr, u64::from(word(16)), 4, op_flags)?,
            4 => MemOp::wait(addr, long(16), 8, op_flags)?,
            5 => MemOp::write(addr, long(16), 8, op_flags)?,
            3 | 6 => continue,
            other => {
                return err(
                    CUresult::CUDA_ERROR_INVALID_VALUE,
                    format!("{other} is not a CUstreamBatchMemOpType"),
                )
            }
        });
    }
    Ok(ops)
}

fn batch_on(
    name: &str,
    k: usize,
    p: *const CUstreamBatchMemOpParams,
    n: c_uint,
    f: c_uint,
) -> CUresult {
    run(name, || {
        // SAFETY: the caller's operations, valid as the CUDA API requires.
        let ops = unsafe { batch(p, n, f) }?;
        enqueue_all(&mut state::sim()?.lock(), k, ops)
    })
}

/// `cuStreamBatchMemOp`.
///
/// # Safety
/// `p` must be NULL or hold `n` operations.
#[no_mangle]
pub unsafe extern "C" fn cuStreamBatchMemOp(
    s: CUstream,
    n: c_uint,
    p: *mut CUstreamBatchMemOpParams,
    flags: c_uint,
) -> CUresult {
    batch_on("cuStreamBatchMemOp", key(s), p, n, flags)
}

/// `cuStreamBatchMemOp_ptsz`.
///
/// # Safety
/// As for `cuStreamBatchMemOp`.
#[no_mangle]
pub unsafe extern "C" fn cuStreamBatchMemOp_ptsz(
    s: CUstream,
    n: c_uint,
    p: *mut CUstreamBatchMemOpParams,
    flags: c_uint,
) -> CUresult {
    batch_on("cuStreamBatchMemOp_ptsz", ptsz(s), p, n, flags)
}

/// `cuStreamBatchMemOp_v2`.
///
/// # Safety
/// As for `cuStreamBatchMemOp`.
#[no_mangle]
pub unsafe extern "C" fn cuStreamBatchMemOp_v2(
    s: CUstream,
    n: c_uint,
    p: *mut CUstreamBatchMemOpParams,
    flags: c_uint,
) -> CUresult {
    batch_on("cuStreamBatchMemOp_v2", key(s), p, n, flags)
}

/// `cuStreamBatchMemOp_v2_ptsz`.
///
/// # Safety
/// As for `cuStreamBatchMemOp`.
#[no_mangle]
pub unsafe extern "C" fn cuStreamBatchMemOp_v2_ptsz(
    s: CUstream,
    n: c_uint,
    p: *mut CUstreamBatchMemOpParams,
    flags: c_uint,
) -> CUresult {
    batch_on("cuStreamBatchMemOp_v2_ptsz", ptsz(s), p, n, flags)
}
