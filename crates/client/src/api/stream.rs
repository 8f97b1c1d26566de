//! Streams and events. Handles are ids minted here; the worker maps them.
//!
//! Creation, destruction, `cuEventRecord` and `cuStreamWaitEvent` are posted
//! (no round trip) when the client can check here what the driver checks at
//! once: a live current context, live handles of that context, known flags.
//! Anything else waits for the worker's answer, which is the driver's.

use std::ffi::{c_int, c_uint};

use vgpu_abi::types::{CUevent, CUstream};
use vgpu_proto::Op;

use crate::context::current;
use crate::edge::{non_null, wire, write_out, CuResult};
use crate::lane::Follows;
use crate::runtime::{runtime, Kind, Session};

pub(super) use crate::lane::PER_THREAD_STREAM;
/// `CU_STREAM_NON_BLOCKING`, the only stream flag.
const STREAM_FLAGS: c_uint = 1;
/// `CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS`.
const EVENT_FLAGS: c_uint = 7;
const EVENT_DISABLE_TIMING: c_uint = 2;
const EVENT_INTERPROCESS: c_uint = 4;
/// `CU_EVENT_WAIT_EXTERNAL`, the only wait flag.
const WAIT_FLAGS: c_uint = 1;
/// `CU_EVENT_RECORD_EXTERNAL`, the only record flag.
const RECORD_FLAGS: c_uint = 1;

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

fn event_id(e: CUevent) -> u64 {
    e as usize as u64
}

pub unsafe fn create(ph: *mut CUstream, flags: c_uint, priority: c_int) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(ph)?;
    let sid = runtime().mint(Kind::Stream);
    let ctx = current();
    let postable = flags & !STREAM_FLAGS == 0 && s.objects().contexts.contains_key(&ctx);
    let args = [sid, u64::from(flags), priority as i64 as u64];
    s.post_or_call(Op::StreamCreate, &args, &[], postable, Follows::Everything)?;
    s.objects().streams.insert(sid, ctx);
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(ph, wire::handle(sid)) }
}

/// Destroys stream or event `id` of `live` (posted when it is a live handle
/// of the current context), forgetting it locally.
fn destroy_handle(
    s: &Session,
    op: Op,
    id: u64,
    live: fn(&mut crate::objects::Objects) -> &mut std::collections::HashMap<u64, u64>,
) -> CuResult<()> {
    let ctx = current();
    let postable = {
        let mut o = s.objects();
        let ok = o.contexts.contains_key(&ctx) && live(&mut o).get(&id) == Some(&ctx);
        if ok {
            live(&mut o).remove(&id);
        }
        ok
    };
    s.post_or_call(op, &[id], &[], postable, Follows::Everything)?;
    live(&mut s.objects()).remove(&id);
    Ok(())
}

pub fn destroy(st: CUstream) -> CuResult<()> {
    let s = runtime().session()?;
    destroy_handle(s, Op::StreamDestroy, id(st), |o| &mut o.streams)
}

pub fn synchronize(sid: u64) -> CuResult<()> {
    let s = runtime().session()?;
    s.call(Op::StreamSynchronize, &[sid], &[], None).map(drop)
}

pub fn query(sid: u64) -> CuResult<()> {
    let s = runtime().session()?;
    s.call(Op::StreamQuery, &[sid], &[], None).map(drop)
}

pub fn wait_event(sid: u64, e: CUevent, flags: c_uint) -> CuResult<()> {
    let s = runtime().session()?;
    let (ctx, eid) = (current(), event_id(e));
    let postable = flags & !WAIT_FLAGS == 0 && {
        let o = s.objects();
        o.stream_ok(ctx, sid) && o.event_ok(ctx, eid)
    };
    let args = [sid, eid, u64::from(flags)];
    s.post_or_call(
        Op::StreamWaitEvent,
        &args,
        &[],
        postable,
        Follows::AllThenStream(sid),
    )
}

pub unsafe fn get_flags(sid: u64, flags: *mut c_uint) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(flags)?;
    let (outs, _) = s.call(Op::StreamGetFlags, &[sid], &[], None)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(flags, wire::u32(outs[0])) }
}

pub unsafe fn get_priority(sid: u64, prio: *mut c_int) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(prio)?;
    let (outs, _) = s.call(Op::StreamGetPriority, &[sid], &[], None)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(prio, wire::i32(outs[0])) }
}

pub unsafe fn event_create(ph: *mut CUevent, flags: c_uint) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(ph)?;
    let eid = runtime().mint(Kind::Event);
    let ctx = current();
    let known_flags = flags & !EVENT_FLAGS == 0
        && (flags & EVENT_INTERPROCESS == 0 || flags & EVENT_DISABLE_TIMING != 0);
    let postable = known_flags && s.objects().contexts.contains_key(&ctx);
    let follows = Follows::Everything;
    s.post_or_call(
        Op::EventCreate,
        &[eid, u64::from(flags)],
        &[],
        postable,
        follows,
    )?;
    s.objects().events.insert(eid, ctx);
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(ph, wire::handle(eid)) }
}

pub fn event_destroy(e: CUevent) -> CuResult<()> {
    let s = runtime().session()?;
    destroy_handle(s, Op::EventDestroy, event_id(e), |o| &mut o.events)
}

pub fn event_record(e: CUevent, sid: u64) -> CuResult<()> {
    let s = runtime().session()?;
    let (ctx, eid) = (current(), event_id(e));
    let postable = {
        let o = s.objects();
        o.stream_ok(ctx, sid) && o.event_ok(ctx, eid)
    };
    s.post_or_call(
        Op::EventRecord,
        &[eid, sid],
        &[],
        postable,
        Follows::AllThenStream(sid),
    )
}

pub fn event_synchronize(e: CUevent) -> CuResult<()> {
    let s = runtime().session()?;
    s.call(Op::EventSynchronize, &[event_id(e)], &[], None)
        .map(drop)
}

pub fn event_query(e: CUevent) -> CuResult<()> {
    let s = runtime().session()?;
    s.call(Op::EventQuery, &[event_id(e)], &[], None).map(drop)
}

pub unsafe fn elapsed(ms: *mut f32, start: CUevent, end: CUevent) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(ms)?;
    let (outs, _) = s.call(
        Op::EventElapsedTime,
        &[event_id(start), event_id(end)],
        &[],
        None,
    )?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(ms, f32::from_bits(wire::u32(outs[0]))) }
}

pub fn event_record_with_flags(e: CUevent, sid: u64, flags: c_uint) -> CuResult<()> {
    let s = runtime().session()?;
    let (ctx, eid) = (current(), event_id(e));
    let postable = flags & !RECORD_FLAGS == 0 && {
        let o = s.objects();
        o.stream_ok(ctx, sid) && o.event_ok(ctx, eid)
    };
    let args = [eid, sid, u64::from(flags)];
    let follows = Follows::AllThenStream(sid);
    s.post_or_call(Op::EventRecordWithFlags, &args, &[], postable, follows)
}
