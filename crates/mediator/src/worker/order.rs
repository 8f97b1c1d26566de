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
/// Tickets at or above `below` whose completion [`Order`] can record: a
/// posted request starts only once its ticket is inside this window
/// ([`Order::wait_to_run`]). Divides 2^32, so the slots wrap with the tickets.
const WINDOW: u32 = 1 << 18;

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
/// `below` says every ticket below it has run. A ticket `t` at or above it
/// that has run says so in its slot, `done[t % WINDOW] == t + 1`. A slot
/// holds the last ticket of its residue class that ran, plus one, so a stale
/// value never matches; it starts at its own index, which is one less than
/// its class's values modulo WINDOW, so neither does a fresh one. Whoever finds the slot of `below` marked moves
/// `below` on by a compare-and-swap; a ticket marks its slot *before* it
/// looks at `below`, and a thread moving `below` looks at the slot *after*
/// it moved it (all `SeqCst`), so one of the two always sees the other and
/// no completed ticket is left behind.
#[derive(Debug)]
pub struct Order {
    below: AtomicU32,
    /// Per ticket residue: the last ticket that ran, plus one.
    done: Box<[AtomicU32]>,
    /// Entries in `waiters`, read without the lock by [`Order::complete`].
    waiting: AtomicUsize,
    /// (what each waits for, its thread).
    waiters: Mutex<Vec<(Need, Thread)>>,
}

impl Default for Order {
    fn default() -> Order {
        Order {
            below: AtomicU32::new(0),
            // 1 MiB per session.
            done: (0..WINDOW).map(AtomicU32::new).collect(),
            waiting: AtomicUsize::new(0),
            waiters: Mutex::new(Vec::new()),
        }
    }
}

impl Order {
    fn slot(&self, ticket: u32) -> &AtomicU32 {
        &self.done[(ticket % WINDOW) as usize]
    }

    /// Whether `need` is met.
    pub fn meets(&self, need: Need) -> bool {
        let below = self.below.load(Ordering::SeqCst);
        match need {
            Need::Nothing => true,
            Need::Below(order) => order_reached(below, order),
            Need::Ticket(t) => {
                order_reached(below, t.wrapping_add(1))
                    || t.wrapping_sub(below) < WINDOW
                        && self.slot(t).load(Ordering::SeqCst) == t.wrapping_add(1)
            }
        }
    }

    /// Waits until `req` may run: what it must follow has run and, for a
    /// posted request, its ticket is inside the window [`Order::complete`]
    /// needs. `false`: `alive` turned false first.
    pub fn wait_to_run(&self, req: &Request, alive: impl Fn() -> bool) -> bool {
        if req.posted() {
            // The tickets below `order - WINDOW + 1` have run: `order` is
            // less than WINDOW above `below`.
            let window = Need::Below(req.order.wrapping_sub(WINDOW - 1));
            if !self.wait(window, &alive) {
                return false;
            }
        }
        self.wait(Need::of(req), alive)
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
    /// above `below` (its lane waited for that, [`Order::wait_to_run`]); a
    /// ticket that already ran (a client that sent one twice) changes
    /// nothing.
    pub fn complete(&self, ticket: u32) {
        let below = self.below.load(Ordering::SeqCst);
        if order_reached(below, ticket.wrapping_add(1)) {
            return;
        }
        debug_assert!(
            ticket.wrapping_sub(below) < WINDOW,
            "ticket outside the window"
        );
        self.slot(ticket)
            .store(ticket.wrapping_add(1), Ordering::SeqCst);
        self.close_up();
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

    /// Moves `below` past every ticket at it that has run.
    fn close_up(&self) {
        loop {
            let below = self.below.load(Ordering::SeqCst);
            let next = below.wrapping_add(1);
            if self.slot(below).load(Ordering::SeqCst) != next {
                return;
            }
            // Another thread may move it first; either way, look again.
            let _ = self
                .below
                .compare_exchange(below, next, Ordering::SeqCst, Ordering::SeqCst);
        }
    }
}

/// Completes a ticket when dropped, so a request that panics in the driver
/// call still lets the later tickets run.
pub struct Ticket<'a> {
    pub order: &'a Order,
    pub ticket: u32,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        self.order.complete(self.ticket);
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

    #[test]
    fn a_posted_ticket_far_ahead_waits_until_it_is_inside_the_window() {
        use vgpu_proto::{read_request_into, request_prefix, Op, RequestMeta};
        let posted = |ticket: u32| {
            let meta = RequestMeta {
                op: Op::Memset,
                seq: 0,
                ctx: 1,
                flags: flags::POSTED,
                order: ticket,
                after: 0,
            };
            let bytes = request_prefix(&meta, &[0x1000, 0, 1, 4, 0, 1], 0).expect("prefix");
            let mut req = Request::empty();
            read_request_into(&mut &bytes[..], &mut req).expect("decodes");
            req
        };
        let order = Arc::new(Order::default());
        assert!(order.wait_to_run(&posted(WINDOW - 1), || true), "inside");
        let far = {
            let order = Arc::clone(&order);
            thread::spawn(move || {
                assert!(order.wait_to_run(&posted(WINDOW + 2), || true));
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
            let _t = Ticket {
                order: &order,
                ticket: 0,
            };
            panic!("driver call panicked");
        });
        assert!(r.is_err());
        assert!(order.meets(Need::Below(1)));
    }
}
