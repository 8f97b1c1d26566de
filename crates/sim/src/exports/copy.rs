//! `cuMemcpy2D_v2` and `cuMemcpy2DAsync_v2`.

/// `CU_MEMORYTYPE_ARRAY`.
const MEMORY_TYPE_ARRAY: u32 = 3;

use crate::array;
use crate::context;
use crate::copy2d;
use crate::cu::{CUresult, CUstream, CUDA_MEMCPY2D, CUDA_MEMCPY3D};
use crate::error::{err, Res};
use crate::ffi::{key, run};
use crate::graph;
use crate::memory::End;
use crate::state;
use crate::stream;

/// Reads the descriptor and runs the copy on the current context (`stream == None`) or on
/// a stream.
///
/// # Safety
/// `p` must be NULL or a readable descriptor whose host sides hold the region.
unsafe fn copy_on(name: &str, p: *const CUDA_MEMCPY2D, stream_h: Option<CUstream>) -> CUresult {
    run(name, || {
        let sim = state::sim()?;
        let mut st = sim.lock();
        match stream_h {
            None => context::current_usable(&st).map(drop)?,
            Some(h) => stream::usable(&st, key(h)).map(drop)?,
        }
        // SAFETY: forwarded from this function's contract.
        let c = unsafe { read(p) }?;
        // On a capturing stream a region that is one run of bytes on both
        // sides is recorded as the linear copy it is.
        if let (Some(h), Some((dst, src, len))) = (stream_h, linear(&c)) {
            let work = || graph::Work::Copy {
                dst: graph::CopyEnd::of(&dst),
                src: graph::CopyEnd::of(&src),
                len,
            };
            if graph::captured(&mut st, key(h), work)? {
                return Ok(());
            }
        }
        if c.srcMemoryType.0 == MEMORY_TYPE_ARRAY || c.dstMemoryType.0 == MEMORY_TYPE_ARRAY {
            // SAFETY: forwarded from this function's contract: the same region, one slice.
            return unsafe { array::copy_3d(&st, &as_3d(&c)) };
        }
        // SAFETY: forwarded from this function's contract.
        unsafe { copy2d::copy(&st, &c) }
    })
}

/// The ends and length of a copy between host and device memory whose
/// region is one run of bytes on both sides (one row, or rows without gaps).
fn linear(c: &CUDA_MEMCPY2D) -> Option<(End, End, usize)> {
    const HOST: u32 = 1;
    const DEVICE: u32 = 2;
    let (w, h) = (c.WidthInBytes, c.Height);
    if h != 1 && (c.srcPitch != w || c.dstPitch != w) {
        return None;
    }
    let len = w.checked_mul(h)?;
    let src_at = c.srcY.checked_mul(c.srcPitch)?.checked_add(c.srcXInBytes)?;
    let dst_at = c.dstY.checked_mul(c.dstPitch)?.checked_add(c.dstXInBytes)?;
    let end = |kind: u32, host: *mut u8, device: u64, at: usize| match kind {
        HOST => Some(End::Host(host.wrapping_add(at))),
        DEVICE => device.checked_add(at as u64).map(End::Device),
        _ => None,
    };
    let src = end(
        c.srcMemoryType.0,
        c.srcHost.cast_mut().cast(),
        c.srcDevice,
        src_at,
    )?;
    let dst = end(c.dstMemoryType.0, c.dstHost.cast(), c.dstDevice, dst_at)?;
    Some((dst, src, len))
}

/// A 2D copy as the one-slice 3D copy it is.
fn as_3d(c: &CUDA_MEMCPY2D) -> CUDA_MEMCPY3D {
    CUDA_MEMCPY3D {
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
        srcHeight: c.Height,
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
        dstHeight: c.Height,
        WidthInBytes: c.WidthInBytes,
        Height: c.Height,
        Depth: 1,
    }
}

/// # Safety
/// `p` must be NULL or readable.
unsafe fn read(p: *const CUDA_MEMCPY2D) -> Res<CUDA_MEMCPY2D> {
    if p.is_null() {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "pCopy is NULL");
    }
    // SAFETY: non-NULL and readable by the contract.
    Ok(unsafe { p.read_unaligned() })
}

/// `cuMemcpy2D_v2`: host, device and unified sides, and CUDA arrays (as a one-slice 3D
/// copy). Every bound is checked before a byte moves.
///
/// # Safety
/// `p_copy` must be NULL or a readable descriptor whose host sides hold the region.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpy2D_v2(p_copy: *const CUDA_MEMCPY2D) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe { copy_on("cuMemcpy2D_v2", p_copy, None) }
}

/// `cuMemcpy2DAsync_v2`: runs at once, in stream order.
///
/// # Safety
/// As for [`cuMemcpy2D_v2`].
#[no_mangle]
pub unsafe extern "C" fn cuMemcpy2DAsync_v2(
    p_copy: *const CUDA_MEMCPY2D,
    h_stream: CUstream,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe { copy_on("cuMemcpy2DAsync_v2", p_copy, Some(h_stream)) }
}
