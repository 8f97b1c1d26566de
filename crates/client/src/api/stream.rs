//! Streams. Handles are ids minted here; the worker maps them.
//!
//! Creation, destruction and `cuStreamWaitEvent` are posted (no round trip)
//! when the client can check here what the driver checks at once: a live
//! current context, live handles of that context, known flags. Anything
//! else waits for the worker's answer, which is the driver's.
//! `cuStreamIsCapturing` is answered here while no capture is open. The
//! other stream calls are generated from the remoting table.

use std::ffi::{c_int, c_uint};

use vgpu_abi::types::{CUevent, CUstream, CUstreamCaptureStatus};
use vgpu_proto::{
    stream_attach_mem_async, stream_attach_mem_async_ptsz, stream_create, stream_destroy,
    stream_is_capturing, stream_is_capturing_ptsz, stream_wait_event, stream_wait_event_ptsz,
};
use zerocopy::little_endian::{I32, U32, U64};

use crate::context::current;
use crate::edge::{non_null, wire, write_out, CuResult};
use crate::lane::Follows;
use crate::runtime::{runtime, Kind};

pub(crate) use crate::lane::PER_THREAD_STREAM;
/// `CU_STREAM_NON_BLOCKING`, the only stream flag.
const STREAM_FLAGS: c_uint = 1;
/// `CU_EVENT_WAIT_EXTERNAL`, the only wait flag.
const WAIT_FLAGS: c_uint = 1;

/// The stream id the wire carries: handles and the sentinels 0/1/2 as they are.
pub fn id(s: CUstream) -> u64 {
    s as usize as u64
}

/// `_ptsz` forms: the NULL stream means the per-thread default stream.
pub fn id_ptsz(s: CUstream) -> u64 {
    if s.is_null() {
        PER_THREAD_STREAM
    } else {
        id(s)
    }
}

/// `cuStreamCreate` and `cuStreamCreateWithPriority`.
///
/// # Safety
/// `ph` must be NULL or valid for a write.
pub unsafe fn create(ph: *mut CUstream, flags: c_uint, priority: c_int) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(ph)?;
    let sid = runtime().mint(Kind::Stream);
    let ctx = current();
    let postable = flags & !STREAM_FLAGS == 0 && s.objects().contexts.contains_key(&ctx);
    let r = stream_create::Request {
        stream: U64::new(sid),
        flags: U32::new(flags),
        priority: I32::new(priority),
    };
    s.post_or_request(&r, &[], postable, Follows::Everything)?;
    s.objects().streams.insert(sid, ctx);
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(ph, wire::handle(sid)) }
}

/// `cuStreamDestroy_v2`: posted when it is a live stream of the current
/// context, and forgotten here either way.
pub fn destroy(st: CUstream) -> CuResult<()> {
    let s = runtime().session()?;
    let (ctx, sid) = (current(), id(st));
    let postable = {
        let mut o = s.objects();
        let ok = o.contexts.contains_key(&ctx) && o.streams.get(&sid) == Some(&ctx);
        if ok {
            o.streams.remove(&sid);
        }
        ok
    };
    let r = stream_destroy::Request {
        stream: U64::new(sid),
    };
    s.post_or_request(&r, &[], postable, Follows::Everything)?;
    s.objects().streams.remove(&sid);
    Ok(())
}

/// Whether a wait of stream `sid` for event `e` with `flags` may be posted.
fn wait_postable(sid: u64, e: CUevent, flags: c_uint) -> CuResult<bool> {
    let s = runtime().session()?;
    let ctx = current();
    let o = s.objects();
    Ok(flags & !WAIT_FLAGS == 0 && o.stream_ok(ctx, sid) && o.event_ok(ctx, e as usize as u64))
}

/// `cuStreamWaitEvent`: it looks at other streams' work, so it follows
/// everything posted before it.
pub fn stream_wait_event(st: CUstream, e: CUevent, flags: c_uint) -> CuResult<()> {
    let postable = wait_postable(id(st), e, flags)?;
    let r = stream_wait_event::Request {
        hstream: U64::new(id(st)),
        hevent: U64::new(e as usize as u64),
        flags: U32::new(flags),
    };
    let follows = Follows::AllThenStream(id(st));
    runtime()
        .session()?
        .post_or_request(&r, &[], postable, follows)
}

/// `cuStreamWaitEvent_ptsz`.
pub fn stream_wait_event_ptsz(st: CUstream, e: CUevent, flags: c_uint) -> CuResult<()> {
    let postable = wait_postable(id_ptsz(st), e, flags)?;
    let r = stream_wait_event_ptsz::Request {
        hstream: U64::new(id(st)),
        hevent: U64::new(e as usize as u64),
        flags: U32::new(flags),
    };
    let follows = Follows::AllThenStream(id_ptsz(st));
    runtime()
        .session()?
        .post_or_request(&r, &[], postable, follows)
}

/// Waits for every posted call on stream `sid` (the `_ptds` forms).
pub fn synchronize(sid: u64) -> CuResult<()> {
    let s = runtime().session()?;
    let r = vgpu_proto::stream_synchronize::Request {
        hstream: U64::new(sid),
    };
    s.request(&r, &[]).map(drop)
}

/// `cuStreamAttachMemAsync`: answered here for managed memory
/// (`super::managed::attach`), by the worker's driver for anything else.
///
/// # Safety
/// No pointer is dereferenced; the arguments are the application's.
pub unsafe fn stream_attach_mem_async(
    h: CUstream,
    dptr: vgpu_abi::types::CUdeviceptr,
    length: usize,
    flags: c_uint,
) -> CuResult<()> {
    attach_mem(h, id(h), dptr, length, flags, false)
}

/// `cuStreamAttachMemAsync_ptsz`.
///
/// # Safety
/// As for [`stream_attach_mem_async`].
pub unsafe fn stream_attach_mem_async_ptsz(
    h: CUstream,
    dptr: vgpu_abi::types::CUdeviceptr,
    length: usize,
    flags: c_uint,
) -> CuResult<()> {
    attach_mem(h, id_ptsz(h), dptr, length, flags, true)
}

fn attach_mem(
    h: CUstream,
    sid: u64,
    dptr: u64,
    length: usize,
    flags: c_uint,
    ptsz: bool,
) -> CuResult<()> {
    let s = runtime().session()?;
    if let Some(result) = super::managed::attach(sid, dptr, length, flags) {
        return result;
    }
    let hstream = U64::new(h as usize as u64);
    let (dptr, length, flags) = (U64::new(dptr), U64::new(length as u64), U32::new(flags));
    let back = if ptsz {
        let r = stream_attach_mem_async_ptsz::Request {
            hstream,
            dptr,
            length,
            flags,
        };
        s.request(&r, &[])?.1
    } else {
        let r = stream_attach_mem_async::Request {
            hstream,
            dptr,
            length,
            flags,
        };
        s.request(&r, &[])?.1
    };
    crate::call::all_read(s, &back, 0)
}

/// `cuStreamIsCapturing`. PyTorch asks it before much of its work, a round
/// trip each. While this session has no capture open, and the stream is
/// one the driver takes (a sentinel, or a live stream of the current
/// context), no stream can be capturing: the answer is given here. Any
/// other case is the worker's (the driver's) to answer.
///
/// # Safety
/// `status` is NULL or valid for a write, as the CUDA API requires.
pub unsafe fn stream_is_capturing(
    st: CUstream,
    status: *mut CUstreamCaptureStatus,
) -> CuResult<()> {
    let r = stream_is_capturing::Request {
        hstream: U64::new(id(st)),
    };
    // SAFETY: as this function's.
    unsafe {
        answer_capturing(status, id(st), |s| {
            Ok(s.request(&r, &[])?.0.capture_status.get())
        })
    }
}

/// `cuStreamIsCapturing_ptsz`: as [`stream_is_capturing`], NULL being the
/// thread's own stream.
///
/// # Safety
/// As [`stream_is_capturing`].
pub unsafe fn stream_is_capturing_ptsz(
    st: CUstream,
    status: *mut CUstreamCaptureStatus,
) -> CuResult<()> {
    let r = stream_is_capturing_ptsz::Request {
        hstream: U64::new(id(st)),
    };
    // SAFETY: as this function's.
    unsafe {
        answer_capturing(status, id_ptsz(st), |s| {
            Ok(s.request(&r, &[])?.0.capture_status.get())
        })
    }
}

/// Writes whether stream `sid` is capturing to `status`: none while no
/// capture is open and the stream is one the driver takes, else what
/// `ask` gets from the worker.
///
/// # Safety
/// `status` is NULL or valid for a write.
unsafe fn answer_capturing(
    status: *mut CUstreamCaptureStatus,
    sid: u64,
    ask: impl FnOnce(&crate::runtime::Session) -> CuResult<u32>,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(status)?;
    let answer = if no_capture_open(s, sid) {
        CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE
    } else {
        CUstreamCaptureStatus(ask(s)?)
    };
    // SAFETY: checked non-NULL; the caller's out-pointer.
    unsafe { write_out(status, answer) }
}

/// Whether stream `sid` is surely not capturing: no capture of this session
/// is open and the driver would take the stream in the current context.
fn no_capture_open(s: &crate::runtime::Session, sid: u64) -> bool {
    s.captures.load(std::sync::atomic::Ordering::SeqCst) == 0
        && s.objects().stream_ok(current(), sid)
}
