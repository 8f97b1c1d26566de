//! Synchronous copies as several calls on the calling thread's lane, with
//! some in flight at once: pieces that carry their bytes
//! ([`Session::call_pieces`]) and calls on shared staging memory
//! ([`Session::call_window`]).

use std::sync::atomic::Ordering;

use vgpu_proto::Op;

use super::{LaneError, WINDOW};
use crate::edge::{CuError, CuResult};
use crate::runtime::Session;

/// One piece of a synchronous copy for [`Session::call_pieces`].
pub(crate) struct Piece<'a> {
    /// The request's fixed part.
    pub fixed: Vec<u8>,
    /// Bytes sent with the request.
    pub blob: &'a [u8],
    /// Where the reply's bytes go (exactly as long as them).
    pub sink: Option<&'a mut [u8]>,
}

impl Session {
    /// Runs the `pieces` of one synchronous copy as calls of `op` on the
    /// calling thread's lane, with up to [`WINDOW`] of them in flight: the
    /// worker runs one piece while the next ones travel. None is posted (no
    /// ticket held: a synchronous copy blocks in the driver, ADR 0004); each
    /// gets its reply, in order.
    ///
    /// The first piece goes alone: it is the call that reports an earlier
    /// posted call's failure, and then no other piece may run. After a
    /// failure no further piece is sent; the replies of those in flight are
    /// read, and the first failure is returned.
    pub(crate) fn call_pieces(&self, op: Op, pieces: Vec<Piece<'_>>) -> CuResult<()> {
        if self.dead.load(Ordering::SeqCst) {
            return Err(CuError::DEVICE_UNAVAILABLE);
        }
        let ctx = crate::context::current();
        self.lanes.count_round_trips(pieces.len() as u64);
        let mut events = None;
        let done = self.on_lane(|lane, _| {
            let fail = |e: LaneError| self.fail(op.name(), e);
            let mut pieces = pieces.into_iter();
            let mut waiting = std::collections::VecDeque::with_capacity(WINDOW);
            let mut result = Ok(());
            let mut window = 1;
            // The fence of a request whose reply said the lane holds events.
            let mut held = None;
            loop {
                while result.is_ok() && waiting.len() < window {
                    let Some(p) = pieces.next() else { break };
                    let meta = lane.meta(op, ctx, self.lanes.fence());
                    lane.send(&meta, &p.fixed, p.blob).map_err(fail)?;
                    waiting.push_back((p.sink, meta.order));
                }
                let Some((sink, order)) = waiting.pop_front() else {
                    if let Some(order) = held {
                        events = Some(self.take_events(lane, ctx, order));
                    }
                    return result;
                };
                let (head, _, _) = super::receive(&mut lane.io, sink).map_err(fail)?;
                if head.events() {
                    held = Some(order);
                }
                if result.is_ok() {
                    result = crate::edge::check(head.status.get());
                }
                window = WINDOW;
            }
        });
        self.after_waited(events);
        done
    }

    /// Runs `count` calls of `op` on the calling thread's lane with up to
    /// `window` in flight, for copies staged through shared memory
    /// (`crate::staging`): `send(i)` prepares call `i` and gives its
    /// request's fixed part; `done(i)` runs once call `i` succeeded. Like
    /// [`Session::call_pieces`], nothing is posted, the first call goes
    /// alone, and after a failure (of a call, `send` or `done`) nothing more
    /// is sent, the replies in flight are read, and the first failure is
    /// returned.
    pub(crate) fn call_window(
        &self,
        op: Op,
        count: usize,
        window: usize,
        mut send: impl FnMut(usize) -> CuResult<Vec<u8>>,
        mut done: impl FnMut(usize) -> CuResult<()>,
    ) -> CuResult<()> {
        if self.dead.load(Ordering::SeqCst) {
            return Err(CuError::DEVICE_UNAVAILABLE);
        }
        let ctx = crate::context::current();
        self.lanes.count_round_trips(count as u64);
        let mut events = None;
        let finished = self.on_lane(|lane, _| {
            let fail = |e: LaneError| self.fail(op.name(), e);
            let (mut sent, mut answered) = (0, 0);
            let mut result = Ok(());
            let mut limit = 1;
            // Fences of the requests in flight, and of one whose reply said
            // the lane holds events.
            let mut orders = std::collections::VecDeque::new();
            let mut held = None;
            loop {
                while result.is_ok() && sent < count && sent - answered < limit {
                    match send(sent) {
                        Ok(fixed) => {
                            let meta = lane.meta(op, ctx, self.lanes.fence());
                            lane.send(&meta, &fixed, &[]).map_err(fail)?;
                            orders.push_back(meta.order);
                            sent += 1;
                        }
                        Err(e) => result = Err(e),
                    }
                }
                if answered == sent {
                    if let Some(order) = held {
                        events = Some(self.take_events(lane, ctx, order));
                    }
                    return result;
                }
                let (head, _, _) = super::receive(&mut lane.io, None).map_err(fail)?;
                let order = orders.pop_front();
                if head.events() {
                    held = order;
                }
                if result.is_ok() {
                    result = crate::edge::check(head.status.get()).and_then(|()| done(answered));
                }
                answered += 1;
                limit = window.max(1);
            }
        });
        self.after_waited(events);
        finished
    }
}
