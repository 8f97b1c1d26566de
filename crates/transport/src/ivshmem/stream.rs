//! A byte stream over a pair of rings: how a [`crate::Channel`] runs inside
//! an ivshmem BAR, where there is no socket.
//!
//! Each write is one ring message (at most the ring's largest message; a
//! longer write is cut, and `write_all` sends the rest); reads take the next
//! message and hand out its bytes in order. So the frames of `vgpu-proto`
//! travel unchanged, whatever their size: a frame larger than a ring
//! message is simply several messages.
//!
//! Waiting: the ring ends' own [`WaitPolicy`] (a guest end polls with
//! backoff, a host end sleeps on its futex), ended every `timeout` by a
//! check of `alive` (the region still belongs to the session, the worker is
//! still there). A peer that closed its ring end, or an `alive` that says
//! no, is the end of the stream: reads return 0 bytes (end of file), writes
//! fail with `BrokenPipe`.

use std::io::{IoSlice, Read, Write};
use std::mem::ManuallyDrop;
use std::time::{Duration, Instant};

use crate::{Consumer, Producer, TransportError, WaitPolicy};

/// Says whether the session a stream belongs to still stands.
pub type Alive = Box<dyn Fn() -> bool + Send>;

/// One end of a stream over two rings (see the module documentation).
pub struct ShmStream {
    out: ManuallyDrop<Producer>,
    inp: ManuallyDrop<Consumer>,
    /// The last message taken, and how much of it was read.
    buf: Vec<u8>,
    pos: usize,
    policy: WaitPolicy,
    /// How a write waits for ring space.
    space: WaitPolicy,
    alive: Alive,
    /// How long one read or write may wait in all ([`ShmStream::set_deadline`]).
    deadline: Option<Duration>,
    /// How long one read may wait, when set ([`ShmStream::set_read_deadline`]).
    read_deadline: Option<Duration>,
    /// Set by [`ShmStream::abandon`]: the ends are shared with another
    /// process and must not be closed from here.
    abandoned: bool,
    /// The process that opened the stream: only it closes the ends (a
    /// forked child that drops an inherited stream, say at its exit, must
    /// not close its parent's).
    pid: u32,
    /// Run once when the stream is dropped, after both ring ends closed
    /// (the worker frees the lane slot for reuse: laying it out afresh
    /// before our ends marked themselves closed would let those stores
    /// land in the new rings).
    on_drop: Option<Box<dyn FnOnce() + Send>>,
}

impl std::fmt::Debug for ShmStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShmStream")
            .field("capacity", &self.out.capacity())
            .finish_non_exhaustive()
    }
}

impl ShmStream {
    /// A stream that sends on `out` and receives on `inp`. `policy` should
    /// have a timeout: that is how often `alive` is asked. A write that
    /// finds the ring full sleeps at once (space comes back at the pace of
    /// the peer's work, and a host end is woken for it); a guest end, which
    /// can only nap, polls as for data instead ([`ShmStream::poll_for_space`]).
    pub fn new(out: Producer, inp: Consumer, policy: WaitPolicy, alive: Alive) -> ShmStream {
        ShmStream {
            out: ManuallyDrop::new(out),
            inp: ManuallyDrop::new(inp),
            buf: Vec::new(),
            pos: 0,
            policy,
            space: WaitPolicy {
                spin: Duration::ZERO,
                yield_for: Duration::ZERO,
                ..policy
            },
            alive,
            deadline: None,
            read_deadline: None,
            abandoned: false,
            pid: std::process::id(),
            on_drop: None,
        }
    }

    /// Waits for ring space as for data (spin, yield, then sleep): for a
    /// guest end, whose sleeps are naps that nothing cuts short.
    pub fn poll_for_space(mut self) -> ShmStream {
        self.space = self.policy;
        self
    }

    /// Bounds how long one read or write waits in all: past `deadline` it
    /// fails with `TimedOut` even while the session stands (`None`: waits
    /// as long as it does).
    pub fn set_deadline(&mut self, deadline: Option<Duration>) {
        self.deadline = deadline;
    }

    /// Bounds how long one read waits, as a socket's receive timeout does
    /// (`None`: as [`ShmStream::set_deadline`] says); writes keep theirs.
    pub fn set_read_deadline(&mut self, deadline: Option<Duration>) {
        self.read_deadline = deadline;
    }

    /// Whether a wait that began at `start` has run past the deadline.
    fn past_deadline(&self, start: Instant) -> bool {
        self.deadline.is_some_and(|d| start.elapsed() >= d)
    }

    /// Runs `f` when the stream is dropped.
    pub fn on_drop(mut self, f: impl FnOnce() + Send + 'static) -> ShmStream {
        self.on_drop = Some(Box::new(f));
        self
    }

    /// Lets go of a stream inherited across `fork` without closing its ring
    /// ends: the parent still uses them (its peer would see them close).
    pub fn abandon(mut self) {
        self.abandoned = true;
    }

    /// Whether the peer closed its end or the session is over.
    pub fn hung_up(&self) -> bool {
        self.out.peer_closed() || !(self.alive)()
    }
}

fn broken() -> std::io::Error {
    std::io::ErrorKind::BrokenPipe.into()
}

fn io(e: TransportError) -> std::io::Error {
    match e {
        TransportError::Io(e) => e,
        other => std::io::Error::other(other),
    }
}

impl Read for ShmStream {
    fn read(&mut self, dst: &mut [u8]) -> std::io::Result<usize> {
        if dst.is_empty() {
            return Ok(0);
        }
        // After a wait that timed out (the stream is idle), the next ones
        // sleep at once: spinning and yielding again every `timeout` would
        // cost an idle stream a few percent of a core.
        let mut policy = self.policy;
        let start = Instant::now();
        while self.pos >= self.buf.len() {
            self.pos = 0;
            match self.inp.pop_into(&mut self.buf, &policy) {
                Ok(()) => {}
                Err(TransportError::Timeout) => {
                    self.buf.clear();
                    if !(self.alive)() {
                        return Ok(0);
                    }
                    let limit = self.read_deadline.or(self.deadline);
                    if limit.is_some_and(|d| start.elapsed() >= d) {
                        return Err(std::io::ErrorKind::TimedOut.into());
                    }
                    policy = WaitPolicy {
                        spin: Duration::ZERO,
                        yield_for: Duration::ZERO,
                        ..self.policy
                    };
                }
                Err(TransportError::PeerGone) => {
                    self.buf.clear();
                    return Ok(0);
                }
                Err(e) => {
                    self.buf.clear();
                    return Err(io(e));
                }
            }
        }
        let n = dst.len().min(self.buf.len() - self.pos);
        dst[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl Write for ShmStream {
    fn write(&mut self, src: &[u8]) -> std::io::Result<usize> {
        self.write_vectored(&[IoSlice::new(src)])
    }

    /// As many of `bufs` as fit in one ring message, as one message.
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
        let mut room = self.out.max_message();
        let mut parts: Vec<&[u8]> = Vec::with_capacity(bufs.len());
        for b in bufs {
            if room == 0 {
                break;
            }
            let take = b.len().min(room);
            if take > 0 {
                parts.push(&b[..take]);
            }
            room -= take;
        }
        let n = self.out.max_message() - room;
        if n == 0 {
            return Ok(0);
        }
        let mut space = self.space;
        let start = Instant::now();
        loop {
            match self.out.push(&parts, &space) {
                Ok(()) => return Ok(n),
                Err(TransportError::Timeout) if self.past_deadline(start) => {
                    return Err(std::io::ErrorKind::TimedOut.into());
                }
                Err(TransportError::Timeout) if (self.alive)() => {
                    // Still full after a whole wait: sleep at once from now on.
                    space = WaitPolicy {
                        spin: Duration::ZERO,
                        yield_for: Duration::ZERO,
                        ..self.space
                    };
                }
                Err(TransportError::Timeout | TransportError::PeerGone) => return Err(broken()),
                Err(e) => return Err(io(e)),
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for ShmStream {
    fn drop(&mut self) {
        if self.abandoned || self.pid != std::process::id() {
            return; // The ends (and their mapping) stay as the parent has them.
        }
        // SAFETY: the ends are dropped exactly once, here, and never used
        // again (the stream is going away).
        unsafe {
            ManuallyDrop::drop(&mut self.out);
            ManuallyDrop::drop(&mut self.inp);
        }
        if let Some(f) = self.on_drop.take() {
            f();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm_ring::Ring;
    use std::time::Duration;

    fn pair() -> (ShmStream, ShmStream) {
        let policy = WaitPolicy::default().with_timeout(Duration::from_millis(20));
        let (a, afd) = Ring::create(4096).expect("ring");
        let (b, bfd) = Ring::create(4096).expect("ring");
        let a2 = Ring::map(&afd).expect("map");
        let b2 = Ring::map(&bfd).expect("map");
        (
            ShmStream::new(
                a.into_producer().expect("p"),
                b.into_consumer().expect("c"),
                policy,
                Box::new(|| true),
            ),
            ShmStream::new(
                b2.into_producer().expect("p"),
                a2.into_consumer().expect("c"),
                policy,
                Box::new(|| true),
            ),
        )
    }

    #[test]
    fn a_deadline_ends_a_wait_for_a_silent_peer() {
        let (mut x, mut y) = pair();
        y.set_deadline(Some(Duration::from_millis(100)));
        let start = Instant::now();
        let mut b = [0u8; 1];
        let e = y.read(&mut b).expect_err("nothing comes");
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        // A full ring: a write times out as well.
        x.set_deadline(Some(Duration::from_millis(100)));
        let chunk = vec![7u8; 1024];
        let e = loop {
            if let Err(e) = x.write(&chunk) {
                break e;
            }
        };
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        // Bytes that do come are read as ever.
        y.set_deadline(None);
        y.read_exact(&mut b).expect("a byte");
        assert_eq!(b, [7]);
    }

    #[test]
    fn bytes_of_any_size_arrive_in_order() {
        let (mut x, mut y) = pair();
        let big: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let sent = big.clone();
        let t = std::thread::spawn(move || {
            x.write_all(b"hi").expect("small");
            x.write_all(&sent).expect("big");
            x
        });
        let mut got = vec![0u8; 2 + big.len()];
        y.read_exact(&mut got).expect("read");
        assert_eq!(&got[..2], b"hi");
        assert_eq!(&got[2..], &big[..]);
        drop(t.join().expect("writer"));
        let mut more = [0u8; 1];
        assert_eq!(
            y.read(&mut more).expect("eof"),
            0,
            "a closed peer is end of file"
        );
        assert!(y.hung_up());
        assert!(y.write_all(b"x").is_err(), "writing to a closed peer fails");
    }

    #[test]
    fn a_session_that_ended_ends_the_stream() {
        let (_x, mut y) = pair();
        y.alive = Box::new(|| false);
        let mut b = [0u8; 4];
        assert_eq!(y.read(&mut b).expect("eof"), 0);
        assert!(y.hung_up());
    }
}
