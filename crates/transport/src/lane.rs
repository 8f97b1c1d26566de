//! A frame lane: one ordered, two-way stream of frames between a client
//! thread and its worker thread, used by both ends.
//!
//! # Two ways to move frames
//!
//! - **Socket** ([`FrameLane::socket`]): the lane's [`Channel`] (Unix or
//!   TCP) carries the frames' bytes.
//! - **Rings** ([`FrameLane::create_rings`] on the worker,
//!   [`FrameLane::map_rings`] on the client): an outgoing and an incoming
//!   ring in shared memory ([`crate::shm_ring`]) plus the lane socket. A
//!   frame that fits in a ring message travels as exactly one message,
//!   byte for byte as on a socket. A larger one travels on the lane socket,
//!   announced by an empty ring message in its place, so the ring keeps the
//!   order. The socket also carries descriptors, and its hang-up tells a
//!   waiting end that the peer is gone.
//!
//! # Waiting
//!
//! An end waiting for a message polls for the policy's `spin`, sleeps on
//! the futex, and wakes every `timeout` to see whether the peer's socket
//! hung up or the caller's `alive` check says to stop; either ends the wait
//! with [`TransportError::PeerGone`]. An end waiting for space in a full ring
//! sleeps at once (same checks): space comes back at the pace of the peer's
//! work, in batches, and a spinning sender would only take CPU from that
//! work. A peer that closed its end of the ring ends either wait at once.
//!
//! The lane knows nothing of what a frame means: the caller encodes and
//! decodes (`vgpu-proto`), and reads a frame that comes on the socket
//! itself ([`Incoming::Socket`]).
//!
//! # Reading through a buffer
//!
//! A socket lane on a Unix socket, and either end of a plain TCP lane
//! ([`FrameLane::buffered_socket`]), read through a buffer of 64 KiB
//! ([`LaneSocket`]): one `read(2)` takes a frame's head and fixed part
//! together, and the frames queued behind it (posted calls come in
//! bursts), where reading a frame's parts one by one costs a system call
//! each. A read at least as large as the buffer (a copy's bulk bytes) goes
//! straight into the caller's memory once the buffer is drained. On a Unix
//! socket a descriptor passed after a frame is kept with the byte that
//! carries it ([`SocketIn`]) and taken by [`FrameLane::recv_fd`] through
//! the buffer.
//!
//! A worker that drains a TCP socket at each read has the kernel
//! acknowledge nearly every small segment. A client that wrote each posted
//! frame at once then paid for a segment and an ACK per frame, and reading
//! frame by frame was faster (one thread posting empty launches over
//! loopback TCP on the simulated device: 391,000 launches/s read frame by
//! frame, 224,000 buffered). A client that posts through a sender thread
//! (below) writes few, large segments, and the worker reads them buffered:
//! 2,294,000 launches/s, against 331,000 with neither. So workers read TCP
//! lanes through a buffer; a client without the sender (the default on
//! hosts of fewer than 4 CPUs) then posts 223,000 launches/s, and its
//! launch plus synchronize takes 13.6 µs instead of 20.
//!
//! # Posting through a sender thread on TCP
//!
//! The client's end of a plain TCP lane ([`FrameLane::combining`]) may hand
//! the frames it posts ([`FrameLane::post`]) to the process's sender thread,
//! which writes all that a lane holds in one call, and always before a
//! frame of that lane that waits for its reply ([`outbox`]).
//!
//! # Looking for a hang-up before writing
//!
//! On TCP, [`FrameLane::send`] first looks whether the peer hung up, so
//! that a posted request to a dead worker fails at once (the kernel takes
//! the first write after the peer's FIN without complaint).
//! [`FrameLane::send_then_read`] skips that look, a system call per frame,
//! for a frame after which this end reads the lane (a request that waits
//! for its reply, a worker's reply): the read sees the hang-up.

use std::io::{BufReader, IoSlice, Read};
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::Arc;

use crate::shm_ring::Ring;
use crate::{Channel, Consumer, Producer, TransportError, WaitPolicy};

/// How long a socket lane polls for its next frame before it sleeps in
/// `read(2)` ([`Channel::spin_until_readable`]), as a ring lane polls its
/// ring first: a reply over TCP usually comes within it.
pub const SOCKET_SPIN: std::time::Duration = std::time::Duration::from_micros(50);

pub mod outbox;
mod socket_in;
pub use outbox::Outbox;
pub use socket_in::SocketIn;

/// A socket lane's socket, read through the lane's buffer where it has one
/// (module documentation); its channel is [`SocketIn::channel`].
pub type LaneSocket = BufReader<SocketIn>;

/// Bytes a buffered lane reads ahead of the frame it is reading.
const READ_BUFFER: usize = 64 << 10;

/// A lane's end: see the module documentation.
#[derive(Debug)]
pub struct FrameLane {
    io: Io,
    /// A combining TCP lane's writing side ([`FrameLane::combining`]).
    outbox: Option<Arc<Outbox>>,
}

#[derive(Debug)]
enum Io {
    Socket(LaneSocket),
    Rings(Rings),
}

#[derive(Debug)]
struct Rings {
    out: Producer,
    inp: Consumer,
    /// Oversized frames, descriptors and the peer's hang-up (unbuffered).
    sock: LaneSocket,
    /// The last ring message, reused.
    buf: Vec<u8>,
    policy: WaitPolicy,
}

/// Where the next incoming frame is.
#[derive(Debug)]
pub enum Incoming<'a> {
    /// The whole frame, in the lane's buffer.
    Buffered(&'a [u8]),
    /// The frame is to be read from this socket.
    Socket(&'a mut LaneSocket),
}

/// What [`FrameLane::recv_split`] did with the next frame.
#[derive(Debug)]
pub enum Split<'a> {
    /// The frame's last `tail.len()` bytes went straight into the tail;
    /// these are the bytes before them.
    Split(&'a [u8]),
    /// The whole frame, in the lane's buffer; the tail is untouched.
    Whole(&'a [u8]),
    /// The frame is to be read from this socket; the tail is untouched.
    Socket(&'a mut LaneSocket),
}

impl FrameLane {
    /// A lane whose frames travel on `ch`.
    /// A Unix socket is read through a buffer, a TCP one frame by frame
    /// (module documentation).
    pub fn socket(ch: Channel) -> FrameLane {
        let buffered = ch.unix_fd().is_some();
        FrameLane::buffered_if(ch, buffered)
    }

    /// A lane whose frames travel on `ch`, read through a buffer when `ch`
    /// is a Unix socket or plain TCP: either end of a TCP lane (module
    /// documentation).
    pub fn buffered_socket(ch: Channel) -> FrameLane {
        let buffered = matches!(
            ch.stream,
            crate::unix::Stream::Tcp(_) | crate::unix::Stream::Unix(_)
        );
        FrameLane::buffered_if(ch, buffered)
    }

    fn buffered_if(ch: Channel, buffered: bool) -> FrameLane {
        let capacity = if buffered { READ_BUFFER } else { 0 };
        FrameLane {
            io: Io::Socket(BufReader::with_capacity(capacity, SocketIn::new(ch))),
            outbox: None,
        }
    }

    /// The client's end of a plain TCP lane whose posted frames
    /// ([`FrameLane::post`]) go through the process's sender thread
    /// ([`outbox`]); read as [`FrameLane::buffered_socket`]. Any other
    /// channel, or a process that cannot start the sender, gives a
    /// [`FrameLane::buffered_socket`] lane.
    pub fn combining(ch: Channel) -> FrameLane {
        let writer = match &ch.stream {
            crate::unix::Stream::Tcp(_) => ch.try_clone(),
            _ => None,
        };
        let mut lane = FrameLane::buffered_socket(ch);
        lane.outbox = writer.and_then(Outbox::new);
        lane
    }

    /// How a ring lane waits for its next frame from now on (a socket
    /// lane keeps its own way).
    pub fn set_policy(&mut self, policy: WaitPolicy) {
        if let Io::Rings(r) = &mut self.io {
            r.policy = policy;
        }
    }

    /// Whether this is a socket lane over TCP (plain or TLS).
    pub fn is_tcp(&self) -> bool {
        matches!(&self.io, Io::Socket(ch) if ch.get_ref().channel().is_tcp())
    }

    /// A second channel on a socket lane's socket, for a thread that reads
    /// its frames ahead ([`Channel::try_clone`]); `None` for a ring lane,
    /// and for a socket lane that has read bytes into its buffer already
    /// (the second channel would not see them).
    pub fn try_clone_socket(&self) -> Option<Channel> {
        match &self.io {
            Io::Socket(ch) if ch.buffer().is_empty() => ch.get_ref().channel().try_clone(),
            Io::Socket(_) => None,
            Io::Rings(_) => None,
        }
    }

    /// The worker's end of a new ring lane whose rings have `ring_bytes` of
    /// data each, and the descriptors to pass to the client, in the order
    /// [`FrameLane::map_rings`] takes them: the client's lane socket, its
    /// outgoing ring (this end's incoming one), its incoming ring.
    pub fn create_rings(
        ring_bytes: usize,
        policy: WaitPolicy,
    ) -> Result<(FrameLane, [OwnedFd; 3]), TransportError> {
        let (ours, theirs) = Channel::pair()?;
        let (inp, inp_fd) = Ring::create(ring_bytes)?;
        let (out, out_fd) = Ring::create(ring_bytes)?;
        let lane = FrameLane {
            io: Io::Rings(Rings {
                out: out.into_producer()?,
                inp: inp.into_consumer()?,
                sock: BufReader::with_capacity(0, SocketIn::new(ours)),
                buf: Vec::new(),
                policy,
            }),
            outbox: None,
        };
        let theirs = theirs.into_fd().ok_or(TransportError::NoFd)?;
        Ok((lane, [theirs, inp_fd, out_fd]))
    }

    /// The client's end of a ring lane from the descriptors
    /// [`FrameLane::create_rings`] made.
    pub fn map_rings(fds: Vec<OwnedFd>, policy: WaitPolicy) -> Result<FrameLane, TransportError> {
        let [sock, out, inp]: [OwnedFd; 3] = fds.try_into().map_err(|_| TransportError::NoFd)?;
        Ok(FrameLane {
            io: Io::Rings(Rings {
                out: Ring::map(&out)?.into_producer()?,
                inp: Ring::map(&inp)?.into_consumer()?,
                sock: BufReader::with_capacity(0, SocketIn::new(Channel::from_fd(sock))),
                buf: Vec::new(),
                policy,
            }),
            outbox: None,
        })
    }

    /// Whether frames travel on rings.
    pub fn is_rings(&self) -> bool {
        matches!(self.io, Io::Rings(_))
    }

    /// The socket: the whole lane, or a ring lane's side channel.
    fn sock(&self) -> &Channel {
        match &self.io {
            Io::Socket(ch) => ch.get_ref().channel(),
            Io::Rings(r) => r.sock.get_ref().channel(),
        }
    }

    /// Sends one frame, the concatenation of `parts`. Waiting for ring
    /// space ends with [`TransportError::PeerGone`] once the peer hung up
    /// or `alive` says to stop.
    ///
    /// On TCP, a peer that hung up fails the send at once
    /// ([`std::io::ErrorKind::BrokenPipe`]; module documentation).
    pub fn send(
        &mut self,
        parts: &[&[u8]],
        alive: impl Fn() -> bool,
    ) -> Result<(), TransportError> {
        self.send_frame(parts, alive, true)
    }

    /// Sends a posted frame, one whose reply is not awaited: on a combining
    /// lane it may be handed to the process's sender thread ([`outbox`]),
    /// on any other it is [`FrameLane::send`].
    pub fn post(
        &mut self,
        parts: &[&[u8]],
        alive: impl Fn() -> bool,
    ) -> Result<(), TransportError> {
        match &self.outbox {
            Some(out) => out.post(parts),
            None => self.send(parts, alive),
        }
    }

    /// [`FrameLane::send`] for a frame after which this end reads the lane,
    /// which sees a hang-up: the peer is not looked at first.
    pub fn send_then_read(
        &mut self,
        parts: &[&[u8]],
        alive: impl Fn() -> bool,
    ) -> Result<(), TransportError> {
        self.send_frame(parts, alive, false)
    }

    fn send_frame(
        &mut self,
        parts: &[&[u8]],
        alive: impl Fn() -> bool,
        look: bool,
    ) -> Result<(), TransportError> {
        if let Some(out) = &self.outbox {
            return out.send_now(parts, look);
        }
        match &mut self.io {
            Io::Socket(ch) => write_parts(ch.get_mut().channel_mut(), parts, look),
            Io::Rings(r) => {
                let len = parts.iter().fold(0usize, |n, p| n.saturating_add(p.len()));
                if len <= r.out.max_message() {
                    r.push(parts, &alive)
                } else {
                    r.push(&[], &alive)?;
                    write_parts(r.sock.get_mut().channel_mut(), parts, look)
                }
            }
        }
    }

    /// Waits for the next frame. [`TransportError::PeerGone`]: the peer
    /// closed its end, hung up, or `alive` said to stop.
    pub fn recv(&mut self, alive: impl Fn() -> bool) -> Result<Incoming<'_>, TransportError> {
        if let Some(out) = &self.outbox {
            out.flush()?;
        }
        match &mut self.io {
            Io::Socket(ch) => {
                if ch.buffer().is_empty() {
                    ch.get_ref().channel().spin_until_readable(SOCKET_SPIN);
                }
                Ok(Incoming::Socket(ch))
            }
            Io::Rings(r) => {
                loop {
                    match r.inp.pop_into(&mut r.buf, &r.policy) {
                        Err(TransportError::Timeout) => r.check(&alive)?,
                        other => break other?,
                    }
                }
                if r.buf.is_empty() {
                    Ok(Incoming::Socket(&mut r.sock))
                } else {
                    Ok(Incoming::Buffered(&r.buf))
                }
            }
        }
    }

    /// [`FrameLane::recv`] for a frame whose last bytes the caller wants in
    /// `tail` (a reply's bulk bytes, straight into the application's
    /// buffer): when the next ring message is at least `tail.len()` long and
    /// `fits` accepts the bytes before its last `tail.len()`, those last
    /// bytes are copied into `tail` and nowhere else. An empty `tail` is
    /// never split into.
    pub fn recv_split(
        &mut self,
        tail: &mut [u8],
        fits: impl Fn(&[u8]) -> bool,
        alive: impl Fn() -> bool,
    ) -> Result<Split<'_>, TransportError> {
        if tail.is_empty() || !self.is_rings() {
            return Ok(match self.recv(alive)? {
                Incoming::Buffered(b) => Split::Whole(b),
                Incoming::Socket(ch) => Split::Socket(ch),
            });
        }
        let Io::Rings(r) = &mut self.io else {
            return Err(TransportError::Corrupt("a ring lane without rings"));
        };
        let Rings {
            inp,
            sock,
            buf,
            policy,
            ..
        } = r;
        let split = loop {
            let got = inp.pop_with(policy, |m| {
                if m.is_empty() {
                    buf.clear();
                    return Ok(false);
                }
                if let Some(at) = m.len().checked_sub(tail.len()) {
                    buf.resize(at, 0);
                    m.read(0, buf)?;
                    if fits(buf) {
                        m.read(at, tail)?;
                        return Ok(true);
                    }
                }
                buf.resize(m.len(), 0);
                m.read(0, buf)?;
                Ok(false)
            });
            match got {
                Err(TransportError::Timeout) => still_there(sock.get_ref().channel(), &alive)?,
                other => break other?,
            }
        };
        Ok(if split {
            Split::Split(buf)
        } else if buf.is_empty() {
            Split::Socket(sock)
        } else {
            Split::Whole(buf)
        })
    }

    /// Passes a descriptor on the lane's socket.
    /// (A lane with an outbox is a TCP lane, which passes none.)
    pub fn send_fd(&self, fd: BorrowedFd<'_>) -> Result<(), TransportError> {
        self.sock().send_fd(fd)
    }

    /// Receives a descriptor from the lane's socket: through the lane's
    /// buffer, the byte that carries it and the descriptor kept with it
    /// ([`SocketIn`]).
    pub fn recv_fd(&mut self) -> Result<OwnedFd, TransportError> {
        match &mut self.io {
            Io::Socket(ch) if ch.capacity() > 0 => {
                let mut byte = [0u8; 1];
                ch.read_exact(&mut byte)?;
                let at = ch.get_ref().bytes_read() - ch.buffer().len() as u64 - 1;
                ch.get_mut().take_fd(at)
            }
            _ => self.sock().recv_fd(),
        }
    }

    /// Lets go of a lane inherited across `fork` without closing its rings
    /// (or, for a VM guest's lane, its ring stream): they are shared with
    /// the parent, whose lane would close with them. A socket is this
    /// process's own descriptor and closes.
    pub fn abandon(self) {
        match self.io {
            Io::Rings(r) => {
                let Rings { out, inp, .. } = r;
                std::mem::forget(out);
                std::mem::forget(inp);
            }
            Io::Socket(ch) => ch.into_inner().into_channel().abandon(),
        }
    }
}

/// Whether to go on waiting after a timeout: not once the peer's socket
/// hung up or `alive` says to stop.
fn still_there(sock: &Channel, alive: &impl Fn() -> bool) -> Result<(), TransportError> {
    if sock.hung_up() || !alive() {
        return Err(TransportError::PeerGone);
    }
    Ok(())
}

impl Rings {
    /// [`still_there`] for this lane's socket.
    fn check(&self, alive: &impl Fn() -> bool) -> Result<(), TransportError> {
        still_there(self.sock.get_ref().channel(), alive)
    }

    fn push(&self, parts: &[&[u8]], alive: &impl Fn() -> bool) -> Result<(), TransportError> {
        let space = WaitPolicy {
            spin: std::time::Duration::ZERO,
            yield_for: std::time::Duration::ZERO,
            ..self.policy
        };
        loop {
            match self.out.push(parts, &space) {
                Err(TransportError::Timeout) => self.check(alive)?,
                other => return other,
            }
        }
    }
}

/// Writes the concatenation of `parts` with vectored writes: the head
/// and a copy's bulk bytes leave in one system call, and the kernel sends
/// no small segment of the head alone. `look`: first fail with
/// `BrokenPipe` if a TCP peer hung up ([`Channel::check_peer`]).
fn write_parts(ch: &mut Channel, parts: &[&[u8]], look: bool) -> Result<(), TransportError> {
    if look {
        ch.check_peer()?;
    }
    let mut slices: Vec<IoSlice<'_>> = parts.iter().map(|p| IoSlice::new(p)).collect();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        let n = match ch.write_vectored_unchecked(rest) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => other?,
        };
        if n == 0 {
            return Err(TransportError::Io(std::io::ErrorKind::WriteZero.into()));
        }
        IoSlice::advance_slices(&mut rest, n);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::time::Duration;

    use super::*;

    const POLICY: WaitPolicy = WaitPolicy {
        spin: Duration::from_micros(10),
        yield_for: Duration::ZERO,
        timeout: Some(Duration::from_millis(20)),
    };

    /// A worker end and a client end of one ring lane, in one process.
    fn ring_pair(bytes: usize) -> (FrameLane, FrameLane) {
        let (worker, fds) = FrameLane::create_rings(bytes, POLICY).expect("rings");
        let client = FrameLane::map_rings(fds.into(), POLICY).expect("mapped");
        (worker, client)
    }

    fn socket_pair() -> (FrameLane, FrameLane) {
        let (a, b) = Channel::pair().expect("pair");
        (FrameLane::socket(a), FrameLane::socket(b))
    }

    /// The next frame, `len` bytes long, however it came.
    fn take(lane: &mut FrameLane, len: usize) -> Vec<u8> {
        match lane.recv(|| true).expect("a frame") {
            Incoming::Buffered(b) => b.to_vec(),
            Incoming::Socket(ch) => {
                let mut v = vec![0; len];
                ch.read_exact(&mut v).expect("read");
                v
            }
        }
    }

    #[test]
    fn frames_keep_their_order_on_rings_and_sockets_whatever_their_size() {
        for (mut a, mut b) in [ring_pair(4096), socket_pair()] {
            let big = vec![7u8; 10_000];
            let frames: Vec<Vec<u8>> = vec![b"head".to_vec(), big.clone(), b"tail".to_vec()];
            for f in &frames {
                let (x, y) = f.split_at(f.len() / 2);
                a.send(&[x, y], || true).expect("sent");
            }
            for f in &frames {
                assert_eq!(&take(&mut b, f.len()), f);
            }
            // And back the other way.
            b.send(&[&big], || true).expect("sent back");
            assert_eq!(take(&mut a, big.len()), big);
        }
    }

    /// A worker end and a buffered client end of one TCP lane.
    fn tcp_pair() -> (FrameLane, FrameLane) {
        use std::net::{Ipv4Addr, TcpListener, TcpStream};
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("listen");
        let client = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (worker, _) = listener.accept().expect("accept");
        (
            FrameLane::socket(Channel::from_tcp(worker).expect("tuned")),
            FrameLane::buffered_socket(Channel::from_tcp(client).expect("tuned")),
        )
    }

    #[test]
    fn a_buffered_tcp_lane_reads_small_and_large_frames_in_order() {
        let (mut worker, mut client) = tcp_pair();
        let big = vec![9u8; READ_BUFFER * 2 + 3];
        let frames: Vec<Vec<u8>> = vec![b"one".to_vec(), b"two".to_vec(), big, b"end".to_vec()];
        for f in &frames {
            worker.send_then_read(&[f], || true).expect("sent");
        }
        for f in &frames {
            assert_eq!(&take(&mut client, f.len()), f);
        }
        client.send(&[b"back"], || true).expect("sent back");
        assert_eq!(take(&mut worker, 4), b"back");
    }

    #[test]
    fn only_send_looks_for_a_tcp_peer_that_hung_up() {
        let (worker, mut client) = tcp_pair();
        drop(worker);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !client.sock().hung_up() {
            assert!(std::time::Instant::now() < deadline, "no hang-up seen");
            std::thread::sleep(Duration::from_millis(5));
        }
        match client.send(&[b"posted"], || true) {
            Err(TransportError::Io(e)) => assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe),
            other => panic!("a posted frame to a gone peer: {other:?}"),
        }
        // The kernel takes this one; the read after it sees the hang-up.
        client
            .send_then_read(&[b"awaited"], || true)
            .expect("not looked at");
        let mut byte = [0u8; 1];
        match client.recv(|| true).expect("the socket") {
            Incoming::Socket(ch) => assert!(ch.read_exact(&mut byte).is_err()),
            Incoming::Buffered(_) => panic!("a socket lane buffers no frame"),
        }
    }

    #[test]
    fn a_split_frame_puts_its_tail_straight_into_the_destination() {
        let (mut worker, mut client) = ring_pair(4096);
        worker
            .send(&[b"HEAD", b"0123456789"], || true)
            .expect("sent");
        let mut tail = [0u8; 10];
        match client
            .recv_split(&mut tail, |head| head == b"HEAD", || true)
            .expect("a frame")
        {
            Split::Split(head) => assert_eq!(head, b"HEAD"),
            other => panic!("not split: {other:?}"),
        }
        assert_eq!(&tail, b"0123456789");
        // A frame the check refuses comes back whole.
        worker
            .send(&[b"FAIL", b"0123456789"], || true)
            .expect("sent");
        let mut tail = [0u8; 10];
        match client
            .recv_split(&mut tail, |head| head == b"HEAD", || true)
            .expect("a frame")
        {
            Split::Whole(all) => assert_eq!(all, b"FAIL0123456789"),
            other => panic!("not whole: {other:?}"),
        }
        assert_eq!(tail, [0; 10], "the tail is untouched");
    }

    #[test]
    fn a_waiting_end_stops_when_the_peer_hangs_up_or_it_is_told_to() {
        let (mut worker, client) = ring_pair(4096);
        assert!(matches!(
            worker.recv(|| false),
            Err(TransportError::PeerGone)
        ));
        drop(client);
        assert!(matches!(
            worker.recv(|| true),
            Err(TransportError::PeerGone)
        ));
    }

    #[test]
    fn a_buffered_unix_lane_keeps_a_descriptor_with_its_byte() {
        use std::os::fd::AsFd;
        let (mut worker, mut client) = socket_pair();
        let (x, _y) = Channel::pair().expect("pair");
        let fd = x.into_fd().expect("a socket");
        // Queued before the worker reads: one read may take them all.
        client.send(&[b"first"], || true).expect("sent");
        client.send_fd(fd.as_fd()).expect("fd sent");
        client.send(&[b"second"], || true).expect("sent");
        assert_eq!(take(&mut worker, 5), b"first");
        let got = worker.recv_fd().expect("the descriptor after the frame");
        Channel::from_fd(got).fd().expect("a socket came");
        assert_eq!(take(&mut worker, 6), b"second");
        // A byte read as a descriptor's, with none on it, is refused.
        client.send(&[b"x"], || true).expect("sent");
        assert!(matches!(worker.recv_fd(), Err(TransportError::NoFd)));
    }

    #[test]
    fn descriptors_travel_on_the_lane_socket() {
        let (worker, mut client) = ring_pair(4096);
        let (x, _y) = Channel::pair().expect("pair");
        let fd = x.into_fd().expect("a socket");
        use std::os::fd::AsFd;
        worker.send_fd(fd.as_fd()).expect("sent");
        client.recv_fd().expect("received");
    }
}
