//! Events raised inside a call the client waited for: log callbacks that
//! the worker's driver ran inside the call, on the lane's thread.
//!
//! Driver 580 runs a log callback inside the failing call, on the calling
//! thread, before the call returns. The worker's lane holds such events
//! and marks the reply with `reply_flags::EVENTS`; the calling thread then
//! takes them with `TakeEvents` on the same lane and, once its lane is free
//! again, runs the application's functions itself
//! ([`crate::callback::run_held`]) before the call returns. A reply without
//! the flag costs one field check. See `docs/protocol.md`, "Events".

use vgpu_proto::{take_events, Op};

use super::{receive, Lane, LaneError};
use crate::runtime::Session;

impl Session {
    /// Takes the events the worker's lane holds after a reply with
    /// `reply_flags::EVENTS` to a request sent with fence `order` (already
    /// reached, so this request waits for nothing). Empty when the lane
    /// failed (the session is then lost) or the worker refused.
    pub(super) fn take_events(&self, lane: &mut Lane, ctx: u64, order: u32) -> Vec<u8> {
        let taken = (|| -> Result<_, LaneError> {
            let meta = lane.meta(Op::TakeEvents, ctx, order);
            lane.send(&meta, &[], &[])?;
            let (head, fixed, blob) = receive(&mut lane.io, None)?;
            Ok((head.status.get(), fixed, blob))
        })();
        let (status, fixed, blob) = match taken {
            Ok(t) => t,
            Err(e) => {
                self.fail(Op::TakeEvents.name(), e);
                return Vec::new();
            }
        };
        let Ok(reply) = vgpu_proto::message::decode::<take_events::Reply>(&fixed, blob.len())
        else {
            crate::log::line(format_args!(
                "TakeEvents: status {status}, no reply; events skipped"
            ));
            return Vec::new();
        };
        let dropped = reply.dropped.get();
        if dropped > 0 {
            crate::log::line(format_args!(
                "{dropped} log event(s) of one call were past the worker's bound and dropped"
            ));
        }
        blob
    }
}
