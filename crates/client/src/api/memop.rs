//! Stream memory operations written by hand: `cuStreamBatchMemOp` (every
//! form). The single waits and writes are table calls.

use std::ffi::c_uint;

use vgpu_abi::types::CUstreamBatchMemOpParams;
use vgpu_proto::stream_batch_mem_op;
use zerocopy::little_endian::{U32, U64};

use crate::edge::{CuError, CuResult};
use crate::runtime::runtime;

/// Bytes of one `CUstreamBatchMemOpParams`.
const OP: usize = core::mem::size_of::<CUstreamBatchMemOpParams>();

/// Appends the `n` operations at `params` to `blob` as the worker reads
/// them (the application's bytes, unaligned reads).
///
/// # Safety
/// `params` must hold `n` readable operations (or `n` be 0).
pub(crate) unsafe fn append_ops(
    blob: &mut Vec<u8>,
    params: *const CUstreamBatchMemOpParams,
    n: usize,
) {
    for i in 0..n {
        // SAFETY: the caller's contract.
        let op = unsafe { params.add(i).cast::<[u8; OP]>().read_unaligned() };
        blob.extend_from_slice(&op);
    }
}

/// `cuStreamBatchMemOp` on the stream of wire id `sid` (the `_ptsz` forms
/// pass the per-thread stream for NULL): the operations travel as given, and
/// the worker checks their addresses.
///
/// # Safety
/// `params` must be NULL or hold `count` operations.
pub unsafe fn batch_mem_op(
    sid: u64,
    count: c_uint,
    params: *const CUstreamBatchMemOpParams,
    flags: c_uint,
) -> CuResult<()> {
    let s = runtime().session()?;
    if count > 0 && params.is_null() {
        return Err(CuError::INVALID_VALUE);
    }
    let n = usize::try_from(count).map_err(|_| CuError::INVALID_VALUE)?;
    let mut blob = Vec::with_capacity(n.checked_mul(OP).ok_or(CuError::INVALID_VALUE)?);
    // SAFETY: `count` readable operations by the contract.
    unsafe { append_ops(&mut blob, params, n) };
    let r = stream_batch_mem_op::Request {
        stream: U64::new(sid),
        count: U32::new(count),
        flags: U32::new(flags),
    };
    s.request(&r, &blob).map(drop)
}
