//! Posting on a TCP lane through the process's sender thread
//! ([`super::FrameLane::combining`]).
//!
//! Over TCP the `sendmsg(2)` of a frame is most of what a posted call costs
//! the application's thread: on one host the kernel runs the receiving side
//! of TCP inside the sender's call. A combining lane hands its posted frames
//! to one sender thread per process instead, through the lane's outbox:
//!
//! - While the sender is awake, a post appends its frame to the outbox and
//!   returns, with no system call. The sender writes all that an outbox
//!   holds in one call; frames posted while it writes go in its next one.
//!   So a burst of posts costs few writes, and no frame waits for a timer:
//!   a frame waits at most for the write before it.
//! - While the sender sleeps, a post writes its frame itself, as a lane
//!   without an outbox does, and wakes the sender for the posts that
//!   follow. So does the first post after the lane read a reply: its
//!   worker thread is idle, waiting for it. The sender polls for [`SPIN`] after its last write before it
//!   sleeps again.
//! - A frame that waits for its reply, and a posted frame of [`LARGE`]
//!   bytes or more (a piece of an asynchronous copy, which the outbox would
//!   copy once more), is written by its own thread, after everything its
//!   lane holds. Frames other lanes hold, whose tickets its
//!   fence may name, are being written by the sender meanwhile.
//!
//! The sender never waits for room in a socket (`MSG_DONTWAIT`): a lane
//! whose worker reads nothing may be waiting for a ticket that another
//! outbox holds, so the sender must reach every outbox. What a socket does
//! not take stays for the sender's next round, and before any later byte
//! of its lane. It never waits for an application thread either: it only
//! tries a lane's writing lock. A write that fails on a lane's behalf is
//! returned by that lane's next post or send, and the session ends there.
//!
//! A lane dropped with frames held (its thread ended) writes them first.
//!
//! # Fork
//!
//! A child never touches its parent's outboxes, sender or their locks (a
//! lock that a parent's thread held at the fork stays held in the child):
//! outboxes and the sender belong to a per-process registry, found by
//! process id, and a child's first combining lane makes a fresh one. A lane
//! inherited across the fork drops what it holds unwritten: it is the
//! parent's.

use std::io::IoSlice;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use crate::{Channel, TransportError};

/// How long the sender polls for posts after its last write before it
/// sleeps.
pub const SPIN: Duration = Duration::from_micros(100);

/// Posted frames of at least this many bytes (an asynchronous copy's
/// pieces) are written by the posting thread, from its memory: handing
/// them over would copy them once more.
pub const LARGE: usize = 64 << 10;

/// How long the sender naps between rounds while a socket takes no more
/// bytes.
const BLOCKED_NAP: Duration = Duration::from_micros(50);

/// A combining lane's writing side (module documentation).
#[derive(Debug)]
pub struct Outbox {
    /// Frames posted and not yet taken by a write.
    held: Mutex<Held>,
    /// The socket, and bytes a write took but the socket did not: locked
    /// for every write, so bytes leave in the order they were posted.
    wire: Mutex<Wire>,
    /// The process that made it: only that one writes what it holds.
    pid: u32,
    registry: &'static Registry,
    /// The lane read a reply since its last post: its worker thread is
    /// waiting for the next frame.
    quiet: AtomicBool,
}

#[derive(Debug, Default)]
struct Held {
    bytes: Vec<u8>,
    /// Why a write on this lane's behalf failed, for its next post or send.
    failed: Option<std::io::ErrorKind>,
}

#[derive(Debug)]
struct Wire {
    /// A second descriptor of the lane's socket, used only to write.
    ch: Channel,
    /// Bytes taken from `held` whose first `done` are written.
    rest: Vec<u8>,
    done: usize,
}

/// What one look of the sender at an outbox found.
#[derive(Debug, PartialEq, Eq)]
enum Look {
    /// Nothing to write, or its own thread is writing.
    Nothing,
    /// Everything it held is written.
    Sent,
    /// Its socket took no more; bytes remain.
    Blocked,
}

impl Outbox {
    /// An outbox writing on `ch` (a plain TCP socket); `None` when the
    /// process has no sender thread and cannot start one (the lane then
    /// writes each frame itself).
    pub fn new(ch: Channel) -> Option<Arc<Outbox>> {
        let registry = Registry::of_this_process();
        if !registry.start() {
            return None;
        }
        let out = Arc::new(Outbox {
            held: Mutex::new(Held::default()),
            wire: Mutex::new(Wire {
                ch,
                rest: Vec::new(),
                done: 0,
            }),
            pid: std::process::id(),
            registry,
            quiet: AtomicBool::new(false),
        });
        registry.add(&out);
        Some(out)
    }

    fn held(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Posts a frame, the concatenation of `parts`: handed to the sender
    /// while it is awake, written here otherwise (module documentation).
    pub fn post(&self, parts: &[&[u8]]) -> Result<(), TransportError> {
        let registry = self.registry;
        let len = parts.iter().fold(0usize, |n, p| n.saturating_add(p.len()));
        if len >= LARGE {
            // A copy's piece: written from the caller's memory as it is,
            // never copied into the outbox.
            return self.send_now(parts, true);
        }
        // The first post after a reply goes at once from this thread: its
        // worker is idle, and a hand-over would put the sender's write
        // before the request that waits next, one more lock and wake-up
        // on a launch-then-synchronize path.
        if self.quiet.swap(false, Ordering::Relaxed) {
            return self.send_now(parts, true);
        }
        if !registry.awake.load(Ordering::SeqCst) {
            self.send_now(parts, true)?;
            registry.wake();
            return Ok(());
        }
        let mut held = self.held();
        take_failure(&mut held)?;
        let first = held.bytes.is_empty();
        for part in parts {
            held.bytes.extend_from_slice(part);
        }
        drop(held);
        if first {
            registry.pending.fetch_add(1, Ordering::SeqCst);
        }
        // The sender may have gone to sleep since the look above; it then
        // sees `pending` or is woken here (`Registry::park`).
        if !registry.awake.load(Ordering::SeqCst) {
            registry.wake();
        }
        Ok(())
    }

    /// Writes a frame at once, after everything this lane holds, waiting
    /// for room. `look`: first fail with `BrokenPipe` if the peer hung up.
    pub fn send_now(&self, parts: &[&[u8]], look: bool) -> Result<(), TransportError> {
        let mut wire = self.wire.lock().unwrap_or_else(|e| e.into_inner());
        let taken = {
            let mut held = self.held();
            take_failure(&mut held)?;
            self.registry.take(&mut held.bytes)
        };
        let Wire { ch, rest, done } = &mut *wire;
        let mut all: Vec<&[u8]> = Vec::with_capacity(parts.len() + 2);
        for bytes in [&rest[*done..], &taken[..]] {
            if !bytes.is_empty() {
                all.push(bytes);
            }
        }
        all.extend_from_slice(parts);
        let written = if all.iter().all(|p| p.is_empty()) {
            Ok(())
        } else {
            super::write_parts(ch, &all, look)
        };
        rest.clear();
        *done = 0;
        written
    }

    /// Writes what this lane holds, before it reads a reply.
    pub fn flush(&self) -> Result<(), TransportError> {
        self.quiet.store(true, Ordering::Relaxed);
        self.send_now(&[], false)
    }

    /// For the sender: writes what is held, as far as the socket takes it
    /// now.
    fn look(&self) -> Look {
        let Ok(mut wire) = self.wire.try_lock() else {
            return Look::Nothing;
        };
        if wire.rest.is_empty() {
            let mut held = self.held();
            if held.bytes.is_empty() {
                return Look::Nothing;
            }
            std::mem::swap(&mut wire.rest, &mut held.bytes);
            self.registry.pending.fetch_sub(1, Ordering::SeqCst);
        }
        let Wire { ch, rest, done } = &mut *wire;
        let failure = loop {
            if *done == rest.len() {
                break None;
            }
            match ch.write_vectored_nowait(&[IoSlice::new(&rest[*done..])]) {
                Ok(0) => break Some(std::io::ErrorKind::WriteZero),
                Ok(n) => *done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Look::Blocked,
                Err(e) => break Some(e.kind()),
            }
        };
        rest.clear();
        *done = 0;
        if let Some(kind) = failure {
            // Dropped with what follows it; why is kept for the lane.
            let mut held = self.held();
            self.registry.take(&mut held.bytes);
            held.failed = Some(kind);
        }
        Look::Sent
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        if self.pid == std::process::id() {
            let _ = self.send_now(&[], false);
        } else {
            let held = self.held.get_mut().unwrap_or_else(|e| e.into_inner());
            self.registry.take(&mut held.bytes);
        }
    }
}

fn take_failure(held: &mut Held) -> Result<(), TransportError> {
    match held.failed.take() {
        Some(kind) => Err(TransportError::Io(kind.into())),
        None => Ok(()),
    }
}

/// A process's outboxes and its sender thread (module documentation).
#[derive(Debug)]
struct Registry {
    pid: u32,
    outboxes: Mutex<Vec<Weak<Outbox>>>,
    /// Outboxes holding bytes.
    pending: AtomicUsize,
    /// The sender is polling: posts hand it their frames.
    awake: AtomicBool,
    /// Where the sender sleeps.
    sleep: Mutex<()>,
    wake: Condvar,
    /// Whether the sender thread started.
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
            awake: AtomicBool::new(false),
            sleep: Mutex::new(()),
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

    /// Starts the sender thread once; whether it runs.
    fn start(&'static self) -> bool {
        *self.started.get_or_init(|| {
            std::thread::Builder::new()
                .name("vgpu-sender".into())
                .spawn(move || self.run())
                .is_ok()
        })
    }

    fn add(&self, out: &Arc<Outbox>) {
        let mut list = self.outboxes.lock().unwrap_or_else(|e| e.into_inner());
        list.retain(|w| w.strong_count() > 0);
        list.push(Arc::downgrade(out));
    }

    /// Takes an outbox's held bytes (noting that it holds none).
    fn take(&self, bytes: &mut Vec<u8>) -> Vec<u8> {
        if bytes.is_empty() {
            return Vec::new();
        }
        self.pending.fetch_sub(1, Ordering::SeqCst);
        std::mem::take(bytes)
    }

    /// Wakes the sender if it sleeps.
    fn wake(&self) {
        if !self.awake.swap(true, Ordering::SeqCst) {
            let _sleeping = self.sleep.lock().unwrap_or_else(|e| e.into_inner());
            self.wake.notify_one();
        }
    }

    /// Sleeps until a post wakes the sender, unless one held bytes since
    /// the sender last looked.
    fn park(&self) {
        let mut guard = self.sleep.lock().unwrap_or_else(|e| e.into_inner());
        self.awake.store(false, Ordering::SeqCst);
        // A post that saw `awake` set before the store above counted its
        // bytes in `pending` first; one that sees it clear wakes us.
        if self.pending.load(Ordering::SeqCst) > 0 {
            self.awake.store(true, Ordering::SeqCst);
            return;
        }
        while !self.awake.load(Ordering::SeqCst) {
            guard = self.wake.wait(guard).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// One round over the live outboxes: whether any was written, and
    /// whether any socket took no more.
    fn round(&self) -> (bool, bool) {
        let live: Vec<Arc<Outbox>> = {
            let list = self.outboxes.lock().unwrap_or_else(|e| e.into_inner());
            list.iter().filter_map(Weak::upgrade).collect()
        };
        let (mut sent, mut blocked) = (false, false);
        for out in live {
            match out.look() {
                Look::Nothing => {}
                Look::Sent => sent = true,
                Look::Blocked => blocked = true,
            }
        }
        (sent, blocked)
    }

    fn run(&self) {
        let mut last = Instant::now();
        loop {
            if self.pending.load(Ordering::SeqCst) == 0 {
                if last.elapsed() < SPIN {
                    std::hint::spin_loop();
                    continue;
                }
                let (_, blocked) = self.round();
                if blocked {
                    std::thread::sleep(BLOCKED_NAP);
                    continue;
                }
                self.park();
                last = Instant::now();
                continue;
            }
            let (sent, blocked) = self.round();
            if sent {
                last = Instant::now();
            } else if blocked {
                std::thread::sleep(BLOCKED_NAP);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::net::{Ipv4Addr, TcpListener, TcpStream};

    use super::*;

    /// The tests share this process's registry and sender: they run one at
    /// a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn serial() -> MutexGuard<'static, ()> {
        SERIAL.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An outbox on one end of a loopback TCP connection, and the other end.
    fn pair() -> (Arc<Outbox>, TcpStream) {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("listen");
        let ours = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (theirs, _) = listener.accept().expect("accept");
        theirs
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let ch = Channel::from_tcp(ours).expect("tuned");
        (Outbox::new(ch).expect("a sender"), theirs)
    }

    fn read_n(peer: &mut TcpStream, n: usize) -> Vec<u8> {
        let mut v = vec![0; n];
        peer.read_exact(&mut v).expect("read");
        v
    }

    /// Frames `0..n`, each four bytes: its number.
    fn frames(n: u32) -> Vec<[u8; 4]> {
        (0..n).map(u32::to_le_bytes).collect()
    }

    #[test]
    fn posted_frames_arrive_whole_and_in_order_whoever_writes_them() {
        let _one = serial();
        let (out, mut peer) = pair();
        // Posts come in bursts and pauses, so that both the posting thread
        // (sender asleep) and the sender (awake) write some.
        let all = frames(20_000);
        for (i, f) in all.iter().enumerate() {
            out.post(&[&f[..2], &f[2..]]).expect("posted");
            if i % 5000 == 4999 {
                std::thread::sleep(SPIN * 20);
            }
        }
        let got = read_n(&mut peer, all.len() * 4);
        assert_eq!(got, all.concat());
    }

    #[test]
    fn a_frame_sent_now_follows_what_the_lane_posted() {
        let _one = serial();
        let (out, mut peer) = pair();
        let all = frames(1000);
        for f in &all {
            out.post(&[f]).expect("posted");
        }
        out.send_now(&[b"sync"], false).expect("sent");
        let got = read_n(&mut peer, all.len() * 4 + 4);
        assert_eq!(&got[..all.len() * 4], &all.concat()[..]);
        assert_eq!(&got[all.len() * 4..], b"sync");
    }

    #[test]
    fn a_large_posted_frame_is_written_by_its_thread_after_what_was_held() {
        let _one = serial();
        let (out, mut peer) = pair();
        let small = frames(1000);
        let big = vec![9u8; LARGE];
        for f in &small {
            out.post(&[f]).expect("posted");
        }
        out.post(&[&big[..10], &big[10..]]).expect("posted");
        out.post(&[b"tail"]).expect("posted");
        let got = read_n(&mut peer, small.len() * 4 + LARGE + 4);
        let (head, rest) = got.split_at(small.len() * 4);
        assert_eq!(head, &small.concat()[..]);
        assert_eq!(&rest[..LARGE], &big[..]);
        assert_eq!(&rest[LARGE..], b"tail");
    }

    #[test]
    fn a_dropped_outbox_writes_what_it_held() {
        let _one = serial();
        let (out, mut peer) = pair();
        let all = frames(1000);
        for f in &all {
            out.post(&[f]).expect("posted");
        }
        drop(out);
        assert_eq!(read_n(&mut peer, all.len() * 4), all.concat());
    }

    #[test]
    fn a_full_socket_holds_up_only_its_own_lane() {
        let _one = serial();
        // Lane a's peer reads nothing until lane b's frames came: the
        // sender must keep writing b while a's socket is full.
        let (a, mut peer_a) = pair();
        let (b, mut peer_b) = pair();
        let big = vec![7u8; LARGE / 2];
        let posts = 400; // 12.8 MiB: more than a's socket buffers take
        for _ in 0..posts {
            a.post(&[&big]).expect("posted on a");
        }
        b.post(&[b"b1"]).expect("posted on b");
        b.post(&[b"b2"]).expect("posted on b");
        assert_eq!(read_n(&mut peer_b, 4), b"b1b2");
        let got = read_n(&mut peer_a, posts * big.len());
        assert!(got.iter().all(|&x| x == 7));
    }

    #[test]
    fn a_failed_write_on_the_lanes_behalf_comes_back_at_its_next_post() {
        let _one = serial();
        let (out, peer) = pair();
        out.post(&[b"a"]).expect("written");
        // Closed with "a" unread: the peer resets the connection.
        drop(peer);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            assert!(Instant::now() < deadline, "no failure came back");
            if out.post(&[b"more"]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
