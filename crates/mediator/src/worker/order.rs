//! The session-wide order of requests across lanes.
//!
//! The client numbers its posted requests 0, 1, 2, … across all its threads
//! (one *ticket* each) and says what each one must wait for
//! ([`vgpu_proto::flags`]): the previous posted request on its stream, every
//! lower ticket, or nothing. Every other lane request carries the number of
//! tickets issued before it (a *fence*) and waits for all of them. A lane
//! starts a request only once [`Order::wait`] says its [`Need`] is met, and
//! a posted request's run ends with [`Order::complete`] of its ticket.
//! Hence, with the client's choices (`docs/adr/0004-async-errors.md`):
//!
//! - posted requests on one stream reach the driver in the order the client
//!   issued them, whichever lane carries them, while requests on different
//!   streams run side by side on their lanes;
//! - a request never overtakes a posted request it must follow: if thread
//!   A's `cuLaunchKernel` returned before thread B called
//!   `cuStreamSynchronize`, B's synchronize runs after A's launch.
//!
//! Every ticket a request waits for is lower than its own ticket (or its
//! fence), so the lowest ticket not yet run can always run: what it waits
//! for has run, and the requests before it on its own lane are posted ones
//! with lower tickets (run already) or answered ones (its thread waited for
//! their replies before it took the ticket). A blocking call never holds a
//! ticket, so it never stalls another lane. A client that dies between
//! taking a ticket and sending it leaves the later requests waiting; they
//! give up when the session closes (`alive` turns false).

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread::{self, Thread};
use std::time::Duration;

use vgpu_proto::{flags, order_reached, Request};

/// How often a waiting lane re-checks that the session is alive.
const CHECK: Duration = Duration::from_millis(100);
/// log2 of [`WINDOW`].
const WINDOW_BITS: u32 = 18;
/// Tickets at or above `below` whose completion [`Order`] can record: a
/// posted request starts only once its ticket is inside this window
/// ([`Order::wait_to_run`]). Divides 2^32, so the slots wrap with the tickets.
const WINDOW: u32 = 1 << WINDOW_BITS;
/// Consecutive tickets' slots lie this many bits apart (a rotation of the
/// slot index): 2^6 slots of 4 bytes, so lanes completing neighbouring
/// tickets never write one cache line.
const SPREAD_BITS: u32 = 6;

/// What a request waits for before it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Every ticket below this one.
    Below(u32),
    /// This one ticket.
    Ticket(u32),
    /// Nothing.
    Nothing,
}

impl Need {
    /// What `req` waits for, from its flags (validated when it was read).
    pub fn of(req: &Request) -> Need {
        // A fence, or a posted request that follows everything before it.
        if !req.posted() || req.flags & flags::AFTER_ALL != 0 {
            Need::Below(req.order)
        } else if req.flags & flags::AFTER != 0 {
            Need::Ticket(req.after)
        } else {
            Need::Nothing
        }
    }
}

/// The tickets run so far, and the lanes waiting for more. Lock-free but
/// for the waiters' list.
///
/// A ticket `t` that has run says so in its slot: `slot(t) == t + 1`. A slot
/// holds the last ticket of its residue class (modulo [`WINDOW`]) that ran,
/// plus one, so a stale value never matches; it starts at its class's
/// residue, which is one less than every value the class writes, modulo
/// WINDOW, so neither does a fresh one.
///
/// `below` says every ticket below it has run. It is moved on lazily, only
/// by a thread that needs it (a fence, a barrier, a ticket at the edge of the
/// window): it scans the slots from `below` and moves it past the run it
/// found with one compare-and-swap. Completing a ticket is one store to its
/// own slot and one load, so lanes running side by side share no written
/// cache line. A completion stores its slot *before* it looks for waiters,
/// and a waiter registers *before* it scans (all `SeqCst`), so either the
/// scan sees the slot or the completion sees the waiter and wakes it.
#[derive(Debug)]
pub struct Order {
    below: AtomicU32,
    /// Slot of each ticket residue, spread ([`Order::slot`]).
    done: Box<[AtomicU32]>,
    /// Entries in `waiters`, read without the lock by [`Order::complete`].
    waiting: AtomicUsize,
    /// (what each waits for, its thread).
    waiters: Mutex<Vec<(Need, Thread)>>,
}

/// Where ticket residue `i` keeps its slot: `i` rotated left by
/// [`SPREAD_BITS`] within [`WINDOW_BITS`].
const fn spread(i: u32) -> usize {
    let i = i & (WINDOW - 1);
    (((i << SPREAD_BITS) | (i >> (WINDOW_BITS - SPREAD_BITS))) & (WINDOW - 1)) as usize
}

impl Default for Order {
    fn default() -> Order {
        let mut done: Vec<AtomicU32> = (0..WINDOW).map(|_| AtomicU32::new(0)).collect();
        for i in 0..WINDOW {
            done[spread(i)] = AtomicU32::new(i);
        }
        Order {
            below: AtomicU32::new(0),
            // 1 MiB per session.
            done: done.into_boxed_slice(),
            waiting: AtomicUsize::new(0),
            waiters: Mutex::new(Vec::new()),
        }
    }
}

/// What one lane knows of the order without looking at shared memory: the
/// last ticket it ran itself, and the last `below` it read.
#[derive(Debug, Default)]
pub struct LaneView {
    last_run: Option<u32>,
    below_seen: u32,
}

impl Order {
    fn slot(&self, ticket: u32) -> &AtomicU32 {
        &self.done[spread(ticket)]
    }

    fn has_run_by_slot(&self, t: u32) -> bool {
        self.slot(t).load(Ordering::SeqCst) == t.wrapping_add(1)
    }

    fn has_run(&self, t: u32) -> bool {
        // The slot first: a slot taken over by `t + WINDOW` means `below`
        // had passed `t` before, and the later load of `below` sees that.
        self.has_run_by_slot(t)
            || order_reached(self.below.load(Ordering::SeqCst), t.wrapping_add(1))
    }

    /// Moves `below` past every ticket at it that has run; the new `below`.
    fn advance(&self) -> u32 {
        loop {
            let below = self.below.load(Ordering::SeqCst);
            let mut end = below;
            while end.wrapping_sub(below) < WINDOW && self.has_run_by_slot(end) {
                end = end.wrapping_add(1);
            }
            if end == below {
                return below;
            }
            // Every slot in below..end was marked while `below` was below
            // them, so none was taken over since: the run holds if `below`
            // has not moved.
            if self
                .below
                .compare_exchange(below, end, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return end;
            }
        }
    }

    /// Whether `need` is met.
    pub fn meets(&self, need: Need) -> bool {
        match need {
            Need::Nothing => true,
            Need::Below(order) => {
                order_reached(self.below.load(Ordering::SeqCst), order)
                    || order_reached(self.advance(), order)
            }
            Need::Ticket(t) => self.has_run(t),
        }
    }

    /// Waits until `req` may run: what it must follow has run and, for a
    /// posted request, its ticket is inside the window [`Order::complete`]
    /// needs. `view` answers what this lane knows by itself. `false`:
    /// `alive` turned false first.
    pub fn wait_to_run(
        &self,
        view: &mut LaneView,
        req: &Request,
        alive: impl Fn() -> bool,
    ) -> bool {
        if req.posted() {
            // The tickets below `order - WINDOW + 1` have run: `order` is
            // less than WINDOW above `below`.
            let edge = req.order.wrapping_sub(WINDOW - 1);
            if !order_reached(view.below_seen, edge) {
                if !self.wait(Need::Below(edge), &alive) {
                    return false;
                }
                view.below_seen = self.below.load(Ordering::SeqCst);
            }
        }
        match Need::of(req) {
            // The lane ran that ticket itself: its stream's previous call.
            Need::Ticket(t) if view.last_run == Some(t) => true,
            need => self.wait(need, alive),
        }
    }

    /// Waits until `need` is met. `false`: `alive` turned false first
    /// (checked every [`CHECK`]).
    pub fn wait(&self, need: Need, alive: impl Fn() -> bool) -> bool {
        if self.meets(need) {
            return true;
        }
        {
            let mut w = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
            w.push((need, thread::current()));
            self.waiting.fetch_add(1, Ordering::SeqCst);
        }
        // Registered before this check, so a `complete` that this check
        // misses finds the entry and unparks us (park tokens are not lost).
        let met = loop {
            if self.meets(need) {
                break true;
            }
            if !alive() {
                break false;
            }
            thread::park_timeout(CHECK);
        };
        let me = thread::current().id();
        let mut w = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = w.iter().position(|(_, t)| t.id() == me) {
            w.swap_remove(i);
            self.waiting.fetch_sub(1, Ordering::SeqCst);
        }
        met
    }

    /// Records that ticket `ticket` has run. It must be less than WINDOW
    /// above `below` (its lane waited for that, [`Order::wait_to_run`]). A
    /// ticket that already ran changes nothing, unless a misbehaving client
    /// sends it again so late that its slot belongs to a later ticket: then
    /// only that client's own session stalls, until it closes.
    pub fn complete(&self, ticket: u32) {
        if order_reached(self.below.load(Ordering::SeqCst), ticket.wrapping_add(1)) {
            return;
        }
        self.slot(ticket)
            .store(ticket.wrapping_add(1), Ordering::SeqCst);
        // The lane's next ticket is most often the next one: its slot's line
        // comes in while the lane runs that request.
        vgpu_transport::prefetch(self.slot(ticket.wrapping_add(1)));
        if self.waiting.load(Ordering::SeqCst) == 0 {
            return;
        }
        let w = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        for (need, t) in w.iter() {
            if self.meets(*need) {
                t.unpark();
            }
        }
    }

    /// [`Order::complete`], remembered by the lane that ran it.
    pub fn complete_on(&self, view: &mut LaneView, ticket: u32) {
        self.complete(ticket);
        view.last_run = Some(ticket);
    }
}

/// Completes a ticket when dropped, so a request that panics in the driver
/// call still lets the later tickets run.
pub struct Ticket<'a> {
    pub order: &'a Order,
    pub view: &'a mut LaneView,
    pub ticket: u32,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        self.order.complete_on(self.view, self.ticket);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn tickets_that_follow_everything_run_in_order_across_threads() {
        let order = Arc::new(Order::default());
        let log = Arc::new(Mutex::new(Vec::new()));
        // Ticket t is handled by thread t % 4, all threads start at once and
        // in reverse, so nearly every ticket has to wait for another thread.
        let threads: Vec<_> = (0..4u32)
            .rev()
            .map(|k| {
                let (order, log) = (Arc::clone(&order), Arc::clone(&log));
                thread::spawn(move || {
                    for t in (k..400).step_by(4) {
                        assert!(order.wait(Need::Below(t), || true));
                        log.lock().expect("log").push(t);
                        order.complete(t);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("join");
        }
        let log = log.lock().expect("log");
        assert_eq!(*log, (0..400).collect::<Vec<_>>());
    }

    #[test]
    fn chains_run_in_order_and_side_by_side() {
        // Two streams' chains, tickets interleaved: even tickets on one,
        // odd on the other. Each thread carries one chain; the chains never
        // wait for each other.
        let order = Arc::new(Order::default());
        let logs: Vec<_> = (0..2u32)
            .map(|k| {
                let order = Arc::clone(&order);
                thread::spawn(move || {
                    let mut log = Vec::new();
                    for t in (k..2000).step_by(2) {
                        let need = if t < 2 {
                            Need::Nothing
                        } else {
                            Need::Ticket(t - 2)
                        };
                        assert!(order.wait(need, || true));
                        log.push(t);
                        order.complete(t);
                    }
                    log
                })
            })
            .map(|h| h.join().expect("join"))
            .collect();
        assert_eq!(logs[0], (0..2000).step_by(2).collect::<Vec<_>>());
        assert_eq!(logs[1], (1..2000).step_by(2).collect::<Vec<_>>());
        assert!(order.meets(Need::Below(2000)));
    }

    #[test]
    fn tickets_completed_in_any_order_close_up() {
        // Four threads complete interleaved tickets with no waits at all,
        // so completions race in and out of turn; a fifth waits for all.
        const N: u32 = 20_000;
        let order = Arc::new(Order::default());
        let all = {
            let order = Arc::clone(&order);
            thread::spawn(move || order.wait(Need::Below(N), || true))
        };
        let threads: Vec<_> = (0..4u32)
            .map(|k| {
                let order = Arc::clone(&order);
                thread::spawn(move || {
                    for t in (k..N).step_by(4) {
                        order.complete(t);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("join");
        }
        assert!(all.join().expect("join"));
        assert_eq!(order.below.load(Ordering::SeqCst), N);
    }

    #[test]
    fn a_chain_waits_for_its_ticket_run_out_of_turn() {
        let order = Order::default();
        order.complete(3);
        assert!(order.meets(Need::Ticket(3)), "ran out of turn");
        assert!(!order.meets(Need::Ticket(2)));
        assert!(!order.meets(Need::Below(1)));
        for t in 0..3 {
            order.complete(t);
        }
        assert!(order.meets(Need::Below(4)), "the run below closes up");
    }

    #[test]
    fn a_waiter_is_woken_by_the_ticket_it_needs() {
        let order = Arc::new(Order::default());
        let t0 = Instant::now();
        let waiter = {
            let order = Arc::clone(&order);
            thread::spawn(move || order.wait(Need::Ticket(5), || true))
        };
        thread::sleep(Duration::from_millis(20));
        order.complete(5);
        assert!(waiter.join().expect("join"));
        assert!(
            t0.elapsed() < CHECK,
            "woken, not found by the periodic check"
        );
    }

    #[test]
    fn fences_wait_for_every_lower_ticket_only() {
        let order = Order::default();
        assert!(order.wait(Need::Below(0), || true), "nothing issued before");
        order.complete(0);
        order.complete(1);
        assert!(order.meets(Need::Below(2)));
        assert!(!order.meets(Need::Below(3)));
        // Repeated tickets change nothing.
        order.complete(1);
        assert!(!order.meets(Need::Below(3)));
    }

    #[test]
    fn a_dead_session_ends_the_wait() {
        let order = Order::default();
        let alive = AtomicBool::new(true);
        let t0 = Instant::now();
        thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(Duration::from_millis(50));
                alive.store(false, Ordering::SeqCst);
            });
            assert!(!order.wait(Need::Below(3), || alive.load(Ordering::SeqCst)));
        });
        assert!(t0.elapsed() < Duration::from_secs(5));
        assert_eq!(order.waiting.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn order_numbers_wrap() {
        let order = Order::default();
        order.below.store(u32::MAX, Ordering::SeqCst);
        order.complete(0);
        assert!(order.meets(Need::Ticket(0)));
        assert!(
            !order.meets(Need::Ticket(u32::MAX)),
            "a fresh slot is not a run ticket"
        );
        assert!(!order.meets(Need::Below(1)), "nor does `below` pass it");
        order.complete(u32::MAX);
        assert!(
            order.meets(Need::Below(1)),
            "the run closes up across the wrap"
        );
        assert!(order.meets(Need::Below(u32::MAX)));
        assert!(!order.meets(Need::Below(2)));
    }

    /// A request as a lane reads it: `flags`, its ticket (or fence), and
    /// the ticket it follows.
    fn request(flags: u32, order: u32, after: u32) -> Request {
        use vgpu_proto::{memset, read_request_into, request_prefix, Op, RequestMeta};
        use zerocopy::little_endian::{U32, U64};
        use zerocopy::IntoBytes;
        let meta = RequestMeta {
            op: Op::Memset,
            seq: 0,
            ctx: 1,
            flags,
            order,
            after,
        };
        let set = memset::Request {
            dst: U64::new(0x1000),
            value: U32::new(0),
            element: 1,
            count: U64::new(4),
            stream: U64::new(0),
            is_async: 1,
        };
        let bytes = request_prefix(&meta, set.as_bytes(), 0).expect("prefix");
        let mut req = Request::empty();
        read_request_into(&mut &bytes[..], &mut req).expect("decodes");
        req
    }

    #[test]
    fn neighbouring_tickets_never_share_a_cache_line() {
        let mut seen = vec![false; WINDOW as usize];
        for i in 0..WINDOW {
            let at = spread(i);
            assert!(!seen[at], "residue {i} collides");
            seen[at] = true;
            let next = spread(i.wrapping_add(1));
            assert!(at.abs_diff(next) * 4 >= 64, "{i}: slots {at} and {next}");
        }
    }

    #[test]
    fn lanes_carry_chains_past_the_window_and_a_fence_sees_them_all() {
        // Four lanes, each carrying one stream's chain (ticket t on lane
        // t % 4, following t - 4), more tickets than the window holds and no
        // fence until the end: the lanes answer their own chains' needs,
        // wait at the window's edge for each other, and the fence finds
        // every ticket run.
        const N: u32 = WINDOW + WINDOW / 2;
        let order = Arc::new(Order::default());
        let lanes: Vec<_> = (0..4u32)
            .map(|k| {
                let order = Arc::clone(&order);
                thread::spawn(move || {
                    let mut view = LaneView::default();
                    for t in (k..N).step_by(4) {
                        let req = match t.checked_sub(4) {
                            Some(prev) => request(flags::POSTED | flags::AFTER, t, prev),
                            None => request(flags::POSTED, t, 0),
                        };
                        assert!(order.wait_to_run(&mut view, &req, || true));
                        assert!(
                            t < 4 || order.meets(Need::Ticket(t - 4)),
                            "{t} ran after {}",
                            t - 4
                        );
                        order.complete_on(&mut view, t);
                    }
                })
            })
            .collect();
        let fence = request(0, N, 0);
        assert!(order.wait_to_run(&mut LaneView::default(), &fence, || true));
        for l in lanes {
            l.join().expect("join");
        }
        assert_eq!(order.below.load(Ordering::SeqCst), N);
        assert!(!order.meets(Need::Ticket(N)));
    }

    #[test]
    fn a_posted_ticket_far_ahead_waits_until_it_is_inside_the_window() {
        let posted = |ticket| request(flags::POSTED, ticket, 0);
        let order = Arc::new(Order::default());
        assert!(
            order.wait_to_run(&mut LaneView::default(), &posted(WINDOW - 1), || true),
            "inside"
        );
        let far = {
            let order = Arc::clone(&order);
            thread::spawn(move || {
                assert!(order.wait_to_run(&mut LaneView::default(), &posted(WINDOW + 2), || true));
                order.below.load(Ordering::SeqCst)
            })
        };
        thread::sleep(Duration::from_millis(20));
        assert!(!far.is_finished(), "outside the window: it waits");
        for t in 0..3 {
            order.complete(t);
        }
        assert_eq!(far.join().expect("join"), 3, "runs once ticket 2 has run");
        // Its completion is then recorded like any other.
        order.complete(WINDOW + 2);
        assert!(order.meets(Need::Ticket(WINDOW + 2)));
        assert!(!order.meets(Need::Ticket(WINDOW + 1)));
    }

    #[test]
    fn a_panicking_request_still_completes_its_ticket() {
        let order = Order::default();
        let r = std::panic::catch_unwind(|| {
            let mut view = LaneView::default();
            let _t = Ticket {
                order: &order,
                view: &mut view,
                ticket: 0,
            };
            panic!("driver call panicked");
        });
        assert!(r.is_err());
        assert!(order.meets(Need::Below(1)));
    }
}
