//! `cuMemBatchDecompressAsync` on the simulated device: a decompression
//! engine for `CU_MEM_DECOMPRESS_ALGORITHM_SNAPPY` (the raw Snappy block
//! format), so CI runs the whole path. The simulated device reports it in
//! `CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK`; an H100 or H200
//! reports no engine (mask 0) and driver 580 answers the call there with
//! `CUDA_ERROR_NOT_SUPPORTED`.
//!
//! A batch runs in stream order when it is enqueued, as all simulated work
//! does; on a capturing stream it is `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`
//! (the simulator records no decompression node). The whole batch is
//! checked before any byte moves: flags 0, at least one operation, a known
//! algorithm, the source inside one live allocation, the destination
//! (`dstNumBytes`, which bounds the output here) and the 4-byte
//! `dstActBytes` too. The simulated engine reads and writes any device
//! memory; the driver asks for memory whose
//! `CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE` is 1 (as the simulated
//! device reports for `cuMemAlloc` memory). Data that is not a valid Snappy
//! block, or that decompresses to more than `dstNumBytes`, fails its
//! operation with `CUDA_ERROR_INVALID_VALUE` at once (the simulator's
//! choice: a real engine would report it asynchronously). The error index
//! is the failing operation, or `usize::MAX` for the batch as a whole.

use crate::cu::{CUmemDecompressParams, CUresult};
use crate::error::Error;
use crate::memory;
use crate::state::State;

/// `CU_MEM_DECOMPRESS_ALGORITHM_SNAPPY`.
pub(crate) const SNAPPY: u32 = 2;
/// `CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH` of the simulated
/// engine: the most bytes one operation reads or writes.
pub(crate) const MAXIMUM_LENGTH: i32 = 4 << 20;

/// A failure and the index of the operation it belongs to (`usize::MAX`
/// for the batch).
pub(crate) type Failed = (Error, usize);

fn invalid<T>(index: usize, why: String) -> Result<T, Failed> {
    Err((
        Error {
            code: CUresult::CUDA_ERROR_INVALID_VALUE,
            why: why.into(),
        },
        index,
    ))
}

/// Runs the batch `ops` with `flags` on stream `stream_key`.
pub(crate) fn batch(
    st: &State,
    stream_key: usize,
    ops: &[CUmemDecompressParams],
    flags: u32,
) -> Result<(), Failed> {
    let whole = usize::MAX;
    if flags != 0 {
        return invalid(whole, format!("flags {flags:#x} must be 0"));
    }
    if ops.is_empty() {
        return invalid(whole, "a batch of no operations".into());
    }
    crate::stream::usable(st, stream_key).map_err(|e| (e, whole))?;
    if st.ext.graphs.captures.contains_key(&stream_key) {
        // The simulated engine has no graph node to record.
        return Err((
            Error {
                code: CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                why: "decompression is not captured by the simulated device".into(),
            },
            whole,
        ));
    }
    for (i, op) in ops.iter().enumerate() {
        check(st, i, op)?;
    }
    for (i, op) in ops.iter().enumerate() {
        run(st, i, op)?;
    }
    Ok(())
}

/// One operation's algorithm, lengths and ranges.
fn check(st: &State, i: usize, op: &CUmemDecompressParams) -> Result<(), Failed> {
    if op.algo.0 != SNAPPY {
        return invalid(
            i,
            format!(
                "algorithm {} is not the simulated engine's (Snappy)",
                op.algo.0
            ),
        );
    }
    let most = MAXIMUM_LENGTH as usize;
    if op.srcNumBytes > most || op.dstNumBytes > most {
        return invalid(i, format!("more than {most} bytes"));
    }
    let ranges = [
        (op.src as u64, op.srcNumBytes.max(1)),
        (op.dst as u64, op.dstNumBytes.max(1)),
        (op.dstActBytes as u64, 4),
    ];
    for (p, len) in ranges {
        memory::range(st, p, len).map_err(|e| (e, i))?;
    }
    Ok(())
}

/// Decompresses one checked operation.
fn run(st: &State, i: usize, op: &CUmemDecompressParams) -> Result<(), Failed> {
    let at = |p: u64, len: usize| memory::range(st, p, len).map_err(|e| (e, i));
    let src = at(op.src as u64, op.srcNumBytes.max(1))?;
    // SAFETY: `srcNumBytes` bytes inside a live allocation (checked above);
    // the state lock is held, so nothing frees it meanwhile.
    let input = unsafe { std::slice::from_raw_parts(src, op.srcNumBytes) }.to_vec();
    let out = snappy(&input, op.dstNumBytes).or_else(|why| invalid(i, why))?;
    let dst = at(op.dst as u64, out.len().max(1))?;
    // SAFETY: `out.len()` (at most `dstNumBytes`) bytes inside a live allocation.
    unsafe { std::ptr::copy_nonoverlapping(out.as_ptr(), dst, out.len()) };
    let act = at(op.dstActBytes as u64, 4)?;
    let n = u32::try_from(out.len()).unwrap_or(u32::MAX).to_le_bytes();
    // SAFETY: 4 bytes inside a live allocation.
    unsafe { std::ptr::copy_nonoverlapping(n.as_ptr(), act, 4) };
    Ok(())
}

/// A cursor over a compressed block.
struct Reader<'a> {
    input: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// The next `n` bytes.
    fn bytes(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).ok_or("a length overflows")?;
        let b = self
            .input
            .get(self.pos..end)
            .ok_or("the block ends inside an element")?;
        self.pos = end;
        Ok(b)
    }

    /// The next `n` (at most 8) bytes as a little-endian number.
    fn number(&mut self, n: usize) -> Result<usize, String> {
        let v = self
            .bytes(n)?
            .iter()
            .rev()
            .fold(0u64, |v, &x| (v << 8) | u64::from(x));
        usize::try_from(v).map_err(|_| "a number too large".into())
    }
}

/// Decodes a raw Snappy block (a varint length, then literals and copies)
/// of at most `limit` bytes.
pub(crate) fn snappy(input: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    let mut r = Reader { input, pos: 0 };
    let mut len = 0usize;
    for shift in (0..35).step_by(7) {
        let b = r.number(1)?;
        len |= (b & 0x7f) << shift;
        if b & 0x80 == 0 {
            break;
        }
        if shift == 28 {
            return Err("the length does not end".into());
        }
    }
    if len > limit {
        return Err(format!(
            "{len} bytes do not fit the {limit} of the destination"
        ));
    }
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        let tag = r.number(1)?;
        let (n, offset) = match tag & 3 {
            0 => {
                let short = tag >> 2;
                let n = if short < 60 {
                    short + 1
                } else {
                    r.number(short - 59)? + 1
                };
                out.extend_from_slice(r.bytes(n)?);
                (0, 0)
            }
            1 => (4 + ((tag >> 2) & 7), ((tag >> 5) << 8) | r.number(1)?),
            2 => (1 + (tag >> 2), r.number(2)?),
            _ => (1 + (tag >> 2), r.number(4)?),
        };
        if n > 0 && (offset == 0 || offset > out.len()) {
            return Err(format!(
                "a copy from {offset} bytes back, {} written",
                out.len()
            ));
        }
        for _ in 0..n {
            out.push(out[out.len() - offset]);
        }
        if out.len() > len {
            return Err(format!("more than the {len} bytes the block announces"));
        }
    }
    if r.pos != input.len() {
        return Err("bytes after the block's end".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::snappy;

    #[test]
    fn literals_and_overlapping_copies_decode() {
        // "abcd" then a copy of 12 bytes from 4 back (a 2-byte offset).
        let block = [16, 0x0c, b'a', b'b', b'c', b'd', 0x2e, 4, 0];
        assert_eq!(snappy(&block, 16).as_deref(), Ok(&b"abcdabcdabcdabcd"[..]));
        // A 1-byte offset copy: 4 + 1 bytes from 2 back.
        let block = [7, 0x04, b'x', b'y', 0x05, 2];
        assert_eq!(snappy(&block, 7).as_deref(), Ok(&b"xyxyxyx"[..]));
    }

    #[test]
    fn malformed_blocks_are_refused() {
        assert!(snappy(&[16, 0x0c, b'a'], 16).is_err(), "truncated literal");
        assert!(snappy(&[4, 0x0e, 1, 0], 4).is_err(), "copy before any byte");
        assert!(
            snappy(&[16, 0x0c, b'a', b'b', b'c', b'd', 0x2e, 4, 0], 8).is_err(),
            "too long"
        );
        assert!(snappy(&[1, 0x00, b'a', 0], 1).is_err(), "trailing bytes");
    }
}
