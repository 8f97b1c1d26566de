//! Spin-then-futex wake-ups for the shared-memory rings ([`crate::shm_ring`]).
//!
//! Each direction of a ring that can block has a *wake pair* in the shared
//! header: `seq`, a `u32` futex word, and `sleeping`, a `u32` flag (0 or 1).
//! The *waiter* waits for a condition (the consumer for data, the producer for
//! space); the *waker* makes it true (the producer by publishing `tail`, the
//! consumer by publishing `head`). One waiter and one waker per pair.
//!
//! ```text
//! waiter: sleep_until                     waker: notify, after publishing
//!   loop {                                  index.store(new, Release)   // publish
//!     s = seq.load(Acquire)                 fence(SeqCst)               // F2
//!     sleeping.store(1, Relaxed)            if sleeping.load(Relaxed) != 0 {
//!     fence(SeqCst)                // F1      seq.fetch_add(1, Release)
//!     if condition() {                        futex_wake(seq, 1)
//!       sleeping.store(0); return           }
//!     }
//!     futex_wait(seq, s, time left)         // returns at once if seq != s
//!   }
//! ```
//!
//! **No lost wake-up.** The two `SeqCst` fences F1 and F2 are totally ordered.
//! If F1 comes first, the waker's load of `sleeping` sees 1; if F2 comes
//! first, the waiter's `condition()` sees the published index (the store is
//! before F2, the load after F1). So either the waiter does not sleep, or the
//! waker bumps `seq` and wakes. The bump happens after the waiter read `s`;
//! if it lands before the waiter enters `futex_wait`, the kernel sees
//! `seq != s` and returns at once, and if it lands after, the waiter is already
//! queued on the word: the kernel compares and enqueues atomically with respect
//! to `futex_wake` on the same word. `wake_model.rs` checks this exhaustively
//! (every interleaving, with x86-TSO store buffers), and shows that dropping
//! the fences loses wake-ups.
//!
//! **Cheap when nobody sleeps.** The waker pays one fence and one load of a
//! line the waiter only writes when it goes to sleep; the `futex_wake`
//! syscall is made only when the flag is set. A stale flag costs one spurious
//! wake, never a missed one.
//!
//! **Closing** ([`wake_always`]): the closing side stores its closed state
//! (Release), bumps `seq` and wakes unconditionally. A waiter whose condition
//! check missed the closed state read `s` before the bump, so its
//! `futex_wait` returns.
//!
//! **Futex flags.** The words live in a `MAP_SHARED` memfd mapping that the
//! peer maps at another address, so the futex is *shared* (no
//! `FUTEX_PRIVATE_FLAG`): the kernel keys it on the page, not on the address
//! space.
//!
//! **Guest ends** (rings inside an ivshmem BAR, `crate::ivshmem`): a
//! process in a VM guest cannot wait on a futex the host wakes, nor wake
//! one the host waits on. Its ring ends carry a doorbell
//! ([`crate::shm_ring::Doorbell`]): where this protocol would `futex_wake`
//! the host, the guest rings the doorbell instead (the mediator, woken by
//! the device's eventfd, wakes the host futex for it); and the guest never
//! sets its `sleeping` flag nor sleeps on the futex: after spinning and
//! yielding it naps, 20 µs first, each nap twice the last up to 1 ms, and
//! checks again (polling with backoff; no guest kernel module needed).
//!
//! **Hostile peers.** A peer can scribble on both words. That can cost
//! spurious wake-ups or a missed one, never memory safety; waits take a
//! timeout ([`WaitPolicy::timeout`]) so a stuck or dead peer is noticed.

use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::thread::futex;

use crate::TransportError;

/// How a blocking ring operation waits: spin first, then poll while
/// yielding the CPU, then sleep on a futex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitPolicy {
    /// How long to poll before sleeping. [`Duration::MAX`] never sleeps
    /// (busy polling); [`Duration::ZERO`] sleeps at once (unless
    /// `yield_for` is set).
    pub spin: Duration,
    /// After `spin`, how long to go on polling with a `sched_yield` between
    /// polls before sleeping. A futex wake-up costs the waiter several
    /// microseconds; a yielding poll notices the peer within about one and
    /// leaves the core to any other runnable thread. This is how the driver
    /// itself waits for the GPU (`CU_CTX_SCHED_YIELD`, and `AUTO` on a busy
    /// machine), so a reply to a synchronizing call that takes a few hundred
    /// microseconds arrives as fast as the driver's own answer would.
    pub yield_for: Duration,
    /// Give up with [`TransportError::Timeout`] after this long; `None`
    /// waits until the peer acts or closes its end. A peer that dies without
    /// closing is only noticed through a timeout, so callers that cannot
    /// trust the peer to live set one and check the peer (pid, socket) when
    /// it fires.
    pub timeout: Option<Duration>,
}

impl WaitPolicy {
    /// Default spin time before sleeping: long enough to cover a typical
    /// request/response turnaround, short enough not to burn a core.
    pub const DEFAULT_SPIN: Duration = Duration::from_micros(50);

    /// Poll forever: the lowest latency, one core per waiting side.
    pub const fn busy() -> WaitPolicy {
        WaitPolicy {
            spin: Duration::MAX,
            yield_for: Duration::ZERO,
            timeout: None,
        }
    }

    /// Sleep on the futex at once.
    pub const fn sleep() -> WaitPolicy {
        WaitPolicy {
            spin: Duration::ZERO,
            yield_for: Duration::ZERO,
            timeout: None,
        }
    }

    /// The same policy with a timeout.
    pub const fn with_timeout(self, timeout: Duration) -> WaitPolicy {
        WaitPolicy {
            spin: self.spin,
            yield_for: self.yield_for,
            timeout: Some(timeout),
        }
    }
}

impl Default for WaitPolicy {
    /// Spin [`WaitPolicy::DEFAULT_SPIN`], then sleep; no timeout.
    fn default() -> WaitPolicy {
        WaitPolicy {
            spin: WaitPolicy::DEFAULT_SPIN,
            yield_for: Duration::ZERO,
            timeout: None,
        }
    }
}

/// The memory operations of one wake pair. Production uses [`SharedWake`];
/// the model checker in `wake_model.rs` runs the very same protocol functions
/// over a simulated memory.
pub(crate) trait WakeWords {
    /// `seq.load(Acquire)`.
    fn load_seq(&self) -> u32;
    /// `seq.fetch_add(1, Release)`.
    fn bump_seq(&self);
    /// `sleeping.store(on, Relaxed)`.
    fn set_sleeping(&self, on: bool);
    /// `sleeping.load(Relaxed) != 0`.
    fn is_sleeping(&self) -> bool;
    /// `fence(SeqCst)`.
    fn fence(&self);
    /// `futex_wait(seq, expected, timeout)`; returning early (value changed,
    /// signal, timeout) is not an error.
    fn wait(&self, expected: u32, timeout: Option<Duration>) -> Result<(), TransportError>;
    /// `futex_wake(seq, 1)`.
    fn wake(&self) -> Result<(), TransportError>;
}

/// First nap of a guest end waiting by polling (see "Guest ends").
pub(crate) const FIRST_NAP: Duration = Duration::from_micros(20);
/// Longest nap of a guest end: the most a reply can wait to be noticed
/// once the wait has gone on this long.
pub(crate) const LONGEST_NAP: Duration = Duration::from_millis(1);

/// A wake pair in a shared mapping. With a doorbell it is a guest end
/// inside an ivshmem BAR (see "Guest ends" above).
pub(crate) struct SharedWake<'a> {
    pub(crate) seq: &'a AtomicU32,
    pub(crate) sleeping: &'a AtomicU32,
    pub(crate) doorbell: Option<&'a dyn crate::shm_ring::Doorbell>,
    /// A guest end's next nap.
    pub(crate) nap: std::cell::Cell<Duration>,
}

impl WakeWords for SharedWake<'_> {
    fn load_seq(&self) -> u32 {
        self.seq.load(Ordering::Acquire)
    }
    fn bump_seq(&self) {
        self.seq.fetch_add(1, Ordering::Release);
    }
    fn set_sleeping(&self, on: bool) {
        // A guest end never announces a sleep: nothing could wake it.
        if self.doorbell.is_none() {
            self.sleeping.store(u32::from(on), Ordering::Relaxed);
        }
    }
    fn is_sleeping(&self) -> bool {
        self.sleeping.load(Ordering::Relaxed) != 0
    }
    fn fence(&self) {
        fence(Ordering::SeqCst);
    }
    fn wait(&self, expected: u32, timeout: Option<Duration>) -> Result<(), TransportError> {
        if self.doorbell.is_some() {
            let nap = self.nap.get();
            self.nap.set((nap * 2).min(LONGEST_NAP));
            std::thread::sleep(timeout.map_or(nap, |t| t.min(nap)));
            return Ok(());
        }
        let ts = timeout.map(|d| futex::Timespec {
            tv_sec: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: d.subsec_nanos().into(),
        });
        // Shared futex: no PRIVATE flag (see the module header).
        match futex::wait(self.seq, futex::Flags::empty(), expected, ts.as_ref()) {
            Ok(()) => Ok(()),
            Err(Errno::AGAIN | Errno::INTR | Errno::TIMEDOUT) => Ok(()),
            Err(e) => Err(TransportError::Io(e.into())),
        }
    }
    fn wake(&self) -> Result<(), TransportError> {
        if let Some(bell) = self.doorbell {
            bell.ring();
            return Ok(());
        }
        futex::wake(self.seq, futex::Flags::empty(), 1)
            .map(drop)
            .map_err(|e| TransportError::Io(e.into()))
    }
}

/// Waker side, called right after publishing an index: wakes the waiter if
/// it announced that it sleeps.
pub(crate) fn notify(w: &impl WakeWords) -> Result<(), TransportError> {
    w.fence();
    if w.is_sleeping() {
        w.bump_seq();
        w.wake()?;
    }
    Ok(())
}

/// Closing side, called right after storing its closed state: wakes the
/// waiter whether or not it announced itself.
pub(crate) fn wake_always(w: &impl WakeWords) -> Result<(), TransportError> {
    w.bump_seq();
    w.wake()
}

/// Waiter side: sleeps until `check` yields a value or an error, or until
/// `deadline` passes ([`TransportError::Timeout`]).
pub(crate) fn sleep_until<W: WakeWords, T>(
    w: &W,
    deadline: Option<Instant>,
    mut check: impl FnMut() -> Result<Option<T>, TransportError>,
) -> Result<T, TransportError> {
    loop {
        let seq = w.load_seq();
        w.set_sleeping(true);
        w.fence();
        match check() {
            Ok(None) => {}
            Ok(Some(v)) => {
                w.set_sleeping(false);
                return Ok(v);
            }
            Err(e) => {
                w.set_sleeping(false);
                return Err(e);
            }
        }
        let timeout = match deadline {
            None => None,
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Some(left),
                _ => {
                    w.set_sleeping(false);
                    return Err(TransportError::Timeout);
                }
            },
        };
        if let Err(e) = w.wait(seq, timeout) {
            w.set_sleeping(false);
            return Err(e);
        }
    }
}

/// Polls `check` for `policy.spin`, then polls with a yield between polls
/// for `policy.yield_for`, then sleeps on the futex ([`sleep_until`]) until
/// `check` yields a value or an error.
///
/// The clock is first read after 64 polls: most busy waits end sooner, and a
/// clock read costs as much as several polls. So the spin time and the
/// timeout count from the 64th poll (well under a microsecond late).
pub(crate) fn wait_for<W: WakeWords, T>(
    w: &W,
    policy: &WaitPolicy,
    mut check: impl FnMut() -> Result<Option<T>, TransportError>,
) -> Result<T, TransportError> {
    if policy.spin.is_zero() && policy.yield_for.is_zero() {
        if let Some(v) = check()? {
            return Ok(v);
        }
        let deadline = policy.timeout.and_then(|t| Instant::now().checked_add(t));
        return sleep_until(w, deadline, check);
    }
    // (deadline, end of spinning, end of yielding), from the first clock
    // read; `None` inside means "never" (no timeout; a time too large for an
    // `Instant`).
    let mut clock: Option<(Option<Instant>, Option<Instant>, Option<Instant>)> = None;
    let mut round: u32 = 0;
    let mut yielding = false;
    loop {
        if let Some(v) = check()? {
            return Ok(v);
        }
        round = round.wrapping_add(1);
        if yielding || round.is_multiple_of(64) {
            let now = Instant::now();
            let (deadline, spin_end, yield_end) = *clock.get_or_insert_with(|| {
                let spin_end = now.checked_add(policy.spin);
                (
                    policy.timeout.and_then(|t| now.checked_add(t)),
                    spin_end,
                    spin_end.and_then(|e| e.checked_add(policy.yield_for)),
                )
            });
            if deadline.is_some_and(|d| now >= d) {
                return Err(TransportError::Timeout);
            }
            if yield_end.is_some_and(|e| now >= e) {
                return sleep_until(w, deadline, check);
            }
            yielding = spin_end.is_some_and(|e| now >= e);
        }
        if yielding {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    struct Words {
        seq: AtomicU32,
        sleeping: AtomicU32,
    }

    fn pair(w: &Words) -> SharedWake<'_> {
        SharedWake {
            seq: &w.seq,
            sleeping: &w.sleeping,
            doorbell: None,
            nap: std::cell::Cell::new(FIRST_NAP),
        }
    }

    #[test]
    fn timeout_fires_and_clears_the_flag() {
        let w = Words {
            seq: AtomicU32::new(0),
            sleeping: AtomicU32::new(0),
        };
        let policy = WaitPolicy::sleep().with_timeout(Duration::from_millis(20));
        let t0 = Instant::now();
        let r: Result<(), _> = wait_for(&pair(&w), &policy, || Ok(None));
        assert!(matches!(r, Err(TransportError::Timeout)));
        assert!(t0.elapsed() >= Duration::from_millis(20));
        assert_eq!(w.sleeping.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn busy_policy_never_sleeps_but_honours_the_timeout() {
        let w = Words {
            seq: AtomicU32::new(0),
            sleeping: AtomicU32::new(0),
        };
        let policy = WaitPolicy::busy().with_timeout(Duration::from_millis(10));
        let mut slept = false;
        let r: Result<(), _> = wait_for(&pair(&w), &policy, || {
            slept |= w.sleeping.load(Ordering::Relaxed) != 0;
            Ok(None)
        });
        assert!(matches!(r, Err(TransportError::Timeout)));
        assert!(!slept);
    }

    #[test]
    fn sleeps_only_after_the_spin_time() {
        let w = Words {
            seq: AtomicU32::new(0),
            sleeping: AtomicU32::new(0),
        };
        let policy = WaitPolicy {
            spin: Duration::from_millis(5),
            yield_for: Duration::ZERO,
            timeout: None,
        }
        .with_timeout(Duration::from_millis(40));
        let t0 = Instant::now();
        let mut first_sleep = None;
        let r: Result<(), _> = wait_for(&pair(&w), &policy, || {
            if first_sleep.is_none() && w.sleeping.load(Ordering::Relaxed) != 0 {
                first_sleep = Some(t0.elapsed());
            }
            Ok(None)
        });
        assert!(matches!(r, Err(TransportError::Timeout)));
        let first_sleep = first_sleep.expect("went to sleep");
        assert!(first_sleep >= Duration::from_millis(5), "{first_sleep:?}");
    }

    #[test]
    fn yields_between_spinning_and_sleeping() {
        let w = Words {
            seq: AtomicU32::new(0),
            sleeping: AtomicU32::new(0),
        };
        // No spin at all: the yield phase alone keeps the waiter awake.
        let policy = WaitPolicy {
            spin: Duration::ZERO,
            yield_for: Duration::from_millis(10),
            timeout: None,
        }
        .with_timeout(Duration::from_millis(40));
        let t0 = Instant::now();
        let mut first_sleep = None;
        let mut polls = 0u32;
        let r: Result<(), _> = wait_for(&pair(&w), &policy, || {
            polls += 1;
            if first_sleep.is_none() && w.sleeping.load(Ordering::Relaxed) != 0 {
                first_sleep = Some(t0.elapsed());
            }
            Ok(None)
        });
        assert!(matches!(r, Err(TransportError::Timeout)));
        let first_sleep = first_sleep.expect("went to sleep after yielding");
        assert!(first_sleep >= Duration::from_millis(10), "{first_sleep:?}");
        assert!(polls > 64, "polled {polls} times while yielding");
    }

    #[test]
    fn a_yielding_waiter_sees_a_value_published_by_another_thread() {
        let w = Words {
            seq: AtomicU32::new(0),
            sleeping: AtomicU32::new(0),
        };
        let flag = AtomicU32::new(0);
        let policy = WaitPolicy {
            spin: Duration::ZERO,
            yield_for: Duration::from_secs(10),
            timeout: Some(Duration::from_secs(20)),
        };
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(5));
                flag.store(1, Ordering::Release);
            });
            let got = wait_for(&pair(&w), &policy, || {
                Ok((flag.load(Ordering::Acquire) != 0).then_some(()))
            });
            assert!(got.is_ok());
        });
        // Found while yielding, never announced a sleep.
        assert_eq!(w.sleeping.load(Ordering::Relaxed), 0);
        assert_eq!(w.seq.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn notify_wakes_a_sleeper_across_threads() {
        let w = Arc::new(Words {
            seq: AtomicU32::new(0),
            sleeping: AtomicU32::new(0),
        });
        let flag = Arc::new(AtomicU32::new(0));
        let (w2, flag2) = (Arc::clone(&w), Arc::clone(&flag));
        let waiter = std::thread::spawn(move || {
            let policy = WaitPolicy::sleep().with_timeout(Duration::from_secs(10));
            wait_for(&pair(&w2), &policy, || {
                Ok((flag2.load(Ordering::Acquire) != 0).then_some(()))
            })
        });
        // Wait until the waiter announced itself, then publish and notify.
        while w.sleeping.load(Ordering::Relaxed) == 0 {
            std::thread::yield_now();
        }
        flag.store(1, Ordering::Release);
        notify(&pair(&w)).expect("wake");
        waiter.join().expect("join").expect("woken, not timed out");
    }

    #[test]
    fn notify_without_sleeper_makes_no_syscall_and_leaves_seq() {
        let w = Words {
            seq: AtomicU32::new(7),
            sleeping: AtomicU32::new(0),
        };
        notify(&pair(&w)).expect("notify");
        assert_eq!(w.seq.load(Ordering::Relaxed), 7);
        wake_always(&pair(&w)).expect("wake");
        assert_eq!(w.seq.load(Ordering::Relaxed), 8);
    }
}
