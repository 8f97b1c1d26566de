//! Combining posted frames on a TCP lane ([`super::FrameLane::combining`]).
//!
//! Over TCP the `sendmsg(2)` of a frame is most of what a posted call costs
//! the application's thread: on one host the kernel runs the receiving
//! side of TCP inside the sender's call. A combining lane writes its posted
//! frames through an [`Outbox`], which holds them and writes several in one
//! call:
//!
//! - A frame posted on a quiet lane goes at once: the worker may have
//!   nothing else to run. A lane is quiet once it wrote nothing for the
//!   outbox's delay, and after it read a reply (the worker's thread was
//!   waiting on it).
//! - Later frames wait in the outbox. It is written when a frame that waits
//!   for its reply goes (in the same write), when it holds [`FULL`] bytes,
//!   when a post finds its oldest frame older than the delay, and otherwise
//!   by the process's flusher thread once the delay has passed. So a frame
//!   waits at most about one delay, and a burst of posts costs one system
//!   call per delay instead of one per frame.
//! - A frame that waits for its reply is sent after the other lanes'
//!   outboxes are written (without waiting for room in their sockets): its
//!   fence may name tickets they hold, and the worker runs it only after
//!   those.
//!
//! A failed write is kept and returned by the lane's next send or read, as
//! a posted frame's own failed send would be; the session ends there.
//!
//! # The flusher
//!
//! One thread per process sleeps while no outbox holds bytes. Woken by the
//! post that starts a batch, it sleeps one delay, writes the outboxes whose
//! oldest frame is due, and goes on while any holds bytes and for
//! [`STAY_AWAKE`] after: posts that start batches meanwhile need no system
//! call to wake it, and a post's wake-up costs about as much as the write
//! it saves. It writes
//! without waiting for room (`MSG_DONTWAIT`) and keeps what does not fit
//! for its next round: a worker lane whose socket is full may be waiting
//! for a ticket held in another outbox, so the flusher must never stall on
//! one socket. It holds no outbox's lock while it sleeps, and only tries
//! each lock, so it never waits for an application thread either.
//!
//! A lane dropped with frames held (its thread ended) writes them first.
//!
//! # Fork
//!
//! A child never touches its parent's outboxes, flusher or their locks (a
//! lock that a parent's thread held at the fork stays held in the child):
//! outboxes and the flusher belong to a per-process registry, found by
//! process id, and a child's first combining lane makes a fresh one. A lane
//! inherited across the fork drops its held frames unwritten: they are the
//! parent's.

use std::io::IoSlice;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use crate::{Channel, TransportError};

/// Bytes an outbox holds before a post writes them, however young.
pub const FULL: usize = 32 << 10;

/// How long the flusher goes on waking every delay once nothing is held,
/// before it sleeps until a post wakes it.
const STAY_AWAKE: Duration = Duration::from_millis(5);

/// The flusher's timer slack: a sleep of one delay (tens of microseconds)
/// must not stretch by the default 50 µs.
const SLACK_NS: u64 = 1_000;

/// A combining lane's posted frames not yet written (module documentation).
#[derive(Debug)]
pub struct Outbox {
    held: Mutex<Held>,
    delay: Duration,
    /// The process that made it: only that one writes what it holds.
    pid: u32,
    registry: &'static Registry,
}

#[derive(Debug)]
struct Held {
    /// A second descriptor of the lane's socket, used only to write.
    ch: Channel,
    bytes: Vec<u8>,
    /// When the oldest byte held came; `None` while empty.
    since: Option<Instant>,
    /// When bytes last left.
    sent: Option<Instant>,
    /// Why a write on this lane's behalf failed, for its next send.
    failed: Option<std::io::ErrorKind>,
}

impl Outbox {
    /// An outbox writing on `ch` (a plain TCP socket) that holds frames for
    /// up to `delay`; `None` when the process has no flusher thread and
    /// cannot start one (the lane then writes each frame at once).
    pub fn new(ch: Channel, delay: Duration) -> Option<Arc<Outbox>> {
        let registry = Registry::of_this_process();
        if !registry.start() {
            return None;
        }
        let out = Arc::new(Outbox {
            held: Mutex::new(Held {
                ch,
                bytes: Vec::new(),
                since: None,
                sent: None,
                failed: None,
            }),
            delay,
            pid: std::process::id(),
            registry,
        });
        registry.add(&out);
        Some(out)
    }

    fn lock(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Posts a frame, the concatenation of `parts`: written at once on a
    /// quiet lane, held otherwise (module documentation).
    pub fn post(&self, parts: &[&[u8]]) -> Result<(), TransportError> {
        let mut held = self.lock();
        held.take_failure()?;
        let now = Instant::now();
        let quiet = held.bytes.is_empty()
            && held
                .sent
                .is_none_or(|t| now.duration_since(t) >= self.delay);
        if quiet {
            return held.write_all(parts, true, self.registry);
        }
        for part in parts {
            held.bytes.extend_from_slice(part);
        }
        let started = held.since.is_none();
        let since = *held.since.get_or_insert(now);
        if started {
            self.registry.pending.fetch_add(1, Ordering::SeqCst);
        }
        if held.bytes.len() >= FULL || now.duration_since(since) >= self.delay {
            return held.write_all(&[], true, self.registry);
        }
        drop(held);
        if started {
            self.registry.arm();
        }
        Ok(())
    }

    /// Sends a frame at once, after everything held and after the other
    /// lanes' held frames (module documentation). `look`: first fail with
    /// `BrokenPipe` if the peer hung up.
    pub fn send_now(&self, parts: &[&[u8]], look: bool) -> Result<(), TransportError> {
        self.registry.flush_others(self);
        let mut held = self.lock();
        held.take_failure()?;
        held.write_all(parts, look, self.registry)
    }

    /// Writes what is held, before this lane reads. The lane counts as
    /// quiet from then on: its worker thread answers what it waits for,
    /// and the next post goes at once.
    pub fn flush(&self) -> Result<(), TransportError> {
        let mut held = self.lock();
        held.take_failure()?;
        let written = if held.bytes.is_empty() {
            Ok(())
        } else {
            held.write_all(&[], false, self.registry)
        };
        held.sent = None;
        written
    }

    /// For the flusher and other lanes: writes what is held, without
    /// waiting for room, if its oldest frame is at least one delay old at
    /// `now` or `any_age`. Returns whether bytes are still held, or the
    /// lock was busy.
    fn flush_if_due(&self, now: Instant, any_age: bool) -> bool {
        let Ok(mut held) = self.held.try_lock() else {
            return true;
        };
        let due = |s: Instant| any_age || now.saturating_duration_since(s) >= self.delay;
        if held.since.is_some_and(due) {
            held.write_nowait(self.registry);
        }
        held.since.is_some()
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        let held = self.held.get_mut().unwrap_or_else(|e| e.into_inner());
        if held.since.is_some() && self.pid == std::process::id() {
            let _ = held.write_all(&[], false, self.registry);
        }
        held.emptied(self.registry);
    }
}

impl Held {
    fn take_failure(&mut self) -> Result<(), TransportError> {
        match self.failed.take() {
            Some(kind) => Err(TransportError::Io(kind.into())),
            None => Ok(()),
        }
    }

    /// Drops what is held and notes that this outbox holds nothing.
    fn emptied(&mut self, registry: &Registry) {
        self.bytes.clear();
        if self.since.take().is_some() {
            registry.pending.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Writes everything held, then `parts`, in one vectored write where
    /// the socket takes it, waiting for room.
    fn write_all(
        &mut self,
        parts: &[&[u8]],
        look: bool,
        registry: &Registry,
    ) -> Result<(), TransportError> {
        let Held { ch, bytes, .. } = self;
        let mut all: Vec<&[u8]> = Vec::with_capacity(parts.len() + 1);
        if !bytes.is_empty() {
            all.push(bytes);
        }
        all.extend_from_slice(parts);
        let written = super::write_parts(ch, &all, look);
        self.emptied(registry);
        self.sent = Some(Instant::now());
        written
    }

    /// Writes as much of what is held as the socket takes now; keeps the
    /// rest, or the failure for the lane's next send.
    fn write_nowait(&mut self, registry: &Registry) {
        let mut done = 0;
        while done < self.bytes.len() {
            let rest = [IoSlice::new(&self.bytes[done..])];
            match self.ch.write_vectored_nowait(&rest) {
                Ok(0) => {
                    self.failed = Some(std::io::ErrorKind::WriteZero);
                    break;
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    self.failed = Some(e.kind());
                    break;
                }
            }
        }
        if done > 0 {
            self.sent = Some(Instant::now());
        }
        if self.failed.is_some() || done == self.bytes.len() {
            self.emptied(registry);
        } else {
            self.bytes.drain(..done);
        }
    }
}

/// A process's outboxes and its flusher (module documentation).
#[derive(Debug)]
struct Registry {
    pid: u32,
    outboxes: Mutex<Vec<Weak<Outbox>>>,
    /// Outboxes holding bytes.
    pending: AtomicUsize,
    /// The shortest delay of an outbox, in nanoseconds: the flusher's nap.
    delay_ns: AtomicU64,
    /// The flusher is awake or being woken: a post that starts a batch
    /// need not wake it.
    awake: AtomicBool,
    /// The flusher's wake-up: `true` once armed.
    armed: Mutex<bool>,
    wake: Condvar,
    /// Whether the flusher thread started.
    started: OnceLock<bool>,
}

/// This process's registry; a child's first use after a fork replaces the
/// parent's (module documentation). Registries are leaked, never freed.
static REGISTRY: AtomicPtr<Registry> = AtomicPtr::new(std::ptr::null_mut());

impl Registry {
    fn of_this_process() -> &'static Registry {
        let pid = std::process::id();
        let current = REGISTRY.load(Ordering::Acquire);
        // SAFETY: REGISTRY holds null or a pointer from `Box::leak` below,
        // never freed, so it is valid for ever.
        if let Some(r) = unsafe { current.as_ref() } {
            if r.pid == pid {
                return r;
            }
        }
        let fresh: &'static mut Registry = Box::leak(Box::new(Registry {
            pid,
            outboxes: Mutex::new(Vec::new()),
            pending: AtomicUsize::new(0),
            delay_ns: AtomicU64::new(u64::MAX),
            awake: AtomicBool::new(false),
            armed: Mutex::new(false),
            wake: Condvar::new(),
            started: OnceLock::new(),
        }));
        let fresh_ptr: *mut Registry = fresh;
        match REGISTRY.compare_exchange(current, fresh_ptr, Ordering::AcqRel, Ordering::Acquire) {
            // SAFETY: just leaked, valid for ever.
            Ok(_) => unsafe { &*fresh_ptr },
            // Another thread of this process installed one first (ours
            // stays leaked, unused); it is this process's.
            // SAFETY: as above, a leaked registry.
            Err(other) => unsafe { &*other },
        }
    }

    /// Starts the flusher thread once; whether it runs.
    fn start(&'static self) -> bool {
        *self.started.get_or_init(|| {
            std::thread::Builder::new()
                .name("vgpu-flush".into())
                .spawn(move || self.run())
                .is_ok()
        })
    }

    fn add(&self, out: &Arc<Outbox>) {
        let ns = u64::try_from(out.delay.as_nanos()).unwrap_or(u64::MAX);
        self.delay_ns.fetch_min(ns, Ordering::Relaxed);
        let mut list = self.outboxes.lock().unwrap_or_else(|e| e.into_inner());
        list.retain(|w| w.strong_count() > 0);
        list.push(Arc::downgrade(out));
    }

    /// Wakes the flusher for a batch just started.
    fn arm(&self) {
        if self.awake.load(Ordering::SeqCst) {
            return;
        }
        let mut armed = self.armed.lock().unwrap_or_else(|e| e.into_inner());
        *armed = true;
        self.awake.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }

    /// The live outboxes, for one round over them without the list's lock.
    fn live(&self) -> Vec<Arc<Outbox>> {
        let list = self.outboxes.lock().unwrap_or_else(|e| e.into_inner());
        list.iter().filter_map(Weak::upgrade).collect()
    }

    /// Writes the other outboxes' held bytes, as far as their sockets take
    /// them now, before `me` sends a frame that waits for its reply.
    fn flush_others(&self, me: &Outbox) {
        if self.pending.load(Ordering::SeqCst) == 0 {
            return;
        }
        let now = Instant::now();
        for out in self.live() {
            if !std::ptr::eq(Arc::as_ptr(&out), me) {
                out.flush_if_due(now, true);
            }
        }
    }

    /// One round of the flusher: writes every outbox whose oldest frame is
    /// due; whether any still holds bytes.
    fn flush_due(&self) -> bool {
        let now = Instant::now();
        let mut busy = false;
        for out in self.live() {
            busy |= out.flush_if_due(now, false);
        }
        busy
    }

    fn run(&self) {
        let _ = rustix::thread::set_current_timer_slack(NonZeroU64::new(SLACK_NS));
        loop {
            {
                let mut armed = self.armed.lock().unwrap_or_else(|e| e.into_inner());
                while !*armed {
                    armed = self.wake.wait(armed).unwrap_or_else(|e| e.into_inner());
                }
            }
            let nap = Duration::from_nanos(self.delay_ns.load(Ordering::Relaxed))
                .min(Duration::from_secs(1));
            // Awake for at least STAY_AWAKE after the last held bytes: a
            // post that starts a batch then finds `awake` set and makes no
            // system call to wake this thread.
            let mut idle = Duration::ZERO;
            while idle < STAY_AWAKE {
                std::thread::sleep(nap);
                idle = if self.flush_due() {
                    Duration::ZERO
                } else {
                    idle + nap
                };
            }
            // Nothing held for a while: sleep until the next batch. A post that held
            // bytes after the round above looked at its outbox sees
            // `awake` false (its outbox's lock orders the two) and wakes
            // this thread; one that held them before is seen by this
            // second round.
            {
                let mut armed = self.armed.lock().unwrap_or_else(|e| e.into_inner());
                *armed = false;
                self.awake.store(false, Ordering::SeqCst);
            }
            if self.flush_due() {
                self.arm();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::net::{Ipv4Addr, TcpListener, TcpStream};

    use super::*;

    /// The tests share this process's registry, and a frame sent now by
    /// one writes the others' held frames: they run one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn serial() -> MutexGuard<'static, ()> {
        SERIAL.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An outbox on one end of a loopback TCP connection, and the other end.
    fn pair(delay: Duration) -> (Arc<Outbox>, TcpStream) {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("listen");
        let ours = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (theirs, _) = listener.accept().expect("accept");
        let ch = Channel::from_tcp(ours).expect("tuned");
        (Outbox::new(ch, delay).expect("a flusher"), theirs)
    }

    fn read_n(peer: &mut TcpStream, n: usize) -> Vec<u8> {
        let mut v = vec![0; n];
        peer.read_exact(&mut v).expect("read");
        v
    }

    #[test]
    fn a_quiet_lane_writes_at_once_and_a_burst_is_held_then_flushed() {
        let _one = serial();
        let (out, mut peer) = pair(Duration::from_millis(200));
        out.post(&[b"one"]).expect("posted");
        // The first frame of a quiet lane is on the wire already.
        peer.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        assert_eq!(read_n(&mut peer, 3), b"one");
        // The next ones are held: nothing comes within a short wait.
        out.post(&[b"tw", b"o"]).expect("posted");
        out.post(&[b"three"]).expect("posted");
        peer.set_nonblocking(true).expect("nonblocking");
        let mut byte = [0u8; 1];
        assert!(
            peer.read(&mut byte).is_err(),
            "a held frame was written before its delay"
        );
        peer.set_nonblocking(false).expect("blocking");
        // The flusher writes them once the delay has passed.
        assert_eq!(read_n(&mut peer, 8), b"twothree");
    }

    #[test]
    fn a_frame_sent_now_follows_what_was_held() {
        let _one = serial();
        let (out, mut peer) = pair(Duration::from_secs(60));
        out.post(&[b"a"]).expect("posted");
        out.post(&[b"b"]).expect("held");
        out.post(&[b"c"]).expect("held");
        out.send_now(&[b"D"], false).expect("sent");
        peer.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        assert_eq!(read_n(&mut peer, 4), b"abcD");
    }

    #[test]
    fn a_full_outbox_is_written_by_the_post() {
        let _one = serial();
        let (out, mut peer) = pair(Duration::from_secs(60));
        out.post(&[b"x"]).expect("posted");
        let frame = vec![7u8; 1000];
        let frames = FULL / frame.len() + 1;
        for _ in 0..frames {
            out.post(&[&frame]).expect("posted");
        }
        peer.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let got = read_n(&mut peer, 1 + frames * frame.len());
        assert!(got[1..].iter().all(|&b| b == 7));
    }

    #[test]
    fn another_lanes_frame_sent_now_writes_this_lanes_held_frames_first() {
        let _one = serial();
        let (a, mut peer_a) = pair(Duration::from_secs(60));
        let (b, mut peer_b) = pair(Duration::from_secs(60));
        a.post(&[b"1"]).expect("posted");
        a.post(&[b"2"]).expect("held");
        b.send_now(&[b"sync"], false).expect("sent");
        peer_a
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        assert_eq!(read_n(&mut peer_a, 2), b"12");
        assert_eq!(read_n(&mut peer_b, 4), b"sync");
    }

    #[test]
    fn a_dropped_outbox_writes_what_it_held() {
        let _one = serial();
        let (out, mut peer) = pair(Duration::from_secs(60));
        out.post(&[b"p"]).expect("posted");
        out.post(&[b"q"]).expect("held");
        drop(out);
        peer.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        assert_eq!(read_n(&mut peer, 2), b"pq");
    }

    #[test]
    fn a_failed_write_on_the_lanes_behalf_comes_back_at_its_next_send() {
        let _one = serial();
        let (out, peer) = pair(Duration::from_millis(20));
        out.post(&[b"a"]).expect("written at once");
        out.post(&[b"b"]).expect("held");
        // Closed with "a" unread: the peer resets the connection, and the
        // flusher's write of "b" fails.
        drop(peer);
        std::thread::sleep(Duration::from_millis(300));
        assert!(out.flush().is_err(), "the flusher's failure was lost");
    }
}
