//! Host callbacks: the worker's half of `cuLaunchHostFunc` and
//! `cuStreamAddCallback`.
//!
//! `OpenCallbacks`, on the control connection, makes a socket pair and
//! passes the client its end: the session's callback channel. A
//! `HostCallback` request enqueues [`trampoline`] on the real stream with
//! the driver's own call, so the driver orders it. When the driver runs it
//! (on its callback thread, once the stream's earlier work is done), the
//! trampoline asks the client to run callback `id` — a 16-byte request: id
//! u64, stream status u32, payload length u32 = 0 — and blocks until the
//! client answers with the id; the stream's later work waits for that.
//! Events (driver log messages, async notifications: [`super::notify`])
//! share the channel; every write goes through one lock, so a request and
//! an event never interleave, and only requests wait for an answer.
//!
//! # Liveness
//! The trampoline never blocks forever: a client that dies closes its end,
//! and the session's end ([`Callbacks::close`]) shuts the socket down, so a
//! waiting trampoline reads end-of-file and returns; later ones return at
//! once. Callbacks pending when the session ends are not run.
//!
//! # Capture
//! A ticket is good for one run, so a `cuLaunchHostFunc` on a stream being
//! captured gets a host node's ticket instead (the captured graph runs it
//! at every launch); a `cuStreamAddCallback` there is refused with
//! `CUDA_ERROR_NOT_SUPPORTED`.
//!
//! # Host nodes
//! A graph's host node runs at every launch: its trampoline's ticket
//! ([`NodeTicket`]) is kept by the session until it ends, and names the
//! client's callback, which the client keeps registered as long.

use std::ffi::c_void;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, Weak};

use vgpu_abi::types::{CUresult, CUstream, CUstreamCaptureStatus, CUDA_HOST_NODE_PARAMS};
use vgpu_proto::{host_callback, write_response, Request};
use vgpu_transport::Channel;

use super::calls::{message, ok, Reply};
use super::exec::{checked, Lane};
use super::status;
use super::Session;
use crate::driver::{entry, Status};

/// The session's callback channel, once the client opened it.
#[derive(Debug)]
pub struct Callbacks {
    /// The channel, kept until the process ends once opened, so that `fd`
    /// stays its descriptor. Held for a whole exchange: answers are read
    /// from it.
    io: Mutex<Option<Channel>>,
    /// A second descriptor of the same socket, for every write (requests
    /// and events), so the event sender never waits for an answer.
    writer: Mutex<Option<Channel>>,
    /// The channel's descriptor, for [`Callbacks::close`] while a
    /// trampoline holds `io`; -1 before it opens.
    fd: AtomicI32,
    /// The channel failed or the session ended: callbacks no longer run.
    dead: AtomicBool,
    /// The tickets of host nodes' trampolines, kept until the session ends;
    /// boxed, so each keeps the address the driver holds as the list grows.
    #[allow(clippy::vec_box)]
    nodes: Mutex<Vec<Box<NodeTicket>>>,
    /// Log and async-notification registrations and their event queue.
    pub notify: super::notify::Events,
}

impl Default for Callbacks {
    fn default() -> Self {
        Callbacks {
            io: Mutex::new(None),
            writer: Mutex::new(None),
            fd: AtomicI32::new(-1),
            dead: AtomicBool::new(false),
            nodes: Mutex::new(Vec::new()),
            notify: super::notify::Events::default(),
        }
    }
}

impl Callbacks {
    /// Asks the client to run callback `id`; returns once it has run, or
    /// the channel failed (the client is gone).
    fn run(&self, id: u64, stream_status: u32) {
        let mut io = self.io.lock().unwrap_or_else(|e| e.into_inner());
        let Some(ch) = io.as_mut() else {
            tracing::warn!(id, "host callback with no callback channel; not run");
            return;
        };
        if self.dead.load(Ordering::SeqCst) {
            return;
        }
        let mut req = [0u8; 16];
        req[..8].copy_from_slice(&id.to_le_bytes());
        req[8..12].copy_from_slice(&stream_status.to_le_bytes());
        let mut back = [0u8; 8];
        let done = self.write(&req).and_then(|()| ch.read_exact(&mut back));
        match done {
            Ok(()) if u64::from_le_bytes(back) == id => {}
            Ok(()) => {
                tracing::error!(id, "the client answered another callback; channel closed");
                self.fail();
            }
            Err(e) => {
                tracing::info!(id, "callback channel closed ({e}); callbacks no longer run");
                self.fail();
            }
        }
    }

    /// Writes `bytes` (one whole request or event) on the channel.
    pub(super) fn write(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        match w.as_mut() {
            Some(w) => w.write_all(bytes),
            None => Err(std::io::ErrorKind::NotConnected.into()),
        }
    }

    /// Whether callbacks no longer run (the channel failed or the session
    /// ended).
    pub(super) fn dead(&self) -> bool {
        self.dead.load(Ordering::SeqCst)
    }

    /// Marks the channel failed: callbacks and events no longer run.
    pub(super) fn fail(&self) {
        self.dead.store(true, Ordering::SeqCst);
        self.notify.wake();
    }

    /// Ends the channel at the session's end: a trampoline waiting on it
    /// returns, and later ones return at once.
    pub fn close(&self) {
        self.fail();
        let fd = self.fd.load(Ordering::SeqCst);
        if fd >= 0 {
            // SAFETY: `fd` is the channel's descriptor, kept open by `io`
            // until the process ends (once set, `io` is never cleared);
            // shutdown changes no memory.
            unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
        }
    }
}

/// Opens the callback channel: answers the `OpenCallbacks` request `seq`
/// on the control connection and passes the client's end. `false`: the
/// control connection failed.
pub fn open(session: &Session, control: &mut Channel, seq: u32) -> bool {
    let mut io = session
        .callbacks
        .io
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if io.is_some() {
        tracing::warn!("the callback channel is already open");
        return write_response(control, status::INVALID_VALUE.0, seq, &[], &[]).is_ok();
    }
    let pair = Channel::pair().and_then(|(ours, theirs)| {
        let writer = ours.fd()?.try_clone_to_owned()?;
        Ok((ours, Channel::from_fd(writer), theirs))
    });
    match pair {
        Ok((ours, writer, theirs)) => {
            session
                .callbacks
                .fd
                .store(ours.fd().map_or(-1, |f| f.as_raw_fd()), Ordering::SeqCst);
            *io = Some(ours);
            *session
                .callbacks
                .writer
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = Some(writer);
            write_response(control, status::SUCCESS.0, seq, &[], &[]).is_ok()
                && theirs.fd().is_ok_and(|f| control.send_fd(f).is_ok())
        }
        Err(e) => {
            tracing::error!("cannot make the callback channel: {e}");
            write_response(control, status::INVALID_VALUE.0, seq, &[], &[]).is_ok()
        }
    }
}

/// The `OpenCallbacks` operation arriving on a lane: it belongs to the
/// control connection.
pub fn open_callbacks(_: &mut Lane, _: &Session, _: &Request) -> Result<Reply, Status> {
    Err(status::INVALID_VALUE)
}

/// What a trampoline needs: the channel and the callback's id.
struct Ticket {
    callbacks: Arc<Callbacks>,
    id: u64,
}

/// `cuLaunchHostFunc` (`status` false) or `cuStreamAddCallback` of a
/// trampoline that runs the client's callback `id`. On a capturing stream
/// `cuLaunchHostFunc` becomes a host node of the captured graph, with a
/// node ticket (the client keeps such a callback registered);
/// `cuStreamAddCallback` gets the driver's answer the same way.
pub fn host_callback(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &host_callback::Request = message(req)?;
    let stream = checked(s, &[], r.stream.get())?;
    if capturing(s, stream)? {
        let p = node_params(s, r.id.get());
        if r.status != 0 {
            // The driver's answer (it refuses callbacks during capture); a
            // node ticket is safe whatever it decides.
            // SAFETY: as below, with the node trampoline's stream form.
            ok(unsafe {
                entry(s.driver.cuStreamAddCallback)?(
                    stream.cast(),
                    Some(node_stream_trampoline),
                    p.userData,
                    0,
                )
            })?;
            return Ok(Reply::default());
        }
        // SAFETY: `stream` is a live stream of this session; the node
        // trampoline's ticket is kept until the session ends.
        ok(unsafe { entry(s.driver.cuLaunchHostFunc)?(stream.cast(), p.fn_, p.userData) })?;
        return Ok(Reply::default());
    }
    let ticket = Box::into_raw(Box::new(Ticket {
        callbacks: Arc::clone(&s.callbacks),
        id: r.id.get(),
    }));
    // SAFETY: `stream` is a live stream of this session (or a sentinel);
    // the trampolines match the driver's prototypes and take back the
    // ticket exactly once.
    let res = unsafe {
        if r.status != 0 {
            ok(entry(s.driver.cuStreamAddCallback)?(
                stream.cast(),
                Some(stream_trampoline),
                ticket.cast(),
                0,
            ))
        } else {
            ok(entry(s.driver.cuLaunchHostFunc)?(
                stream.cast(),
                Some(trampoline),
                ticket.cast(),
            ))
        }
    };
    if res.is_err() {
        // SAFETY: the driver refused it, so it never runs a trampoline
        // with `ticket`: it is still ours.
        drop(unsafe { Box::from_raw(ticket) });
    }
    res.map(|()| Reply::default())
}

/// Whether `stream` is being captured into a graph.
pub(super) fn capturing(s: &Session, stream: crate::driver::Handle) -> Result<bool, Status> {
    let mut capturing = CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: `stream` is a live stream of this session; the out-pointer a local.
    ok(unsafe { entry(s.driver.cuStreamIsCapturing)?(stream.cast(), &mut capturing) })?;
    Ok(capturing != CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
}

/// Runs the ticket's callback with `stream_status`.
///
/// # Safety
/// `data` is a ticket from [`host_callback`], passed here once.
unsafe fn fire(data: *mut c_void, stream_status: u32) {
    // SAFETY: the caller's contract.
    let t = unsafe { Box::from_raw(data.cast::<Ticket>()) };
    t.callbacks.run(t.id, stream_status);
}

/// The driver's `CUhostFn`.
unsafe extern "C" fn trampoline(data: *mut c_void) {
    // SAFETY: the driver passes back the ticket it was given, once.
    unsafe { fire(data, 0) }
}

/// The driver's `CUstreamCallback`.
unsafe extern "C" fn stream_trampoline(_: CUstream, st: CUresult, data: *mut c_void) {
    // SAFETY: as for `trampoline`.
    unsafe { fire(data, st.0) }
}

/// A host node's ticket: good for every launch of the node.
#[derive(Debug)]
pub struct NodeTicket {
    callbacks: Weak<Callbacks>,
    id: u64,
}

/// The driver's host-node parameters for the client's callback `id`: the
/// node trampoline and a ticket the session keeps.
pub fn node_params(s: &Session, id: u64) -> CUDA_HOST_NODE_PARAMS {
    let ticket = Box::new(NodeTicket {
        callbacks: Arc::downgrade(&s.callbacks),
        id,
    });
    let data = ptr::from_ref::<NodeTicket>(&ticket).cast_mut().cast();
    let mut nodes = s.callbacks.nodes.lock().unwrap_or_else(|e| e.into_inner());
    nodes.push(ticket);
    CUDA_HOST_NODE_PARAMS {
        fn_: Some(node_trampoline),
        userData: data,
    }
}

/// The client's callback id of host-node parameters the driver gave back,
/// if they are a ticket of this session's.
pub fn node_id(s: &Session, p: &CUDA_HOST_NODE_PARAMS) -> Option<u64> {
    let nodes = s.callbacks.nodes.lock().unwrap_or_else(|e| e.into_inner());
    let found = nodes
        .iter()
        .find(|t| ptr::eq::<NodeTicket>(&***t, p.userData.cast()));
    found.map(|t| t.id)
}

/// The driver's `CUhostFn` of host nodes.
unsafe extern "C" fn node_trampoline(data: *mut c_void) {
    // SAFETY: the driver passes back a ticket from `node_params`, which the
    // session keeps until its process ends.
    let t = unsafe { &*data.cast::<NodeTicket>() };
    if let Some(c) = t.callbacks.upgrade() {
        c.run(t.id, 0);
    }
}

/// [`node_trampoline`] as a `CUstreamCallback`, with the stream's status.
unsafe extern "C" fn node_stream_trampoline(_: CUstream, st: CUresult, data: *mut c_void) {
    // SAFETY: as for `node_trampoline`.
    let t = unsafe { &*data.cast::<NodeTicket>() };
    if let Some(c) = t.callbacks.upgrade() {
        c.run(t.id, st.0);
    }
}

/// A ticket good for one run of the client's callback `id`, and the
/// trampoline that takes it back (a user object's destructor).
pub fn one_shot(s: &Session, id: u64) -> (unsafe extern "C" fn(*mut c_void), *mut c_void) {
    let ticket = Box::into_raw(Box::new(Ticket {
        callbacks: Arc::clone(&s.callbacks),
        id,
    }));
    (trampoline, ticket.cast())
}

/// Takes back a ticket from [`one_shot`] that the driver refused.
///
/// # Safety
/// `data` is a ticket from [`one_shot`] that no trampoline will run.
pub unsafe fn forget_one_shot(data: *mut c_void) {
    // SAFETY: the caller's contract: the ticket is still ours.
    drop(unsafe { Box::from_raw(data.cast::<Ticket>()) });
}
