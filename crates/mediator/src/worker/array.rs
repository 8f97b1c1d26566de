//! CUDA arrays: destruction (the id leaves the tables) and the copies with an
//! array on one side. The worker asks the driver for an array's descriptor
//! before a copy touches it and refuses a region outside the array's extent
//! with `CUDA_ERROR_INVALID_VALUE`, as the driver does; host sides are this
//! request's blob or the reply's buffer, sized from the copy's own extent.

use std::ffi::c_void;

use vgpu_abi::array::{element_bytes, Extent};
use vgpu_abi::types::{CUarray, CUmemorytype, CUDA_ARRAY3D_DESCRIPTOR, CUDA_MEMCPY3D};
use vgpu_abi::HandleKind;
use vgpu_proto::{
    array_destroy, memcpy_array, memcpy_atoh, memcpy_htoa, mipmapped_array_destroy, Request,
    MAX_BLOB,
};

use super::calls::{as_ptr, message, ok, size, Reply};
use super::exec::{checked, Lane};
use super::status::INVALID_VALUE;
use super::tables::Raw;
use super::Session;
use crate::driver::{entry, Status};

const MEMORY_TYPE_HOST: u8 = 1;
const MEMORY_TYPE_DEVICE: u8 = 2;
const MEMORY_TYPE_ARRAY: u8 = 3;

/// The real handle behind an array id (0 stays NULL, for the driver to judge).
pub(super) fn real(s: &Session, id: u64) -> Result<Raw, Status> {
    s.tables().handle(HandleKind::Array, id)
}

/// The extent of live array `array` as the driver describes it; `None` for
/// NULL or a format whose element size the worker does not know (the driver
/// bounds those copies itself).
pub(super) fn extent(s: &Session, array: Raw) -> Result<Option<Extent>, Status> {
    if array == 0 {
        return Ok(None);
    }
    // SAFETY: all-zero bytes are a valid descriptor (integers).
    let mut d: CUDA_ARRAY3D_DESCRIPTOR = unsafe { std::mem::zeroed() };
    // SAFETY: `array` is a live array of this session; `d` is a local.
    ok(unsafe { entry(s.driver.cuArray3DGetDescriptor_v2)?(&mut d, as_ptr(array)) })?;
    let Some(element) = element_bytes(d.Format.0, d.NumChannels) else {
        return Ok(None);
    };
    let dim = |v: usize| v as u64;
    Ok(Extent::new(
        element,
        dim(d.Width),
        dim(d.Height),
        dim(d.Depth),
    ))
}

/// Refuses a run of `bytes` bytes at byte `offset` outside the array.
fn check_run(s: &Session, array: Raw, offset: u64, bytes: u64) -> Result<(), Status> {
    match extent(s, array)? {
        Some(e) if !e.holds_run(offset, bytes) => {
            tracing::info!("{bytes} bytes at offset {offset} run past the array ({e:?})");
            Err(INVALID_VALUE)
        }
        _ => Ok(()),
    }
}

/// `cuArrayDestroy`: the id leaves the tables once the driver has destroyed it.
pub fn array_destroy(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &array_destroy::Request = message(req)?;
    let id = r.array.get();
    let array = real(s, id)?;
    // SAFETY: `array` is NULL (the driver refuses it) or a live array of this session.
    ok(unsafe { entry(s.driver.cuArrayDestroy)?(as_ptr(array)) })?;
    s.tables().forget_other(HandleKind::Array, id);
    Ok(Reply::default())
}

/// The most levels a mipmapped array can have (a 2^31 extent).
const MAX_LEVELS: u32 = 32;

/// `cuMipmappedArrayDestroy`: the ids of its levels (minted when the
/// session asked for them) leave the tables with its own.
pub fn mipmapped_array_destroy(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mipmapped_array_destroy::Request = message(req)?;
    let id = r.mipmap.get();
    let mipmap = s.tables().handle(HandleKind::MipmappedArray, id)?;
    let mut levels = Vec::new();
    if mipmap != 0 {
        let get_level = entry(s.driver.cuMipmappedArrayGetLevel)?;
        for level in 0..MAX_LEVELS {
            let mut a: CUarray = std::ptr::null_mut();
            // SAFETY: a live mipmapped array of this session; `a` is a local.
            if ok(unsafe { get_level(&mut a, as_ptr(mipmap), level) }).is_err() {
                break;
            }
            levels.push(a as Raw);
        }
    }
    // SAFETY: NULL (the driver refuses it) or a live mipmapped array of this session.
    ok(unsafe { entry(s.driver.cuMipmappedArrayDestroy)?(as_ptr(mipmap)) })?;
    let mut t = s.tables();
    t.forget_other(HandleKind::MipmappedArray, id);
    for real in levels {
        t.forget_real(HandleKind::Array, real);
    }
    Ok(Reply::default())
}

/// One side of an array copy, as the request gives it.
pub(super) struct Side {
    pub kind: u8,
    pub device: u64,
    pub array: u64,
    pub x: u64,
    pub y: u64,
    pub z: u64,
    pub pitch: u64,
    pub height: u64,
}

/// The device bytes a pitched box touches, from its first byte to its last.
pub(super) fn span(s: &Side, width: u64, height: u64, depth: u64) -> Option<(u64, u64)> {
    let row = |r: u64| -> Option<u64> {
        let line =
            s.z.checked_mul(s.height)?
                .checked_add(s.y)?
                .checked_add(r)?;
        line.checked_mul(s.pitch)?.checked_add(s.x)
    };
    let first = row(0)?;
    let last_line = depth
        .checked_sub(1)?
        .checked_mul(s.height)?
        .checked_add(height.checked_sub(1)?)?;
    let end = row(last_line)?.checked_add(width)?;
    Some((s.device.checked_add(first)?, end - first))
}

/// A copy with a CUDA array on at least one side: see the op's documentation.
pub fn memcpy_array(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &memcpy_array::Request = message(req)?;
    let src = Side {
        kind: r.src_kind,
        device: r.src.get(),
        array: r.src_array.get(),
        x: r.src_x.get(),
        y: r.src_y.get(),
        z: r.src_z.get(),
        pitch: r.src_pitch.get(),
        height: r.src_height.get(),
    };
    let dst = Side {
        kind: r.dst_kind,
        device: r.dst.get(),
        array: r.dst_array.get(),
        x: r.dst_x.get(),
        y: r.dst_y.get(),
        z: r.dst_z.get(),
        pitch: r.dst_pitch.get(),
        height: r.dst_height.get(),
    };
    let (width, height, depth) = (r.width.get(), r.height.get(), r.depth.get());
    let packed = width
        .checked_mul(height)
        .and_then(|v| v.checked_mul(depth))
        .ok_or(INVALID_VALUE)?;
    if packed == 0 {
        return Ok(Reply::default());
    }
    let host = [&src, &dst].iter().any(|d| d.kind == MEMORY_TYPE_HOST);
    if host && packed > MAX_BLOB as u64 {
        return Err(INVALID_VALUE);
    }
    let mut ranges = Vec::new();
    let mut arrays = [0 as Raw; 2];
    for (i, side) in [&src, &dst].into_iter().enumerate() {
        match side.kind {
            MEMORY_TYPE_DEVICE => {
                ranges.push(span(side, width, height, depth).ok_or(INVALID_VALUE)?)
            }
            MEMORY_TYPE_ARRAY => {
                arrays[i] = real(s, side.array)?;
                if let Some(e) = extent(s, arrays[i])? {
                    if !e.holds(side.x, side.y, side.z, width, height, depth) {
                        tracing::info!(
                            "array copy refused: {width}x{height}x{depth} at ({}, {}, {}) \
                             is outside the array ({e:?})",
                            side.x,
                            side.y,
                            side.z
                        );
                        return Err(INVALID_VALUE);
                    }
                }
            }
            MEMORY_TYPE_HOST => {}
            _ => return Err(INVALID_VALUE),
        }
    }
    let stream = checked(s, &ranges, r.stream.get())?;
    // SAFETY: all-zero bytes are a valid `CUDA_MEMCPY3D` (integers and NULL pointers).
    let mut c: CUDA_MEMCPY3D = unsafe { std::mem::zeroed() };
    c.WidthInBytes = size(width)?;
    c.Height = size(height)?;
    c.Depth = size(depth)?;
    let mut out = Vec::new();
    let kind = |k: u8| CUmemorytype(u32::from(k));
    // Source.
    c.srcMemoryType = kind(src.kind);
    match src.kind {
        MEMORY_TYPE_HOST => {
            if req.blob.len() as u64 != packed {
                return Err(INVALID_VALUE);
            }
            c.srcHost = req.blob.as_ptr().cast();
            (c.srcPitch, c.srcHeight) = (c.WidthInBytes, c.Height);
        }
        _ => {
            (c.srcXInBytes, c.srcY, c.srcZ) = (size(src.x)?, size(src.y)?, size(src.z)?);
            c.srcDevice = src.device;
            c.srcArray = as_ptr(arrays[0]);
            (c.srcPitch, c.srcHeight) = (size(src.pitch)?, size(src.height)?);
        }
    }
    // Destination.
    c.dstMemoryType = kind(dst.kind);
    match dst.kind {
        MEMORY_TYPE_HOST => {
            out.resize(size(packed)?, 0u8);
            c.dstHost = out.as_mut_ptr().cast();
            (c.dstPitch, c.dstHeight) = (c.WidthInBytes, c.Height);
        }
        _ => {
            (c.dstXInBytes, c.dstY, c.dstZ) = (size(dst.x)?, size(dst.y)?, size(dst.z)?);
            c.dstDevice = dst.device;
            c.dstArray = as_ptr(arrays[1]);
            (c.dstPitch, c.dstHeight) = (size(dst.pitch)?, size(dst.height)?);
        }
    }
    // SAFETY: device ranges are checked live, array boxes inside their
    // arrays; host sides are this request's blob or `out`, each of
    // `width * height * depth` packed bytes. A pageable host side makes the
    // async form complete (to host) or staged (from host) before it returns.
    ok(unsafe {
        if r.is_async != 0 {
            entry(s.driver.cuMemcpy3DAsync_v2)?(&c, stream.cast())
        } else {
            entry(s.driver.cuMemcpy3D_v2)?(&c)
        }
    })?;
    Ok(Reply {
        blob: out,
        ..Reply::default()
    })
}

/// Host to array at a byte offset; the bytes are the request's blob.
pub fn memcpy_htoa(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &memcpy_htoa::Request = message(req)?;
    let (array, offset, len) = (real(s, r.array.get())?, r.offset.get(), req.blob.len());
    check_run(s, array, offset, len as u64)?;
    let stream = checked(s, &[], r.stream.get())?;
    let dst: CUarray = as_ptr(array);
    let src = req.blob.as_ptr().cast::<c_void>();
    // SAFETY: the run lies inside the live array (checked) and the source is
    // the request's own buffer of `len` bytes.
    ok(unsafe {
        if r.is_async != 0 {
            entry(s.driver.cuMemcpyHtoAAsync_v2)?(dst, size(offset)?, src, len, stream.cast())
        } else {
            entry(s.driver.cuMemcpyHtoA_v2)?(dst, size(offset)?, src, len)
        }
    })?;
    Ok(Reply::default())
}

/// Array at a byte offset to host; the bytes come back as the reply's blob.
pub fn memcpy_atoh(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &memcpy_atoh::Request = message(req)?;
    let (array, offset, bytes) = (real(s, r.array.get())?, r.offset.get(), r.bytes.get());
    if bytes > MAX_BLOB as u64 {
        return Err(INVALID_VALUE);
    }
    check_run(s, array, offset, bytes)?;
    let stream = checked(s, &[], r.stream.get())?;
    let mut out = vec![0u8; size(bytes)?];
    let src: CUarray = as_ptr(array);
    let dst = out.as_mut_ptr().cast::<c_void>();
    // SAFETY: the run lies inside the live array (checked) and `out` holds
    // `bytes` bytes; the async form completes before it returns (pageable
    // destination).
    ok(unsafe {
        if r.is_async != 0 {
            entry(s.driver.cuMemcpyAtoHAsync_v2)?(dst, src, size(offset)?, out.len(), stream.cast())
        } else {
            entry(s.driver.cuMemcpyAtoH_v2)?(dst, src, size(offset)?, out.len())
        }
    })?;
    Ok(Reply {
        blob: out,
        ..Reply::default()
    })
}

#[cfg(test)]
mod tests {
    use super::{span, Side};

    fn side(x: u64, y: u64, z: u64, pitch: u64, height: u64) -> Side {
        Side {
            kind: super::MEMORY_TYPE_DEVICE,
            device: 0x1000,
            array: 0,
            x,
            y,
            z,
            pitch,
            height,
        }
    }

    #[test]
    fn spans() {
        // One row.
        assert_eq!(span(&side(8, 0, 0, 64, 1), 16, 1, 1), Some((0x1008, 16)));
        // Two slices of 4 rows of 64, a 2x2 box at (8, 1, 0).
        assert_eq!(
            span(&side(8, 1, 0, 64, 4), 16, 2, 2),
            Some((0x1000 + 64 + 8, (4 + 1) * 64 + 16))
        );
        assert_eq!(span(&side(0, 0, 0, u64::MAX, 4), 1, 2, 1), None);
    }
}
