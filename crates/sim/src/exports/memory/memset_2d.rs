//! 2D memsets (`cuMemsetD2D{8,16,32}` in every form): `height` rows of `width`
//! elements, `dst_pitch` bytes apart, on the current context or a stream.

use super::*;

/// Runs a 2D memset on the current context (`queue == None`) or on stream `queue`.
fn memset_2d_on(
    queue: Option<usize>,
    dst: CUdeviceptr,
    pitch: usize,
    pattern: &[u8],
    width: usize,
    height: usize,
) -> Res<()> {
    let sim = state::sim()?;
    let st = sim.lock();
    match queue {
        None => context::current_usable(&st).map(|_| ())?,
        Some(k) => stream::usable(&st, k).map(|_| ())?,
    }
    memory::memset_2d(&st, dst, pitch, pattern, width, height)
}

/// `cuMemsetD2D8`: the 32-bit (`CUdeviceptr_v1`) form of `cuMemsetD2D8_v2`.
pub(crate) fn memset_d2d8(
    dst_device: CUdeviceptr_v1,
    dst_pitch: c_uint,
    uc: c_uchar,
    width: c_uint,
    height: c_uint,
) -> Res<()> {
    let (p, w, h) = (dst_pitch as usize, width as usize, height as usize);
    memset_2d_on(None, u64::from(dst_device), p, &[uc], w, h)
}

/// `cuMemsetD2D8_v2`: `height` rows of `width` elements, `dst_pitch` bytes apart.
pub(crate) fn memset_d2d8_v2(
    dst_device: CUdeviceptr,
    dst_pitch: usize,
    uc: c_uchar,
    width: usize,
    height: usize,
) -> Res<()> {
    memset_2d_on(None, dst_device, dst_pitch, &[uc], width, height)
}

/// `cuMemsetD2D8_v2_ptds`: as `cuMemsetD2D8_v2` (work is synchronous).
pub(crate) fn memset_d2d8_v2_ptds(
    dst_device: CUdeviceptr,
    dst_pitch: usize,
    uc: c_uchar,
    width: usize,
    height: usize,
) -> Res<()> {
    memset_2d_on(None, dst_device, dst_pitch, &[uc], width, height)
}

/// `cuMemsetD2D8Async`: runs at once, in stream order.
pub(crate) fn memset_d2d8_async(
    dst_device: CUdeviceptr,
    dst_pitch: usize,
    uc: c_uchar,
    width: usize,
    height: usize,
    h_stream: CUstream,
) -> Res<()> {
    let q = Some(key(h_stream));
    memset_2d_on(q, dst_device, dst_pitch, &[uc], width, height)
}

/// `cuMemsetD2D8Async_ptsz`: NULL is the per-thread default stream.
pub(crate) fn memset_d2d8_async_ptsz(
    dst_device: CUdeviceptr,
    dst_pitch: usize,
    uc: c_uchar,
    width: usize,
    height: usize,
    h_stream: CUstream,
) -> Res<()> {
    let q = Some(ptsz(h_stream));
    memset_2d_on(q, dst_device, dst_pitch, &[uc], width, height)
}

/// `cuMemsetD2D16`: the 32-bit (`CUdeviceptr_v1`) form of `cuMemsetD2D16_v2`.
pub(crate) fn memset_d2d16(
    dst_device: CUdeviceptr_v1,
    dst_pitch: c_uint,
    us: c_ushort,
    width: c_uint,
    height: c_uint,
) -> Res<()> {
    let (p, w, h) = (dst_pitch as usize, width as usize, height as usize);
    memset_2d_on(None, u64::from(dst_device), p, &us.to_ne_bytes(), w, h)
}

/// `cuMemsetD2D16_v2`: `height` rows of `width` elements, `dst_pitch` bytes apart.
pub(crate) fn memset_d2d16_v2(
    dst_device: CUdeviceptr,
    dst_pitch: usize,
    us: c_ushort,
    width: usize,
    height: usize,
) -> Res<()> {
    memset_2d_on(
        None,
        dst_device,
        dst_pitch,
        &us.to_ne_bytes(),
        width,
        height,
    )
}

/// `cuMemsetD2D16_v2_ptds`: as `cuMemsetD2D16_v2` (work is synchronous).
pub(crate) fn memset_d2d16_v2_ptds(
    dst_device: CUdeviceptr,
    dst_pitch: usize,
    us: c_ushort,
    width: usize,
    height: usize,
) -> Res<()> {
    memset_2d_on(
        None,
        dst_device,
        dst_pitch,
        &us.to_ne_bytes(),
        width,
        height,
    )
}

/// `cuMemsetD2D16Async`: runs at once, in stream order.
pub(crate) fn memset_d2d16_async(
    dst_device: CUdeviceptr,
    dst_pitch: usize,
    us: c_ushort,
    width: usize,
    height: usize,
    h_stream: CUstream,
) -> Res<()> {
    let q = Some(key(h_stream));
    memset_2d_on(q, dst_device, dst_pitch, &us.to_ne_bytes(), width, height)
}

/// `cuMemsetD2D16Async_ptsz`: NULL is the per-thread default stream.
pub(crate) fn memset_d2d16_async_ptsz(
    dst_device: CUdeviceptr,
    dst_pitch: usize,
    us: c_ushort,
    width: usize,
    height: usize,
    h_stream: CUstream,
) -> Res<()> {
    let q = Some(ptsz(h_stream));
    memset_2d_on(q, dst_device, dst_pitch, &us.to_ne_bytes(), width, height)
}

/// `cuMemsetD2D32`: the 32-bit (`CUdeviceptr_v1`) form of `cuMemsetD2D32_v2`.
pub(crate) fn memset_d2d32(
    dst_device: CUdeviceptr_v1,
    dst_pitch: c_uint,
    ui: c_uint,
    width: c_uint,
    height: c_uint,
) -> Res<()> {
    let (p, w, h) = (dst_pitch as usize, width as usize, height as usize);
    memset_2d_on(None, u64::from(dst_device), p, &ui.to_ne_bytes(), w, h)
}

/// `cuMemsetD2D32_v2`: `height` rows of `width` elements, `dst_pitch` bytes apart.
pub(crate) fn memset_d2d32_v2(
    dst_device: CUdeviceptr,
    dst_pitch: usize,
    ui: c_uint,
    width: usize,
    height: usize,
) -> Res<()> {
    memset_2d_on(
        None,
        dst_device,
        dst_pitch,
        &ui.to_ne_bytes(),
        width,
        height,
    )
}

/// `cuMemsetD2D32_v2_ptds`: as `cuMemsetD2D32_v2` (work is synchronous).
pub(crate) fn memset_d2d32_v2_ptds(
    dst_device: CUdeviceptr,
    dst_pitch: usize,
    ui: c_uint,
    width: usize,
    height: usize,
) -> Res<()> {
    memset_2d_on(
        None,
        dst_device,
        dst_pitch,
        &ui.to_ne_bytes(),
        width,
        height,
    )
}

/// `cuMemsetD2D32Async`: runs at once, in stream order.
pub(crate) fn memset_d2d32_async(
    dst_device: CUdeviceptr,
    dst_pitch: usize,
    ui: c_uint,
    width: usize,
    height: usize,
    h_stream: CUstream,
) -> Res<()> {
    let q = Some(key(h_stream));
    memset_2d_on(q, dst_device, dst_pitch, &ui.to_ne_bytes(), width, height)
}

/// `cuMemsetD2D32Async_ptsz`: NULL is the per-thread default stream.
pub(crate) fn memset_d2d32_async_ptsz(
    dst_device: CUdeviceptr,
    dst_pitch: usize,
    ui: c_uint,
    width: usize,
    height: usize,
    h_stream: CUstream,
) -> Res<()> {
    let q = Some(ptsz(h_stream));
    memset_2d_on(q, dst_device, dst_pitch, &ui.to_ne_bytes(), width, height)
}
