//! The session's callback channel: how host callbacks (`cuLaunchHostFunc`,
//! `cuStreamAddCallback`) run in the application's process.
//!
//! A graph's host node registers its function once, for every launch.
//!
//! The first callback registration opens the channel with `OpenCallbacks`
//! on the control connection (the worker passes the client end of a socket
//! pair) and starts one thread, `vgpu-callbacks`. The worker's trampoline,
//! run by the driver in stream order, sends a 16-byte request (callback id
//! u64, stream status u32, payload length u32 = 0); this thread runs the
//! application's function and answers with the id (u64). The stream's later
//! work waits for that answer. A header with a non-zero payload length is
//! an event: its payload follows and it gets no answer. Events carry the
//! driver's log messages and async notifications to the functions
//! registered with `cuLogsRegisterCallback` and
//! `cuDeviceRegisterAsyncNotification` (`crate::api::notify`), which stay
//! registered until the application unregisters them. See
//! `docs/protocol.md`. A log event the driver raised inside a call this
//! client waited for does not come here: the reply says so, the calling
//! thread takes it from its lane and runs the function itself before the
//! call returns ([`run_held`]), as the driver does.
//!
//! A callback must not call CUDA (the driver's documented rule): a call from
//! this thread that needs the session returns `CUDA_ERROR_NOT_PERMITTED`,
//! as the driver may, instead of waiting on a lane that waits for this
//! callback.
//!
//! Fork and exit (`docs/adr/0003-fork-and-exit.md`): the thread belongs to
//! one session, and so to one fork epoch; a forked child inherits the
//! channel's descriptor (close-on-exec) but not the thread, never reads it,
//! and opens its own channel with its own session. At exit the thread is
//! blocked reading and the process ends under it; the worker sees the
//! socket close.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use vgpu_abi::types::{
    CUasyncCallbackHandle, CUasyncNotificationInfo, CUlogLevel, CUresult, CUstream,
};
use vgpu_proto::{read_response_head, write_request, Op};
use vgpu_transport::Channel;

use crate::edge::{CuError, CuResult};
use crate::runtime::Session;

thread_local! {
    /// Set on the callback thread while an application callback runs.
    static RUNNING: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is running an application callback.
pub fn running() -> bool {
    RUNNING.try_with(Cell::get).unwrap_or(false)
}

/// An application function waiting for its turn in stream order.
#[derive(Clone, Copy)]
pub enum Pending {
    /// `cuLaunchHostFunc`: `fn(userData)`.
    Host {
        f: unsafe extern "C" fn(*mut c_void),
        data: usize,
    },
    /// `cuStreamAddCallback`: `fn(stream, status, userData)`, with the
    /// application's own stream handle.
    Stream {
        f: unsafe extern "C" fn(CUstream, CUresult, *mut c_void),
        stream: usize,
        data: usize,
    },
    /// `cuLogsRegisterCallback`: `fn(userData, level, message, length)` for
    /// each log event.
    Log {
        f: unsafe extern "C" fn(*mut c_void, CUlogLevel, *mut c_char, usize),
        data: usize,
    },
    /// `cuDeviceRegisterAsyncNotification`: `fn(info, userData, handle)`
    /// for each notification event; the handle is the registration's id.
    Notify {
        f: unsafe extern "C" fn(*mut CUasyncNotificationInfo, *mut c_void, CUasyncCallbackHandle),
        data: usize,
    },
}

/// An event's kind, in the header's status word: a driver log message
/// (payload: the level, u32 LE, then the message's bytes).
pub const EVENT_LOG: u32 = 1;
/// An event's kind: an async notification (payload: the driver's
/// `CUasyncNotificationInfo`, by value).
pub const EVENT_NOTIFY: u32 = 2;

/// The session's registered callbacks and its callback thread.
#[derive(Default)]
pub struct Callbacks {
    /// Whether the channel is open and its thread started.
    started: Mutex<bool>,
    /// Each registered function, and whether it stays registered after it
    /// runs (a graph's host node runs at every launch).
    pending: Mutex<HashMap<u64, (Pending, bool)>>,
    next: AtomicU64,
}

impl Callbacks {
    fn pending(&self) -> MutexGuard<'_, HashMap<u64, (Pending, bool)>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers `p` for one run, opening the channel first if need be; its id.
    pub fn register(&self, s: &'static Session, p: Pending) -> CuResult<u64> {
        self.register_as(s, p, false)
    }

    /// Registers `p` for every run of a graph's host node: it stays
    /// registered for the session's life (a node's parameters may be read
    /// back, and an executable graph may outlive the node's graph). Event
    /// functions are kept this way until they are unregistered.
    pub fn register_kept(&self, s: &'static Session, p: Pending) -> CuResult<u64> {
        self.register_as(s, p, true)
    }

    fn register_as(&self, s: &'static Session, p: Pending, keep: bool) -> CuResult<u64> {
        {
            let mut started = self.started.lock().unwrap_or_else(|e| e.into_inner());
            if !*started {
                start(s)?;
                *started = true;
            }
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.pending().insert(id, (p, keep));
        Ok(id)
    }

    /// The function registered as `id`, still registered.
    pub fn get(&self, id: u64) -> Option<Pending> {
        self.pending().get(&id).map(|&(p, _)| p)
    }

    /// Forgets `id` (its registration failed, or it was unregistered).
    pub fn forget(&self, id: u64) {
        self.pending().remove(&id);
    }

    /// The function to run as `id`; a one-run registration ends here.
    fn take(&self, id: u64) -> Option<Pending> {
        let mut pending = self.pending();
        match pending.get(&id) {
            Some(&(p, true)) => Some(p),
            _ => pending.remove(&id).map(|(p, _)| p),
        }
    }
}

/// Opens the channel on the control connection and starts the thread.
fn start(s: &'static Session) -> CuResult<()> {
    if s.remote {
        // A TCP session cannot pass a socket; callbacks over TCP are not
        // carried yet.
        crate::log::once(
            "callbacks-remote",
            format_args!("host callbacks are not supported over TCP sessions"),
        );
        return Err(CuError::NOT_SUPPORTED);
    }
    let ch = {
        let mut control = s.control.lock().unwrap_or_else(|e| e.into_inner());
        let fail = |e: &dyn std::fmt::Display| s.fail("open callbacks", e);
        write_request(&mut *control, Op::OpenCallbacks, 0, 0, &[], &[]).map_err(|e| fail(&e))?;
        let (head, _) = read_response_head(&mut *control).map_err(|e| fail(&e))?;
        crate::edge::check(head.status.get())?;
        Channel::from_fd(control.recv_fd().map_err(|e| fail(&e))?)
    };
    std::thread::Builder::new()
        .name("vgpu-callbacks".into())
        .spawn(move || serve(s, ch))
        .map_err(|_| CuError::OUT_OF_MEMORY)?;
    Ok(())
}

/// The largest event payload accepted; a longer one means the channel is
/// out of step, and it is closed.
const MAX_EVENT: u32 = 1 << 20;

/// Runs the worker's requests until the channel closes.
fn serve(s: &'static Session, mut ch: Channel) {
    let _ = RUNNING.try_with(|r| r.set(true));
    let mut req = [0u8; 16];
    while ch.read_exact(&mut req).is_ok() {
        let (id, status, len) = decode(&req);
        if len != 0 {
            // An event: a payload of `len` bytes follows, and the worker
            // waits for no answer. The payload is always read, keeping the
            // channel in step.
            if len > MAX_EVENT {
                crate::log::line(format_args!(
                    "event of {len} bytes; callback channel closed"
                ));
                break;
            }
            let mut payload = vec![0u8; len as usize];
            if ch.read_exact(&mut payload).is_err() {
                break;
            }
            match s.callbacks.get(id) {
                Some(p) => run_event(p, id, status, payload),
                // Unregistered since the worker sent it.
                None => {
                    crate::log::line(format_args!("event for callback {id} is unknown; skipped"))
                }
            }
            continue;
        }
        match s.callbacks.take(id) {
            Some(p) => run(p, status),
            None => crate::log::line(format_args!("callback {id} is unknown; skipped")),
        }
        if ch.write_all(&id.to_le_bytes()).is_err() {
            break;
        }
    }
}

/// Runs, on the calling thread, the events its lane held for one call
/// (`crate::lane`): each as the callback thread would, in the order the
/// driver raised them. A function unregistered meanwhile is skipped.
pub fn run_held(s: &Session, events: &[u8]) {
    let (split, whole) = split_held(events);
    for (id, kind, payload) in split {
        match s.callbacks.get(id) {
            Some(p) => run_event(p, id, kind, payload.to_vec()),
            None => crate::log::line(format_args!("event for callback {id} is unknown; skipped")),
        }
    }
    if !whole {
        crate::log::line(format_args!("held events cut short; the rest skipped"));
    }
}

/// One held event: callback id, kind and payload.
type Held<'a> = (u64, u32, &'a [u8]);

/// The events in `events` (headers as on the channel, each followed by its
/// payload), and whether they filled it exactly.
fn split_held(mut events: &[u8]) -> (Vec<Held<'_>>, bool) {
    let mut out = Vec::new();
    while let Some((head, rest)) = events.split_first_chunk::<16>() {
        let (id, kind, len) = decode(head);
        let Some((payload, rest)) = rest.split_at_checked(len as usize) else {
            return (out, false);
        };
        out.push((id, kind, payload));
        events = rest;
    }
    (out, events.is_empty())
}

/// A header's callback id, stream status (or event word) and payload
/// length: zero for a request that waits for an answer, else the length of
/// the event payload that follows.
fn decode(req: &[u8; 16]) -> (u64, u32, u32) {
    let mut id = [0u8; 8];
    let mut st = [0u8; 4];
    let mut len = [0u8; 4];
    id.copy_from_slice(&req[..8]);
    st.copy_from_slice(&req[8..12]);
    len.copy_from_slice(&req[12..16]);
    (
        u64::from_le_bytes(id),
        u32::from_le_bytes(st),
        u32::from_le_bytes(len),
    )
}

fn run(p: Pending, status: u32) {
    match p {
        Pending::Log { .. } | Pending::Notify { .. } => {
            crate::log::line(format_args!(
                "an event function asked to run as a host callback; skipped"
            ));
        }
        // SAFETY: the application's function with its own argument, as it
        // registered them, called once, in stream order.
        Pending::Host { f, data } => unsafe { f(data as *mut c_void) },
        Pending::Stream { f, stream, data } => {
            let st = CUresult(status);
            // SAFETY: as above, with the application's stream handle.
            unsafe { f(stream as CUstream, st, data as *mut c_void) }
        }
    }
}

/// Runs event function `p`, registered as `id`, with an event of `kind`.
fn run_event(p: Pending, id: u64, kind: u32, mut payload: Vec<u8>) {
    match (p, kind) {
        (Pending::Log { f, data }, EVENT_LOG) if payload.len() >= 4 => {
            let mut level = [0u8; 4];
            level.copy_from_slice(&payload[..4]);
            let length = payload.len() - 4;
            // The message as the driver gave it, NUL-terminated after its
            // `length` bytes.
            payload.push(0);
            let message = payload[4..].as_mut_ptr().cast::<c_char>();
            let level = CUlogLevel(u32::from_le_bytes(level));
            // SAFETY: the application's function with its own argument, as
            // it registered them; `message` holds `length` bytes and a NUL
            // and lives across the call.
            unsafe { f(data as *mut c_void, level, message, length) }
        }
        (Pending::Notify { f, data }, EVENT_NOTIFY)
            if payload.len() == size_of::<CUasyncNotificationInfo>() =>
        {
            // SAFETY: the payload holds exactly one `CUasyncNotificationInfo`
            // (plain integers, valid for any bytes), read unaligned.
            let mut info = unsafe {
                payload
                    .as_ptr()
                    .cast::<CUasyncNotificationInfo>()
                    .read_unaligned()
            };
            // SAFETY: as above; `info` is a local that lives across the
            // call, and the handle is the one the application was given.
            unsafe {
                f(
                    &raw mut info,
                    data as *mut c_void,
                    id as CUasyncCallbackHandle,
                )
            }
        }
        _ => crate::log::line(format_args!(
            "event of kind {kind} ({} bytes) does not fit callback {id}; skipped",
            payload.len()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_decode_little_endian() {
        let mut req = [0u8; 16];
        req[..8].copy_from_slice(&7u64.to_le_bytes());
        req[8..12].copy_from_slice(&719u32.to_le_bytes());
        assert_eq!(decode(&req), (7, 719, 0));
    }

    /// A log function's call: user data, level, message with its NUL, length.
    type Logged = (usize, u32, Vec<u8>, usize);

    static LOGGED: Mutex<Vec<Logged>> = Mutex::new(Vec::new());

    unsafe extern "C" fn log_fn(
        data: *mut c_void,
        level: CUlogLevel,
        msg: *mut c_char,
        len: usize,
    ) {
        // SAFETY: the caller passes `len` bytes and a NUL.
        let text = unsafe { std::slice::from_raw_parts(msg.cast::<u8>(), len + 1) }.to_vec();
        LOGGED
            .lock()
            .expect("lock")
            .push((data as usize, level.0, text, len));
    }

    static NOTIFIED: Mutex<Vec<(u32, u64, usize, usize)>> = Mutex::new(Vec::new());

    unsafe extern "C" fn notify_fn(
        info: *mut CUasyncNotificationInfo,
        data: *mut c_void,
        h: CUasyncCallbackHandle,
    ) {
        // SAFETY: the caller passes a live notification.
        let info = unsafe { &*info };
        // SAFETY: the only member of the union.
        let bytes = unsafe { info.info.overBudget.bytesOverBudget };
        NOTIFIED
            .lock()
            .expect("lock")
            .push((info.type_.0, bytes, data as usize, h as usize));
    }

    #[test]
    fn log_events_run_the_function_with_level_and_message() {
        let p = Pending::Log {
            f: log_fn,
            data: 0x55,
        };
        let mut payload = 1u32.to_le_bytes().to_vec();
        payload.extend_from_slice(b"bad image");
        run_event(p, 9, EVENT_LOG, payload);
        // A notification's payload does not fit a log function.
        run_event(p, 9, EVENT_NOTIFY, vec![0; 16]);
        let logged = LOGGED.lock().expect("lock");
        assert_eq!(*logged, vec![(0x55, 1, b"bad image\0".to_vec(), 9)]);
    }

    #[test]
    fn notification_events_run_the_function_with_the_info_and_handle() {
        let p = Pending::Notify {
            f: notify_fn,
            data: 0x66,
        };
        let mut payload = 1u32.to_le_bytes().to_vec();
        payload.extend_from_slice(&[0; 4]);
        payload.extend_from_slice(&4096u64.to_le_bytes());
        run_event(p, 12, EVENT_NOTIFY, payload);
        // The wrong size is skipped.
        run_event(p, 12, EVENT_NOTIFY, vec![0; 8]);
        assert_eq!(*NOTIFIED.lock().expect("lock"), vec![(1, 4096, 0x66, 12)]);
    }

    #[test]
    fn held_events_split_in_order_and_a_cut_one_is_refused() {
        let mut bytes = Vec::new();
        for (id, kind, payload) in [(4u64, EVENT_LOG, &b"\x02\0\0\0one"[..]), (5, 2, b"")] {
            bytes.extend_from_slice(&id.to_le_bytes());
            bytes.extend_from_slice(&kind.to_le_bytes());
            bytes.extend_from_slice(&u32::try_from(payload.len()).expect("short").to_le_bytes());
            bytes.extend_from_slice(payload);
        }
        let want = vec![(4, EVENT_LOG, &b"\x02\0\0\0one"[..]), (5, 2, &b""[..])];
        assert_eq!(split_held(&bytes), (want.clone(), true));
        assert_eq!(
            split_held(&bytes[..bytes.len() - 1]),
            (want[..1].to_vec(), false)
        );
        assert_eq!(split_held(&bytes[..10]), (vec![], false));
        assert_eq!(split_held(&[]), (vec![], true));
    }

    #[test]
    fn events_carry_their_payload_length() {
        let mut req = [0u8; 16];
        req[..8].copy_from_slice(&3u64.to_le_bytes());
        req[8..12].copy_from_slice(&2u32.to_le_bytes());
        req[12..16].copy_from_slice(&41u32.to_le_bytes());
        assert_eq!(decode(&req), (3, 2, 41));
    }
}
