//! Lanes: each client thread that makes calls gets its own lane to its own
//! worker thread, opened on the session's control connection. A blocking
//! call on one thread therefore never stalls another.
//!
//! # Transports ([`LaneIo`])
//!
//! - **Rings** (`features::RINGS` negotiated, the default on one host): a
//!   submission and a completion ring in shared memory, plus the lane
//!   socket. One ring message is one frame, byte for byte as on a socket; a
//!   frame larger than a ring message travels on the lane socket, announced
//!   by an empty ring message. The socket also carries descriptors, and its
//!   hang-up tells a waiting thread that the worker is gone (the thread
//!   polls its ring for `VGPU_RING_SPIN_US`, polls with a yield between
//!   polls for `VGPU_RING_YIELD_US`, then sleeps on the futex and looks at
//!   the socket every [`CHECK`]).
//! - **Socket**: the lane socket carries the frames; the fallback, and
//!   `VGPU_TRANSPORT=socket`.
//!
//! # Posting and order
//!
//! [`Session::post`] sends a request without waiting ([`flags::POSTED`]):
//! its failure comes back at this thread's next synchronizing call
//! (`docs/adr/0004-async-errors.md`). Posted requests take session-wide
//! tickets and name what they follow ([`Follows`]): work on a stream
//! follows the stream's previous posted request, so streams driven from
//! different threads run side by side in the worker; the rest follows every
//! earlier posted request. Every other request carries the count of tickets
//! issued before it, and the worker runs nothing before the posted requests
//! issued before it, on any thread (`crates/mediator/src/worker/order.rs`).
//!
//! Over plain TCP a lane may hand the requests it posts to the process's
//! sender thread (`VGPU_TCP_SENDER`, `vgpu_transport::lane::outbox`), which
//! writes what each lane holds in one system call; a request that waits for
//! its reply is written by its own thread after everything its lane holds.
//!
//! # Events inside a call
//!
//! A reply flagged `reply_flags::EVENTS` means the worker's driver ran log
//! callbacks inside the call: the thread takes them from its lane and runs
//! the application's functions before the call returns (`events`).

use std::cell::RefCell;
use std::mem::offset_of;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use vgpu_proto::{
    features, flags, lane_kind, open_lane, read_response_head, request_prefix_into, write_request,
    Op, ProtoError, RequestHead, RequestMeta,
};
use vgpu_transport::{Channel, FrameLane, TransportError, WaitPolicy};

use crate::config::{Config, TransportChoice};
use crate::edge::{CuError, CuResult};
use crate::runtime::Session;

mod events;
mod order;
mod pieces;
mod reply;

pub use order::{Follows, PER_THREAD_STREAM};
use order::{Issued, Tickets};
pub(crate) use pieces::Piece;
use reply::receive;

/// How often a thread waiting on its ring checks that the worker is there.
const CHECK: Duration = Duration::from_millis(100);
/// Largest piece of a copy in one frame on ring lanes: half the worker's
/// 4 MiB rings, so a posted piece can be copied in while the worker copies
/// the one before it out, and a synchronous piece needs few round trips.
const RING_CHUNK: usize = 2 << 20;
/// Pieces of a synchronous copy in flight at once ([`Session::call_pieces`]).
/// Requests or replies of one direction are small, so the other direction's
/// big frames can never be held up by them.
const WINDOW: usize = 4;
/// Largest piece of a copy in one frame on Unix socket lanes.
const SOCKET_CHUNK: usize = 16 << 20;
/// Largest piece of a copy in one frame on TCP lanes. The worker copies a
/// piece between the device and its buffer, then sends or after receiving
/// it, one after the other: the smaller the piece, the more of that copy
/// overlaps the socket's buffered bytes still moving, and the less the
/// first piece, which goes alone, holds up the rest. Below this size the
/// frames' own costs win (256 MiB over loopback TCP on the simulated
/// device, GB/s host-to-device / device-to-host: 1 MiB 4.7 / 1.8,
/// 2 MiB 3.8 / 2.5, 4 MiB 4.4 / 4.4, 8 MiB 4.4 / 4.0, 16 MiB 2.9 / 3.8).
const TCP_CHUNK: usize = 4 << 20;

/// CPUs a host needs for TCP lanes to post through a sender thread by
/// default: the thread polls for a while after each write, and on fewer
/// CPUs it takes its time from the application and the worker.
const SENDER_CPUS: usize = 4;

/// The feature bits this client asks for.
pub fn hello_features(cfg: &Config) -> u64 {
    match cfg.transport {
        TransportChoice::Socket => features::ALL & !features::RINGS,
        TransportChoice::Auto | TransportChoice::Rings => features::ALL,
    }
}

/// Lane state shared by a session's threads.
#[derive(Debug)]
pub struct Lanes {
    tickets: Mutex<Tickets>,
    /// Tickets issued so far (`tickets.next`): the fence of a request that
    /// waits for a reply.
    issued: AtomicU32,
    /// New lanes ask for rings.
    rings: bool,
    /// Lanes are TCP connections (plain or TLS).
    tcp: bool,
    /// Only ring lanes are acceptable (`VGPU_TRANSPORT=rings`).
    rings_only: bool,
    spin: Duration,
    yield_for: Duration,
    /// Plain TCP lanes hand posted frames to a sender thread
    /// (`VGPU_TCP_SENDER`; by default on hosts of [`SENDER_CPUS`] or more).
    tcp_sender: bool,
    /// The largest piece of a copy on a TCP lane (`VGPU_TCP_PIECE_KIB`).
    tcp_piece: usize,
    /// Lanes opened, replies awaited and requests posted, for the trace
    /// summary and the tests that count round trips. The last two are
    /// counted only with `VGPU_TRACE` set: threads calling at once would
    /// otherwise share their cache line on every call.
    counting: bool,
    pub opened: AtomicU64,
    pub round_trips: AtomicU64,
    pub posted: AtomicU64,
}

impl Lanes {
    /// The lane settings for a session whose worker agreed to `negotiated`;
    /// `tcp`: the session runs over TCP.
    pub fn new(cfg: &Config, negotiated: u64, tcp: bool) -> Result<Lanes, String> {
        if let Some(bad) = &cfg.bad_transport {
            crate::log::line(format_args!(
                "VGPU_TRANSPORT={bad:?} is not socket, rings or auto; using auto"
            ));
        }
        let offered = negotiated & features::RINGS != 0;
        let rings_only = cfg.transport == TransportChoice::Rings;
        if rings_only && !offered {
            return Err("VGPU_TRANSPORT=rings, but the mediator does not offer rings".into());
        }
        Ok(Lanes {
            tickets: Mutex::new(Tickets::default()),
            issued: AtomicU32::new(0),
            rings: offered && cfg.transport != TransportChoice::Socket,
            tcp,
            rings_only,
            spin: cfg.ring_spin,
            yield_for: cfg.ring_yield,
            tcp_sender: cfg.tcp_sender.unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(1, usize::from) >= SENDER_CPUS
            }),
            tcp_piece: cfg.tcp_piece.unwrap_or(TCP_CHUNK),
            opened: AtomicU64::new(0),
            counting: cfg.trace.is_some(),
            round_trips: AtomicU64::new(0),
            posted: AtomicU64::new(0),
        })
    }

    /// Largest piece of a copy to put in one frame.
    pub fn chunk(&self) -> usize {
        if self.rings {
            RING_CHUNK
        } else if self.tcp {
            self.tcp_piece
        } else {
            SOCKET_CHUNK
        }
    }

    /// Whether lanes run on rings.
    pub fn rings(&self) -> bool {
        self.rings
    }

    /// Adds `n` to a counter when counting (`VGPU_TRACE`).
    fn count(&self, counter: &AtomicU64, n: u64) {
        if self.counting {
            counter.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Counts `n` calls that wait for their replies (`VGPU_TRACE`): for
    /// the session, and for the calling thread's call being traced
    /// ([`crate::trace::waited`]).
    fn count_round_trips(&self, n: u64) {
        if self.counting {
            self.round_trips.fetch_add(n, Ordering::Relaxed);
            crate::trace::waited(n);
        }
    }

    /// Takes the next ticket for a posted request.
    fn issue(&self, follows: Follows) -> Issued {
        let mut t = self.tickets.lock().unwrap_or_else(|e| e.into_inner());
        let issued = t.issue(follows);
        self.issued.store(t.next, Ordering::SeqCst);
        issued
    }

    /// The fence of a request that waits for its reply: every ticket issued
    /// before it.
    fn fence(&self) -> u32 {
        self.issued.load(Ordering::SeqCst)
    }
}

/// Why a lane failed; any of these loses the session.
#[derive(Debug, thiserror::Error)]
enum LaneError {
    #[error("{0}")]
    Proto(#[from] ProtoError),
    #[error("{0}")]
    Transport(#[from] TransportError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Broken(&'static str),
}

impl Session {
    fn open_lane(&self) -> CuResult<Lane> {
        let mut control = self.control.lock().unwrap_or_else(|e| e.into_inner());
        let fail = |e: LaneError| self.fail("open lane", e);
        write_request(&mut *control, Op::OpenLane, 0, 0, &[], &[]).map_err(|e| fail(e.into()))?;
        let (head, fixed) = read_response_head(&mut *control).map_err(|e| fail(e.into()))?;
        crate::edge::check(head.status.get())?;
        let reply = *vgpu_proto::message::decode::<open_lane::Reply>(&fixed, head.blob_len())
            .map_err(|e| fail(e.into()))?;
        let io = if reply.kind == lane_kind::RINGS {
            let fds = control.recv_fds(3).map_err(|e| fail(e.into()))?;
            let wait = WaitPolicy {
                spin: self.lanes.spin,
                yield_for: self.lanes.yield_for,
                timeout: Some(CHECK),
            };
            FrameLane::map_rings(fds, wait).map_err(|e| fail(e.into()))?
        } else if reply.kind == lane_kind::IVSHMEM {
            let region = self.vm.as_ref().ok_or_else(|| {
                fail(LaneError::Broken(
                    "an ivshmem lane on a session without a VM device",
                ))
            })?;
            let ch = crate::vm::open_lane(region, reply.port.get()).map_err(|e| fail(e.into()))?;
            FrameLane::socket(ch)
        } else if reply.kind == lane_kind::TCP {
            let ch = crate::remote::open_lane(&control, &reply).map_err(|e| fail(e.into()))?;
            if self.lanes.tcp_sender {
                FrameLane::combining(ch)
            } else {
                FrameLane::buffered_socket(ch)
            }
        } else {
            let fd = control.recv_fd().map_err(|e| fail(e.into()))?;
            if self.lanes.rings_only {
                crate::log::line(format_args!(
                    "VGPU_TRANSPORT=rings, but the worker opened a socket lane; refusing it"
                ));
                return Err(CuError::DEVICE_UNAVAILABLE);
            }
            FrameLane::socket(Channel::from_fd(fd))
        };
        self.lanes.opened.fetch_add(1, Ordering::Relaxed);
        Ok(Lane {
            io,
            serial: self.serial,
            pid: std::process::id(),
            seq: 0,
            prefix: Vec::new(),
        })
    }

    /// Runs `f` on the calling thread's lane (`true`), or on a lane of its
    /// own for this one call (`false`) when the thread's lane cannot be used:
    /// its thread-locals are being torn down (a call from a TLS destructor),
    /// or the lane is busy (a call re-entered from inside one).
    fn on_lane<R>(&self, f: impl FnOnce(&mut Lane, bool) -> CuResult<R>) -> CuResult<R> {
        let mut f = Some(f);
        let on_thread = LANE.try_with(|cell| {
            let Ok(mut slot) = cell.try_borrow_mut() else {
                return None;
            };
            Some((|| {
                if slot.as_ref().is_none_or(|l| l.serial != self.serial) {
                    if let Some(old) = slot.take() {
                        old.retire();
                    }
                    *slot = Some(self.open_lane()?);
                }
                let lane = slot.as_mut().ok_or(CuError::UNKNOWN)?;
                let f = f.take().ok_or(CuError::UNKNOWN)?;
                f(lane, true)
            })())
        });
        match on_thread {
            Ok(Some(r)) => r,
            _ => {
                let mut lane = self.open_lane()?;
                let f = f.take().ok_or(CuError::UNKNOWN)?;
                f(&mut lane, false)
            }
        }
    }

    /// Sends one call on the calling thread's lane and waits for its reply.
    /// `sink`, if given, receives the reply's blob in place (it must be
    /// exactly as long); otherwise the blob is returned. `fd_out` receives
    /// the descriptor that follows a successful reply. Returns the reply's
    /// fixed part, which the caller decodes ([`crate::call`]), and its blob.
    pub(crate) fn exchange(
        &self,
        ctx: u64,
        op: Op,
        fixed: &[u8],
        blob: &[u8],
        sink: Option<&mut [u8]>,
        fd_out: Option<&mut Option<OwnedFd>>,
    ) -> CuResult<(Vec<u8>, Vec<u8>)> {
        self.exchange_passing(ctx, op, fixed, blob, sink, None, fd_out)
    }

    /// [`Self::exchange`] that passes `fd_in` (SCM_RIGHTS) right after the
    /// request, for an operation that takes one ([`Op::takes_fd`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn exchange_passing(
        &self,
        ctx: u64,
        op: Op,
        fixed: &[u8],
        blob: &[u8],
        sink: Option<&mut [u8]>,
        fd_in: Option<std::os::fd::BorrowedFd<'_>>,
        fd_out: Option<&mut Option<OwnedFd>>,
    ) -> CuResult<(Vec<u8>, Vec<u8>)> {
        if op.takes_fd() != fd_in.is_some() {
            return Err(CuError::INVALID_VALUE);
        }
        if self.dead.load(Ordering::SeqCst) {
            return Err(CuError::DEVICE_UNAVAILABLE);
        }
        self.lanes.count_round_trips(1);
        // Log events the driver raised inside the call (`lane::events`).
        let mut events = None;
        let done = self.on_lane(|lane, _| {
            let meta = lane.meta(op, ctx, self.lanes.fence());
            lane.send(&meta, fixed, blob)
                .map_err(|e| self.fail(op.name(), e))?;
            if let Some(fd) = fd_in {
                lane.io
                    .send_fd(fd)
                    .map_err(|e| self.fail(op.name(), LaneError::from(e)))?;
            }
            let (head, fixed, owned) =
                receive(&mut lane.io, sink).map_err(|e| self.fail(op.name(), e))?;
            let done = crate::edge::check(head.status.get()).and_then(|()| {
                if let Some(slot) = fd_out {
                    *slot = Some(
                        lane.io
                            .recv_fd()
                            .map_err(|e| self.fail(op.name(), LaneError::from(e)))?,
                    );
                }
                Ok((fixed, owned))
            });
            if head.events() {
                events = Some(self.take_events(lane, ctx, meta.order));
            }
            done
        });
        self.after_waited(events);
        done
    }

    /// What follows every call a thread waited for, once its lane is free:
    /// device `printf` output the call flushed (in the output files by now)
    /// goes out, then the log callbacks the driver ran inside the call
    /// (`events`, taken from the lane) run on this thread.
    pub(crate) fn after_waited(&self, events: Option<Vec<u8>>) {
        if let Some(output) = &self.output {
            output.drain();
        }
        if let Some(events) = events {
            crate::callback::run_held(self, &events);
        }
    }

    /// Sends a call that returns nothing but a status on success
    /// ([`Op::postable`]) without waiting for its reply; its failure comes
    /// back at this thread's next synchronizing call. Callers post only
    /// what they have checked locally as the driver would
    /// (`docs/adr/0004-async-errors.md`).
    pub fn post(&self, op: Op, fixed: &[u8], blob: &[u8], follows: Follows) -> CuResult<()> {
        if self.dead.load(Ordering::SeqCst) {
            return Err(CuError::DEVICE_UNAVAILABLE);
        }
        let ctx = crate::context::current();
        // During a stream capture the driver answers at once what it
        // refuses (a call that breaks the capture's rules, one on a stream
        // the capture forbids): wait for that answer.
        let capturing = self.captures.load(Ordering::SeqCst) != 0;
        let posted = self.on_lane(|lane, persistent| {
            if !persistent || capturing {
                // A lane for one call closes at once: wait for the reply.
                return Ok(false);
            }
            lane.post(&self.lanes, follows, ctx, op, fixed, blob)
                .map_err(|e| self.fail(op.name(), e))?;
            Ok(true)
        })?;
        if posted {
            self.lanes.count(&self.lanes.posted, 1);
            Ok(())
        } else {
            self.exchange(ctx, op, fixed, blob, None, None).map(drop)
        }
    }
}

/// A thread's connection to its worker thread.
struct Lane {
    io: FrameLane,
    /// The session it belongs to.
    serial: u64,
    /// The process that opened it: a forked child inherits the parent's
    /// lanes and must not touch them.
    pid: u32,
    seq: u32,
    /// The head and fixed part of the request being sent, reused: no
    /// allocation per request.
    prefix: Vec<u8>,
}

impl Lane {
    /// The head of a request that waits for its reply, with its fence.
    fn meta(&mut self, op: Op, ctx: u64, fence: u32) -> RequestMeta {
        self.seq = self.seq.wrapping_add(1);
        RequestMeta {
            op,
            seq: self.seq,
            ctx,
            flags: 0,
            order: fence,
            after: 0,
        }
    }

    /// Takes a ticket and sends the request with it. Everything that can
    /// refuse the request is checked before the ticket is taken: a ticket
    /// taken and never sent would hold up every later request.
    fn post(
        &mut self,
        lanes: &Lanes,
        follows: Follows,
        ctx: u64,
        op: Op,
        fixed: &[u8],
        blob: &[u8],
    ) -> Result<(), LaneError> {
        let mut meta = self.meta(op, ctx, 0);
        // Checked with the widest flags and numbers the ticket may bring.
        meta.flags = flags::POSTED | flags::AFTER;
        meta.after = 1;
        self.send_with(&meta, fixed, blob, false, |prefix| {
            let issued = lanes.issue(follows);
            for (field, value) in [
                (offset_of!(RequestHead, flags), issued.flags),
                (offset_of!(RequestHead, order), issued.ticket),
                (offset_of!(RequestHead, after), issued.after),
            ] {
                prefix
                    .get_mut(field..field + 4)
                    .ok_or(LaneError::Broken("request head too short"))?
                    .copy_from_slice(&value.to_le_bytes());
            }
            Ok(())
        })
    }

    /// Sends a request that waits for its reply: the wait sees a worker
    /// that hung up ([`FrameLane::send_then_read`]).
    fn send(&mut self, meta: &RequestMeta, fixed: &[u8], blob: &[u8]) -> Result<(), LaneError> {
        self.send_with(meta, fixed, blob, true, |_| Ok(()))
    }

    /// Builds the request's head and fixed part in the lane's reused buffer
    /// (checked as the worker will check them), lets `finish` fill in what
    /// is decided last, and sends it with `blob`; `awaited`: its reply is
    /// read next.
    fn send_with(
        &mut self,
        meta: &RequestMeta,
        fixed: &[u8],
        blob: &[u8],
        awaited: bool,
        finish: impl FnOnce(&mut Vec<u8>) -> Result<(), LaneError>,
    ) -> Result<(), LaneError> {
        let mut prefix = std::mem::take(&mut self.prefix);
        let sent = request_prefix_into(&mut prefix, meta, fixed, blob.len())
            .map_err(LaneError::from)
            .and_then(|()| finish(&mut prefix))
            .and_then(|()| {
                let parts: [&[u8]; 2] = [&prefix, blob];
                if awaited {
                    self.io.send_then_read(&parts, || true)?;
                } else {
                    self.io.post(&parts, || true)?;
                }
                Ok(())
            });
        self.prefix = prefix;
        sent
    }

    /// Lets go of a lane of an ended session. One inherited across `fork` is
    /// forgotten, not closed: its rings are shared with the parent, and
    /// closing them would close the parent's lane.
    fn retire(self) {
        if self.pid != std::process::id() {
            self.io.abandon();
        }
    }
}

thread_local! {
    static LANE: RefCell<Option<Lane>> = const { RefCell::new(None) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Config {
        Config::from_env(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    #[test]
    fn the_transport_is_negotiated() {
        let auto = config(&[]);
        assert_eq!(hello_features(&auto), features::ALL);
        let lanes = Lanes::new(&auto, features::ALL, false).expect("auto");
        assert!(lanes.rings());
        assert_eq!(lanes.chunk(), RING_CHUNK);
        let old_worker = Lanes::new(&auto, features::LANES, false).expect("auto falls back");
        assert!(!old_worker.rings());
        assert_eq!(old_worker.chunk(), SOCKET_CHUNK);
        let remote = Lanes::new(&auto, features::LANES, true).expect("over TCP");
        assert_eq!(remote.chunk(), TCP_CHUNK);
        let pieces = config(&[("VGPU_TCP_PIECE_KIB", "1024")]);
        let remote = Lanes::new(&pieces, features::LANES, true).expect("over TCP");
        assert_eq!(remote.chunk(), 1 << 20);

        let socket = config(&[("VGPU_TRANSPORT", "socket")]);
        assert_eq!(hello_features(&socket) & features::RINGS, 0);
        assert!(!Lanes::new(&socket, features::ALL, false)
            .expect("socket")
            .rings());

        let rings = config(&[("VGPU_TRANSPORT", "rings")]);
        assert!(Lanes::new(&rings, features::ALL, false)
            .expect("rings")
            .rings());
        assert!(
            Lanes::new(&rings, features::LANES, false).is_err(),
            "forced rings without an offer fail the session"
        );
    }
}
