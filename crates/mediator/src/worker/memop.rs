//! Stream memory operations written by hand: `cuStreamBatchMemOp`. Each
//! wait's and write's address is checked against the session's allocations
//! (shared pinned memory included) before the driver sees the batch.

use vgpu_abi::types::CUstreamBatchMemOpParams;
use vgpu_proto::{stream_batch_mem_op, Request};

use super::calls::{message, ok, Reply};
use super::exec::{checked, Lane};
use super::status::INVALID_VALUE;
use super::Session;
use crate::driver::{entry, Status};

/// Bytes of one operation.
const OP: usize = core::mem::size_of::<CUstreamBatchMemOpParams>();
/// The most operations in one batch (the driver's own limit is lower).
const MAX_OPS: usize = 4096;

/// `CUstreamBatchMemOpType`s with an address, and the bytes they touch.
fn touched(operation: u32) -> Option<u64> {
    match operation {
        // CU_STREAM_MEM_OP_WAIT_VALUE_32, CU_STREAM_MEM_OP_WRITE_VALUE_32.
        1 | 2 => Some(4),
        // CU_STREAM_MEM_OP_WAIT_VALUE_64, CU_STREAM_MEM_OP_WRITE_VALUE_64.
        4 | 5 => Some(8),
        _ => None,
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut v = [0u8; 4];
    v.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(v)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(v)
}

/// `cuStreamBatchMemOp_v2` of the request's operations (every form of the
/// call has this layout and meaning on driver 580).
pub fn stream_batch_mem_op(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &stream_batch_mem_op::Request = message(req)?;
    let (mut ops, ranges) = operations(&req.blob, r.count.get())?;
    let stream = checked(s, &ranges, r.stream.get())?;
    let count = r.count.get();
    let p = if ops.is_empty() {
        std::ptr::null_mut()
    } else {
        ops.as_mut_ptr()
    };
    // SAFETY: `count` operations in a live local, their addresses checked;
    // the stream is this session's own.
    ok(unsafe { entry(s.driver.cuStreamBatchMemOp_v2)?(stream.cast(), count, p, r.flags.get()) })?;
    Ok(Reply::default())
}

/// Operations for the driver, and the device ranges (address, bytes) their
/// waits and writes touch.
pub(super) type Checked = (Vec<CUstreamBatchMemOpParams>, Vec<(u64, u64)>);

/// The `count` operations of `blob` (48 bytes each) and the device ranges
/// their waits and writes touch, for the caller to check.
pub(super) fn operations(blob: &[u8], count: u32) -> Result<Checked, Status> {
    let n = count as usize;
    if n > MAX_OPS || blob.len() != n * OP {
        return Err(INVALID_VALUE);
    }
    let mut ranges = Vec::new();
    let mut ops = Vec::with_capacity(n);
    for raw in blob.chunks_exact(OP) {
        // Wait and write operations: the address at byte 8; the alias at
        // byte 32 is the driver's own and starts at zero.
        let mut bytes = [0u8; OP];
        bytes.copy_from_slice(raw);
        if let Some(len) = touched(u32_at(raw, 0)) {
            ranges.push((u64_at(raw, 8), len));
            bytes[32..40].fill(0);
        }
        // SAFETY: the union is plain data, valid for any bytes.
        ops.push(unsafe { core::mem::transmute::<[u8; OP], CUstreamBatchMemOpParams>(bytes) });
    }
    Ok((ops, ranges))
}
