//! Lanes: one worker thread per client thread, opened by `OpenLane` on the
//! control connection.
//!
//! # Transports
//!
//! Each lane is a [`vgpu_transport::FrameLane`], the same implementation
//! the client uses for its end:
//! - **Rings** (when `features::RINGS` was negotiated): a submission and a
//!   completion ring of [`RING_BYTES`] each, plus the lane socket, which
//!   also carries oversized frames, the descriptors some replies pass
//!   (`MemHostAlloc`), and the client's hang-up.
//! - **Socket**: the lane socket alone carries the frames. The fallback when
//!   rings were not negotiated or cannot be made, and TCP lanes.
//!
//! # Requests
//!
//! A lane runs its requests in order, each once what it must follow has run
//! ([`super::order`]). A posted request gets no reply; the lane keeps
//! the first failure of a posted request and answers the lane's next
//! synchronizing request ([`vgpu_proto::Op::synchronizes`]) with it, without
//! running that request (`docs/adr/0004-async-errors.md`).
//!
//! # Counting
//!
//! Each request adds one to its operation's count in the session's slot
//! ([`crate::sessions`]), a relaxed atomic add; a failure adds one to its
//! error count. One synchronous request in [`TIMED_EVERY`] (the first of
//! each lane among them) is timed from read to reply for the latency
//! histogram, so the clock is read rarely on the hot path.
//!
//! # Liveness
//!
//! A lane waiting on its ring waits as [`WAIT`] says and stops when the
//! session is closing or the lane socket hung up; a client that closed its
//! end of the ring (its thread ended) ends the lane at once.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use vgpu_proto::{
    decode_request_into, lane_kind, open_lane, read_request_into, reply_flags,
    response_prefix_into, write_response, ProtoError, Request,
};
use vgpu_transport::{Channel, FrameLane, Incoming, TransportError, WaitPolicy};
use zerocopy::little_endian::U16;
use zerocopy::IntoBytes;

use super::calls::Reply;
use super::exec;
use super::notify;
use super::order::{LaneView, Ticket};
use super::readahead::ReadAhead;
use super::sending::{self, Sender};
use super::status;
use super::Session;
use crate::driver::Status;
use crate::MediatorError;

/// Data bytes of each ring of a lane. The client chunks copies to fit
/// several chunks in flight; larger frames go on the lane socket.
pub const RING_BYTES: usize = 4 << 20;
/// How a lane waits on its rings: it polls for 50 µs before it sleeps on
/// the futex, and checks every 100 ms that its client is still there.
const WAIT: WaitPolicy = WaitPolicy {
    spin: Duration::from_micros(50),
    yield_for: Duration::ZERO,
    timeout: Some(Duration::from_millis(100)),
};

/// How a lane waits when the host is crowded ([`Waits`]): no polling, so
/// that the cores go to the clients and the lanes that have work.
const CROWDED: WaitPolicy = WaitPolicy {
    spin: Duration::ZERO,
    ..WAIT
};

/// A lane's wait policy, following how crowded the host is.
///
/// A lane that polls for its next request holds a core while it does:
/// the fastest way to wait while cores are free, and a thief once the
/// host has more runnable threads than cores, when the clients need those
/// cores. 16 training processes on 16 cores ran 35% slower through vgpu
/// with polling lanes than with lanes that sleep at once (H100,
/// `gpu/mps.sh`). So a lane polls ([`WAIT`]) until the kernel counts more
/// runnable threads than this process may use cores (`/proc/loadavg`,
/// looked at every [`Waits::EVERY`] requests), then sleeps at once
/// ([`CROWDED`]) until the runnable threads are at most half the cores.
/// `VGPU_LANE_SPIN_US` in the mediator's environment fixes the polling
/// time instead (0: always sleep at once).
struct Waits {
    fixed: Option<WaitPolicy>,
    cores: usize,
    crowded: bool,
    until_check: u32,
    /// `/proc/loadavg`, kept open.
    loadavg: Option<std::fs::File>,
}

impl Waits {
    const EVERY: u32 = 256;

    fn new() -> Waits {
        let fixed = std::env::var("VGPU_LANE_SPIN_US")
            .ok()
            .and_then(|v| v.parse().ok())
            .map(|us| WaitPolicy {
                spin: Duration::from_micros(us),
                ..WAIT
            });
        Waits {
            fixed,
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            crowded: false,
            until_check: 0,
            loadavg: None,
        }
    }

    /// The policy for a new lane.
    fn initial(&self) -> WaitPolicy {
        self.fixed.unwrap_or(WAIT)
    }

    /// Called once per request: now and then, sets `io`'s policy for how
    /// crowded the host is.
    fn update(&mut self, io: &mut FrameLane) {
        if self.fixed.is_some() {
            return;
        }
        if let Some(left) = self.until_check.checked_sub(1) {
            self.until_check = left;
            return;
        }
        self.until_check = Self::EVERY;
        let Some(running) = self.runnable() else {
            return;
        };
        let crowded = if self.crowded {
            running * 2 > self.cores
        } else {
            running > self.cores
        };
        if crowded != self.crowded {
            self.crowded = crowded;
            tracing::debug!(running, cores = self.cores, crowded, "lane wait policy");
            io.set_policy(if crowded { CROWDED } else { WAIT });
        }
    }

    /// The kernel's count of runnable threads now: the fourth field of
    /// `/proc/loadavg` is `RUNNABLE/TOTAL`.
    fn runnable(&mut self) -> Option<usize> {
        use std::os::unix::fs::FileExt;
        if self.loadavg.is_none() {
            self.loadavg = std::fs::File::open("/proc/loadavg").ok();
        }
        let mut buf = [0u8; 128];
        let n = self.loadavg.as_ref()?.read_at(&mut buf, 0).ok()?;
        parse_runnable(std::str::from_utf8(&buf[..n]).ok()?)
    }
}

/// The runnable-thread count of a `/proc/loadavg` line.
fn parse_runnable(line: &str) -> Option<usize> {
    let field = line.split_whitespace().nth(3)?;
    field.split_once('/')?.0.parse().ok()
}

/// One synchronous request in this many is timed for the latency histogram.
const TIMED_EVERY: u64 = 16;

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
/// (a TCP lane, [`super::remote`]), on a thread of its own, read through a
/// buffer (`vgpu_transport::lane`: clients combine their posted frames).
pub fn start_socket(session: &Arc<Session>, ch: Channel) -> std::io::Result<()> {
    let s = Arc::clone(session);
    std::thread::Builder::new()
        .name("lane".into())
        .spawn(move || serve(&s, FrameLane::buffered_socket(ch)))?;
    Ok(())
}

/// A socket lane: our end, and the client's end to pass.
fn socket() -> Result<(FrameLane, Vec<OwnedFd>), MediatorError> {
    let (ours, theirs) = Channel::pair()?;
    let theirs = theirs.into_fd().ok_or(TransportError::NoFd)?;
    Ok((FrameLane::socket(ours), vec![theirs]))
}

/// A ring lane: our end, and the client's lane socket and ring memfds.
fn rings() -> Result<(FrameLane, Vec<OwnedFd>), MediatorError> {
    let (lane, fds) = FrameLane::create_rings(RING_BYTES, Waits::new().initial())?;
    Ok((lane, fds.into()))
}

/// One lane until the client closes it or the session ends.
fn serve(s: &Session, mut io: FrameLane) {
    let mut lane = exec::Lane::default();
    // The first failure of a posted request, not yet reported.
    let mut deferred: Option<Status> = None;
    let (mut requests, mut posted) = (0u64, 0u64);
    let alive = || !s.closing.load(Ordering::SeqCst);
    // One request, read into again and again, and one reply head: no
    // allocation per request.
    let mut req = Request::empty();
    let mut prefix = Vec::new();
    // What this lane knows of the session's order by itself.
    let mut view = LaneView::default();
    let counts = crate::sessions::own();
    let mut replied = 0u64;
    let mut armed = false;
    // A TCP lane reads its next request while this one runs, and sends
    // a large reply while the next one runs.
    let reads_ahead = super::readahead::wanted(&io);
    let mut ahead = reads_ahead
        .then(|| ReadAhead::start(&io, s.frame_timeout))
        .flatten();
    let mut waits = Waits::new();
    let mut sender = sending::wanted(reads_ahead)
        .then(|| Sender::start(&io))
        .flatten();
    let mut profile = super::profile::Profile::from_env();
    loop {
        if let Some(p) = &mut profile {
            p.reading();
        }
        waits.update(&mut io);
        let more = match &mut ahead {
            Some(ahead) => ahead.next(&mut req).map(|got| match got {
                Some(fd) => {
                    if req.op.takes_fd() {
                        lane.fd_in = fd;
                    }
                    true
                }
                None => false,
            }),
            None => next(&mut io, s, &mut req, &mut armed),
        };
        match more {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) if super::deadline::is_frame_timeout(&e) => {
                tracing::warn!("lane: {e}; ending the session");
                s.end();
                break;
            }
            Err(e) => {
                tracing::warn!("lane: {e}; closing it");
                break;
            }
        }
        requests += 1;
        if let Some(c) = counts {
            c.count_call(req.op);
        }
        if req.op.takes_fd() && ahead.is_none() {
            // The client passes the descriptor right after the request.
            lane.fd_in = io
                .recv_fd()
                .map_err(|e| tracing::warn!("{}: no descriptor came: {e}", req.op.name()))
                .ok();
        }
        if !s.order.wait_to_run(&mut view, &req, alive) {
            break;
        }
        if let Some(p) = &mut profile {
            p.running(!req.posted());
        }
        if req.posted() {
            posted += 1;
            let _done = Ticket {
                order: &s.order,
                view: &mut view,
                ticket: req.order,
            };
            let ran = lane.execute(s, &req);
            if let Some(p) = &mut profile {
                p.ran_posted(req.op == vgpu_proto::Op::LaunchKernel);
            }
            if let Err(st) = ran {
                tracing::debug!(op = req.op.name(), status = st.0, "posted call failed");
                crate::mps::note(st);
                if let Some(c) = counts {
                    c.count_error(req.op);
                }
                deferred.get_or_insert(st);
            }
            continue;
        }
        let timed = (replied.is_multiple_of(TIMED_EVERY) && counts.is_some()).then(Instant::now);
        replied += 1;
        // A posted call's failure reported here was counted when it failed.
        let reports_deferred = deferred.is_some() && req.synchronizes();
        let ((st, reply), events) = match deferred {
            Some(st) if req.synchronizes() => {
                deferred = None;
                tracing::debug!(
                    op = req.op.name(),
                    status = st.0,
                    "reporting a posted call's failure"
                );
                ((st, Reply::default()), false)
            }
            // Log callbacks the driver runs inside the call are held for
            // the client, which runs them before the call returns.
            _ => notify::catching(|| match lane.execute(s, &req) {
                Ok(reply) => (status::SUCCESS, reply),
                Err(st) => {
                    tracing::debug!(op = req.op.name(), status = st.0, "call failed");
                    crate::mps::note(st);
                    (st, Reply::default())
                }
            }),
        };
        let flags = if events { reply_flags::EVENTS } else { 0 };
        let sent = match &mut sender {
            Some(sender) => send_behind(
                sender,
                &mut io,
                &mut lane,
                &mut prefix,
                s,
                (st, flags),
                req.seq,
                reply,
            ),
            None => send_reply(&mut io, &mut prefix, s, (st, flags), req.seq, &reply)
                .map(|()| lane.recycle(reply.blob)),
        };
        if let Some(p) = &mut profile {
            p.answered();
        }
        if let Err(e) = sent {
            tracing::debug!("lane: cannot reply to {}: {e}", req.op.name());
            break;
        }
        if let Some(c) = counts {
            if st != status::SUCCESS && !reports_deferred {
                c.count_error(req.op);
            }
            if let Some(t) = timed {
                c.record_latency(t.elapsed());
            }
        }
    }
    if let Some(p) = &profile {
        p.log(requests, posted);
    }
    tracing::debug!(requests, posted, "lane closed");
}

/// Reads the next request into `req`; `false` when the client closed the
/// lane or left, or the session is closing. A frame on the lane's socket
/// must come whole within the session's frame deadline ([`super::deadline`];
/// `armed`: the socket has its read timeout).
fn next(
    io: &mut FrameLane,
    s: &Session,
    req: &mut Request,
    armed: &mut bool,
) -> Result<bool, ProtoError> {
    let alive = || !s.closing.load(Ordering::SeqCst);
    match io.recv(alive) {
        Ok(Incoming::Buffered(frame)) => decode_request_into(frame, req).map(|()| true),
        Ok(Incoming::Socket(ch)) => {
            if !*armed {
                super::deadline::arm(ch.get_mut().channel_mut(), s.frame_timeout);
                *armed = true;
            }
            let mut reader = super::deadline::FrameReader::new(ch, s.frame_timeout, &alive);
            read_socket_request(&mut reader, req)
        }
        Err(TransportError::PeerGone) => Ok(false),
        Err(e) => Err(ProtoError::Io(std::io::Error::other(e))),
    }
}

/// [`next`]'s read of a frame on the socket: a frame deadline is an
/// error, any other failure to read the lane's end.
fn read_socket_request(r: &mut impl std::io::Read, req: &mut Request) -> Result<bool, ProtoError> {
    match read_request_into(r, req) {
        Ok(()) => Ok(true),
        Err(e) if super::deadline::is_frame_timeout(&e) => Err(e),
        Err(ProtoError::Io(_)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Sends the reply to request `seq` with its status and reply flags, then
/// its descriptor, if any.
fn send_reply(
    io: &mut FrameLane,
    prefix: &mut Vec<u8>,
    s: &Session,
    (st, flags): (Status, u16),
    seq: u32,
    reply: &Reply,
) -> Result<(), MediatorError> {
    response_prefix_into(prefix, st.0, seq, flags, &reply.fixed, reply.blob.len())?;
    // The lane reads its next request after this, and sees there a client
    // that hung up.
    io.send_then_read(&[prefix, &reply.blob], || !s.closing.load(Ordering::SeqCst))?;
    if let Some(fd) = &reply.fd {
        io.send_fd(fd.as_fd())?;
    }
    Ok(())
}

/// [`send_reply`] on a lane with a sender thread ([`super::sending`]):
/// once the reply before is sent (its buffers back to the lane), a large
/// reply goes to the sender and the lane runs on; a small one is sent here.
#[allow(clippy::too_many_arguments)]
fn send_behind(
    sender: &mut Sender,
    io: &mut FrameLane,
    lane: &mut exec::Lane,
    prefix: &mut Vec<u8>,
    s: &Session,
    (st, flags): (Status, u16),
    seq: u32,
    reply: Reply,
) -> Result<(), MediatorError> {
    if let Some((head, blob)) = sender.wait()? {
        *prefix = head;
        lane.recycle(blob);
    }
    if reply.blob.len() < sending::LARGE || reply.fd.is_some() {
        send_reply(io, prefix, s, (st, flags), seq, &reply)?;
        lane.recycle(reply.blob);
        return Ok(());
    }
    response_prefix_into(prefix, st.0, seq, flags, &reply.fixed, reply.blob.len())?;
    sender.hand(std::mem::take(prefix), reply.blob)?;
    Ok(())
}

/// `OpenLane` belongs on the control connection; on a lane it is refused.
pub fn open_lane(_: &mut exec::Lane, _: &Session, _: &Request) -> Result<Reply, Status> {
    Err(status::INVALID_VALUE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use vgpu_proto::{flags, mem_free, memset, request_prefix, Op, RequestMeta};
    use zerocopy::little_endian::{U32, U64};

    #[test]
    fn loadavg_gives_the_runnable_threads() {
        assert_eq!(parse_runnable("19.28 9.81 3.92 17/345 1234\n"), Some(17));
        assert_eq!(parse_runnable("0.00 0.01 0.05 1/80 99"), Some(1));
        assert_eq!(parse_runnable("garbage"), None);
        let mut w = Waits::new();
        assert!(w.runnable().is_some_and(|n| n >= 1), "this thread runs");
    }

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
        decode_request_into(&bytes, &mut req).expect("exact");
        let got: &mem_free::Request = req.message().expect("typed");
        assert_eq!(
            (req.op, req.order, got.dptr.get()),
            (Op::MemFree, 3, 0x1000)
        );
        bytes.push(0);
        assert!(
            decode_request_into(&bytes, &mut req).is_err(),
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
        decode_request_into(&bytes, &mut req).expect("decodes");
        assert!(req.posted(), "read again into the same request");
        assert_eq!(req.fixed.len(), std::mem::size_of::<memset::Request>());
    }
}
