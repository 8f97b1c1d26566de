//! Lanes: one worker thread per client thread, opened by `OpenLane` on the
//! control connection.
//!
//! # Transports
//!
//! - **Rings** (when `features::RINGS` was negotiated): a submission ring
//!   (client → worker) and a completion ring (worker → client), each
//!   [`RING_BYTES`] of data in a sealed memfd ([`vgpu_transport::shm_ring`]),
//!   plus a lane socket. One ring message is one whole frame, byte for byte
//!   as on a socket. A frame larger than the ring's largest message goes on
//!   the lane socket instead, announced by an empty ring message in its
//!   place, so the ring keeps the order. The lane socket also carries the
//!   descriptors some replies pass (`MemHostAlloc`), and its hang-up tells
//!   the worker that the client is gone.
//! - **Socket**: the lane socket alone carries the frames. The fallback when
//!   rings were not negotiated or cannot be made.
//!
//! # Requests
//!
//! A lane runs its requests in order, each once what it must follow has run
//! ([`super::order`]). A posted request gets no reply; the lane keeps
//! the first failure of a posted request and answers the lane's next
//! synchronizing request ([`vgpu_proto::Op::synchronizes`]) with it, without
//! running that request (`docs/adr/0004-async-errors.md`).
//!
//! # Liveness
//!
//! A lane waiting on its ring polls for [`SPIN`], sleeps on the futex, and
//! wakes every [`CHECK`] to see whether the session is closing or the lane
//! socket hung up; a client that closed its end of the ring (its thread
//! ended) ends the lane at once.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use vgpu_proto::{
    lane_kind, open_lane, read_request_into, response_prefix, write_response, ProtoError, Request,
};
use vgpu_transport::shm_ring::Ring;
use vgpu_transport::{Channel, Consumer, Producer, TransportError, WaitPolicy};
use zerocopy::little_endian::U16;
use zerocopy::IntoBytes;

use super::calls::Reply;
use super::exec;
use super::order::{LaneView, Ticket};
use super::status;
use super::Session;
use crate::driver::Status;
use crate::MediatorError;

/// Data bytes of each ring of a lane. The client chunks copies to fit
/// several chunks in flight; larger frames go on the lane socket.
pub const RING_BYTES: usize = 4 << 20;
/// How long a lane polls its ring before it sleeps on the futex.
const SPIN: Duration = Duration::from_micros(50);
/// How often a sleeping lane checks that its client is still there.
const CHECK: Duration = Duration::from_millis(100);

/// Opens a lane for the client on the control connection: answers the
/// `OpenLane` request `seq` and starts the lane's thread. `false`: the
/// control connection failed.
pub fn open(session: &Arc<Session>, control: &mut Channel, seq: u32) -> bool {
    let made = if session.rings {
        rings().or_else(|e| {
            tracing::warn!("cannot make a lane's rings ({e}); this lane uses its socket");
            socket()
        })
    } else {
        socket()
    };
    let started = made.and_then(|(io, fds)| {
        let s = Arc::clone(session);
        std::thread::Builder::new()
            .name("lane".into())
            .spawn(move || serve(&s, io))?;
        Ok(fds)
    });
    match started {
        Ok(fds) => {
            let kind = if fds.len() == 3 {
                lane_kind::RINGS
            } else {
                lane_kind::SOCKET
            };
            let reply = open_lane::Reply {
                kind,
                port: U16::new(0),
                token: [0; 16],
            };
            let borrowed: Vec<_> = fds.iter().map(AsFd::as_fd).collect();
            write_response(control, status::SUCCESS.0, seq, reply.as_bytes(), &[]).is_ok()
                && control.send_fds(&borrowed).is_ok()
        }
        Err(e) => {
            tracing::error!("cannot open a lane: {e}");
            write_response(control, status::INVALID_VALUE.0, seq, &[], &[]).is_ok()
        }
    }
}

/// Serves `ch`, a lane socket made without `OpenLane`'s descriptor passing
/// (a TCP lane, [`super::remote`]), on a thread of its own.
pub fn start_socket(session: &Arc<Session>, ch: Channel) -> std::io::Result<()> {
    let s = Arc::clone(session);
    std::thread::Builder::new()
        .name("lane".into())
        .spawn(move || serve(&s, LaneIo::Socket(ch)))?;
    Ok(())
}

/// A socket lane: our end, and the client's end to pass.
fn socket() -> Result<(LaneIo, Vec<OwnedFd>), MediatorError> {
    let (ours, theirs) = Channel::pair()?;
    Ok((LaneIo::Socket(ours), vec![theirs.into_fd()]))
}

/// A ring lane: our ends, and the client's lane socket and ring memfds.
fn rings() -> Result<(LaneIo, Vec<OwnedFd>), MediatorError> {
    let (ours, theirs) = Channel::pair()?;
    let (sub, sub_fd) = Ring::create(RING_BYTES)?;
    let (comp, comp_fd) = Ring::create(RING_BYTES)?;
    let io = LaneIo::Rings(RingLane {
        sub: sub.into_consumer()?,
        comp: comp.into_producer()?,
        sock: ours,
        buf: Vec::new(),
    });
    Ok((io, vec![theirs.into_fd(), sub_fd, comp_fd]))
}

/// One lane until the client closes it or the session ends.
fn serve(s: &Session, mut io: LaneIo) {
    let mut lane = exec::Lane::default();
    // The first failure of a posted request, not yet reported.
    let mut deferred: Option<Status> = None;
    let (mut requests, mut posted) = (0u64, 0u64);
    let alive = || !s.closing.load(Ordering::SeqCst);
    // One request, read into again and again: no allocation per request.
    let mut req = Request::empty();
    // What this lane knows of the session's order by itself.
    let mut view = LaneView::default();
    loop {
        match io.next(s, &mut req) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                tracing::warn!("lane: {e}; closing it");
                break;
            }
        }
        requests += 1;
        if !s.order.wait_to_run(&mut view, &req, alive) {
            break;
        }
        if req.posted() {
            posted += 1;
            let _done = Ticket {
                order: &s.order,
                view: &mut view,
                ticket: req.order,
            };
            if let Err(st) = lane.execute(s, &req) {
                tracing::debug!(op = req.op.name(), status = st.0, "posted call failed");
                deferred.get_or_insert(st);
            }
            continue;
        }
        let (st, reply) = match deferred {
            Some(st) if req.synchronizes() => {
                deferred = None;
                tracing::debug!(
                    op = req.op.name(),
                    status = st.0,
                    "reporting a posted call's failure"
                );
                (st, Reply::default())
            }
            _ => match lane.execute(s, &req) {
                Ok(reply) => (status::SUCCESS, reply),
                Err(st) => {
                    tracing::debug!(op = req.op.name(), status = st.0, "call failed");
                    (st, Reply::default())
                }
            },
        };
        if let Err(e) = io.reply(s, st, req.seq, &reply) {
            tracing::debug!("lane: cannot reply to {}: {e}", req.op.name());
            break;
        }
    }
    tracing::debug!(requests, posted, "lane closed");
}

/// The two ways a lane moves frames.
enum LaneIo {
    Socket(Channel),
    Rings(RingLane),
}

struct RingLane {
    sub: Consumer,
    comp: Producer,
    /// Frames too large for a ring, descriptors, and the client's hang-up.
    sock: Channel,
    /// The last ring message, reused.
    buf: Vec<u8>,
}

impl LaneIo {
    /// Reads the next request into `req`; `false` when the client closed
    /// the lane or left.
    fn next(&mut self, s: &Session, req: &mut Request) -> Result<bool, ProtoError> {
        let ch = match self {
            LaneIo::Socket(ch) => ch,
            LaneIo::Rings(r) => {
                if !r.pop(s)? {
                    return Ok(false);
                }
                if !r.buf.is_empty() {
                    return decode_exact(&r.buf, req).map(|()| true);
                }
                // An empty message: the frame follows on the socket.
                &mut r.sock
            }
        };
        match read_request_into(ch, req) {
            Ok(()) => Ok(true),
            Err(ProtoError::Io(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Sends the reply to request `seq`, then its descriptor, if any.
    fn reply(
        &mut self,
        s: &Session,
        st: Status,
        seq: u32,
        reply: &Reply,
    ) -> Result<(), MediatorError> {
        let ch = match self {
            LaneIo::Socket(ch) => {
                write_response(ch, st.0, seq, &reply.fixed, &reply.blob)?;
                ch
            }
            LaneIo::Rings(r) => {
                let prefix = response_prefix(st.0, seq, &reply.fixed, reply.blob.len())?;
                if prefix.len() + reply.blob.len() <= r.comp.max_message() {
                    r.push(s, &[&prefix, &reply.blob])?;
                } else {
                    r.push(s, &[])?;
                    write_response(&mut r.sock, st.0, seq, &reply.fixed, &reply.blob)?;
                }
                &mut r.sock
            }
        };
        if let Some(fd) = &reply.fd {
            ch.send_fd(fd.as_fd())?;
        }
        Ok(())
    }
}

impl RingLane {
    fn gone(&self, s: &Session) -> bool {
        s.closing.load(Ordering::SeqCst) || self.sock.hung_up()
    }

    /// Takes the next ring message into `buf`; `false` when the client is gone.
    fn pop(&mut self, s: &Session) -> Result<bool, ProtoError> {
        let policy = WaitPolicy {
            spin: SPIN,
            timeout: Some(CHECK),
        };
        loop {
            match self.sub.pop_into(&mut self.buf, &policy) {
                Ok(()) => return Ok(true),
                Err(TransportError::Timeout) if !self.gone(s) => {}
                Err(TransportError::Timeout | TransportError::PeerGone) => return Ok(false),
                Err(e) => return Err(ProtoError::Io(std::io::Error::other(e))),
            }
        }
    }

    /// Pushes one message, waiting for space while the client is there.
    fn push(&self, s: &Session, parts: &[&[u8]]) -> Result<(), MediatorError> {
        let policy = WaitPolicy {
            spin: SPIN,
            timeout: Some(CHECK),
        };
        loop {
            match self.comp.push(parts, &policy) {
                Err(TransportError::Timeout) if !self.gone(s) => {}
                other => return other.map_err(MediatorError::from),
            }
        }
    }
}

/// `OpenLane` belongs on the control connection; on a lane it is refused.
pub fn open_lane(_: &mut exec::Lane, _: &Session, _: &Request) -> Result<Reply, Status> {
    Err(status::INVALID_VALUE)
}

/// Reads into `req` a request that must fill the whole message.
fn decode_exact(bytes: &[u8], req: &mut Request) -> Result<(), ProtoError> {
    let mut rest = bytes;
    read_request_into(&mut rest, req)?;
    if !rest.is_empty() {
        return Err(ProtoError::TooLong {
            what: "ring message beyond its frame",
            len: bytes.len(),
            max: bytes.len() - rest.len(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use vgpu_proto::{flags, mem_free, memset, request_prefix, Op, RequestMeta};
    use zerocopy::little_endian::{U32, U64};

    #[test]
    fn ring_messages_are_exact_frames() {
        let meta = RequestMeta {
            op: Op::MemFree,
            seq: 1,
            ctx: 2,
            flags: 0,
            order: 3,
            after: 0,
        };
        let free = mem_free::Request {
            dptr: U64::new(0x1000),
        };
        let mut bytes = request_prefix(&meta, free.as_bytes(), 0).expect("prefix");
        let mut req = Request::empty();
        decode_exact(&bytes, &mut req).expect("exact");
        let got: &mem_free::Request = req.message().expect("typed");
        assert_eq!(
            (req.op, req.order, got.dptr.get()),
            (Op::MemFree, 3, 0x1000)
        );
        bytes.push(0);
        assert!(
            decode_exact(&bytes, &mut req).is_err(),
            "a trailing byte is refused"
        );
        let posted = RequestMeta {
            op: Op::Memset,
            flags: flags::POSTED,
            ..meta
        };
        let set = memset::Request {
            dst: U64::new(0x1000),
            value: U32::new(0),
            element: 1,
            count: U64::new(4),
            stream: U64::new(0),
            is_async: 1,
        };
        let bytes = request_prefix(&posted, set.as_bytes(), 0).expect("prefix");
        decode_exact(&bytes, &mut req).expect("decodes");
        assert!(req.posted(), "read again into the same request");
        assert_eq!(req.fixed.len(), std::mem::size_of::<memset::Request>());
    }
}
