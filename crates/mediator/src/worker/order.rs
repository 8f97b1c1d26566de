//! The session-wide order of requests across lanes.
//!
//! The client numbers its posted requests 0, 1, 2, … across all its threads
//! (one *ticket* each) and stamps every other lane request with the number of
//! tickets issued before it (a *fence*); both travel in
//! `RequestHead::order`. A lane starts a request only once [`Order::wait`]
//! says every ticket below its number has run, and a posted request's run
//! ends with [`Order::complete`] of its ticket. Hence:
//!
//! - posted requests reach the driver in the order the client issued them,
//!   whichever lane carries them;
//! - a request never overtakes a posted request issued before it on any
//!   thread: if thread A's `cuLaunchKernel` returned before thread B called
//!   `cuStreamSynchronize`, B's synchronize runs after A's launch.
//!
//! Only posted requests hold tickets, and a lane only ever waits for lower
//! tickets, so the lowest ticket not yet run can always run: the requests
//! before it on its own lane are posted ones with lower tickets (run
//! already) or answered ones (its thread waited for their replies before it
//! issued the ticket). A blocking call never holds a ticket, so it never
//! stalls another lane. A client that dies between taking a ticket and
//! sending it leaves the later requests waiting; they give up when the
//! session closes (`alive` turns false).

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread::{self, Thread};
use std::time::Duration;

use vgpu_proto::order_reached;

/// How often a waiting lane re-checks that the session is alive.
const CHECK: Duration = Duration::from_millis(100);

/// The count of tickets run so far, and the lanes waiting for it to grow.
#[derive(Debug, Default)]
pub struct Order {
    /// Every ticket below this has run.
    done: AtomicU32,
    /// Entries in `waiters`, read without the lock by [`Order::complete`].
    waiting: AtomicUsize,
    /// (the count each waits for, its thread).
    waiters: Mutex<Vec<(u32, Thread)>>,
}

impl Order {
    /// Whether every ticket below `order` has run.
    pub fn reached(&self, order: u32) -> bool {
        order_reached(self.done.load(Ordering::SeqCst), order)
    }

    /// Waits until every ticket below `order` has run. `false`: `alive`
    /// turned false first (checked every [`CHECK`]).
    pub fn wait(&self, order: u32, alive: impl Fn() -> bool) -> bool {
        if self.reached(order) {
            return true;
        }
        {
            let mut w = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
            w.push((order, thread::current()));
            self.waiting.fetch_add(1, Ordering::SeqCst);
        }
        // Registered before this check, so a `complete` that this check
        // misses finds the entry and unparks us (park tokens are not lost).
        let reached = loop {
            if self.reached(order) {
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
        reached
    }

    /// Records that ticket `ticket` has run. A ticket other than the next
    /// one (a client that sent a ticket twice, or out of turn) moves
    /// nothing.
    pub fn complete(&self, ticket: u32) {
        let next = ticket.wrapping_add(1);
        if self
            .done
            .compare_exchange(ticket, next, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return;
        }
        if self.waiting.load(Ordering::SeqCst) == 0 {
            return;
        }
        let w = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        for (order, t) in w.iter() {
            if order_reached(next, *order) {
                t.unpark();
            }
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
    fn tickets_run_in_order_across_threads() {
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
                        assert!(order.wait(t, || true));
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
    fn fences_wait_for_every_lower_ticket_only() {
        let order = Order::default();
        assert!(order.wait(0, || true), "nothing issued before");
        order.complete(0);
        order.complete(1);
        assert!(order.reached(2));
        assert!(!order.reached(3));
        // Out of turn or repeated tickets move nothing.
        order.complete(5);
        order.complete(1);
        assert!(!order.reached(3));
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
            assert!(!order.wait(3, || alive.load(Ordering::SeqCst)));
        });
        assert!(t0.elapsed() < Duration::from_secs(5));
        assert_eq!(order.waiting.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn order_numbers_wrap() {
        let order = Order::default();
        order.done.store(u32::MAX, Ordering::SeqCst);
        order.complete(u32::MAX);
        assert!(order.reached(0));
        assert!(order.reached(u32::MAX));
        assert!(!order.reached(1));
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
        assert!(order.reached(1));
    }
}
