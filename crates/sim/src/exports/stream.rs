//! Streams: creation and destruction, and the model functions of the
//! generated stream exports (`generated/mod.rs`).

use std::ffi::{c_int, c_uint, c_ulonglong};
use std::ptr;

use crate::context;
use crate::cu::{
    CUcontext, CUdevice, CUdeviceptr, CUevent, CUgreenCtx, CUresult, CUstream, CUstreamAttrID,
    CUstreamAttrValue, CUstreamCaptureStatus,
};
use crate::error::{err, Res};
use crate::event;
use crate::ffi::{handle, key, run, Out};
use crate::state;
use crate::stream;

/// The stream key a `_ptsz` form means: NULL is the per-thread default
/// stream (`CU_STREAM_PER_THREAD`).
pub(crate) fn ptsz(h: CUstream) -> usize {
    match key(h) {
        0 => 2,
        k => k,
    }
}

/// `cuStreamCreate`.
///
/// # Safety
/// `ph_stream` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuStreamCreate(ph_stream: *mut CUstream, flags: c_uint) -> CUresult {
    // SAFETY: same contract.
    unsafe { create_stream("cuStreamCreate", ph_stream, flags, 0) }
}

/// `cuStreamCreateWithPriority`: priorities outside [-5, 0] are clamped.
///
/// # Safety
/// `ph_stream` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuStreamCreateWithPriority(
    ph_stream: *mut CUstream,
    flags: c_uint,
    priority: c_int,
) -> CUresult {
    // SAFETY: same contract.
    unsafe { create_stream("cuStreamCreateWithPriority", ph_stream, flags, priority) }
}

/// # Safety
/// `ph_stream` must be NULL or valid for writes.
unsafe fn create_stream(
    name: &str,
    ph_stream: *mut CUstream,
    flags: c_uint,
    priority: c_int,
) -> CUresult {
    run(name, || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(ph_stream, "phStream") }?;
        let k = stream::create(&mut sim.lock(), flags, priority)?;
        out.write(handle(k));
        Ok(())
    })
}

/// `cuStreamDestroy_v2`.
#[no_mangle]
pub extern "C" fn cuStreamDestroy_v2(h_stream: CUstream) -> CUresult {
    run("cuStreamDestroy_v2", || {
        stream::destroy(&mut state::sim()?.lock(), key(h_stream))
    })
}

/// `cuStreamGetFlags`.
pub(crate) fn stream_get_flags(h_stream: CUstream, flags: Out<c_uint>) -> Res<()> {
    flags.write(stream::flags(&state::sim()?.lock(), key(h_stream))?);
    Ok(())
}

/// `cuStreamGetPriority`.
pub(crate) fn stream_get_priority(h_stream: CUstream, priority: Out<c_int>) -> Res<()> {
    priority.write(stream::priority(&state::sim()?.lock(), key(h_stream))?);
    Ok(())
}

/// `cuStreamIsCapturing`: none, active or invalidated (`crate::graph`).
pub(crate) fn stream_is_capturing(
    h_stream: CUstream,
    capture_status: Out<CUstreamCaptureStatus>,
) -> Res<()> {
    let status = crate::graph::status(&state::sim()?.lock(), key(h_stream))?;
    capture_status.write(CUstreamCaptureStatus(status));
    Ok(())
}

/// `cuStreamQuery`: always complete (`CUDA_SUCCESS`) unless the context has a sticky error.
pub(crate) fn stream_query(h_stream: CUstream) -> Res<()> {
    stream::synchronize(&mut state::sim()?.lock(), key(h_stream), true)
}

/// `cuStreamSynchronize`: work already ran; reports the sticky error, if any.
pub(crate) fn stream_synchronize(h_stream: CUstream) -> Res<()> {
    let mut st = state::sim()?.lock();
    crate::printf::flush(&mut st);
    stream::synchronize(&mut st, key(h_stream), false)
}

/// `cuStreamWaitEvent`.
pub(crate) fn stream_wait_event(h_stream: CUstream, h_event: CUevent, flags: c_uint) -> Res<()> {
    event::stream_wait(&state::sim()?.lock(), key(h_stream), key(h_event), flags)
}

/// `cuStreamSynchronize_ptsz`.
pub(crate) fn stream_synchronize_ptsz(h_stream: CUstream) -> Res<()> {
    let mut st = state::sim()?.lock();
    crate::printf::flush(&mut st);
    stream::synchronize(&mut st, ptsz(h_stream), false)
}

/// `cuStreamQuery_ptsz`.
pub(crate) fn stream_query_ptsz(h_stream: CUstream) -> Res<()> {
    stream::synchronize(&mut state::sim()?.lock(), ptsz(h_stream), true)
}

/// `cuStreamWaitEvent_ptsz`.
pub(crate) fn stream_wait_event_ptsz(
    h_stream: CUstream,
    h_event: CUevent,
    flags: c_uint,
) -> Res<()> {
    event::stream_wait(&state::sim()?.lock(), ptsz(h_stream), key(h_event), flags)
}

/// `cuStreamGetFlags_ptsz`.
pub(crate) fn stream_get_flags_ptsz(h_stream: CUstream, flags: Out<c_uint>) -> Res<()> {
    flags.write(stream::flags(&state::sim()?.lock(), ptsz(h_stream))?);
    Ok(())
}

/// `cuStreamGetPriority_ptsz`.
pub(crate) fn stream_get_priority_ptsz(h_stream: CUstream, priority: Out<c_int>) -> Res<()> {
    priority.write(stream::priority(&state::sim()?.lock(), ptsz(h_stream))?);
    Ok(())
}

/// `cuStreamIsCapturing_ptsz`, as `cuStreamIsCapturing`.
pub(crate) fn stream_is_capturing_ptsz(
    h_stream: CUstream,
    capture_status: Out<CUstreamCaptureStatus>,
) -> Res<()> {
    let status = crate::graph::status(&state::sim()?.lock(), ptsz(h_stream))?;
    capture_status.write(CUstreamCaptureStatus(status));
    Ok(())
}

/// `cuStreamAttachMemAsync`: no managed memory exists in the simulator, so after the
/// stream and flag checks every pointer gives `CUDA_ERROR_INVALID_VALUE`, as the driver
/// answers for memory that is not managed.
pub(crate) fn stream_attach_mem_async(
    h_stream: CUstream,
    dptr: CUdeviceptr,
    _length: usize,
    flags: c_uint,
) -> Res<()> {
    stream::attach_mem(&state::sim()?.lock(), key(h_stream), dptr, flags)
}

/// `cuStreamAttachMemAsync_ptsz`.
pub(crate) fn stream_attach_mem_async_ptsz(
    h_stream: CUstream,
    dptr: CUdeviceptr,
    _length: usize,
    flags: c_uint,
) -> Res<()> {
    stream::attach_mem(&state::sim()?.lock(), ptsz(h_stream), dptr, flags)
}

/// `cuStreamCopyAttributes`: `dst` takes every attribute of `src` (same context only).
pub(crate) fn stream_copy_attributes(dst: CUstream, src: CUstream) -> Res<()> {
    stream::copy_attrs(&mut state::sim()?.lock(), key(dst), key(src))
}

/// `cuStreamCopyAttributes_ptsz`.
pub(crate) fn stream_copy_attributes_ptsz(dst: CUstream, src: CUstream) -> Res<()> {
    stream::copy_attrs(&mut state::sim()?.lock(), ptsz(dst), ptsz(src))
}

/// `cuStreamGetAttribute`: the value last set, or the attribute's default.
pub(crate) fn stream_get_attribute(
    h_stream: CUstream,
    attr: CUstreamAttrID,
    value: Out<CUstreamAttrValue>,
) -> Res<()> {
    value.write(stream::get_attr(
        &state::sim()?.lock(),
        key(h_stream),
        attr.0,
    )?);
    Ok(())
}

/// `cuStreamGetAttribute_ptsz`.
pub(crate) fn stream_get_attribute_ptsz(
    h_stream: CUstream,
    attr: CUstreamAttrID,
    value: Out<CUstreamAttrValue>,
) -> Res<()> {
    value.write(stream::get_attr(
        &state::sim()?.lock(),
        ptsz(h_stream),
        attr.0,
    )?);
    Ok(())
}

/// Reads the caller's attribute value and sets it on stream `k`.
///
/// # Safety
/// `value` must be NULL or valid for reads of one `CUstreamAttrValue`.
unsafe fn set_attribute(
    k: usize,
    attr: CUstreamAttrID,
    value: *const CUstreamAttrValue,
) -> Res<()> {
    let sim = state::sim()?;
    if value.is_null() {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "value is NULL");
    }
    // SAFETY: non-NULL, and readable for one value by this function's contract.
    let v = unsafe { ptr::read_unaligned(value) };
    stream::set_attr(&mut sim.lock(), k, attr.0, &v)
}

/// `cuStreamSetAttribute`: checks and keeps the value (priorities are clamped).
///
/// # Safety
/// `param` must be NULL or valid for reads of one `CUstreamAttrValue`.
pub(crate) unsafe fn stream_set_attribute(
    h_stream: CUstream,
    attr: CUstreamAttrID,
    param: *const CUstreamAttrValue,
) -> Res<()> {
    // SAFETY: forwarded from this function's contract.
    unsafe { set_attribute(key(h_stream), attr, param) }
}

/// `cuStreamSetAttribute_ptsz`.
///
/// # Safety
/// `value` must be NULL or valid for reads of one `CUstreamAttrValue`.
pub(crate) unsafe fn stream_set_attribute_ptsz(
    h_stream: CUstream,
    attr: CUstreamAttrID,
    value: *const CUstreamAttrValue,
) -> Res<()> {
    // SAFETY: forwarded from this function's contract.
    unsafe { set_attribute(ptsz(h_stream), attr, value) }
}

/// `cuStreamGetCtx`: the stream's context (the current one for implicit streams).
pub(crate) fn stream_get_ctx(h_stream: CUstream, pctx: Out<CUcontext>) -> Res<()> {
    pctx.write(handle(stream::context_of(
        &state::sim()?.lock(),
        key(h_stream),
    )?));
    Ok(())
}

/// `cuStreamGetCtx_ptsz`.
pub(crate) fn stream_get_ctx_ptsz(h_stream: CUstream, pctx: Out<CUcontext>) -> Res<()> {
    pctx.write(handle(stream::context_of(
        &state::sim()?.lock(),
        ptsz(h_stream),
    )?));
    Ok(())
}

/// `cuStreamGetCtx_v2`: the simulator has no green contexts, so `*pGreenCtx` is NULL.
pub(crate) fn stream_get_ctx_v2(
    h_stream: CUstream,
    pctx: Out<CUcontext>,
    p_green_ctx: Out<CUgreenCtx>,
) -> Res<()> {
    stream_get_ctx(h_stream, pctx)?;
    p_green_ctx.write(ptr::null_mut());
    Ok(())
}

/// `cuStreamGetCtx_v2_ptsz`.
pub(crate) fn stream_get_ctx_v2_ptsz(
    h_stream: CUstream,
    pctx: Out<CUcontext>,
    p_green_ctx: Out<CUgreenCtx>,
) -> Res<()> {
    stream_get_ctx_ptsz(h_stream, pctx)?;
    p_green_ctx.write(ptr::null_mut());
    Ok(())
}

fn device_of(k: usize) -> Res<CUdevice> {
    let sim = state::sim()?;
    let st = sim.lock();
    let d = context::live(&st, stream::context_of(&st, k)?)?.device;
    // Device ordinals are below MAX_DEVICES (8).
    Ok(CUdevice::try_from(d).unwrap_or(0))
}

/// `cuStreamGetDevice`: the device of the stream's context.
pub(crate) fn stream_get_device(h_stream: CUstream, device: Out<CUdevice>) -> Res<()> {
    device.write(device_of(key(h_stream))?);
    Ok(())
}

/// `cuStreamGetDevice_ptsz`.
pub(crate) fn stream_get_device_ptsz(h_stream: CUstream, device: Out<CUdevice>) -> Res<()> {
    device.write(device_of(ptsz(h_stream))?);
    Ok(())
}

/// `cuStreamGetId`: unique for the life of the process.
pub(crate) fn stream_get_id(h_stream: CUstream, stream_id: Out<c_ulonglong>) -> Res<()> {
    stream_id.write(stream::id(&mut state::sim()?.lock(), key(h_stream))?);
    Ok(())
}

/// `cuStreamGetId_ptsz`.
pub(crate) fn stream_get_id_ptsz(h_stream: CUstream, stream_id: Out<c_ulonglong>) -> Res<()> {
    stream_id.write(stream::id(&mut state::sim()?.lock(), ptsz(h_stream))?);
    Ok(())
}
