//! Driver notifications: the worker's half of `cuLogsRegisterCallback` /
//! `cuLogsUnregisterCallback` and `cuDeviceRegisterAsyncNotification` /
//! `cuDeviceUnregisterAsyncNotification`.
//!
//! For each registration the client makes, the worker registers a
//! trampoline of its own with the driver; its user data is a [`Ticket`]
//! naming the client's callback id. When the driver calls it (a log
//! message, an async notification), the trampoline copies what the driver
//! gave into an **event** — the callback channel's 16-byte header (id u64,
//! kind u32, payload length u32), then the payload — and queues it; it
//! never writes to the socket itself, so the driver is never held up by a
//! slow or dead client. One thread, `vgpu-events`, started with the first
//! registration, writes queued events on the channel in order; the client
//! runs the application's function and sends no answer.
//!
//! # Events inside a waited call
//!
//! Driver 580 calls a log callback inside the failing call, on the calling
//! thread, before the call returns. A trampoline that runs on a lane's
//! thread while the lane runs a request the client waits for
//! ([`catching`]) therefore holds its event in the lane thread instead of
//! queueing it; the reply carries `reply_flags::EVENTS`, and the client
//! takes the held events with `TakeEvents` on the same lane
//! ([`take_events`]) and runs the application's functions on the calling
//! thread before the call returns, as natively. Nothing then depends on the
//! callback channel or its thread (which may be running a host function),
//! and a client that never takes them only keeps its own lane's bounded
//! store full. Posted requests and the driver's own threads use the queue.
//!
//! # Bounds
//! At most [`MAX_QUEUED`] events or [`MAX_QUEUED_BYTES`] bytes wait; an
//! event past either is dropped and counted, and the count is logged when
//! the queue drains. A log message longer than [`MAX_MESSAGE`] bytes is cut
//! there.
//!
//! # Lifetime
//! A registration lasts until the client unregisters it; the driver's own
//! registrations go with the worker process at the session's end. A ticket
//! whose registration ended is kept (marked unused) and reused by a later
//! registration, so registering in a loop never grows the worker, and a
//! trampoline the driver might still be running never reads freed memory.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::ffi::{c_char, c_void};
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};

use vgpu_abi::types::{
    CUasyncCallbackHandle, CUasyncNotificationInfo, CUdevice, CUlogLevel, CUlogsCallbackHandle,
};
use vgpu_proto::{async_notification, logs_callback, take_events, Request};
use zerocopy::little_endian::U32;

use super::callback::Callbacks;
use super::calls::{message, ok, Reply};
use super::exec::Lane;
use super::status;
use super::Session;
use crate::driver::{entry, Status};

/// Events that may wait for the sender at once.
pub const MAX_QUEUED: usize = 1024;
/// Bytes of events that may wait for the sender at once.
pub const MAX_QUEUED_BYTES: usize = 1 << 20;
/// The longest log message carried; a longer one is cut.
pub const MAX_MESSAGE: usize = 64 << 10;

/// An event's kind, in the header's second word: a log message (payload:
/// level u32, then the message's bytes).
const EVENT_LOG: u32 = 1;
/// An event's kind: an async notification (payload: the driver's
/// `CUasyncNotificationInfo`).
const EVENT_NOTIFY: u32 = 2;

/// What the driver's trampoline gets as user data: the client's callback
/// id (0 while the ticket is unused) and the session's channel.
#[derive(Debug)]
struct Ticket {
    callbacks: Weak<Callbacks>,
    id: AtomicU64,
}

/// One live registration with the driver.
#[derive(Debug)]
struct Registration {
    /// The driver's handle, as an address.
    handle: usize,
    /// The ticket the driver holds, in `Events::tickets`.
    ticket: usize,
}

/// Events waiting for the sender thread.
#[derive(Debug, Default)]
struct Queue {
    events: VecDeque<Vec<u8>>,
    bytes: usize,
    /// Events dropped since the last report.
    dropped: u64,
    /// The sender thread was started.
    sender: bool,
}

/// The session's notification registrations and event queue.
#[derive(Debug, Default)]
pub struct Events {
    queue: Mutex<Queue>,
    ready: Condvar,
    /// Live registrations by the client's callback id.
    live: Mutex<HashMap<u64, Registration>>,
    /// Every ticket made, boxed so each keeps the address the driver
    /// holds; unused ones have id 0.
    #[allow(clippy::vec_box)]
    tickets: Mutex<Vec<Box<Ticket>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Events {
    /// Wakes the sender thread (the channel ended). The queue's lock is
    /// taken first, so a sender between its check and its wait cannot miss
    /// the wake-up.
    pub fn wake(&self) {
        drop(lock(&self.queue));
        self.ready.notify_all();
    }

    /// Queues one event, or drops and counts it when the queue is full.
    /// Never blocks beyond the queue's own short lock.
    fn push(&self, id: u64, kind: u32, payload: &[u8]) {
        let mut q = lock(&self.queue);
        if q.events.len() >= MAX_QUEUED || q.bytes + payload.len() > MAX_QUEUED_BYTES {
            q.dropped += 1;
            return;
        }
        let mut ev = Vec::with_capacity(16 + payload.len());
        if !encode(&mut ev, id, kind, payload) {
            return;
        }
        q.bytes += payload.len();
        q.events.push_back(ev);
        drop(q);
        self.ready.notify_one();
    }

    /// A ticket for the client's callback `id`: an unused one, or a new one.
    fn ticket(&self, callbacks: &Arc<Callbacks>, id: u64) -> usize {
        let mut tickets = lock(&self.tickets);
        let free = tickets.iter().find(|t| {
            t.id.compare_exchange(0, id, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        });
        if let Some(t) = free {
            return ptr::from_ref::<Ticket>(t) as usize;
        }
        let t = Box::new(Ticket {
            callbacks: Arc::downgrade(callbacks),
            id: AtomicU64::new(id),
        });
        let addr = ptr::from_ref::<Ticket>(&t) as usize;
        tickets.push(t);
        addr
    }

    /// Marks the ticket at `addr` unused: its trampoline sends nothing more.
    fn release(&self, addr: usize) {
        let tickets = lock(&self.tickets);
        if let Some(t) = tickets
            .iter()
            .find(|t| ptr::from_ref::<Ticket>(t) as usize == addr)
        {
            t.id.store(0, Ordering::SeqCst);
        }
    }
}

/// Appends one event to `out`: the 16-byte header (id, kind, payload
/// length), then the payload. `false` (nothing appended) for a payload
/// whose length does not fit the header.
fn encode(out: &mut Vec<u8>, id: u64, kind: u32, payload: &[u8]) -> bool {
    let Ok(len) = u32::try_from(payload.len()) else {
        return false;
    };
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(payload);
    true
}

/// Events a lane's thread holds for the client: raised inside its waited
/// requests, until `TakeEvents`. Bounded as the queue is.
#[derive(Debug)]
struct Held {
    /// Encoded events, oldest first.
    bytes: Vec<u8>,
    count: usize,
    payload: usize,
    /// Events past the bound since the last `TakeEvents`.
    dropped: u32,
}

thread_local! {
    /// The lane runs a request its client waits for.
    static CATCHING: Cell<bool> = const { Cell::new(false) };
    /// This thread holds events (or dropped some) not yet taken.
    static HOLDING: Cell<bool> = const { Cell::new(false) };
    static HELD: RefCell<Held> = const {
        RefCell::new(Held {
            bytes: Vec::new(),
            count: 0,
            payload: 0,
            dropped: 0,
        })
    };
}

/// Runs `f` (a lane running a request its client waits for) so that the
/// events the driver raises on this thread meanwhile are held for the
/// client ([`take_events`]) instead of queued. Returns `f`'s result and
/// whether this thread now holds events (or dropped some) to take. Costs
/// three thread-local flag accesses when nothing is raised.
pub fn catching<R>(f: impl FnOnce() -> R) -> (R, bool) {
    CATCHING.set(true);
    let r = f();
    CATCHING.set(false);
    (r, HOLDING.get())
}

/// Holds an event on this thread if it is catching; `false` if it is not
/// (the event is for the queue).
fn hold(id: u64, kind: u32, payload: &[u8]) -> bool {
    if !CATCHING.get() {
        return false;
    }
    HELD.try_with(|h| {
        let Ok(mut h) = h.try_borrow_mut() else {
            return false;
        };
        if h.count >= MAX_QUEUED || h.payload + payload.len() > MAX_QUEUED_BYTES {
            h.dropped = h.dropped.saturating_add(1);
        } else if encode(&mut h.bytes, id, kind, payload) {
            h.count += 1;
            h.payload += payload.len();
        }
        HOLDING.set(true);
        true
    })
    .unwrap_or(false)
}

/// The events this thread holds, encoded, and the count of those dropped;
/// it holds none afterwards.
fn take_held() -> (Vec<u8>, u32) {
    HOLDING.set(false);
    HELD.try_with(|h| {
        let mut h = h.try_borrow_mut().ok()?;
        let bytes = std::mem::take(&mut h.bytes);
        let dropped = std::mem::take(&mut h.dropped);
        h.count = 0;
        h.payload = 0;
        Some((bytes, dropped))
    })
    .ok()
    .flatten()
    .unwrap_or_default()
}

/// `TakeEvents`: the events this lane's thread holds, and how many were
/// dropped; it holds none afterwards.
pub fn take_events(_: &mut Lane, _: &Session, req: &Request) -> Result<Reply, Status> {
    let _: &take_events::Request = message(req)?;
    let (bytes, dropped) = take_held();
    if dropped > 0 {
        tracing::warn!(
            dropped,
            "events of waited calls past the lane's bound: dropped"
        );
    }
    let reply = take_events::Reply {
        dropped: U32::new(dropped),
    };
    Ok(Reply::new(&reply, bytes))
}

/// Starts the sender thread once.
fn start_sender(callbacks: &Arc<Callbacks>) -> Result<(), Status> {
    let mut q = lock(&callbacks.notify.queue);
    if q.sender {
        return Ok(());
    }
    let c = Arc::clone(callbacks);
    std::thread::Builder::new()
        .name("vgpu-events".into())
        .spawn(move || send(&c))
        .map_err(|_| status::OUT_OF_MEMORY)?;
    q.sender = true;
    Ok(())
}

/// Writes queued events on the callback channel until it ends.
fn send(callbacks: &Callbacks) {
    let events = &callbacks.notify;
    loop {
        let (ev, dropped) = {
            let mut q = lock(&events.queue);
            while q.events.is_empty() && !callbacks.dead() {
                q = events.ready.wait(q).unwrap_or_else(|e| e.into_inner());
            }
            if callbacks.dead() {
                return;
            }
            let Some(ev) = q.events.pop_front() else {
                continue;
            };
            q.bytes -= ev.len() - 16;
            let dropped = if q.events.is_empty() {
                std::mem::take(&mut q.dropped)
            } else {
                0
            };
            (ev, dropped)
        };
        if dropped > 0 {
            tracing::warn!(dropped, "event queue full: events dropped");
        }
        if let Err(e) = callbacks.write(&ev) {
            tracing::info!("callback channel closed ({e}); events no longer sent");
            callbacks.fail();
            return;
        }
    }
}

/// Queues an event for the ticket at `data`, if it is in use.
///
/// # Safety
/// `data` is a ticket from [`Events::ticket`] (kept until the process ends).
unsafe fn raise(data: *mut c_void, kind: u32, payload: &[u8]) {
    // SAFETY: the caller's contract: tickets are never freed.
    let t = unsafe { &*data.cast::<Ticket>() };
    let id = t.id.load(Ordering::SeqCst);
    if id == 0 || hold(id, kind, payload) {
        return;
    }
    if let Some(c) = t.callbacks.upgrade() {
        c.notify.push(id, kind, payload);
    }
}

/// The driver's `CUlogsCallback`.
unsafe extern "C" fn log_trampoline(
    data: *mut c_void,
    level: CUlogLevel,
    message: *mut c_char,
    length: usize,
) {
    let text: &[u8] = if message.is_null() {
        &[]
    } else {
        // SAFETY: the driver passes `length` bytes of message.
        unsafe { std::slice::from_raw_parts(message.cast::<u8>(), length.min(MAX_MESSAGE)) }
    };
    let mut payload = Vec::with_capacity(4 + text.len());
    payload.extend_from_slice(&level.0.to_le_bytes());
    payload.extend_from_slice(text);
    // SAFETY: the driver passes back the ticket it was given.
    unsafe { raise(data, EVENT_LOG, &payload) }
}

/// The driver's `CUasyncCallback`.
unsafe extern "C" fn notify_trampoline(
    info: *mut CUasyncNotificationInfo,
    data: *mut c_void,
    _: CUasyncCallbackHandle,
) {
    if info.is_null() {
        return;
    }
    let mut payload = [0u8; size_of::<CUasyncNotificationInfo>()];
    // SAFETY: the driver passes a valid notification; its bytes are copied
    // by value (padding included, as plain bytes).
    unsafe {
        ptr::copy_nonoverlapping(
            info.cast::<u8>(),
            payload.as_mut_ptr(),
            size_of::<CUasyncNotificationInfo>(),
        );
    }
    // SAFETY: the driver passes back the ticket it was given.
    unsafe { raise(data, EVENT_NOTIFY, &payload) }
}

/// `LogsCallback`: registers or unregisters a log trampoline for the
/// client's callback `id`.
pub fn logs_callback(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &logs_callback::Request = message(req)?;
    let id = r.id.get();
    if r.register != 0 {
        if r.null != 0 {
            let mut h: CUlogsCallbackHandle = ptr::null_mut();
            // SAFETY: a NULL function, as the application passed; the
            // out-pointer a local.
            ok(unsafe { entry(s.driver.cuLogsRegisterCallback)?(None, ptr::null_mut(), &mut h) })?;
            // The driver took a NULL function: nothing could run, so it
            // does not stay registered.
            // SAFETY: the handle the driver just gave.
            let _ = unsafe { entry(s.driver.cuLogsUnregisterCallback)?(h) };
            return Ok(Reply::default());
        }
        let register = |data: *mut c_void| {
            let mut h: CUlogsCallbackHandle = ptr::null_mut();
            // SAFETY: the trampoline matches `CUlogsCallback`; `data` is a
            // ticket kept until the process ends; the out-pointer a local.
            ok(unsafe {
                entry(s.driver.cuLogsRegisterCallback)?(Some(log_trampoline), data, &mut h)
            })
            .map(|()| h as usize)
        };
        return add(s, id, register);
    }
    if r.null != 0 {
        // SAFETY: a NULL handle, as the application passed.
        ok(unsafe { entry(s.driver.cuLogsUnregisterCallback)?(ptr::null_mut()) })?;
        return Ok(Reply::default());
    }
    remove(s, id, |reg| {
        // SAFETY: the driver's handle of a live registration of this session.
        ok(
            unsafe {
                entry(s.driver.cuLogsUnregisterCallback)?(reg.handle as CUlogsCallbackHandle)
            },
        )
    })
}

/// `AsyncNotification`: registers or unregisters an async-notification
/// trampoline for the client's callback `id` on `device`.
pub fn async_notification(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &async_notification::Request = message(req)?;
    let id = r.id.get();
    let dev: CUdevice = r.device.get();
    if r.register == 0 {
        return remove(s, id, |reg| {
            // SAFETY: the driver's handle of a live registration of this
            // session; the device is the application's (the driver checks
            // it against the registration's).
            ok(unsafe {
                entry(s.driver.cuDeviceUnregisterAsyncNotification)?(
                    dev,
                    reg.handle as CUasyncCallbackHandle,
                )
            })
        });
    }
    let f = entry(s.driver.cuDeviceRegisterAsyncNotification)?;
    let register = |data: *mut c_void| {
        let mut h: CUasyncCallbackHandle = ptr::null_mut();
        let out = if r.no_out != 0 {
            ptr::null_mut()
        } else {
            &raw mut h
        };
        let trampoline = (r.null == 0).then_some(notify_trampoline as _);
        // SAFETY: the trampoline matches `CUasyncCallback` (or is NULL, as
        // the application passed); `data` is a ticket kept until the process
        // ends; the out-pointer is a local or NULL, as the application's.
        ok(unsafe { f(dev, trampoline, data, out) }).map(|()| h as usize)
    };
    if r.null != 0 {
        let h = register(ptr::null_mut())?;
        if h != 0 {
            // The driver took a NULL function: it does not stay registered.
            // SAFETY: the handle the driver just gave.
            let _ = unsafe {
                entry(s.driver.cuDeviceUnregisterAsyncNotification)?(
                    dev,
                    h as CUasyncCallbackHandle,
                )
            };
        }
        return Ok(Reply::default());
    }
    add(s, id, register)
}

/// Registers the client's callback `id` with the driver through
/// `register`, which gets the ticket and gives the driver's handle.
fn add(
    s: &Session,
    id: u64,
    register: impl FnOnce(*mut c_void) -> Result<usize, Status>,
) -> Result<Reply, Status> {
    let events = &s.callbacks.notify;
    if id == 0 || lock(&events.live).contains_key(&id) {
        return Err(status::INVALID_VALUE);
    }
    start_sender(&s.callbacks)?;
    let ticket = events.ticket(&s.callbacks, id);
    match register(ticket as *mut c_void) {
        Ok(handle) => {
            let reg = Registration { handle, ticket };
            lock(&events.live).insert(id, reg);
            Ok(Reply::default())
        }
        Err(e) => {
            events.release(ticket);
            Err(e)
        }
    }
}

/// Unregisters the client's callback `id` through `unregister`; the
/// registration stays when the driver refuses.
fn remove(
    s: &Session,
    id: u64,
    unregister: impl FnOnce(&Registration) -> Result<(), Status>,
) -> Result<Reply, Status> {
    let events = &s.callbacks.notify;
    let mut live = lock(&events.live);
    let reg = live.get(&id).ok_or(status::INVALID_VALUE)?;
    unregister(reg)?;
    if let Some(reg) = live.remove(&id) {
        events.release(reg.ticket);
    }
    Ok(Reply::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_inside_a_waited_request_are_held_for_the_lane_until_taken() {
        let c = Arc::new(Callbacks::default());
        let t = c.notify.ticket(&c, 9) as *mut c_void;
        let ((), held) = catching(|| {
            // SAFETY: `t` is a ticket of `c`, kept as long as `c`.
            unsafe { raise(t, EVENT_LOG, b"\x02\0\0\0bad image") };
        });
        assert!(held, "the reply says the lane holds events");
        assert!(lock(&c.notify.queue).events.is_empty(), "nothing queued");
        // Outside a waited request (a posted one), events are queued.
        // SAFETY: as above.
        unsafe { raise(t, EVENT_LOG, b"\x02\0\0\0later") };
        assert_eq!(lock(&c.notify.queue).events.len(), 1);
        let ((), held) = catching(|| ());
        assert!(held, "still held: not taken yet");
        let (bytes, dropped) = take_held();
        let mut want = Vec::new();
        assert!(encode(&mut want, 9, EVENT_LOG, b"\x02\0\0\0bad image"));
        assert_eq!((bytes, dropped), (want, 0));
        let ((), held) = catching(|| ());
        assert!(!held, "taken: nothing held");
    }

    #[test]
    fn a_lane_holds_a_bounded_number_of_events_and_counts_the_rest() {
        let c = Arc::new(Callbacks::default());
        let t = c.notify.ticket(&c, 4) as *mut c_void;
        let ((), held) = catching(|| {
            for _ in 0..MAX_QUEUED + 3 {
                // SAFETY: `t` is a ticket of `c`, kept as long as `c`.
                unsafe { raise(t, EVENT_LOG, b"\x02\0\0\0x") };
            }
        });
        assert!(held);
        assert!(lock(&c.notify.queue).events.is_empty());
        let (bytes, dropped) = take_held();
        assert_eq!((bytes.len(), dropped), (MAX_QUEUED * 21, 3));
    }

    #[test]
    fn events_carry_a_header_and_a_full_queue_drops_and_counts() {
        let e = Events::default();
        e.push(7, EVENT_LOG, b"\0\0\0\0hi");
        {
            let q = lock(&e.queue);
            let ev = q.events.front().expect("queued");
            assert_eq!(&ev[..8], &7u64.to_le_bytes());
            assert_eq!(&ev[8..12], &EVENT_LOG.to_le_bytes());
            assert_eq!(&ev[12..16], &6u32.to_le_bytes());
            assert_eq!(&ev[16..], b"\0\0\0\0hi");
            assert_eq!(q.bytes, 6);
        }
        for _ in 0..MAX_QUEUED + 5 {
            e.push(7, EVENT_NOTIFY, &[0u8; 16]);
        }
        let q = lock(&e.queue);
        assert_eq!(q.events.len(), MAX_QUEUED);
        assert_eq!(q.dropped, 6);
    }

    #[test]
    fn a_released_ticket_is_reused_and_sends_nothing_meanwhile() {
        let c = Arc::new(Callbacks::default());
        let e = &c.notify;
        let first = e.ticket(&c, 3);
        let second = e.ticket(&c, 4);
        assert_ne!(first, second);
        e.release(first);
        // SAFETY: `first` is a ticket of `e`, kept as long as `c`.
        unsafe { raise(first as *mut c_void, EVENT_LOG, b"\0\0\0\0x") };
        assert!(lock(&e.queue).events.is_empty());
        assert_eq!(e.ticket(&c, 5), first);
        // SAFETY: as above.
        unsafe { raise(first as *mut c_void, EVENT_LOG, b"\0\0\0\0x") };
        let q = lock(&e.queue);
        assert_eq!(&q.events.front().expect("queued")[..8], &5u64.to_le_bytes());
    }
}
