//! Device memory: allocation (stream-ordered too), and the copies and memsets whose bytes travel
//! in the frames. Every device range is checked against the session's live
//! allocations before the driver sees it.

use std::ffi::c_void;

use vgpu_proto::{
    mem_alloc, mem_alloc_async, mem_alloc_pitch, mem_free, mem_free_async, memcpy_dtod,
    memcpy_dtoh, memcpy_htod, memset, Request, MAX_BLOB,
};
use zerocopy::little_endian::U64;

use super::calls::{message, ok, size, Reply};
use super::exec::{checked, Lane};
use super::held;
use super::status::INVALID_VALUE;
use super::tables::{as_handle, Range};
use super::Session;
use crate::driver::{entry, DevPtr, Status};
use crate::sessions::Direction;

/// `cuMemAlloc_v2`; the range joins the session's live allocations.
pub fn mem_alloc(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_alloc::Request = message(req)?;
    let bytes = r.bytes.get();
    let mut p = 0;
    // SAFETY: the out-pointer is a live local.
    ok(unsafe { entry(s.driver.cuMemAlloc_v2)?(&mut p, size(bytes)?) })?;
    let device = held::device_of(s, p);
    s.tables().insert_alloc(p, bytes, req.ctx, device);
    Ok(Reply::new(&mem_alloc::Reply { dptr: p.into() }, Vec::new()))
}

/// `cuMemAllocPitch_v2`: the driver's pitch, and an allocation of
/// `pitch * height` bytes for the session.
pub fn mem_alloc_pitch(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_alloc_pitch::Request = message(req)?;
    let (mut p, mut pitch) = (0, 0usize);
    let (width, height) = (size(r.width.get())?, size(r.height.get())?);
    // SAFETY: both out-pointers are live locals.
    ok(unsafe {
        entry(s.driver.cuMemAllocPitch_v2)?(&mut p, &mut pitch, width, height, r.element.get())
    })?;
    let bytes = (pitch as u64).saturating_mul(height as u64);
    // A tenant's limit was checked for width × height before the call;
    // the allocation is pitch × height, and its padding must fit too.
    let padding = bytes.saturating_sub(r.width.get().saturating_mul(r.height.get()));
    if !crate::tenants::quota::reserve(padding) {
        // SAFETY: the allocation just made, never handed out.
        let _ = unsafe { entry(s.driver.cuMemFree_v2)?(p) };
        return Err(Status::CUDA_ERROR_OUT_OF_MEMORY);
    }
    // From here the session's held memory counts it (as `cuMemAlloc`'s).
    crate::tenants::quota::release(padding);
    let device = held::device_of(s, p);
    s.tables().insert_alloc(p, bytes, req.ctx, device);
    let reply = mem_alloc_pitch::Reply {
        dptr: p.into(),
        pitch: (pitch as u64).into(),
    };
    Ok(Reply::new(&reply, Vec::new()))
}

/// `cuMemFree_v2` of the base of a live allocation (0 is accepted, as the
/// driver does).
pub fn mem_free(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_free::Request = message(req)?;
    let p = r.dptr.get();
    if p == 0 {
        return Ok(Reply::default());
    }
    if s.tables().graph_allocs.contains(&p) {
        // SAFETY: an address a graph of this session allocates; the driver
        // checks whether it is allocated now.
        return ok(unsafe { entry(s.driver.cuMemFree_v2)?(p) }).map(|()| Reply::default());
    }
    let range = take_alloc(s, p, "cuMemFree")?;
    // SAFETY: `p` is the base of a live allocation of this session.
    if let Err(st) = ok(unsafe { entry(s.driver.cuMemFree_v2)?(p) }) {
        s.tables().restore_alloc(p, range);
        return Err(st);
    }
    super::ipc::freed(s, p);
    Ok(Reply::default())
}

/// Host to device; the bytes are the request's blob.
pub fn memcpy_htod(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &memcpy_htod::Request = message(req)?;
    let (dst, len) = (r.dst.get(), req.blob.len());
    let stream = checked(s, &[(dst, len as u64)], r.stream.get())?;
    let src = req.blob.as_ptr().cast::<c_void>();
    // SAFETY: `dst..dst+len` lies in a live allocation (checked) and the
    // source is the request's own buffer of `len` bytes. A pageable source
    // is staged by the driver before the call returns.
    ok(unsafe {
        if r.is_async != 0 {
            entry(s.driver.cuMemcpyHtoDAsync_v2)?(dst, src, len, stream.cast())
        } else {
            entry(s.driver.cuMemcpyHtoD_v2)?(dst, src, len)
        }
    })?;
    crate::sessions::count_copy(Direction::HtoD, len as u64);
    Ok(Reply::default())
}

/// Device to host; the bytes come back as the reply's blob.
pub fn memcpy_dtoh(lane: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &memcpy_dtoh::Request = message(req)?;
    let (src, len) = (r.src.get(), size(r.bytes.get())?);
    if len > MAX_BLOB {
        return Err(INVALID_VALUE);
    }
    let stream = checked(s, &[(src, r.bytes.get())], r.stream.get())?;
    let mut out = lane.out_buffer(len);
    let dst = out.as_mut_ptr().cast::<c_void>();
    // SAFETY: the source range is live (checked); `out` holds `len` bytes. A
    // pageable destination makes the async form complete before it returns.
    ok(unsafe {
        if r.is_async != 0 {
            entry(s.driver.cuMemcpyDtoHAsync_v2)?(dst, src, len, stream.cast())
        } else {
            entry(s.driver.cuMemcpyDtoH_v2)?(dst, src, len)
        }
    })?;
    crate::sessions::count_copy(Direction::DtoH, len as u64);
    Ok(Reply {
        blob: out,
        ..Reply::default()
    })
}

/// Device to device.
pub fn memcpy_dtod(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &memcpy_dtod::Request = message(req)?;
    let (dst, src, bytes) = (r.dst.get(), r.src.get(), r.bytes.get());
    let stream = checked(s, &[(dst, bytes), (src, bytes)], r.stream.get())?;
    let len = size(bytes)?;
    // SAFETY: both ranges lie in live allocations (checked).
    ok(unsafe {
        if r.is_async != 0 {
            entry(s.driver.cuMemcpyDtoDAsync_v2)?(dst, src, len, stream.cast())
        } else {
            entry(s.driver.cuMemcpyDtoD_v2)?(dst, src, len)
        }
    })?;
    crate::sessions::count_copy(Direction::DtoD, bytes);
    Ok(Reply::default())
}

/// Narrows a memset value to its element width, as the C API's parameter
/// types do.
#[allow(clippy::cast_possible_truncation)]
fn narrow(value: u32) -> (u8, u16, u32) {
    (value as u8, value as u16, value)
}

/// `count` elements of 1, 2 or 4 bytes set to `value`.
pub fn memset(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &memset::Request = message(req)?;
    let (dst, elem, count) = (r.dst.get(), r.element, r.count.get());
    let bytes = u64::from(elem).checked_mul(count).ok_or(INVALID_VALUE)?;
    let stream = checked(s, &[(dst, bytes)], r.stream.get())?.cast();
    let n = size(count)?;
    let (v8, v16, v32) = narrow(r.value.get());
    let d = &s.driver;
    // SAFETY: the range lies in a live allocation (checked); the value is
    // truncated to the element width as the C API does.
    ok(unsafe {
        match (elem, r.is_async != 0) {
            (1, false) => entry(d.cuMemsetD8_v2)?(dst, v8, n),
            (2, false) => entry(d.cuMemsetD16_v2)?(dst, v16, n),
            (4, false) => entry(d.cuMemsetD32_v2)?(dst, v32, n),
            (1, true) => entry(d.cuMemsetD8Async)?(dst, v8, n, stream),
            (2, true) => entry(d.cuMemsetD16Async)?(dst, v16, n, stream),
            (4, true) => entry(d.cuMemsetD32Async)?(dst, v32, n, stream),
            _ => INVALID_VALUE,
        }
    })?;
    Ok(Reply::default())
}

/// Stream-ordered allocation from the device's pool; the range joins the
/// session's live allocations.
pub fn mem_alloc_async(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_alloc_async::Request = message(req)?;
    let bytes = size(r.bytes.get())?;
    let st = as_handle(s.tables().stream(r.stream.get())?);
    let mut p: DevPtr = 0;
    // SAFETY: live out-pointer; live stream of this session or a sentinel.
    ok(unsafe { entry(s.driver.cuMemAllocAsync)?(&mut p, bytes, st.cast()) })?;
    let captured = super::callback::capturing(s, st)?;
    if captured {
        s.tables().insert_graph_alloc(p, bytes as u64, req.ctx);
    } else {
        let device = held::device_of(s, p);
        s.tables().insert_alloc(p, bytes as u64, req.ctx, device);
    }
    Ok(Reply::new(
        &mem_alloc_async::Reply { dptr: U64::new(p) },
        Vec::new(),
    ))
}

/// Stream-ordered free of the base of a live allocation.
pub fn mem_free_async(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_free_async::Request = message(req)?;
    let (p, stream) = (r.dptr.get(), r.stream.get());
    let st = as_handle(s.tables().stream(stream)?);
    if super::callback::capturing(s, st)? || s.tables().graph_allocs.contains(&p) {
        // Captured, the free is a node of the graph: the memory is freed when
        // a launch runs it, and the allocation stays live until then (a graph
        // that allocates it may run again); a graph's allocation freed in a
        // stream is allocated again by the graph's next launch. The driver
        // checks the address.
        // SAFETY: `p` goes to the driver as a value; a live stream of this session.
        ok(unsafe { entry(s.driver.cuMemFreeAsync)?(p, st.cast()) })?;
        return Ok(Reply::default());
    }
    let range = take_alloc(s, p, "cuMemFreeAsync")?;
    // SAFETY: `p` is the base of a live allocation of this session.
    if let Err(e) = ok(unsafe { entry(s.driver.cuMemFreeAsync)?(p, st.cast()) }) {
        s.tables().restore_alloc(p, range);
        return Err(e);
    }
    super::ipc::freed(s, p);
    Ok(Reply::default())
}

/// Takes the allocation based at `p` out of the live ranges before the
/// driver frees it: once freed, the driver may give the same address to
/// another lane's allocation at once, whose range must not be the one
/// removed afterwards. The caller puts it back if the driver refuses.
fn take_alloc(s: &Session, p: DevPtr, what: &str) -> Result<Range, Status> {
    s.tables().take_alloc(p).ok_or_else(|| {
        tracing::info!("{what}({p:#x}): not the base of a live allocation");
        INVALID_VALUE
    })
}
