//! CUDA arrays: destruction and the copies with an array on one side. The
//! worker knows which arrays the session holds and bounds every copy by the
//! array's extent; host sides travel packed, one row after another.

use std::ffi::{c_uint, c_void};

use vgpu_abi::types::{
    CUDA_ARRAY_DESCRIPTOR_v1, CUarray, CUdeviceptr, CUmipmappedArray, CUDA_MEMCPY3D,
};
use vgpu_proto::{array_destroy, memcpy_array, memcpy_atoh, memcpy_htoa, mipmapped_array_destroy};
use zerocopy::little_endian::U64;

use super::copy::CHUNK;
use crate::edge::{non_null, wire, CuError, CuResult};
use crate::runtime::runtime;

const MEMORY_TYPE_HOST: u32 = 1;
const MEMORY_TYPE_DEVICE: u32 = 2;
const MEMORY_TYPE_ARRAY: u32 = 3;
const MEMORY_TYPE_UNIFIED: u32 = 4;

/// An array's id on the wire.
fn id(a: CUarray) -> u64 {
    a as usize as u64
}

/// (stream id, async flag) for a copy on `sid` (None: the synchronous form).
fn on(sid: Option<u64>) -> (u64, u8) {
    sid.map_or((0, 0), |id| (id, 1))
}

/// `cuArrayDestroy`.
pub fn destroy(a: CUarray) -> CuResult<()> {
    let s = runtime().session()?;
    let r = array_destroy::Request {
        array: U64::new(id(a)),
    };
    s.request(&r, &[]).map(drop)
}

/// `cuMipmappedArrayDestroy`.
pub fn destroy_mipmapped(m: CUmipmappedArray) -> CuResult<()> {
    let s = runtime().session()?;
    let r = mipmapped_array_destroy::Request {
        mipmap: U64::new(m as usize as u64),
    };
    s.request(&r, &[]).map(drop)
}

/// `cuMemcpyHtoA` (`sid` None) and `cuMemcpyHtoAAsync` (`sid` Some): `n`
/// bytes at byte `offset` of the array, in pieces of at most [`CHUNK`].
///
/// # Safety
/// `src` must be NULL or hold `n` readable bytes.
pub unsafe fn htoa(
    a: CUarray,
    offset: usize,
    src: *const c_void,
    n: usize,
    sid: Option<u64>,
) -> CuResult<()> {
    let s = runtime().session()?;
    if n == 0 {
        return Ok(());
    }
    non_null(src)?;
    // SAFETY: the application promises `src` holds `n` readable bytes.
    let bytes = unsafe { std::slice::from_raw_parts(src.cast::<u8>(), n) };
    let (stream, is_async) = on(sid);
    for (i, piece) in bytes.chunks(CHUNK).enumerate() {
        let at = offset
            .checked_add(i * CHUNK)
            .ok_or(CuError::INVALID_VALUE)?;
        let r = memcpy_htoa::Request {
            array: U64::new(id(a)),
            offset: U64::new(at as u64),
            stream: U64::new(stream),
            is_async,
        };
        s.request(&r, piece)?;
    }
    Ok(())
}

/// The first forms `cuMemcpyHtoA`, `cuMemcpyAtoH` and their asynchronous
/// forms are calls of API version 3010, which the driver takes only in a
/// context of that version (it answers others CUDA_ERROR_INVALID_CONTEXT).
/// The driver's own `cuArrayGetDescriptor`, a first form too, makes that
/// check and the array's; the copy then travels as its `_v2` form.
fn first_form(a: CUarray) -> CuResult<()> {
    let mut d = std::mem::MaybeUninit::<CUDA_ARRAY_DESCRIPTOR_v1>::uninit();
    // SAFETY: a local descriptor, written by the call.
    unsafe { crate::generated::array_get_descriptor(d.as_mut_ptr(), a) }
}

/// `cuMemcpyHtoA` and `cuMemcpyHtoAAsync`: 32-bit offset and size.
///
/// # Safety
/// As for [`htoa`].
pub unsafe fn htoa_first_form(
    a: CUarray,
    offset: c_uint,
    src: *const c_void,
    n: c_uint,
    sid: Option<u64>,
) -> CuResult<()> {
    first_form(a)?;
    // SAFETY: forwarded from this function's contract.
    unsafe { htoa(a, offset as usize, src, n as usize, sid) }
}

/// `cuMemcpyAtoH` and `cuMemcpyAtoHAsync`: 32-bit offset and size.
///
/// # Safety
/// As for [`atoh`].
pub unsafe fn atoh_first_form(
    dst: *mut c_void,
    a: CUarray,
    offset: c_uint,
    n: c_uint,
    sid: Option<u64>,
) -> CuResult<()> {
    first_form(a)?;
    // SAFETY: forwarded from this function's contract.
    unsafe { atoh(dst, a, offset as usize, n as usize, sid) }
}

/// `cuMemcpyAtoH` (`sid` None) and `cuMemcpyAtoHAsync` (`sid` Some).
///
/// # Safety
/// `dst` must be NULL or hold `n` writable bytes.
pub unsafe fn atoh(
    dst: *mut c_void,
    a: CUarray,
    offset: usize,
    n: usize,
    sid: Option<u64>,
) -> CuResult<()> {
    let s = runtime().session()?;
    if n == 0 {
        return Ok(());
    }
    non_null(dst)?;
    // SAFETY: the application promises `dst` holds `n` writable bytes, and
    // owns them for the duration of this call.
    let out = unsafe { std::slice::from_raw_parts_mut(dst.cast::<u8>(), n) };
    let (stream, is_async) = on(sid);
    for (i, piece) in out.chunks_mut(CHUNK).enumerate() {
        let at = offset
            .checked_add(i * CHUNK)
            .ok_or(CuError::INVALID_VALUE)?;
        let r = memcpy_atoh::Request {
            array: U64::new(id(a)),
            offset: U64::new(at as u64),
            bytes: U64::new(piece.len() as u64),
            stream: U64::new(stream),
            is_async,
        };
        let (_, back) = s.request(&r, &[])?;
        if back.len() != piece.len() {
            return Err(CuError::UNKNOWN);
        }
        piece.copy_from_slice(&back);
    }
    Ok(())
}

/// One side of a copy with an array.
#[derive(Clone, Copy)]
enum End {
    Host(*mut u8),
    Device(CUdeviceptr),
    Array(u64),
}

/// One side of the descriptor, resolved.
#[derive(Clone, Copy)]
struct Side {
    end: End,
    x: usize,
    y: usize,
    z: usize,
    pitch: usize,
    height: usize,
}

impl Side {
    /// The side's `CUmemorytype`, as the wire's byte.
    fn wire_kind(&self) -> u8 {
        match self.end {
            End::Host(_) => 1,
            End::Device(_) => 2,
            End::Array(_) => 3,
        }
    }

    /// Byte offset of row `row` of slice `slice` of a host side.
    fn host_offset(&self, slice: usize, row: usize) -> CuResult<usize> {
        self.z
            .checked_add(slice)
            .and_then(|z| z.checked_mul(self.height))
            .and_then(|l| l.checked_add(self.y)?.checked_add(row))
            .and_then(|l| l.checked_mul(self.pitch)?.checked_add(self.x))
            .ok_or(CuError::INVALID_VALUE)
    }
}

#[allow(clippy::too_many_arguments)]
fn resolve(
    kind: u32,
    host: *const c_void,
    device: CUdeviceptr,
    array: CUarray,
    (x, y, z): (usize, usize, usize),
    pitch: usize,
    height: usize,
) -> CuResult<Side> {
    let end = match kind {
        MEMORY_TYPE_HOST => End::Host(host.cast_mut().cast()),
        MEMORY_TYPE_DEVICE => End::Device(device),
        MEMORY_TYPE_ARRAY => End::Array(id(array)),
        // Unified: device memory if the session handed it out.
        MEMORY_TYPE_UNIFIED => {
            if runtime().session()?.objects().is_device(device) {
                End::Device(device)
            } else {
                End::Host(wire::handle::<u8>(device))
            }
        }
        _ => return Err(CuError::INVALID_VALUE),
    };
    Ok(Side {
        end,
        x,
        y,
        z,
        pitch,
        height,
    })
}

/// A `cuMemcpy2D`/`cuMemcpy3D` with an array on at least one side. Without
/// a host side it is one request; with one, one request per band of whole
/// rows of a slice, at most [`CHUNK`] bytes each.
///
/// # Safety
/// The descriptor's host sides must hold the region.
pub unsafe fn copy(c: &CUDA_MEMCPY3D, sid: Option<u64>) -> CuResult<()> {
    let s = runtime().session()?;
    let src = resolve(
        c.srcMemoryType.0,
        c.srcHost,
        c.srcDevice,
        c.srcArray,
        (c.srcXInBytes, c.srcY, c.srcZ),
        c.srcPitch,
        c.srcHeight,
    )?;
    let dst = resolve(
        c.dstMemoryType.0,
        c.dstHost.cast_const(),
        c.dstDevice,
        c.dstArray,
        (c.dstXInBytes, c.dstY, c.dstZ),
        c.dstPitch,
        c.dstHeight,
    )?;
    let (w, h, d) = (c.WidthInBytes, c.Height, c.Depth);
    if w == 0 || h == 0 || d == 0 {
        return Ok(());
    }
    for side in [&src, &dst] {
        if let End::Host(p) = side.end {
            non_null(p)?;
            // Rows and slices must not overlap, as the driver requires.
            let rows_fit =
                (h == 1 && d == 1) || side.x.checked_add(w).is_some_and(|e| e <= side.pitch);
            let slices_fit = d == 1 || side.y.checked_add(h).is_some_and(|e| e <= side.height);
            if !rows_fit || !slices_fit {
                return Err(CuError::INVALID_VALUE);
            }
        }
    }
    if w > CHUNK {
        crate::log::line(format_args!("array copy: rows of {w} bytes exceed {CHUNK}"));
        return Err(CuError::INVALID_VALUE);
    }
    let (stream, is_async) = on(sid);
    let u = |v: usize| U64::new(v as u64);
    // The request for `rows` rows from `first` of `slices` slices from `z`.
    let request = |z: usize, first: usize, rows: usize, slices: usize| {
        let fields = |side: &Side| match side.end {
            End::Host(_) => (0, 0, [U64::new(0); 5]),
            End::Device(p) => (
                p,
                0,
                [
                    u(side.x),
                    u(side.y + first),
                    u(side.z + z),
                    u(side.pitch),
                    u(side.height),
                ],
            ),
            End::Array(a) => (
                0,
                a,
                [
                    u(side.x),
                    u(side.y + first),
                    u(side.z + z),
                    U64::new(0),
                    U64::new(0),
                ],
            ),
        };
        let (sp, sa, [sx, sy, sz, spitch, sheight]) = fields(&src);
        let (dp, da, [dx, dy, dz, dpitch, dheight]) = fields(&dst);
        memcpy_array::Request {
            src_kind: src.wire_kind(),
            src: U64::new(sp),
            src_array: U64::new(sa),
            src_x: sx,
            src_y: sy,
            src_z: sz,
            src_pitch: spitch,
            src_height: sheight,
            dst_kind: dst.wire_kind(),
            dst: U64::new(dp),
            dst_array: U64::new(da),
            dst_x: dx,
            dst_y: dy,
            dst_z: dz,
            dst_pitch: dpitch,
            dst_height: dheight,
            width: u(w),
            height: u(rows),
            depth: u(slices),
            stream: U64::new(stream),
            is_async,
        }
    };
    let (src_host, dst_host) = match (src.end, dst.end) {
        (End::Host(p), _) => (Some(p), None),
        (_, End::Host(p)) => (None, Some(p)),
        _ => (None, None),
    };
    if src_host.is_none() && dst_host.is_none() {
        return s.request(&request(0, 0, h, d), &[]).map(drop);
    }
    let band = (CHUNK / w).max(1);
    for z in 0..d {
        for first in (0..h).step_by(band) {
            let n = band.min(h - first);
            let r = request(z, first, n, 1);
            if let Some(p) = src_host {
                let mut rows = Vec::with_capacity(n * w);
                for row in first..first + n {
                    let at = src.host_offset(z, row)?;
                    // SAFETY: the application's host region holds every row.
                    rows.extend_from_slice(unsafe { std::slice::from_raw_parts(p.add(at), w) });
                }
                s.request(&r, &rows)?;
            } else if let Some(p) = dst_host {
                let (_, rows) = s.request(&r, &[])?;
                if rows.len() != n * w {
                    return Err(CuError::UNKNOWN);
                }
                for (i, row) in rows.chunks_exact(w).enumerate() {
                    let at = dst.host_offset(z, first + i)?;
                    // SAFETY: the application's host region holds every row.
                    unsafe { std::ptr::copy_nonoverlapping(row.as_ptr(), p.add(at), w) };
                }
            }
        }
    }
    Ok(())
}

/// Whether a copy descriptor names an array on either side.
pub fn touches_array(src: u32, dst: u32) -> bool {
    src == MEMORY_TYPE_ARRAY || dst == MEMORY_TYPE_ARRAY
}
