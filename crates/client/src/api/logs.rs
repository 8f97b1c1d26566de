//! Driver logs (`cuLogsDumpToMemory`, `cuLogsDumpToFile`): the log is the
//! worker driver's, since that driver runs the calls; `cuLogsCurrent` is a
//! generated call. A dump to a file is written where the application runs.

use std::ffi::{c_char, c_uint, CStr};

use vgpu_abi::types::CUlogIterator;
use vgpu_proto::logs_dump;
use zerocopy::little_endian::{U32, U64};

use crate::edge::{check, write_out, CuError, CuResult};
use crate::runtime::runtime;

/// The driver's log buffer holds at most this many bytes.
const MAX_LOG: usize = 25600;

/// Dumps from `*iterator` (all when NULL) into at most `cap` bytes with a
/// NUL, advancing the iterator; the bytes and the driver's status.
///
/// # Safety
/// `iterator` must be NULL or valid for a read and a write.
unsafe fn dump(
    iterator: *mut CUlogIterator,
    cap: usize,
    flags: c_uint,
) -> CuResult<(Vec<u8>, u32)> {
    let s = runtime().session()?;
    // SAFETY: the application's optional iterator.
    let from = unsafe { iterator.as_ref() }.copied();
    let r = logs_dump::Request {
        has_iterator: u8::from(from.is_some()),
        iterator: U32::new(from.unwrap_or(0)),
        size: U64::new(cap.min(MAX_LOG + 1) as u64),
        flags: U32::new(flags),
    };
    let (rep, bytes) = s.request(&r, &[])?;
    if from.is_some() {
        // SAFETY: non-NULL, the application's iterator.
        unsafe { write_out(iterator, rep.iterator.get())? };
    }
    if bytes.len() as u64 != rep.size.get() || (cap > 0 && bytes.len() >= cap) {
        return Err(CuError::UNKNOWN);
    }
    Ok((bytes, rep.status.get()))
}

/// `cuLogsDumpToMemory`.
///
/// # Safety
/// `iterator` NULL or valid; `buffer` NULL or valid for `*size` bytes;
/// `size` NULL or valid for a read and a write.
pub unsafe fn dump_to_memory(
    iterator: *mut CUlogIterator,
    buffer: *mut c_char,
    size: *mut usize,
    flags: c_uint,
) -> CuResult<()> {
    runtime().session()?;
    if buffer.is_null() || size.is_null() {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: checked non-NULL; the application's size.
    let cap = unsafe { size.read_unaligned() };
    // SAFETY: forwarded from this function's contract.
    let (bytes, status) = unsafe { dump(iterator, cap, flags)? };
    if cap > 0 && status == 0 {
        // SAFETY: `buffer` holds `cap > bytes.len()` bytes (checked in `dump`).
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), buffer.cast::<u8>(), bytes.len());
            buffer.add(bytes.len()).write(0);
        }
    }
    // SAFETY: checked non-NULL.
    unsafe { write_out(size, bytes.len())? };
    check(status)
}

/// `cuLogsDumpToFile`: the worker's log lines, written into the file at
/// `path` where the application runs.
///
/// # Safety
/// `iterator` NULL or valid; `path` NULL or NUL-terminated.
pub unsafe fn dump_to_file(
    iterator: *mut CUlogIterator,
    path: *const c_char,
    flags: c_uint,
) -> CuResult<()> {
    runtime().session()?;
    if path.is_null() {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: checked non-NULL; the application's NUL-terminated path.
    let path = unsafe { CStr::from_ptr(path) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: forwarded from this function's contract.
    let (bytes, status) = unsafe { dump(iterator, MAX_LOG + 1, flags)? };
    check(status)?;
    std::fs::write(&path, bytes).map_err(|e| {
        crate::log::line(format_args!("cannot write the driver log to {path}: {e}"));
        CuError::INVALID_VALUE
    })
}
