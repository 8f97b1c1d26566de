//! 2D copies. (3D copies are split into 2D
//! ones by the client.)

use vgpu_abi::types::{CUmemorytype, CUDA_MEMCPY2D};
use vgpu_proto::{memcpy2d, Request, MAX_BLOB};

use super::calls::{message, ok, size, Reply};
use super::exec::{checked, Lane};
use super::status::INVALID_VALUE;

use super::Session;
use crate::driver::{entry, Status};
use crate::sessions::Direction;

/// The bytes a 2D region touches from its first to its last byte.
fn span(pitch: u64, x: u64, y: u64, width: u64, height: u64) -> Option<(u64, u64)> {
    if height == 0 || width == 0 {
        return Some((0, 0));
    }
    let first = y.checked_mul(pitch)?.checked_add(x)?;
    let last_row = (y + height - 1).checked_mul(pitch)?.checked_add(x)?;
    Some((first, last_row.checked_add(width)? - first))
}

/// A 2D copy: see the op's documentation.
pub fn memcpy2d(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &memcpy2d::Request = message(req)?;
    let (direction, width, height) = (r.direction, r.width.get(), r.height.get());
    let (src, src_pitch, src_x, src_y) =
        (r.src.get(), r.src_pitch.get(), r.src_x.get(), r.src_y.get());
    let (dst, dst_pitch, dst_x, dst_y) =
        (r.dst.get(), r.dst_pitch.get(), r.dst_x.get(), r.dst_y.get());
    let packed = width.checked_mul(height).ok_or(INVALID_VALUE)?;
    if (direction != 0 && packed > MAX_BLOB as u64)
        || (width > src_pitch && direction != 1 && src_pitch != 0)
    {
        return Err(INVALID_VALUE);
    }
    let mut ranges = Vec::new();
    if direction != 1 {
        let (off, len) = span(src_pitch, src_x, src_y, width, height).ok_or(INVALID_VALUE)?;
        ranges.push((src.checked_add(off).ok_or(INVALID_VALUE)?, len));
    }
    if direction != 2 {
        let (off, len) = span(dst_pitch, dst_x, dst_y, width, height).ok_or(INVALID_VALUE)?;
        ranges.push((dst.checked_add(off).ok_or(INVALID_VALUE)?, len));
    }
    let stream = checked(s, &ranges, r.stream.get())?;
    let mut out = Vec::new();
    // SAFETY: all-zero bytes are a valid `CUDA_MEMCPY2D` (integers and NULL pointers).
    let mut copy: CUDA_MEMCPY2D = unsafe { std::mem::zeroed() };
    copy.srcXInBytes = size(src_x)?;
    copy.srcY = size(src_y)?;
    copy.srcMemoryType = CUmemorytype::CU_MEMORYTYPE_DEVICE;
    copy.srcDevice = src;
    copy.srcPitch = size(src_pitch)?;
    copy.dstXInBytes = size(dst_x)?;
    copy.dstY = size(dst_y)?;
    copy.dstMemoryType = CUmemorytype::CU_MEMORYTYPE_DEVICE;
    copy.dstDevice = dst;
    copy.dstPitch = size(dst_pitch)?;
    copy.WidthInBytes = size(width)?;
    copy.Height = size(height)?;
    match direction {
        0 => {}
        1 => {
            if req.blob.len() as u64 != packed {
                return Err(INVALID_VALUE);
            }
            copy.srcMemoryType = CUmemorytype::CU_MEMORYTYPE_HOST;
            copy.srcHost = req.blob.as_ptr().cast();
            (copy.srcXInBytes, copy.srcY, copy.srcPitch) = (0, 0, copy.WidthInBytes);
        }
        2 => {
            out.resize(size(packed)?, 0u8);
            copy.dstMemoryType = CUmemorytype::CU_MEMORYTYPE_HOST;
            copy.dstHost = out.as_mut_ptr().cast();
            (copy.dstXInBytes, copy.dstY, copy.dstPitch) = (0, 0, copy.WidthInBytes);
        }
        _ => return Err(INVALID_VALUE),
    }
    // SAFETY: device ranges are checked live; host sides are this request's
    // blob or `out`, each of `width * height` bytes with pitch `width`. A
    // pageable host side makes the async form complete (D2H) or staged (H2D)
    // before it returns.
    ok(unsafe {
        if r.is_async != 0 {
            entry(s.driver.cuMemcpy2DAsync_v2)?(&copy, stream.cast())
        } else {
            entry(s.driver.cuMemcpy2D_v2)?(&copy)
        }
    })?;
    let counted = match direction {
        1 => Direction::HtoD,
        2 => Direction::DtoH,
        _ => Direction::DtoD,
    };
    crate::sessions::count_copy(counted, packed);
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
