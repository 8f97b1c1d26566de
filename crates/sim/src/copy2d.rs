//! `cuMemcpy2D`: a pitched copy of `Height` rows of `WidthInBytes` bytes.
//!
//! Every bound is checked before a byte moves: memory types, pitches (at least
//! `XInBytes + WidthInBytes` when there is more than one row, at most
//! `CU_DEVICE_ATTRIBUTE_MAX_PITCH`), arithmetic overflow, and for device sides the whole
//! span from the first to the last byte touched, which must lie inside one live allocation
//! or page-locked range. Host sides are the caller's responsibility, as with the driver.

use std::ptr;

use crate::cu::{CUresult, CUDA_MEMCPY2D};
use crate::error::{err, Res};
use crate::memory::{self, End};
use crate::state::State;

const MEMORY_TYPE_HOST: u32 = 1;
const MEMORY_TYPE_DEVICE: u32 = 2;
const MEMORY_TYPE_ARRAY: u32 = 3;
const MEMORY_TYPE_UNIFIED: u32 = 4;
/// `CU_DEVICE_ATTRIBUTE_MAX_PITCH`.
const MAX_PITCH: usize = i32::MAX as usize;

/// One side of a 2D copy as the descriptor gives it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Side {
    pub memory_type: u32,
    pub host: *mut u8,
    pub device: u64,
    pub x: usize,
    pub y: usize,
    pub pitch: usize,
}

impl Side {
    /// The source side of `c`.
    pub fn src(c: &CUDA_MEMCPY2D) -> Self {
        Self {
            memory_type: c.srcMemoryType.0,
            host: c.srcHost.cast_mut().cast(),
            device: c.srcDevice,
            x: c.srcXInBytes,
            y: c.srcY,
            pitch: c.srcPitch,
        }
    }

    /// The destination side of `c`.
    pub fn dst(c: &CUDA_MEMCPY2D) -> Self {
        Self {
            memory_type: c.dstMemoryType.0,
            host: c.dstHost.cast(),
            device: c.dstDevice,
            x: c.dstXInBytes,
            y: c.dstY,
            pitch: c.dstPitch,
        }
    }
}

fn bad<T>(why: String) -> Res<T> {
    err(CUresult::CUDA_ERROR_INVALID_VALUE, why)
}

/// The first byte of row 0 and of row `r`, relative to the side's base: `y * pitch + x`.
fn offset(s: &Side, row: usize) -> Option<usize> {
    s.y.checked_add(row)?.checked_mul(s.pitch)?.checked_add(s.x)
}

/// Checks one side and returns a pointer to its first byte (row 0, column `x`).
fn resolve(st: &State, s: &Side, width: usize, height: usize, what: &str) -> Res<*mut u8> {
    if height > 1 && s.x.checked_add(width).is_none_or(|end| end > s.pitch) {
        return bad(format!(
            "{what}: XInBytes {} + WidthInBytes {width} exceeds the pitch {}",
            s.x, s.pitch
        ));
    }
    if s.pitch > MAX_PITCH {
        return bad(format!("{what}: pitch {} exceeds {MAX_PITCH}", s.pitch));
    }
    let (Some(first), Some(last)) = (offset(s, 0), offset(s, height - 1)) else {
        return bad(format!("{what}: the region's offsets overflow"));
    };
    let Some(span) = last.checked_add(width).map(|end| end - first) else {
        return bad(format!("{what}: the region's offsets overflow"));
    };
    let end = match s.memory_type {
        MEMORY_TYPE_HOST => End::Host(s.host),
        MEMORY_TYPE_DEVICE => End::Device(s.device),
        MEMORY_TYPE_UNIFIED => End::unified(st, s.device),
        // The exports send copies with an array side to `crate::array::copy_3d`.
        MEMORY_TYPE_ARRAY => return bad(format!("{what}: an array side is not a pitched region")),
        t => return bad(format!("{what}: {t} is not a CUmemorytype")),
    };
    match end {
        End::Host(p) if p.is_null() => bad(format!("{what}: host pointer is NULL")),
        // SAFETY: the caller's host region holds every row by the copy's contract.
        End::Host(p) => Ok(unsafe { p.add(first) }),
        End::Device(d) => {
            let Some(start) = d.checked_add(first as u64) else {
                return bad(format!("{what}: device address overflows"));
            };
            memory::range(st, start, span)
        }
    }
}

/// Copies the region described by `c` after checking both sides.
///
/// # Safety
/// Host sides (and unified addresses outside device memory) must hold every row of the
/// region: `Height` rows of `WidthInBytes` bytes, `pitch` bytes apart, from `(x, y)`.
pub(crate) unsafe fn copy(st: &State, c: &CUDA_MEMCPY2D) -> Res<()> {
    let (src, dst) = (Side::src(c), Side::dst(c));
    let (width, height) = (c.WidthInBytes, c.Height);
    for (s, what) in [(&src, "source"), (&dst, "destination")] {
        if !matches!(s.memory_type, 1..=4) {
            return bad(format!("{what}: {} is not a CUmemorytype", s.memory_type));
        }
    }
    if width == 0 || height == 0 {
        return Ok(());
    }
    let d = resolve(st, &dst, width, height, "destination")?;
    let s = resolve(st, &src, width, height, "source")?;
    for row in 0..height {
        // Row offsets were checked not to overflow for the last row, so none does.
        let (so, do_) = (row * src.pitch, row * dst.pitch);
        // SAFETY: device sides were checked to hold every row inside one live range;
        // host sides hold every row by this function's contract. `ptr::copy` allows
        // overlap.
        unsafe { ptr::copy(s.add(so), d.add(do_), width) };
    }
    Ok(())
}

/// The bytes one side's region spans, for tests.
#[cfg(test)]
fn span(s: &Side, width: usize, height: usize) -> Option<usize> {
    Some(offset(s, height - 1)? + width - offset(s, 0)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(x: usize, y: usize, pitch: usize) -> Side {
        Side {
            memory_type: MEMORY_TYPE_DEVICE,
            host: ptr::null_mut(),
            device: 0,
            x,
            y,
            pitch,
        }
    }

    #[test]
    fn spans_and_overflow() {
        assert_eq!(span(&side(8, 2, 64), 16, 4), Some(3 * 64 + 16));
        assert_eq!(offset(&side(8, 2, 64), 0), Some(136));
        assert_eq!(offset(&side(0, usize::MAX, 2), 0), None);
        assert_eq!(offset(&side(0, 1, usize::MAX), 1), None);
    }
}
