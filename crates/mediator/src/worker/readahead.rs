//! Reading a socket lane's next request while the current one runs.
//!
//! On a socket lane (TCP sessions; Unix ones without rings when asked,
//! [`wanted`]) a large copy arrives as pieces (4 MiB over TCP, 16 MiB on a
//! Unix socket), several in flight. Read and run
//! one after the other, the worker's lane alternates between two waits: the
//! socket while a piece arrives, the driver while it is copied. A reader
//! thread of the lane's own reads the next piece meanwhile, so a copy over
//! TCP moves at the speed of the slower of the two, not of their sum.
//!
//! The reader hands requests over a channel of [`AHEAD`] places: it
//! reads on while the runner runs, without waiting for each hand-over (a
//! channel without places makes the two threads meet, and wake each other,
//! once per request, which costs a small request more than its read). When
//! the channel is full it polls for a place before it sleeps, for the same
//! reason (`put`). A
//! lane holds at most `AHEAD + 2` requests' bytes. The requests' buffers go back and forth between the two threads
//! and are reused ([`vgpu_proto::Blob`]). A request that carries a
//! descriptor ([`vgpu_proto::Op::takes_fd`]) has it read right
//! after its frame, as [`super::lane`] does without a reader.
//!
//! The reader keeps the frame deadline ([`super::deadline`]): once a
//! frame's first bytes came, the rest must follow within the session's
//! `frame_timeout`, or the reader hands over the timeout, and the lane ends
//! the session.

use std::io::{BufReader, ErrorKind, Read};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::deadline::{self, FrameReader};

use vgpu_proto::{read_request_into, ProtoError, Request};
use vgpu_transport::{Channel, FrameLane, SOCKET_SPIN};

/// Requests read and waiting for the runner, at most.
const AHEAD: usize = 2;
/// The TCP reader's buffer: many small requests per read.
const READ_BUFFER: usize = 256 << 10;

/// A request read ahead, with the descriptor that came after it.
type Frame = (Request, Option<OwnedFd>);

/// A socket lane's reader thread and what it has read.
pub struct ReadAhead {
    /// Requests in the order read; a failure, then nothing.
    frames: Option<Receiver<Result<Frame, ProtoError>>>,
    /// Requests whose buffers the reader may read into again.
    spare: SyncSender<Request>,
    /// The reader's channel, kept to stop it ([`Channel::shutdown_read`]).
    socket: Channel,
    /// Set when the lane's runner is done: a reader waiting for a frame's
    /// first bytes stops at its next wake-up.
    stopped: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
}

impl ReadAhead {
    /// Starts a reader for `io` when it is a socket lane whose socket can be
    /// read from a second descriptor; `None` otherwise (a ring lane reads
    /// from memory, and needs none).
    /// A frame must come whole within `limit` of its first bytes.
    pub fn start(io: &FrameLane, limit: Duration) -> Option<ReadAhead> {
        let mut ch = io.try_clone_socket()?;
        let socket = ch.try_clone()?;
        deadline::arm(&mut ch, limit);
        let (tx, frames) = mpsc::sync_channel(AHEAD);
        let (spare, spares) = mpsc::sync_channel(AHEAD + 2);
        let stopped = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&stopped);
        let reader = std::thread::Builder::new()
            .name("lane-reader".into())
            .spawn(move || read(ch, limit, &stop, &tx, &spares))
            .map_err(|e| tracing::warn!("no reader thread for a lane ({e}); it reads in turn"))
            .ok()?;
        Some(ReadAhead {
            frames: Some(frames),
            spare,
            socket,
            stopped,
            reader: Some(reader),
        })
    }

    /// The next request, swapped into `req` (whose old buffers go back to
    /// the reader), and its descriptor. `Ok(None)`: the client closed the
    /// lane or left.
    pub fn next(&mut self, req: &mut Request) -> Result<Option<Option<OwnedFd>>, ProtoError> {
        let Some(frames) = &self.frames else {
            return Ok(None);
        };
        // Poll for the next request before sleeping on it, as the reader
        // polls the socket: a thread woken from sleep starts microseconds
        // late.
        let start = Instant::now();
        let got = loop {
            match frames.try_recv() {
                Ok(got) => break Ok(got),
                Err(TryRecvError::Disconnected) => break Err(()),
                Err(TryRecvError::Empty) if start.elapsed() < SOCKET_SPIN => {
                    std::hint::spin_loop();
                }
                Err(TryRecvError::Empty) => break frames.recv().map_err(|_| ()),
            }
        };
        match got {
            Ok(Ok((mut next, fd))) => {
                std::mem::swap(req, &mut next);
                // A full pool: the reader has buffers enough; drop this one.
                let _ = self.spare.try_send(next);
                Ok(Some(fd))
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Ok(None),
        }
    }
}

/// Whether a lane on `io` should read ahead ([`ReadAhead::start`]).
///
/// The reader pays off where a lane waits on the network: on TCP lanes.
/// It costs a thread that polls the socket beside the lane's own, which
/// polls for the hand-over, and the client's, which polls for its reply:
/// on a host of few CPUs they take turns, and a small call waits for the
/// scheduler (on two CPUs, launch plus synchronize over TCP went from 15
/// to 125 µs on the simulated device). So by default a TCP lane reads
/// ahead when the host has at least [`MIN_CPUS`] CPUs, and a Unix socket
/// lane (the fallback where rings cannot be made) reads in turn.
/// `VGPU_LANE_READAHEAD=0` in the mediator's environment turns it off,
/// `=1` on for every socket lane.
pub fn wanted(io: &FrameLane) -> bool {
    match std::env::var("VGPU_LANE_READAHEAD").as_deref() {
        Ok("0") => false,
        Ok("1") => true,
        _ => {
            let cpus = std::thread::available_parallelism().map_or(1, usize::from);
            io.is_tcp() && cpus >= MIN_CPUS
        }
    }
}

/// CPUs a host needs for TCP lanes to read ahead by default ([`wanted`]).
const MIN_CPUS: usize = 4;

impl Drop for ReadAhead {
    fn drop(&mut self) {
        // A reader blocked on the socket sees end-of-file; one blocked
        // handing a request over sees the receiver gone.
        self.stopped.store(true, Ordering::SeqCst);
        self.socket.shutdown_read();
        self.frames = None;
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// The reader thread: reads requests from `ch` and hands them over until
/// the client leaves, a frame is bad or late, or the lane's runner is gone.
/// A TCP lane is read through a buffer, a few system calls for many small
/// requests (no descriptor ever follows a frame there); a Unix one frame by
/// frame, so that a descriptor is read with the frame it follows.
fn read(
    ch: Channel,
    limit: Duration,
    stopped: &AtomicBool,
    out: &SyncSender<Result<Frame, ProtoError>>,
    spares: &Receiver<Request>,
) {
    let alive = || !stopped.load(Ordering::SeqCst);
    if ch.is_tcp() {
        let mut r = BufReader::with_capacity(
            READ_BUFFER,
            Timed {
                ch,
                limit,
                started: None,
                alive: &alive,
            },
        );
        loop {
            if r.buffer().is_empty() {
                r.get_ref().ch.spin_until_readable(SOCKET_SPIN);
            }
            // The next frame starts here (its first bytes may be buffered).
            r.get_mut().started = None;
            if !hand_over(&mut r, out, spares) {
                return;
            }
        }
    }
    let mut ch = ch;
    loop {
        ch.spin_until_readable(SOCKET_SPIN);
        let mut req = spare(spares);
        let frame = read_request_into(&mut FrameReader::new(&mut ch, limit, &alive), &mut req);
        let fd = frame
            .is_ok()
            .then(|| req.op.takes_fd().then(|| ch.recv_fd()))
            .flatten();
        if !send(frame.map(|()| req), fd, out) {
            return;
        }
    }
}

/// A TCP lane's socket under the frame deadline, as [`FrameReader`] keeps
/// it, for a buffered reader that cannot see where frames start: `started`
/// is cleared as each frame begins, and set by the first read after.
struct Timed<'a> {
    ch: Channel,
    limit: Duration,
    started: Option<Instant>,
    alive: &'a dyn Fn() -> bool,
}

impl Read for Timed<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let late = self.started.is_some_and(|t| t.elapsed() > self.limit);
            if late {
                return Err(deadline::frame_timed_out(self.limit));
            }
            match self.ch.read(buf) {
                Ok(n) => {
                    if n > 0 {
                        self.started.get_or_insert_with(Instant::now);
                    }
                    return Ok(n);
                }
                // The socket's read timeout (`deadline::arm`): wait on,
                // unless the runner is gone while no frame is under way.
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    if self.started.is_none() && !(self.alive)() {
                        return Err(ErrorKind::ConnectionAborted.into());
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// A request whose buffers the reader may read into again, or a new one.
fn spare(spares: &Receiver<Request>) -> Request {
    match spares.try_recv() {
        Ok(r) => r,
        Err(TryRecvError::Empty | TryRecvError::Disconnected) => Request::empty(),
    }
}

/// Hands over a read request with its descriptor (or why none came), or
/// the failure to read one; `false`: stop reading. The client's leaving
/// ends the reader quietly; a late or bad frame is handed over first.
fn send(
    frame: Result<Request, ProtoError>,
    fd: Option<Result<OwnedFd, vgpu_transport::TransportError>>,
    out: &SyncSender<Result<Frame, ProtoError>>,
) -> bool {
    let frame = match frame {
        Ok(req) => {
            let passed = match fd {
                Some(Ok(fd)) => Some(fd),
                Some(Err(e)) => {
                    tracing::warn!("{}: no descriptor came: {e}", req.op.name());
                    None
                }
                None if req.op.takes_fd() => {
                    tracing::warn!("{}: no descriptor crosses TCP", req.op.name());
                    None
                }
                None => None,
            };
            Ok((req, passed))
        }
        Err(e) if deadline::is_frame_timeout(&e) => Err(e),
        // The client closed the lane (or the runner shut it): no more.
        Err(ProtoError::Io(_)) => return false,
        Err(e) => Err(e),
    };
    let failed = frame.is_err();
    put(out, frame) && !failed
}

/// Puts `item` in the channel, polling for a free place for
/// [`SOCKET_SPIN`] before sleeping on one: a reader asleep on a full
/// channel is woken by each of the runner's takes, a system call on the
/// runner's thread per request (one thread posting empty launches over TCP
/// on an H100: 0.71x native with it). Whether the runner is still there.
fn put<T>(out: &SyncSender<T>, item: T) -> bool {
    let start = Instant::now();
    let mut item = item;
    loop {
        match out.try_send(item) {
            Ok(()) => return true,
            Err(TrySendError::Disconnected(_)) => return false,
            Err(TrySendError::Full(back)) if start.elapsed() < SOCKET_SPIN => {
                item = back;
                std::hint::spin_loop();
            }
            Err(TrySendError::Full(back)) => return out.send(back).is_ok(),
        }
    }
}

/// Reads one request from `r` (a TCP lane's: no descriptor follows) and
/// hands it over; `false`: stop reading.
fn hand_over(
    r: &mut impl Read,
    out: &SyncSender<Result<Frame, ProtoError>>,
    spares: &Receiver<Request>,
) -> bool {
    let mut req = spare(spares);
    let frame = read_request_into(r, &mut req).map(|()| req);
    send(frame, None, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use vgpu_proto::{memcpy_htod, request_prefix, Op, RequestMeta};
    use zerocopy::little_endian::U64;
    use zerocopy::IntoBytes;

    const LIMIT: Duration = Duration::from_secs(60);

    fn send(ch: &mut Channel, seq: u32, blob: &[u8]) {
        use std::io::Write;
        let r = memcpy_htod::Request {
            dst: U64::new(0x1000),
            stream: U64::new(0),
            is_async: 0,
        };
        let meta = RequestMeta {
            op: Op::MemcpyHtoD,
            seq,
            ctx: 0,
            flags: 0,
            order: 0,
            after: 0,
        };
        let prefix = request_prefix(&meta, r.as_bytes(), blob.len()).expect("prefix");
        ch.write_all(&prefix).expect("head");
        ch.write_all(blob).expect("blob");
    }

    #[test]
    fn hands_over_requests_in_order_and_ends_with_the_client() {
        let (mut client, worker) = Channel::pair().expect("pair");
        let io = FrameLane::socket(worker);
        let mut ahead = ReadAhead::start(&io, LIMIT).expect("a socket lane reads ahead");
        let mut req = Request::empty();
        for seq in 1..=5u8 {
            let blob = vec![seq; 1000 * usize::from(seq)];
            send(&mut client, u32::from(seq), &blob);
            assert!(matches!(ahead.next(&mut req), Ok(Some(None))));
            assert_eq!((req.seq, &req.blob[..]), (u32::from(seq), &blob[..]));
        }
        drop(client);
        assert!(matches!(ahead.next(&mut req), Ok(None)));
    }

    #[test]
    fn a_tcp_lane_reads_through_its_buffer() {
        use std::net::{Ipv4Addr, TcpListener, TcpStream};
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("listen");
        let client = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (worker, _) = listener.accept().expect("accept");
        let mut client = Channel::from_fd(client.into());
        let io = FrameLane::socket(Channel::from_fd(worker.into()));
        let mut ahead = ReadAhead::start(&io, LIMIT).expect("a TCP lane reads ahead");
        // Many small frames in one burst, then one larger than the buffer.
        let big = vec![0xab; READ_BUFFER * 3 + 7];
        for seq in 1..=100u32 {
            send(&mut client, seq, &seq.to_le_bytes());
        }
        send(&mut client, 101, &big);
        let mut req = Request::empty();
        for seq in 1..=100u32 {
            assert!(matches!(ahead.next(&mut req), Ok(Some(None))));
            assert_eq!((req.seq, &req.blob[..]), (seq, &seq.to_le_bytes()[..]));
        }
        assert!(matches!(ahead.next(&mut req), Ok(Some(None))));
        assert_eq!((req.seq, req.blob.len()), (101, big.len()));
        assert!(req.blob.iter().all(|&b| b == 0xab));
        drop(client);
        assert!(matches!(ahead.next(&mut req), Ok(None)));
    }

    #[test]
    fn a_bad_frame_is_an_error_and_dropping_stops_the_reader() {
        use std::io::Write;
        let (mut client, worker) = Channel::pair().expect("pair");
        let io = FrameLane::socket(worker);
        let mut ahead = ReadAhead::start(&io, LIMIT).expect("reader");
        client.write_all(&[0xee; 64]).expect("garbage");
        assert!(ahead.next(&mut Request::empty()).is_err());
        // A reader still blocked on a live client stops when dropped.
        let (_client, worker) = Channel::pair().expect("pair");
        let io = FrameLane::socket(worker);
        drop(ReadAhead::start(&io, LIMIT).expect("reader"));
    }
}
