//! Stream capture and graphs.
//!
//! The driver keeps every capture's state; the client only counts the
//! captures it began and has not ended ([`Session::captures`]). While one is
//! open nothing is posted: during capture the driver refuses at once what
//! breaks the capture's rules (a synchronizing call under global mode, work
//! on the legacy stream that would join a capturing stream, a call on an
//! invalidated capture), and only a call that waits for its reply returns
//! that answer where the application expects it. Each call runs on the
//! calling thread's lane, whose worker thread keeps the thread's capture
//! mode, so thread-local, global and relaxed captures behave as natively.
//! Graph creation, instantiation, launch and destruction are table calls.

use std::sync::atomic::Ordering;

use vgpu_abi::types::{CUgraph, CUstream, CUstreamCaptureMode};

use vgpu_proto::{
    exchange_capture_mode, stream_begin_capture, stream_begin_capture_v2,
    stream_begin_capture_v2_ptsz, stream_end_capture, stream_end_capture_ptsz, stream_is_capturing,
    RequestMessage,
};
use zerocopy::little_endian::{U32, U64};

use super::stream::{id, id_ptsz};
use crate::edge::{non_null, wire, write_out, CuError, CuResult};
use crate::runtime::{runtime, Session};

/// Notes a capture begun on stream `sid`.
fn opened(s: &Session, sid: u64) {
    *s.objects().capturing.entry(sid).or_default() += 1;
    s.captures.fetch_add(1, Ordering::SeqCst);
}

/// Notes the end of a capture on stream `sid`: `cuStreamEndCapture` ends it
/// whatever it returns (an invalidated or unjoined capture included),
/// except on a thread that may not end it.
fn closed(s: &Session, sid: u64, result: &CuResult<()>) {
    if matches!(result, Err(e) if *e == CuError::STREAM_CAPTURE_WRONG_THREAD) {
        return;
    }
    let mut o = s.objects();
    if let Some(n) = o.capturing.get_mut(&sid) {
        *n -= 1;
        if *n == 0 {
            o.capturing.remove(&sid);
        }
        s.captures.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Refuses an asynchronous copy between device memory and pageable host
/// memory on stream `sid` while it is capturing: such a copy goes through a
/// buffer of the worker that lives only for the call, which a captured node
/// would name at every launch. The driver would capture it and read or
/// write the application's memory at each launch, which the worker cannot
/// reach; the application can use pinned memory (`cuMemHostAlloc`), which
/// both processes map. Costs a round trip only while a capture is open.
pub(crate) fn refuse_pageable_capture(s: &Session, sid: u64) -> CuResult<()> {
    if s.captures.load(Ordering::SeqCst) == 0 {
        return Ok(());
    }
    let r = stream_is_capturing::Request {
        hstream: U64::new(sid),
    };
    let (rep, _) = s.request(&r, &[])?;
    if rep.capture_status.get() != 0 {
        crate::log::line(format_args!(
            "an asynchronous copy to or from pageable host memory on a capturing stream \
             is not supported by vgpu: use pinned memory (cuMemHostAlloc)"
        ));
        return Err(CuError::STREAM_CAPTURE_UNSUPPORTED);
    }
    Ok(())
}

/// `cuStreamBeginCapture_v2`.
pub fn stream_begin_capture_v2(st: CUstream, mode: CUstreamCaptureMode) -> CuResult<()> {
    let s = runtime().session()?;
    let r = stream_begin_capture_v2::Request {
        hstream: U64::new(id(st)),
        mode: U32::new(mode.0),
    };
    s.request(&r, &[])?;
    opened(s, id(st));
    Ok(())
}

/// `cuStreamBeginCapture_v2_ptsz`: the NULL stream is the thread's own.
pub fn stream_begin_capture_v2_ptsz(st: CUstream, mode: CUstreamCaptureMode) -> CuResult<()> {
    let s = runtime().session()?;
    let r = stream_begin_capture_v2_ptsz::Request {
        hstream: U64::new(id(st)),
        mode: U32::new(mode.0),
    };
    s.request(&r, &[])?;
    opened(s, id_ptsz(st));
    Ok(())
}

/// `cuStreamBeginCapture`, the first form: global mode.
pub fn stream_begin_capture(st: CUstream) -> CuResult<()> {
    let s = runtime().session()?;
    let r = stream_begin_capture::Request {
        hstream: U64::new(id(st)),
    };
    s.request(&r, &[])?;
    opened(s, id(st));
    Ok(())
}

/// `cuStreamEndCapture`.
///
/// # Safety
/// `ph` must be NULL or valid for a write.
pub unsafe fn stream_end_capture(st: CUstream, ph: *mut CUgraph) -> CuResult<()> {
    let r = stream_end_capture::Request {
        hstream: U64::new(id(st)),
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { end_capture(&r, id(st), ph, |rep| rep.ph_graph.get()) }
}

/// `cuStreamEndCapture_ptsz`.
///
/// # Safety
/// As for [`stream_end_capture`].
pub unsafe fn stream_end_capture_ptsz(st: CUstream, ph: *mut CUgraph) -> CuResult<()> {
    let r = stream_end_capture_ptsz::Request {
        hstream: U64::new(id(st)),
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { end_capture(&r, id_ptsz(st), ph, |rep| rep.ph_graph.get()) }
}

/// Ends the capture on stream `sid` with request `r`; the graph's id is
/// `graph(reply)`. An invalidated capture writes NULL, as the driver does.
///
/// # Safety
/// `ph` must be NULL or valid for a write.
unsafe fn end_capture<M: RequestMessage>(
    r: &M,
    sid: u64,
    ph: *mut CUgraph,
    graph: impl FnOnce(&M::Reply) -> u64,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(ph)?;
    let result = s.request(r, &[]);
    closed(s, sid, &result.as_ref().map(drop).map_err(|e| *e));
    let id = match result {
        Ok((rep, _)) => graph(&rep),
        Err(e) if e == CuError::STREAM_CAPTURE_INVALIDATED => {
            // SAFETY: checked non-NULL; the application's out-pointer.
            unsafe { write_out(ph, std::ptr::null_mut()) }?;
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(ph, wire::handle(id)) }
}

/// `cuThreadExchangeStreamCaptureMode`: the thread's lane keeps the mode,
/// as the driver keeps it per thread.
///
/// # Safety
/// `mode` must be NULL or valid for a read and a write.
pub unsafe fn exchange_capture_mode(mode: *mut CUstreamCaptureMode) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(mode)?;
    // SAFETY: checked non-NULL; the application's pointer, valid for a read.
    let want = unsafe { mode.read() };
    let r = exchange_capture_mode::Request {
        mode: U32::new(want.0),
    };
    let (rep, _) = s.request(&r, &[])?;
    // SAFETY: checked non-NULL; the application's pointer.
    unsafe { write_out(mode, CUstreamCaptureMode(rep.mode.get())) }
}
