//! `cuMemBatchDecompressAsync` (both forms): the operations travel by value
//! and the worker checks each source, destination and `dstActBytes` range
//! against the session's allocations before the driver sees the batch. The
//! driver's status and error index come back in the reply, so a failed
//! batch still reports which operation failed.

use std::ffi::c_uint;

use vgpu_abi::types::CUmemDecompressParams;
use vgpu_proto::mem_batch_decompress;
use zerocopy::little_endian::{U32, U64};

use crate::edge::{check, CuError, CuResult};
use crate::runtime::runtime;

/// Bytes of one `CUmemDecompressParams`.
const OP: usize = core::mem::size_of::<CUmemDecompressParams>();
/// The most operations one batch may carry through vgpu (a bound on the
/// request's size; the worker enforces the same).
const MAX_OPS: usize = 4096;

/// `cuMemBatchDecompressAsync` on the stream of wire id `sid` (the `_ptsz`
/// form passes the per-thread stream for NULL). A NULL array travels as
/// none, so the driver answers it; `error_index`, when not NULL, receives
/// the index the driver (or the worker's range check) reports, and keeps
/// its value where the driver writes none.
///
/// # Safety
/// `params` must be NULL or hold `count` operations; `error_index` NULL or
/// readable and writable.
pub unsafe fn batch_decompress(
    params: *const CUmemDecompressParams,
    count: usize,
    flags: c_uint,
    error_index: *mut usize,
    sid: u64,
) -> CuResult<()> {
    let s = runtime().session()?;
    let n = if params.is_null() { 0 } else { count };
    if n > MAX_OPS {
        return Err(CuError::INVALID_VALUE);
    }
    let mut blob = Vec::with_capacity(n * OP);
    for i in 0..n {
        // SAFETY: `count` readable operations by the contract.
        let op = unsafe { params.add(i).cast::<[u8; OP]>().read_unaligned() };
        blob.extend_from_slice(&op);
    }
    let index = if error_index.is_null() {
        0
    } else {
        // SAFETY: checked non-NULL; readable by the contract (it is the
        // application's variable, which the driver leaves alone on success).
        unsafe { error_index.read_unaligned() }
    };
    let r = mem_batch_decompress::Request {
        stream: U64::new(sid),
        count: U64::new(count as u64),
        flags: U32::new(flags),
        params: u8::from(!params.is_null()),
        error_index: u8::from(!error_index.is_null()),
        index: U64::new(index as u64),
    };
    let (rep, _) = s.request(&r, &blob)?;
    if !error_index.is_null() && rep.error_index.get() != index as u64 {
        let i = usize::try_from(rep.error_index.get()).unwrap_or(usize::MAX);
        // SAFETY: checked non-NULL; writable by the contract.
        unsafe { error_index.write_unaligned(i) };
    }
    check(rep.status.get())
}
