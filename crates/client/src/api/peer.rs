//! The 3D copies between the memory of two contexts (`cuMemcpy3DPeer`).
//! Device addresses are unified, so the copy itself is the 3D copy the
//! worker checks and runs for `cuMemcpy3D` (`copy::memcpy_3d`); the two
//! contexts must be live contexts of this session.

use vgpu_abi::types::{CUcontext, CUDA_MEMCPY3D, CUDA_MEMCPY3D_PEER};

use super::copy;
use crate::edge::{non_null, CuError, CuResult};
use crate::runtime::runtime;

/// `cuMemcpy3DPeer` (`sid` None), its asynchronous and per-thread forms.
///
/// # Safety
/// `p` must be NULL or a readable descriptor whose host sides are valid as
/// the CUDA API requires.
pub unsafe fn memcpy_3d_peer(p: *const CUDA_MEMCPY3D_PEER, sid: Option<u64>) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(p)?;
    // SAFETY: checked non-NULL; the application's descriptor.
    let c = unsafe { p.read_unaligned() };
    {
        let o = s.objects();
        let live = |ctx: CUcontext| o.contexts.contains_key(&(ctx as usize as u64));
        if !live(c.srcContext) || !live(c.dstContext) {
            return Err(CuError::INVALID_CONTEXT);
        }
    }
    let plain = CUDA_MEMCPY3D {
        srcXInBytes: c.srcXInBytes,
        srcY: c.srcY,
        srcZ: c.srcZ,
        srcLOD: c.srcLOD,
        srcMemoryType: c.srcMemoryType,
        srcHost: c.srcHost,
        srcDevice: c.srcDevice,
        srcArray: c.srcArray,
        reserved0: std::ptr::null_mut(),
        srcPitch: c.srcPitch,
        srcHeight: c.srcHeight,
        dstXInBytes: c.dstXInBytes,
        dstY: c.dstY,
        dstZ: c.dstZ,
        dstLOD: c.dstLOD,
        dstMemoryType: c.dstMemoryType,
        dstHost: c.dstHost,
        dstDevice: c.dstDevice,
        dstArray: c.dstArray,
        reserved1: std::ptr::null_mut(),
        dstPitch: c.dstPitch,
        dstHeight: c.dstHeight,
        WidthInBytes: c.WidthInBytes,
        Height: c.Height,
        Depth: c.Depth,
    };
    // SAFETY: a local descriptor with the application's host sides.
    unsafe { copy::memcpy_3d(&plain, sid) }
}
