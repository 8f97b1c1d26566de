//! Device memory: allocation, copies and memsets.
//!
//! Bulk data travels in the request or reply itself, split into pieces of at
//! most [`crate::lane::Lanes::chunk`] bytes; device-to-host bytes are read
//! straight into the application's buffer.
//!
//! Asynchronous copies and memsets are posted (no round trip) when the
//! client can check here what the driver checks at once: every device range
//! inside one known allocation, the stream live in the current context.
//! Synchronous forms are never posted: they block in the driver, and a
//! posted call must not hold back other threads' posted calls
//! (`docs/adr/0004-async-errors.md`). Anything the client cannot check
//! waits for the worker's answer, which is the driver's.

use std::ffi::c_void;

use vgpu_abi::types::CUdeviceptr;
use vgpu_proto::{
    mem_alloc, mem_free, memcpy_dtod, memcpy_dtoh, memcpy_dtoh_shared, memcpy_htod,
    memcpy_htod_shared, memset as memset_op,
};
use zerocopy::little_endian::{U32, U64};
use zerocopy::IntoBytes;

use super::stream::PER_THREAD_STREAM;
use crate::edge::{non_null, wire, write_out, CuError, CuResult};
use crate::lane::{Follows, Piece};
use crate::runtime::{runtime, Session};
use crate::staging::MIN_STAGED;

/// How a copy or memset orders itself against other work.
#[derive(Clone, Copy, Debug)]
pub enum Sync {
    /// The classic synchronous form on the legacy default stream.
    Blocking,
    /// The `_ptds` synchronous form on the per-thread default stream.
    PerThread,
    /// An `…Async` form on this stream id.
    Stream(u64),
}

impl Sync {
    /// (stream id, async flag) as the wire carries them.
    fn wire(self) -> (u64, u8) {
        match self {
            Sync::Blocking => (0, 0),
            Sync::PerThread | Sync::Stream(_) => (self.stream(), 1),
        }
    }

    fn stream(self) -> u64 {
        match self {
            Sync::Blocking => 0,
            Sync::PerThread => PER_THREAD_STREAM,
            Sync::Stream(s) => s,
        }
    }

    /// The `_ptds` forms are synchronous: wait for their stream.
    fn finish(self) -> CuResult<()> {
        match self {
            Sync::PerThread => super::stream::synchronize(PER_THREAD_STREAM),
            Sync::Blocking | Sync::Stream(_) => Ok(()),
        }
    }

    /// Whether an operation on `ranges` (device pointer, bytes) in this
    /// form may be posted: the ranges lie in known device memory and the
    /// stream is usable in the current context.
    fn postable(self, s: &Session, ranges: &[(CUdeviceptr, u64)]) -> bool {
        let o = s.objects();
        o.stream_ok(crate::context::current(), self.stream())
            && ranges.iter().all(|&(p, n)| o.range_ok(p, n))
    }
}

/// # Safety
/// `dptr` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
pub unsafe fn alloc(dptr: *mut CUdeviceptr, size: usize) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(dptr)?;
    if size == 0 {
        return Err(CuError::INVALID_VALUE);
    }
    let r = mem_alloc::Request {
        bytes: U64::new(size as u64),
    };
    let (rep, _) = s.request(&r, &[])?;
    let p = rep.dptr.get();
    s.objects().device_ranges.insert(p, size as u64);
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(dptr, p) }
}

/// `cuMemAllocPitch_v2`: the worker's driver picks the pitch.
///
/// # Safety
/// `dptr` and `ppitch` must be NULL or valid for a write.
pub unsafe fn alloc_pitch(
    dptr: *mut CUdeviceptr,
    ppitch: *mut usize,
    width: usize,
    height: usize,
    element: std::ffi::c_uint,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(dptr)?;
    non_null(ppitch)?;
    let r = vgpu_proto::mem_alloc_pitch::Request {
        width: U64::new(width as u64),
        height: U64::new(height as u64),
        element: zerocopy::little_endian::U32::new(element),
    };
    let (rep, _) = s.request(&r, &[])?;
    let (p, pitch) = (rep.dptr.get(), rep.pitch.get());
    let bytes = pitch.saturating_mul(height as u64);
    s.objects().device_ranges.insert(p, bytes);
    // SAFETY: checked non-NULL; the application's out-pointers.
    unsafe {
        write_out(dptr, p)?;
        write_out(ppitch, crate::edge::wire::usize(pitch))
    }
}

/// `cuMemGetAddressRange_v2`: a managed allocation's base and size (as
/// asked for) are known here; the worker's driver knows every other range.
///
/// # Safety
/// `pbase` and `psize` must each be NULL or valid for a write.
pub unsafe fn mem_get_address_range_v2(
    pbase: *mut CUdeviceptr,
    psize: *mut usize,
    dptr: CUdeviceptr,
) -> CuResult<()> {
    let s = runtime().session()?;
    let (base, size) = match super::managed::range_of(s, dptr) {
        Some(range) => range,
        None => {
            let r = vgpu_proto::mem_get_address_range_v2::Request {
                want_pbase: u8::from(!pbase.is_null()),
                want_psize: u8::from(!psize.is_null()),
                dptr: U64::new(dptr),
            };
            let (rep, back) = s.request(&r, &[])?;
            crate::call::all_read(s, &back, 0)?;
            (rep.pbase.get(), rep.psize.get())
        }
    };
    // SAFETY: the application's pointers, each written only when non-NULL.
    unsafe {
        if !pbase.is_null() {
            write_out(pbase, base)?;
        }
        if !psize.is_null() {
            write_out(psize, wire::usize(size))?;
        }
    }
    Ok(())
}

pub fn free(dptr: CUdeviceptr) -> CuResult<()> {
    let s = runtime().session()?;
    if dptr == 0 {
        // The driver accepts freeing NULL; the runtime's `cudaFree(0)` relies on it.
        return Ok(());
    }
    if let Some(result) = super::managed::free(s, dptr) {
        return result;
    }
    s.request(
        &mem_free::Request {
            dptr: U64::new(dptr),
        },
        &[],
    )?;
    s.objects().device_ranges.remove(&dptr);
    Ok(())
}

/// Host to device.
///
/// # Safety
/// `src` must be readable for `n` bytes.
pub unsafe fn htod(dst: CUdeviceptr, src: *const c_void, n: usize, sync: Sync) -> CuResult<()> {
    let s = runtime().session()?;
    if n == 0 {
        return Ok(());
    }
    non_null(src)?;
    let (stream, is_async) = sync.wire();
    let checked = sync.postable(s, &[(dst, n as u64)]);
    if let Some(worker) = super::host::shared(src, n) {
        // Pinned memory the worker maps too: no bytes on the wire.
        let r = memcpy_htod_shared::Request {
            dst: U64::new(dst),
            host: U64::new(worker),
            bytes: U64::new(n as u64),
            stream: U64::new(stream),
            is_async,
        };
        let post = checked && is_async == 1;
        s.post_or_request(&r, &[], post, Follows::Stream(stream))?;
        return sync.finish();
    }
    if is_async == 1 && super::graph::capturing(s, stream)? {
        // SAFETY: a captured copy reads `src` at each launch, as the driver's does.
        unsafe { super::graph::capture_copy(s, dst, src as usize, n, stream, true) }?;
        return sync.finish();
    }
    // SAFETY: the application promises `src` holds `n` readable bytes.
    let data = unsafe { std::slice::from_raw_parts(src.cast::<u8>(), n) };
    if matches!(sync, Sync::Blocking) && n >= MIN_STAGED {
        if let Some(done) = s.staging.htod(s, dst, data) {
            return done;
        }
    }
    let chunk = s.lanes.chunk();
    if checked && is_async == 1 {
        // The bytes travel in the request, so the source is free on return.
        for (i, piece) in data.chunks(chunk).enumerate() {
            let at = dst
                .checked_add((i * chunk) as u64)
                .ok_or(CuError::INVALID_VALUE)?;
            let r = memcpy_htod::Request {
                dst: U64::new(at),
                stream: U64::new(stream),
                is_async,
            };
            s.post(
                vgpu_proto::Op::MemcpyHtoD,
                r.as_bytes(),
                piece,
                Follows::Stream(stream),
            )?;
        }
        return sync.finish();
    }
    // Not posted (the synchronous form blocks in the driver, and a posted
    // call must not hold back other threads' calls), but pipelined.
    let mut pieces = Vec::with_capacity(n.div_ceil(chunk));
    for (i, piece) in data.chunks(chunk).enumerate() {
        let at = dst
            .checked_add((i * chunk) as u64)
            .ok_or(CuError::INVALID_VALUE)?;
        let r = memcpy_htod::Request {
            dst: U64::new(at),
            stream: U64::new(stream),
            is_async,
        };
        pieces.push(Piece {
            fixed: r.as_bytes().to_vec(),
            blob: piece,
            sink: None,
        });
    }
    s.call_pieces(vgpu_proto::Op::MemcpyHtoD, pieces)?;
    sync.finish()
}

/// Device to host.
///
/// # Safety
/// `dst` must be writable for `n` bytes.
pub unsafe fn dtoh(dst: *mut c_void, src: CUdeviceptr, n: usize, sync: Sync) -> CuResult<()> {
    let s = runtime().session()?;
    if n == 0 {
        return Ok(());
    }
    non_null(dst)?;
    let (stream, is_async) = sync.wire();
    if let Some(worker) = super::host::shared(dst, n) {
        // Pinned memory the worker maps too: no bytes on the wire.
        let checked = is_async == 1 && sync.postable(s, &[(src, n as u64)]);
        let r = memcpy_dtoh_shared::Request {
            host: U64::new(worker),
            src: U64::new(src),
            bytes: U64::new(n as u64),
            stream: U64::new(stream),
            is_async,
        };
        s.post_or_request(&r, &[], checked, Follows::Stream(stream))?;
        return sync.finish();
    }
    if is_async == 1 && super::graph::capturing(s, stream)? {
        // SAFETY: a captured copy writes `dst` at each launch, as the driver's does.
        unsafe { super::graph::capture_copy(s, src, dst as usize, n, stream, false) }?;
        return sync.finish();
    }
    // SAFETY: the application promises `dst` holds `n` writable bytes, and
    // owns them for the duration of this synchronous call.
    let out = unsafe { std::slice::from_raw_parts_mut(dst.cast::<u8>(), n) };
    if matches!(sync, Sync::Blocking) && n >= MIN_STAGED {
        if let Some(done) = s.staging.dtoh(s, out, src) {
            return done;
        }
    }
    let chunk_len = s.lanes.chunk();
    let mut pieces = Vec::with_capacity(n.div_ceil(chunk_len));
    for (i, chunk) in out.chunks_mut(chunk_len).enumerate() {
        let at = src
            .checked_add((i * chunk_len) as u64)
            .ok_or(CuError::INVALID_VALUE)?;
        let r = memcpy_dtoh::Request {
            src: U64::new(at),
            bytes: U64::new(chunk.len() as u64),
            stream: U64::new(stream),
            is_async,
        };
        pieces.push(Piece {
            fixed: r.as_bytes().to_vec(),
            blob: &[],
            sink: Some(chunk),
        });
    }
    s.call_pieces(vgpu_proto::Op::MemcpyDtoH, pieces)?;
    sync.finish()
}

pub fn dtod(dst: CUdeviceptr, src: CUdeviceptr, n: usize, sync: Sync) -> CuResult<()> {
    let s = runtime().session()?;
    if n == 0 {
        return Ok(());
    }
    let (stream, is_async) = sync.wire();
    let post = is_async == 1 && sync.postable(s, &[(dst, n as u64), (src, n as u64)]);
    let r = memcpy_dtod::Request {
        dst: U64::new(dst),
        src: U64::new(src),
        bytes: U64::new(n as u64),
        stream: U64::new(stream),
        is_async,
    };
    s.post_or_request(&r, &[], post, Follows::Stream(stream))?;
    sync.finish()
}

/// `cuMemcpy`/`cuMemcpyAsync` with unified addressing: each side is device
/// memory if it lies in a range this session handed out, host memory otherwise.
///
/// # Safety
/// Host-side pointers must be valid for `n` bytes.
pub unsafe fn unified(dst: CUdeviceptr, src: CUdeviceptr, n: usize, sync: Sync) -> CuResult<()> {
    let s = runtime().session()?;
    let (dst_dev, src_dev) = {
        let o = s.objects();
        (o.is_device(dst), o.is_device(src))
    };
    let host = |p: CUdeviceptr| wire::handle::<c_void>(p);
    match (dst_dev, src_dev) {
        (true, true) => dtod(dst, src, n, sync),
        // SAFETY: the application promises the host side is valid for `n` bytes.
        (true, false) => unsafe { htod(dst, host(src), n, sync) },
        // SAFETY: the application promises the host side is valid for `n` bytes.
        (false, true) => unsafe { dtoh(host(dst), src, n, sync) },
        (false, false) => {
            if n != 0 {
                non_null(host(dst))?;
                non_null(host(src))?;
                // SAFETY: both are host buffers of `n` bytes owned by the application.
                unsafe { std::ptr::copy(host(src).cast::<u8>(), host(dst).cast::<u8>(), n) };
            }
            Ok(())
        }
    }
}

/// `count` elements of `elem` bytes (1, 2 or 4) set to `value`.
pub fn memset(dst: CUdeviceptr, value: u32, elem: u8, count: usize, sync: Sync) -> CuResult<()> {
    let s = runtime().session()?;
    if count == 0 {
        return Ok(());
    }
    if !dst.is_multiple_of(u64::from(elem)) {
        return Err(CuError::INVALID_VALUE);
    }
    let (stream, is_async) = sync.wire();
    let post = is_async == 1
        && u64::from(elem)
            .checked_mul(count as u64)
            .is_some_and(|bytes| sync.postable(s, &[(dst, bytes)]));
    let r = memset_op::Request {
        dst: U64::new(dst),
        value: U32::new(value),
        element: elem,
        count: U64::new(count as u64),
        stream: U64::new(stream),
        is_async,
    };
    s.post_or_request(&r, &[], post, Follows::Stream(stream))?;
    sync.finish()
}

/// `cuMemAllocAsync`: stream-ordered allocation from the device's pool.
///
/// # Safety
/// `dptr` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
pub unsafe fn alloc_async(dptr: *mut CUdeviceptr, size: usize, sid: u64) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(dptr)?;
    if size == 0 {
        return Err(CuError::INVALID_VALUE);
    }
    let r = vgpu_proto::mem_alloc_async::Request {
        bytes: U64::new(size as u64),
        stream: U64::new(sid),
    };
    let (rep, _) = s.request(&r, &[])?;
    let p = rep.dptr.get();
    s.objects().device_ranges.insert(p, size as u64);
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(dptr, p) }
}

/// `cuMemFreeAsync`.
pub fn free_async(dptr: CUdeviceptr, sid: u64) -> CuResult<()> {
    let s = runtime().session()?;
    let r = vgpu_proto::mem_free_async::Request {
        dptr: U64::new(dptr),
        stream: U64::new(sid),
    };
    s.request(&r, &[])?;
    s.objects().device_ranges.remove(&dptr);
    Ok(())
}
