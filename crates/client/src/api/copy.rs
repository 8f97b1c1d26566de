//! 2D copies. Host sides of a 2D copy travel packed, one row after another; the
//! worker copies between the packed rows and the device region. Copies with a
//! CUDA array on either side are [`super::array::copy`]'s.

use std::ffi::c_void;

use vgpu_abi::types::{CUdeviceptr, CUmemorytype, CUDA_MEMCPY2D};
use vgpu_proto::memcpy2d;
use zerocopy::little_endian::U64;

use crate::edge::{non_null, wire, CuError, CuResult};
use crate::runtime::runtime;

const MEMORY_TYPE_HOST: u32 = 1;
const MEMORY_TYPE_DEVICE: u32 = 2;
const MEMORY_TYPE_ARRAY: u32 = 3;
const MEMORY_TYPE_UNIFIED: u32 = 4;

/// Where one side of a copy lives.
enum Side {
    Host(*const u8),
    Device(CUdeviceptr),
}

fn side(kind: CUmemorytype, host: *const c_void, device: CUdeviceptr) -> CuResult<Side> {
    match kind.0 {
        MEMORY_TYPE_HOST => Ok(Side::Host(host.cast())),
        MEMORY_TYPE_DEVICE => Ok(Side::Device(device)),
        // Unified: the device pointer field holds the address; it is device
        // memory if the session handed it out.
        MEMORY_TYPE_UNIFIED => {
            let s = runtime().session()?;
            let is_device = s.objects().is_device(device);
            Ok(if is_device {
                Side::Device(device)
            } else {
                Side::Host(wire::handle::<u8>(device))
            })
        }
        // Copies with an array go through `array::copy` before sides are resolved.
        MEMORY_TYPE_ARRAY => Err(CuError::INVALID_VALUE),
        _ => Err(CuError::INVALID_VALUE),
    }
}

/// A 2D copy between device and host memory whose region is one run of
/// bytes on both sides.
enum Linear {
    ToDevice {
        dst: CUdeviceptr,
        src: *const u8,
        n: usize,
    },
    ToHost {
        dst: *mut u8,
        src: CUdeviceptr,
        n: usize,
    },
}

impl Linear {
    /// Runs it as the 1D asynchronous copy on stream `sid`.
    ///
    /// # Safety
    /// The host side must hold the `n` bytes.
    unsafe fn copy(self, sid: u64) -> CuResult<()> {
        let sync = super::memory::Sync::Stream(sid);
        match self {
            // SAFETY: forwarded from this function's contract.
            Linear::ToDevice { dst, src, n } => unsafe {
                super::memory::htod(dst, src.cast(), n, sync)
            },
            // SAFETY: forwarded from this function's contract.
            Linear::ToHost { dst, src, n } => unsafe {
                super::memory::dtoh(dst.cast(), src, n, sync)
            },
        }
    }
}

/// `c` as one run of bytes, when it is one: one row, or rows whose pitch is
/// their width on both sides, between device and host memory.
fn linear(c: &CUDA_MEMCPY2D, src: &Side, dst: &Side) -> CuResult<Option<Linear>> {
    let (w, h) = (c.WidthInBytes, c.Height);
    if h != 1 && (c.srcPitch != w || c.dstPitch != w) {
        return Ok(None);
    }
    let n = w.checked_mul(h).ok_or(CuError::INVALID_VALUE)?;
    let src_at = row_offset(c.srcY, c.srcPitch, c.srcXInBytes)?;
    let dst_at = row_offset(c.dstY, c.dstPitch, c.dstXInBytes)?;
    let dev =
        |base: CUdeviceptr, at: usize| base.checked_add(at as u64).ok_or(CuError::INVALID_VALUE);
    Ok(match (src, dst) {
        (Side::Host(sh), Side::Device(dd)) => Some(Linear::ToDevice {
            dst: dev(*dd, dst_at)?,
            src: sh.wrapping_add(src_at),
            n,
        }),
        (Side::Device(sd), Side::Host(dh)) => Some(Linear::ToHost {
            dst: dh.cast_mut().wrapping_add(dst_at),
            src: dev(*sd, src_at)?,
            n,
        }),
        _ => None,
    })
}

/// Largest packed band of host rows one message carries.
pub(super) const CHUNK: usize = 16 << 20;

/// Byte offset of row `y` at `x` in a pitched host region.
fn row_offset(y: usize, pitch: usize, x: usize) -> CuResult<usize> {
    y.checked_mul(pitch)
        .and_then(|o| o.checked_add(x))
        .ok_or(CuError::INVALID_VALUE)
}

/// `cuMemcpy2D` (`sid` None) and `cuMemcpy2DAsync` (`sid` Some).
///
/// # Safety
/// `p` must be a valid `CUDA_MEMCPY2D` whose host sides hold the region.
pub unsafe fn memcpy_2d(p: *const CUDA_MEMCPY2D, sid: Option<u64>) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(p)?;
    // SAFETY: checked non-NULL; the application's descriptor.
    let c = unsafe { &*p };
    if super::array::touches_array(c.srcMemoryType.0, c.dstMemoryType.0) {
        let whole = vgpu_abi::types::CUDA_MEMCPY3D {
            srcXInBytes: c.srcXInBytes,
            srcY: c.srcY,
            srcZ: 0,
            srcLOD: 0,
            srcMemoryType: c.srcMemoryType,
            srcHost: c.srcHost,
            srcDevice: c.srcDevice,
            srcArray: c.srcArray,
            reserved0: std::ptr::null_mut(),
            srcPitch: c.srcPitch,
            srcHeight: 0,
            dstXInBytes: c.dstXInBytes,
            dstY: c.dstY,
            dstZ: 0,
            dstLOD: 0,
            dstMemoryType: c.dstMemoryType,
            dstHost: c.dstHost,
            dstDevice: c.dstDevice,
            dstArray: c.dstArray,
            reserved1: std::ptr::null_mut(),
            dstPitch: c.dstPitch,
            dstHeight: 0,
            WidthInBytes: c.WidthInBytes,
            Height: c.Height,
            Depth: 1,
        };
        // SAFETY: the same region, as one slice.
        return unsafe { super::array::copy(&whole, sid) };
    }
    let (w, h) = (c.WidthInBytes, c.Height);
    if w == 0 || h == 0 {
        return Ok(());
    }
    w.checked_mul(h).ok_or(CuError::INVALID_VALUE)?;
    let src = side(c.srcMemoryType, c.srcHost, c.srcDevice)?;
    let dst = side(c.dstMemoryType, c.dstHost.cast_const(), c.dstDevice)?;
    // Host rows travel packed in messages of at most CHUNK bytes: big
    // copies go as several bands of whole rows.
    if w > CHUNK {
        crate::log::line(format_args!("cuMemcpy2D: rows of {w} bytes exceed {CHUNK}"));
        return Err(CuError::INVALID_VALUE);
    }
    let band = (CHUNK / w).max(1);
    let (stream, is_async) = sid.map_or((0, 0), |id| (id, 1));
    if is_async == 1
        && (matches!(src, Side::Host(_)) || matches!(dst, Side::Host(_)))
        && super::graph::capturing(s, stream)?
    {
        // A region that is one run of bytes on both sides (one row, or
        // rows without gaps) is a linear copy, which a capture takes
        // whatever memory the host side is: CUDA 13's runtime sends
        // cudaMemcpyAsync this way.
        if let Some(run) = linear(c, &src, &dst)? {
            // SAFETY: the application promises the host side holds the region.
            return unsafe { run.copy(stream) };
        }
        return Err(super::graph::refuse_pageable_capture());
    }
    let u = |v: usize| U64::new(v as u64);
    // A request of `rows` rows from `first`: the host side of a direction
    // other than 0 carries zeros (its rows are packed in the blob).
    let request = |direction: u8, first: usize, rows: usize, sd: u64, dd: u64| {
        let (src_dev, dst_dev) = (direction != 1, direction != 2);
        let pick = |dev: bool, v: usize| if dev { u(v) } else { U64::new(0) };
        memcpy2d::Request {
            direction,
            src: U64::new(sd),
            src_pitch: pick(src_dev, c.srcPitch),
            src_x: pick(src_dev, c.srcXInBytes),
            src_y: pick(src_dev, c.srcY + first),
            dst: U64::new(dd),
            dst_pitch: pick(dst_dev, c.dstPitch),
            dst_x: pick(dst_dev, c.dstXInBytes),
            dst_y: pick(dst_dev, c.dstY + first),
            width: u(w),
            height: u(rows),
            stream: U64::new(stream),
            is_async,
        }
    };
    match (src, dst) {
        (Side::Device(sd), Side::Device(dd)) => s.request(&request(0, 0, h, sd, dd), &[]).map(drop),
        (Side::Host(sh), Side::Device(dd)) => {
            non_null(sh)?;
            for first in (0..h).step_by(band) {
                let n = band.min(h - first);
                let mut rows = Vec::with_capacity(n * w);
                for r in first..first + n {
                    let at = row_offset(c.srcY + r, c.srcPitch, c.srcXInBytes)?;
                    // SAFETY: the application's host region holds every row.
                    rows.extend_from_slice(unsafe { std::slice::from_raw_parts(sh.add(at), w) });
                }
                s.request(&request(1, first, n, 0, dd), &rows)?;
            }
            Ok(())
        }
        (Side::Device(sd), Side::Host(dh)) => {
            non_null(dh)?;
            let dh = dh.cast_mut();
            for first in (0..h).step_by(band) {
                let n = band.min(h - first);
                let (_, rows) = s.request(&request(2, first, n, sd, 0), &[])?;
                if rows.len() != n * w {
                    return Err(CuError::UNKNOWN);
                }
                for (r, row) in rows.chunks_exact(w).enumerate() {
                    let at = row_offset(c.dstY + first + r, c.dstPitch, c.dstXInBytes)?;
                    // SAFETY: the application's host region holds every row.
                    unsafe { std::ptr::copy_nonoverlapping(row.as_ptr(), dh.add(at), w) };
                }
            }
            Ok(())
        }
        (Side::Host(sh), Side::Host(dh)) => {
            non_null(sh)?;
            non_null(dh)?;
            for r in 0..h {
                let from = row_offset(c.srcY + r, c.srcPitch, c.srcXInBytes)?;
                let to = row_offset(c.dstY + r, c.dstPitch, c.dstXInBytes)?;
                // SAFETY: both host regions hold every row; `copy` allows overlap.
                unsafe { std::ptr::copy(sh.add(from), dh.cast_mut().add(to), w) };
            }
            Ok(())
        }
    }
}

/// `cuMemcpy3D` (`sid` None) and `cuMemcpy3DAsync` (`sid` Some): with an
/// array on either side, [`super::array::copy`]; linear memory as one 2D
/// copy per slice (slice `z` starts `z * height` rows further on each side).
///
/// # Safety
/// `p` must be a valid `CUDA_MEMCPY3D` whose host sides hold the region.
pub unsafe fn memcpy_3d(
    p: *const vgpu_abi::types::CUDA_MEMCPY3D,
    sid: Option<u64>,
) -> CuResult<()> {
    non_null(p)?;
    // SAFETY: checked non-NULL; the application's descriptor.
    let c = unsafe { &*p };
    if c.srcLOD != 0 || c.dstLOD != 0 {
        return Err(CuError::INVALID_VALUE);
    }
    if super::array::touches_array(c.srcMemoryType.0, c.dstMemoryType.0) {
        // SAFETY: forwarded from this function's contract.
        return unsafe { super::array::copy(c, sid) };
    }
    for z in 0..c.Depth {
        let src_y = (c.srcZ + z)
            .checked_mul(c.srcHeight)
            .and_then(|r| r.checked_add(c.srcY));
        let dst_y = (c.dstZ + z)
            .checked_mul(c.dstHeight)
            .and_then(|r| r.checked_add(c.dstY));
        let (Some(src_y), Some(dst_y)) = (src_y, dst_y) else {
            return Err(CuError::INVALID_VALUE);
        };
        let slice = CUDA_MEMCPY2D {
            srcXInBytes: c.srcXInBytes,
            srcY: src_y,
            srcMemoryType: c.srcMemoryType,
            srcHost: c.srcHost,
            srcDevice: c.srcDevice,
            srcArray: c.srcArray,
            srcPitch: c.srcPitch,
            dstXInBytes: c.dstXInBytes,
            dstY: dst_y,
            dstMemoryType: c.dstMemoryType,
            dstHost: c.dstHost,
            dstDevice: c.dstDevice,
            dstArray: c.dstArray,
            dstPitch: c.dstPitch,
            WidthInBytes: c.WidthInBytes,
            Height: c.Height,
        };
        // SAFETY: each slice lies inside the application's 3D region.
        unsafe { memcpy_2d(&slice, sid)? };
    }
    Ok(())
}

/// The 32-bit first version of `CUDA_MEMCPY2D`, widened.
fn widen_2d(c: &vgpu_abi::types::CUDA_MEMCPY2D_v1) -> CUDA_MEMCPY2D {
    let w = |v: std::ffi::c_uint| v as usize;
    CUDA_MEMCPY2D {
        srcXInBytes: w(c.srcXInBytes),
        srcY: w(c.srcY),
        srcMemoryType: c.srcMemoryType,
        srcHost: c.srcHost,
        srcDevice: u64::from(c.srcDevice),
        srcArray: c.srcArray,
        srcPitch: w(c.srcPitch),
        dstXInBytes: w(c.dstXInBytes),
        dstY: w(c.dstY),
        dstMemoryType: c.dstMemoryType,
        dstHost: c.dstHost,
        dstDevice: u64::from(c.dstDevice),
        dstArray: c.dstArray,
        dstPitch: w(c.dstPitch),
        WidthInBytes: w(c.WidthInBytes),
        Height: w(c.Height),
    }
}

/// `cuMemcpy2D`, `cuMemcpy2DUnaligned` and `cuMemcpy2DAsync`, the first
/// versions: 32-bit fields and device addresses, otherwise the same copy.
///
/// # Safety
/// As for [`memcpy_2d`], with `p` a `CUDA_MEMCPY2D_v1`.
pub unsafe fn memcpy_2d_v1(
    p: *const vgpu_abi::types::CUDA_MEMCPY2D_v1,
    sid: Option<u64>,
) -> CuResult<()> {
    non_null(p)?;
    // SAFETY: checked non-NULL; the application's descriptor.
    let wide = widen_2d(unsafe { &*p });
    // SAFETY: the same region, widened.
    unsafe { memcpy_2d(&wide, sid) }
}

/// `cuMemcpy3D` and `cuMemcpy3DAsync`, the first versions, widened.
///
/// # Safety
/// As for [`memcpy_3d`], with `p` a `CUDA_MEMCPY3D_v1`.
pub unsafe fn memcpy_3d_v1(
    p: *const vgpu_abi::types::CUDA_MEMCPY3D_v1,
    sid: Option<u64>,
) -> CuResult<()> {
    non_null(p)?;
    // SAFETY: checked non-NULL; the application's descriptor.
    let c = unsafe { &*p };
    let w = |v: std::ffi::c_uint| v as usize;
    let wide = vgpu_abi::types::CUDA_MEMCPY3D {
        srcXInBytes: w(c.srcXInBytes),
        srcY: w(c.srcY),
        srcZ: w(c.srcZ),
        srcLOD: w(c.srcLOD),
        srcMemoryType: c.srcMemoryType,
        srcHost: c.srcHost,
        srcDevice: u64::from(c.srcDevice),
        srcArray: c.srcArray,
        reserved0: c.reserved0,
        srcPitch: w(c.srcPitch),
        srcHeight: w(c.srcHeight),
        dstXInBytes: w(c.dstXInBytes),
        dstY: w(c.dstY),
        dstZ: w(c.dstZ),
        dstLOD: w(c.dstLOD),
        dstMemoryType: c.dstMemoryType,
        dstHost: c.dstHost,
        dstDevice: u64::from(c.dstDevice),
        dstArray: c.dstArray,
        reserved1: c.reserved1,
        dstPitch: w(c.dstPitch),
        dstHeight: w(c.dstHeight),
        WidthInBytes: w(c.WidthInBytes),
        Height: w(c.Height),
        Depth: w(c.Depth),
    };
    // SAFETY: the same region, widened.
    unsafe { memcpy_3d(&wide, sid) }
}
