//! Stream-ordered allocation and 2D copies.

use std::ffi::c_void;
use std::ptr;

use vgpu_proto::{Request, MAX_BLOB};

use super::exec::{ok, size, Reply};
use super::status::INVALID_VALUE;
use super::tables::{as_handle, Range, RangeOwner};
use super::Session;
use crate::driver::{entry, DevPtr, Memcpy2D, Status};

/// `CU_MEMORYTYPE_HOST` and `CU_MEMORYTYPE_DEVICE`.
const MEMORY_TYPE_HOST: u32 = 1;
const MEMORY_TYPE_DEVICE: u32 = 2;

pub fn alloc_async(s: &Session, req: &Request) -> Result<Reply, Status> {
    let (bytes, stream) = (size(req.args[0])?, req.args[1]);
    let st = as_handle(s.tables().stream(stream)?);
    let mut p: DevPtr = 0;
    // SAFETY: live out-pointer; live stream of this session or a sentinel.
    ok(unsafe { entry(s.driver.mem_alloc_async)?(&mut p, bytes, st) })?;
    let owner = RangeOwner::Alloc { ctx: req.ctx };
    s.tables().ranges.insert(
        p,
        Range {
            size: bytes as u64,
            owner,
        },
    );
    Ok(Reply::outs(&[p]))
}

pub fn free_async(s: &Session, req: &Request) -> Result<Reply, Status> {
    let (p, stream) = (req.args[0], req.args[1]);
    let known = matches!(
        s.tables().ranges.get(&p),
        Some(Range {
            owner: RangeOwner::Alloc { .. },
            ..
        })
    );
    if !known {
        tracing::info!("cuMemFreeAsync({p:#x}): not the base of a live allocation");
        return Err(INVALID_VALUE);
    }
    let st = as_handle(s.tables().stream(stream)?);
    // SAFETY: `p` is the base of a live allocation of this session.
    ok(unsafe { entry(s.driver.mem_free_async)?(p, st) })?;
    s.tables().ranges.remove(&p);
    Ok(Reply::default())
}

/// The bytes a 2D region touches from its first to its last byte.
fn span(pitch: u64, x: u64, y: u64, width: u64, height: u64) -> Option<(u64, u64)> {
    if height == 0 || width == 0 {
        return Some((0, 0));
    }
    let first = y.checked_mul(pitch)?.checked_add(x)?;
    let last_row = (y + height - 1).checked_mul(pitch)?.checked_add(x)?;
    Some((first, last_row.checked_add(width)? - first))
}

/// `Memcpy2D`: see the op's documentation for the argument order.
pub fn memcpy_2d(
    s: &Session,
    req: &Request,
    checked: impl Fn(&[(DevPtr, u64)], u64) -> Result<*mut c_void, Status>,
) -> Result<Reply, Status> {
    let a = &req.args;
    let (direction, width, height) = (a[0], a[9], a[10]);
    let packed = width.checked_mul(height).ok_or(INVALID_VALUE)?;
    if (direction != 0 && packed > MAX_BLOB as u64) || (width > a[2] && direction != 1 && a[2] != 0)
    {
        return Err(INVALID_VALUE);
    }
    let mut ranges = Vec::new();
    if direction != 1 {
        let (off, len) = span(a[2], a[3], a[4], width, height).ok_or(INVALID_VALUE)?;
        ranges.push((a[1].checked_add(off).ok_or(INVALID_VALUE)?, len));
    }
    if direction != 2 {
        let (off, len) = span(a[6], a[7], a[8], width, height).ok_or(INVALID_VALUE)?;
        ranges.push((a[5].checked_add(off).ok_or(INVALID_VALUE)?, len));
    }
    let stream = checked(&ranges, a[11])?;
    let mut out = Vec::new();
    let mut copy = Memcpy2D {
        src_x_in_bytes: size(a[3])?,
        src_y: size(a[4])?,
        src_memory_type: MEMORY_TYPE_DEVICE,
        src_host: ptr::null(),
        src_device: a[1],
        src_array: ptr::null_mut(),
        src_pitch: size(a[2])?,
        dst_x_in_bytes: size(a[7])?,
        dst_y: size(a[8])?,
        dst_memory_type: MEMORY_TYPE_DEVICE,
        dst_host: ptr::null_mut(),
        dst_device: a[5],
        dst_array: ptr::null_mut(),
        dst_pitch: size(a[6])?,
        width_in_bytes: size(width)?,
        height: size(height)?,
    };
    match direction {
        0 => {}
        1 => {
            if req.blob.len() as u64 != packed {
                return Err(INVALID_VALUE);
            }
            copy.src_memory_type = MEMORY_TYPE_HOST;
            copy.src_host = req.blob.as_ptr().cast();
            (copy.src_x_in_bytes, copy.src_y, copy.src_pitch) = (0, 0, copy.width_in_bytes);
        }
        2 => {
            out.resize(size(packed)?, 0u8);
            copy.dst_memory_type = MEMORY_TYPE_HOST;
            copy.dst_host = out.as_mut_ptr().cast();
            (copy.dst_x_in_bytes, copy.dst_y, copy.dst_pitch) = (0, 0, copy.width_in_bytes);
        }
        _ => return Err(INVALID_VALUE),
    }
    // SAFETY: device ranges are checked live; host sides are this request's
    // blob or `out`, each of `width * height` bytes with pitch `width`. A
    // pageable host side makes the async form complete (D2H) or staged (H2D)
    // before it returns.
    ok(unsafe {
        if a[12] != 0 {
            entry(s.driver.memcpy_2d_async)?(&copy, stream)
        } else {
            entry(s.driver.memcpy_2d)?(&copy)
        }
    })?;
    Ok(Reply {
        blob: out,
        ..Reply::default()
    })
}

#[cfg(test)]
mod tests {
    use super::span;

    #[test]
    fn spans() {
        assert_eq!(span(64, 8, 2, 16, 4), Some((136, 3 * 64 + 16)));
        assert_eq!(span(64, 0, 0, 64, 1), Some((0, 64)));
        assert_eq!(span(u64::MAX, 0, 2, 1, 1), None);
    }
}
