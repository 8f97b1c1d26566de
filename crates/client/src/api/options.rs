//! JIT and library options on the wire: scalar values travel as they are;
//! log buffers are filled from the worker's logs after the call.

use std::ffi::c_void;

use crate::edge::{wire, CuError, CuResult};

const JIT_WALL_TIME: u32 = 2;
const JIT_INFO_LOG_BUFFER: u32 = 3;
const JIT_INFO_LOG_BUFFER_SIZE: u32 = 4;
const JIT_ERROR_LOG_BUFFER: u32 = 5;
const JIT_ERROR_LOG_BUFFER_SIZE: u32 = 6;
const MAX_OPTIONS: usize = 64;

/// The application's option arrays as slices (empty when `n` is 0). The
/// values array may be NULL (the driver then reads every value as NULL), in
/// which case `None` comes back for it.
///
/// # Safety
/// When `n > 0`, `keys` must hold `n` entries, and `vals` too unless NULL.
pub unsafe fn slices<'a, K>(
    keys: *mut K,
    vals: *mut *mut c_void,
    n: usize,
) -> CuResult<(&'a [K], Option<&'a mut [*mut c_void]>)> {
    if n > MAX_OPTIONS || (n > 0 && keys.is_null()) {
        crate::log::line(format_args!("options refused: {n} options, keys {keys:p}"));
        return Err(CuError::INVALID_VALUE);
    }
    if n == 0 {
        return Ok((&[], None));
    }
    // SAFETY: the caller promises `n` entries in each non-NULL array.
    unsafe {
        let vals = (!vals.is_null()).then(|| std::slice::from_raw_parts_mut(vals, n));
        Ok((std::slice::from_raw_parts(keys, n), vals))
    }
}

/// Appends (option u32, flags u32, value u64) records; flags bit 0 says the
/// application passed no values array at all.
pub fn encode(blob: &mut Vec<u8>, keys: impl Iterator<Item = u32>, vals: Option<&[*mut c_void]>) {
    for (i, k) in keys.enumerate() {
        let v = vals.map_or(0, |v| v[i] as u64);
        blob.extend_from_slice(&k.to_le_bytes());
        blob.extend_from_slice(&u32::from(vals.is_none()).to_le_bytes());
        blob.extend_from_slice(&v.to_le_bytes());
    }
}

/// Copies the worker's final JIT option values and logs into the caller's
/// options. `reply` is: n × u64 final values, info log NUL, error log NUL.
///
/// # Safety
/// Log buffer options must point at buffers of the sizes their size options give.
pub unsafe fn write_back(keys: &[u32], vals: Option<&mut [*mut c_void]>, reply: &[u8]) {
    let Some(vals) = vals else { return };
    let n = keys.len();
    if reply.len() < n * 8 {
        return;
    }
    let (finals, logs) = reply.split_at(n * 8);
    let mut logs = logs.split(|&b| b == 0);
    let (info, error) = (logs.next().unwrap_or(&[]), logs.next().unwrap_or(&[]));
    let size_of = |which: u32| {
        keys.iter()
            .position(|&k| k == which)
            .map_or(0, |j| vals[j] as usize)
    };
    let (info_cap, error_cap) = (
        size_of(JIT_INFO_LOG_BUFFER_SIZE),
        size_of(JIT_ERROR_LOG_BUFFER_SIZE),
    );
    for (i, &k) in keys.iter().enumerate() {
        let final_value = u64::from_le_bytes(finals[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        match k {
            JIT_WALL_TIME | JIT_INFO_LOG_BUFFER_SIZE | JIT_ERROR_LOG_BUFFER_SIZE => {
                vals[i] = wire::handle(final_value);
            }
            JIT_INFO_LOG_BUFFER | JIT_ERROR_LOG_BUFFER => {
                let (text, cap) = if k == JIT_INFO_LOG_BUFFER {
                    (info, info_cap)
                } else {
                    (error, error_cap)
                };
                let buf = vals[i].cast::<u8>();
                if buf.is_null() || cap == 0 {
                    continue;
                }
                let len = text.len().min(cap - 1);
                // SAFETY: the caller's buffer holds `cap` bytes, and `len < cap`.
                unsafe {
                    std::ptr::copy_nonoverlapping(text.as_ptr(), buf, len);
                    buf.add(len).write(0);
                }
            }
            _ => {}
        }
    }
}
