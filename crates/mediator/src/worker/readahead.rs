//! Reading a socket lane's next request while the current one runs.
//!
//! On a socket lane (TCP sessions, and Unix sessions without rings) a large
//! copy arrives as pieces of up to 16 MiB, several in flight. Read and run
//! one after the other, the worker's lane alternates between two waits: the
//! socket while a piece arrives, the driver while it is copied. A reader
//! thread of the lane's own reads the next piece meanwhile, so a copy over
//! TCP moves at the speed of the slower of the two, not of their sum.
//!
//! The reader hands each request over a rendezvous channel: at most one
//! request waits, read, while another runs, so a lane holds at most two
//! requests' bytes. The requests' buffers go back and forth between the
//! two threads and are reused ([`vgpu_proto::Blob`]). A request that
//! carries a descriptor ([`vgpu_proto::Op::takes_fd`]) has it read right
//! after its frame, as [`super::lane`] does without a reader.

use std::io::{BufReader, Read};
use std::os::fd::OwnedFd;
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError};
use std::thread::JoinHandle;
use std::time::Instant;

use vgpu_proto::{read_request_into, ProtoError, Request};
use vgpu_transport::{Channel, FrameLane, SOCKET_SPIN};

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
    reader: Option<JoinHandle<()>>,
}

impl ReadAhead {
    /// Starts a reader for `io` when it is a socket lane whose socket can be
    /// read from a second descriptor; `None` otherwise (a ring lane reads
    /// from memory, and needs none).
    pub fn start(io: &FrameLane) -> Option<ReadAhead> {
        let ch = io.try_clone_socket()?;
        let socket = ch.try_clone()?;
        let (tx, frames) = mpsc::sync_channel(0);
        let (spare, spares) = mpsc::sync_channel(2);
        let reader = std::thread::Builder::new()
            .name("lane-reader".into())
            .spawn(move || read(ch, &tx, &spares))
            .map_err(|e| tracing::warn!("no reader thread for a lane ({e}); it reads in turn"))
            .ok()?;
        Some(ReadAhead {
            frames: Some(frames),
            spare,
            socket,
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

impl Drop for ReadAhead {
    fn drop(&mut self) {
        // A reader blocked on the socket sees end-of-file; one blocked
        // handing a request over sees the receiver gone.
        self.socket.shutdown_read();
        self.frames = None;
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// The reader thread: reads requests from `ch` and hands them over until
/// the client leaves, a frame is bad, or the lane's runner is gone. A TCP
/// lane is read through a buffer, a few system calls for many small
/// requests (no descriptor ever follows a frame there); a Unix one frame by
/// frame, so that a descriptor is read with the frame it follows.
fn read(ch: Channel, out: &SyncSender<Result<Frame, ProtoError>>, spares: &Receiver<Request>) {
    if ch.is_tcp() {
        let mut r = BufReader::with_capacity(READ_BUFFER, ch);
        loop {
            if r.buffer().is_empty() {
                r.get_ref().spin_until_readable(SOCKET_SPIN);
            }
            if !hand_over(&mut r, |_| None, out, spares) {
                return;
            }
        }
    }
    let mut ch = ch;
    loop {
        ch.spin_until_readable(SOCKET_SPIN);
        if !hand_over(&mut ch, |ch| Some(ch.recv_fd()), out, spares) {
            return;
        }
    }
}

/// Reads one request from `r`, then its descriptor with `fd` when the op
/// takes one, and hands both over; `false`: stop reading.
fn hand_over<R: Read>(
    r: &mut R,
    fd: impl Fn(&mut R) -> Option<Result<OwnedFd, vgpu_transport::TransportError>>,
    out: &SyncSender<Result<Frame, ProtoError>>,
    spares: &Receiver<Request>,
) -> bool {
    let mut req = match spares.try_recv() {
        Ok(r) => r,
        Err(TryRecvError::Empty | TryRecvError::Disconnected) => Request::empty(),
    };
    let frame = match read_request_into(r, &mut req) {
        Ok(()) => {
            let passed = if req.op.takes_fd() {
                match fd(r) {
                    Some(Ok(fd)) => Some(fd),
                    Some(Err(e)) => {
                        tracing::warn!("{}: no descriptor came: {e}", req.op.name());
                        None
                    }
                    None => {
                        tracing::warn!("{}: no descriptor crosses TCP", req.op.name());
                        None
                    }
                }
            } else {
                None
            };
            Ok((req, passed))
        }
        // The client closed the lane (or the runner shut it): no more.
        Err(ProtoError::Io(_)) => return false,
        Err(e) => Err(e),
    };
    let failed = frame.is_err();
    out.send(frame).is_ok() && !failed
}

#[cfg(test)]
mod tests {
    use super::*;
    use vgpu_proto::{memcpy_htod, request_prefix, Op, RequestMeta};
    use zerocopy::little_endian::U64;
    use zerocopy::IntoBytes;

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
        let mut ahead = ReadAhead::start(&io).expect("a socket lane reads ahead");
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
        let mut ahead = ReadAhead::start(&io).expect("a TCP lane reads ahead");
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
        let mut ahead = ReadAhead::start(&io).expect("reader");
        client.write_all(&[0xee; 64]).expect("garbage");
        assert!(ahead.next(&mut Request::empty()).is_err());
        // A reader still blocked on a live client stops when dropped.
        let (_client, worker) = Channel::pair().expect("pair");
        let io = FrameLane::socket(worker);
        drop(ReadAhead::start(&io).expect("reader"));
    }
}
