//! Events. Handles are ids minted here; the worker maps them.
//!
//! Creation, destruction and records are posted (no round trip) when the
//! client can check here what the driver checks at once: a live current
//! context, live handles of that context, known flags. Anything else waits
//! for the worker's answer, which is the driver's. Waiting for, querying
//! and timing events are generated from the remoting table.

use std::ffi::c_uint;

use vgpu_abi::types::{CUevent, CUstream};
use vgpu_proto::{
    event_create, event_destroy, event_record, event_record_ptsz, event_record_with_flags,
    event_record_with_flags_ptsz,
};
use zerocopy::little_endian::{U32, U64};

use super::stream::{id, id_ptsz};
use crate::context::current;
use crate::edge::{non_null, wire, write_out, CuResult};
use crate::lane::Follows;
use crate::runtime::{runtime, Kind};

/// `CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS`.
const EVENT_FLAGS: c_uint = 7;
const EVENT_DISABLE_TIMING: c_uint = 2;
const EVENT_INTERPROCESS: c_uint = 4;
/// `CU_EVENT_RECORD_EXTERNAL`, the only record flag.
const RECORD_FLAGS: c_uint = 1;

fn event_id(e: CUevent) -> u64 {
    e as usize as u64
}

/// `cuEventCreate`.
///
/// # Safety
/// `ph` must be NULL or valid for a write.
pub unsafe fn create(ph: *mut CUevent, flags: c_uint) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(ph)?;
    let eid = runtime().mint(Kind::Event);
    let ctx = current();
    let known_flags = flags & !EVENT_FLAGS == 0
        && (flags & EVENT_INTERPROCESS == 0 || flags & EVENT_DISABLE_TIMING != 0);
    let postable = known_flags && s.objects().contexts.contains_key(&ctx);
    let r = event_create::Request {
        event: U64::new(eid),
        flags: U32::new(flags),
    };
    s.post_or_request(&r, &[], postable, Follows::Everything)?;
    s.objects().events.insert(eid, ctx);
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(ph, wire::handle(eid)) }
}

/// `cuEventDestroy_v2`: posted when it is a live event of the current
/// context, and forgotten here either way.
pub fn destroy(e: CUevent) -> CuResult<()> {
    let s = runtime().session()?;
    let (ctx, eid) = (current(), event_id(e));
    let postable = {
        let mut o = s.objects();
        let ok = o.contexts.contains_key(&ctx) && o.events.get(&eid) == Some(&ctx);
        if ok {
            o.events.remove(&eid);
        }
        ok
    };
    let r = event_destroy::Request {
        event: U64::new(eid),
    };
    s.post_or_request(&r, &[], postable, Follows::Everything)?;
    s.objects().events.remove(&eid);
    Ok(())
}

/// Whether recording event `e` on stream `sid` may be posted.
fn record_postable(sid: u64, e: CUevent, flags: c_uint) -> CuResult<bool> {
    let s = runtime().session()?;
    let ctx = current();
    let o = s.objects();
    Ok(flags & !RECORD_FLAGS == 0 && o.stream_ok(ctx, sid) && o.event_ok(ctx, event_id(e)))
}

/// `cuEventRecord`: it marks the work of other threads too, so it follows
/// everything posted before it.
pub fn event_record(e: CUevent, st: CUstream) -> CuResult<()> {
    let postable = record_postable(id(st), e, 0)?;
    let r = event_record::Request {
        hevent: U64::new(event_id(e)),
        hstream: U64::new(id(st)),
    };
    let follows = Follows::AllThenStream(id(st));
    runtime()
        .session()?
        .post_or_request(&r, &[], postable, follows)
}

/// `cuEventRecord_ptsz`.
pub fn event_record_ptsz(e: CUevent, st: CUstream) -> CuResult<()> {
    let postable = record_postable(id_ptsz(st), e, 0)?;
    let r = event_record_ptsz::Request {
        hevent: U64::new(event_id(e)),
        hstream: U64::new(id(st)),
    };
    let follows = Follows::AllThenStream(id_ptsz(st));
    runtime()
        .session()?
        .post_or_request(&r, &[], postable, follows)
}

/// `cuEventRecordWithFlags`.
pub fn event_record_with_flags(e: CUevent, st: CUstream, flags: c_uint) -> CuResult<()> {
    let postable = record_postable(id(st), e, flags)?;
    let r = event_record_with_flags::Request {
        hevent: U64::new(event_id(e)),
        hstream: U64::new(id(st)),
        flags: U32::new(flags),
    };
    let follows = Follows::AllThenStream(id(st));
    runtime()
        .session()?
        .post_or_request(&r, &[], postable, follows)
}

/// `cuEventRecordWithFlags_ptsz`.
pub fn event_record_with_flags_ptsz(e: CUevent, st: CUstream, flags: c_uint) -> CuResult<()> {
    let postable = record_postable(id_ptsz(st), e, flags)?;
    let r = event_record_with_flags_ptsz::Request {
        hevent: U64::new(event_id(e)),
        hstream: U64::new(id(st)),
        flags: U32::new(flags),
    };
    let follows = Follows::AllThenStream(id_ptsz(st));
    runtime()
        .session()?
        .post_or_request(&r, &[], postable, follows)
}
