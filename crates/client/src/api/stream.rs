//! Streams and events. Handles are ids minted here; the worker maps them.

use std::ffi::{c_int, c_uint};

use vgpu_abi::types::{CUevent, CUstream};
use vgpu_proto::Op;

use crate::edge::{non_null, wire, write_out, CuResult};
use crate::runtime::{runtime, Kind};

const PER_THREAD_STREAM: u64 = 2;

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
    s.call(
        Op::StreamCreate,
        &[sid, u64::from(flags), priority as i64 as u64],
        &[],
        None,
    )?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(ph, wire::handle(sid)) }
}

pub fn destroy(st: CUstream) -> CuResult<()> {
    let s = runtime().session()?;
    s.call(Op::StreamDestroy, &[id(st)], &[], None).map(drop)
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
    s.call(
        Op::StreamWaitEvent,
        &[sid, event_id(e), u64::from(flags)],
        &[],
        None,
    )
    .map(drop)
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
    s.call(Op::EventCreate, &[eid, u64::from(flags)], &[], None)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(ph, wire::handle(eid)) }
}

pub fn event_destroy(e: CUevent) -> CuResult<()> {
    let s = runtime().session()?;
    s.call(Op::EventDestroy, &[event_id(e)], &[], None)
        .map(drop)
}

pub fn event_record(e: CUevent, sid: u64) -> CuResult<()> {
    let s = runtime().session()?;
    s.call(Op::EventRecord, &[event_id(e), sid], &[], None)
        .map(drop)
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
