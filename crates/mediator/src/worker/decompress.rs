//! `cuMemBatchDecompressAsync`: the operations arrive by value; every
//! source (`srcNumBytes`), destination (`dstNumBytes`) and `dstActBytes`
//! (4 bytes) range is checked against the session's allocations before the
//! driver sees the batch. The driver's status and error index travel in the
//! reply, so a failed batch still says which operation failed.
//!
//! An address outside the session's memory never reaches the driver. On a
//! device with a decompression engine its operation fails with
//! `CUDA_ERROR_INVALID_VALUE` and its index. On a device without one
//! (`CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK` 0: an H100 or H200)
//! the driver runs nothing, and the address goes to it as NULL instead, so
//! the application gets the driver's own answer to its batch.

use vgpu_abi::types::{CUdevice_attribute, CUmemDecompressParams};
use vgpu_proto::{mem_batch_decompress, Request};
use zerocopy::little_endian::{U32, U64};

use super::calls::{message, ok, Reply};
use super::exec::Lane;
use super::status::INVALID_VALUE;
use super::tables::as_handle;
use super::Session;
use crate::driver::{entry, Status};

/// Bytes of one operation.
const OP: usize = core::mem::size_of::<CUmemDecompressParams>();
/// The most operations in one batch through vgpu.
const MAX_OPS: usize = 4096;
/// Where an operation's addresses lie: `srcNumBytes` at 0, `dstNumBytes`
/// at 8, `dstActBytes` at 16, `src` at 24, `dst` at 32.
const FIELDS: [usize; 5] = [0, 8, 16, 24, 32];
/// `CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK`.
const ALGORITHM_MASK: CUdevice_attribute =
    CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK;

/// The reply of a batch that ends with `status` and error index `index`.
fn answer(status: u32, index: usize) -> Reply {
    Reply::new(
        &mem_batch_decompress::Reply {
            status: U32::new(status),
            error_index: U64::new(index as u64),
        },
        Vec::new(),
    )
}

/// Whether the current context's device has a decompression engine.
fn has_engine(s: &Session) -> Result<bool, Status> {
    let mut device = 0;
    // SAFETY: a live out-pointer; the worker made the call's context current.
    ok(unsafe { entry(s.driver.cuCtxGetDevice)?(&mut device) })?;
    let mut mask = 0;
    let get = entry(s.driver.cuDeviceGetAttribute)?;
    // SAFETY: a live out-pointer and a device the driver just named.
    ok(unsafe { get(&mut mask, ALGORITHM_MASK, device) })?;
    Ok(mask != 0)
}

/// `cuMemBatchDecompressAsync` of the request's operations on its stream.
pub fn mem_batch_decompress(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_batch_decompress::Request = message(req)?;
    let count = usize::try_from(r.count.get()).map_err(|_| INVALID_VALUE)?;
    let n = if r.params != 0 { count } else { 0 };
    if n > MAX_OPS || req.blob.len() != n * OP {
        return Err(INVALID_VALUE);
    }
    // The operations' bytes, and the (operation, field offset) of each
    // address outside the session's memory.
    let mut raw: Vec<[u8; OP]> = Vec::with_capacity(n);
    let mut refused = Vec::new();
    let stream = {
        let t = s.tables();
        for (i, bytes) in req.blob.chunks_exact(OP).enumerate() {
            let op = *bytes.first_chunk::<OP>().expect("chunks of OP bytes");
            let [src_len, dst_len, act, src, dst] =
                FIELDS.map(|at| u64::from_le_bytes(op[at..at + 8].try_into().expect("8 bytes")));
            for (at, p, len) in [(24, src, src_len), (32, dst, dst_len), (16, act, 4)] {
                if let Err(why) = t.check_range(p, len.max(1)) {
                    tracing::warn!("memory operation refused: decompression {i}: {why}");
                    refused.push((i, at));
                }
            }
            raw.push(op);
        }
        as_handle(t.stream(r.stream.get())?)
    };
    if let Some(&(i, _)) = refused.first() {
        if has_engine(s)? {
            return Ok(answer(INVALID_VALUE.0, i));
        }
        for (i, at) in refused {
            raw[i][at..at + 8].fill(0);
        }
    }
    // At least one element, so a non-NULL array is a real allocation even
    // for a count of 0.
    let mut ops: Vec<CUmemDecompressParams> = Vec::with_capacity(n.max(1));
    for op in &raw {
        // SAFETY: a C struct of integers, pointers (checked, or NULL) and
        // padding: valid for any bytes.
        ops.push(unsafe { op.as_ptr().cast::<CUmemDecompressParams>().read_unaligned() });
    }
    let mut index = usize::try_from(r.index.get()).unwrap_or(usize::MAX);
    let index_ptr = if r.error_index != 0 {
        &raw mut index
    } else {
        std::ptr::null_mut()
    };
    let params = if r.params != 0 {
        ops.as_mut_ptr()
    } else {
        std::ptr::null_mut()
    };
    let f = entry(s.driver.cuMemBatchDecompressAsync)?;
    // SAFETY: NULL where the application passed NULL, else `n` operations in
    // a live local whose every address was checked (or is NULL, on a device
    // that runs none); the index is NULL or a live local; the stream is this
    // session's own.
    let st = unsafe { f(params, count, r.flags.get(), index_ptr, stream.cast()) };
    Ok(answer(st.0, index))
}
