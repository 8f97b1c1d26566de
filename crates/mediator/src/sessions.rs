//! The live-session table: one shared-memory slot per session, written by
//! its worker, read by the supervisor (`vgpu status`, metrics) and by any
//! worker ([`list`]).
//!
//! # Layout
//!
//! The supervisor creates one memfd of [`MAX_SESSIONS`] [`Slot`]s, mapped
//! shared, and every worker inherits it (`worker --session-table FD
//! --session-slot N`). A slot holds only atomics, so the memfd's zero
//! pages are a valid free slot and no access needs a lock.
//!
//! # Life of a slot
//!
//! 1. The supervisor picks a free slot, marks it [`STARTING`] and records the
//!    worker's pid ([`crate::census`]).
//! 2. The worker fills in its client's pid, uid and transport after the
//!    handshake and marks the slot [`LIVE`]; from then on it keeps the
//!    counters current: calls and errors per operation, bytes copied, lane
//!    latency, and the device memory the session holds, in all and on each
//!    device ([`DeviceShare`]).
//! 3. When the worker exits, however it ends, the supervisor folds the
//!    slot's counters into its totals and zeroes the slot, so a crashed
//!    worker never leaves a ghost session.
//!
//! # Trust
//!
//! Every worker can write the whole table, and a worker runs what its client
//! asks, so whatever is read from a slot is a report, never a fact the
//! supervisor relies on: codes are checked against known values, sums
//! saturate, and the supervisor keeps its own record of which slot belongs
//! to which worker.

use std::os::fd::OwnedFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use vgpu_proto::sessions::MAX_SESSIONS;
use vgpu_proto::sessions::{transport, SessionRecord};
use vgpu_proto::Op;

/// Operations counted per slot: wire ids `0..OP_SLOTS` (a test checks that
/// every id fits).
pub const OP_SLOTS: usize = 1024;
/// Upper bounds of the lane latency buckets, in nanoseconds; one more
/// bucket counts everything slower.
pub const LATENCY_BOUNDS_NS: [u64; 12] = [
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    500_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];
/// Latency buckets of a slot: the bounds and the overflow bucket.
pub const LATENCY_BUCKETS: usize = LATENCY_BOUNDS_NS.len() + 1;

/// Devices a slot accounts for one by one ([`Slot::devices`]): the first
/// `SLOT_DEVICES` of a session's devices, in its own order. Memory on a
/// device past them counts in the session's total only.
pub const SLOT_DEVICES: usize = 16;

/// Slot states.
pub const FREE: u32 = 0;
/// Reserved by the supervisor; the worker has not finished the handshake.
pub const STARTING: u32 = 1;
/// The session is live.
pub const LIVE: u32 = 2;

/// Why a worker ended its session before it started (its slot's `refusal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Refusal {
    /// No valid hello came (another version, another schema, a bad magic,
    /// or the connection closed).
    Handshake = 1,
    /// The worker could not load its driver.
    Driver = 2,
    /// Every slot was taken ([`MAX_SESSIONS`] live sessions).
    Capacity = 3,
    /// The supervisor could not start a worker.
    WorkerStart = 4,
    /// A Unix peer whose uid and groups the config does not allow
    /// (`crate::tenants`).
    NotAllowed = 5,
    /// Tenants are configured and none names the client.
    NoTenant = 6,
    /// The client's tenant has its `max_sessions` live already.
    TenantSessions = 7,
    /// Too many connections were in their handshake at once
    /// (`--max-pending-handshakes`): closed at once.
    Busy = 8,
    /// `--max-workers` workers were live already.
    Workers = 9,
}

impl Refusal {
    /// Every reason, in the order of [`Refusal::index`].
    pub const ALL: [Refusal; 9] = [
        Refusal::Handshake,
        Refusal::Driver,
        Refusal::Capacity,
        Refusal::WorkerStart,
        Refusal::NotAllowed,
        Refusal::NoTenant,
        Refusal::TenantSessions,
        Refusal::Busy,
        Refusal::Workers,
    ];

    /// The reason's label in metrics.
    pub fn label(self) -> &'static str {
        match self {
            Refusal::Handshake => "handshake",
            Refusal::Driver => "driver",
            Refusal::Capacity => "capacity",
            Refusal::WorkerStart => "worker_start",
            Refusal::NotAllowed => "not_allowed",
            Refusal::NoTenant => "no_tenant",
            Refusal::TenantSessions => "tenant_sessions",
            Refusal::Busy => "busy",
            Refusal::Workers => "workers",
        }
    }

    /// The reason's position in [`Refusal::ALL`].
    pub fn index(self) -> usize {
        self as usize - 1
    }

    /// The reason a slot reports, if its code is a known one.
    pub fn from_code(code: u32) -> Option<Refusal> {
        Refusal::ALL.into_iter().find(|r| *r as u32 == code)
    }
}

/// Copy directions counted per slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    HtoD = 0,
    DtoH = 1,
    DtoD = 2,
}

impl Direction {
    pub const ALL: [Direction; 3] = [Direction::HtoD, Direction::DtoH, Direction::DtoD];

    /// The direction's label in metrics.
    pub fn label(self) -> &'static str {
        match self {
            Direction::HtoD => "htod",
            Direction::DtoH => "dtoh",
            Direction::DtoD => "dtod",
        }
    }
}

/// A session's use of one device. Each session numbers its devices by its
/// own `CUDA_VISIBLE_DEVICES`, so the device is named by its UUID, the same
/// in every session.
#[repr(C)]
pub struct DeviceShare {
    /// The device's UUID, its bytes in two little-endian words; all zero:
    /// no device.
    pub uuid: [AtomicU64; 2],
    /// Bytes of device memory the session holds on it.
    pub memory: AtomicU64,
    /// Contexts the session has on it: its primary context while active,
    /// and the contexts it created.
    pub contexts: AtomicU64,
}

impl DeviceShare {
    fn uuid(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.uuid[0].load(Relaxed).to_le_bytes());
        b[8..].copy_from_slice(&self.uuid[1].load(Relaxed).to_le_bytes());
        b
    }

    fn clear(&self) {
        for w in [&self.uuid[0], &self.uuid[1], &self.memory, &self.contexts] {
            w.store(0, Relaxed);
        }
    }
}

/// What a session uses of one device, as [`list`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceUse {
    pub uuid: [u8; 16],
    /// Bytes of device memory held on it.
    pub memory: u64,
    /// Contexts on it.
    pub contexts: u64,
}

/// One session's slot. Only atomics: all-zero bytes are a free slot.
#[repr(C)]
pub struct Slot {
    pub state: AtomicU32,
    pub worker_pid: AtomicU32,
    pub client_pid: AtomicU32,
    pub uid: AtomicU32,
    /// A [`transport`] code.
    pub transport: AtomicU32,
    /// A [`Refusal`] code, or 0.
    pub refusal: AtomicU32,
    /// The first driver status that lost the session's GPU context (a
    /// sticky fault, [`crate::mps::is_fatal`]), or 0: the supervisor
    /// restarts the MPS group of a session that has one ([`crate::mps`]).
    pub fault: AtomicU32,
    /// Milliseconds since the Unix epoch when the session went live.
    pub started_ms: AtomicU64,
    /// Bytes of device memory the session holds now (see `docs/metrics.md`):
    /// the sum of [`Slot::devices`]' memory and of what it holds on devices
    /// past [`SLOT_DEVICES`].
    pub device_memory: AtomicU64,
    /// The session's use of each of its devices, by its own ordinal.
    pub devices: [DeviceShare; SLOT_DEVICES],
    /// For a session of a process in a VM guest, the guest it comes from (a
    /// number that names the guest's shared memory while it lives); 0
    /// otherwise.
    pub guest: AtomicU64,
    /// Bytes copied, by [`Direction`].
    pub copied: [AtomicU64; 3],
    /// Timed lane requests by latency bucket, and their summed nanoseconds.
    pub latency: [AtomicU64; LATENCY_BUCKETS],
    pub latency_sum_ns: AtomicU64,
    /// Requests and failed requests, by wire id.
    pub calls: [AtomicU64; OP_SLOTS],
    pub errors: [AtomicU64; OP_SLOTS],
}

impl Slot {
    /// Counts one request of `op`: a relaxed add, cheap enough for every call.
    #[inline]
    pub fn count_call(&self, op: Op) {
        if let Some(c) = self.calls.get(op as usize) {
            c.fetch_add(1, Relaxed);
        }
    }

    /// Counts one failed request of `op`.
    pub fn count_error(&self, op: Op) {
        if let Some(c) = self.errors.get(op as usize) {
            c.fetch_add(1, Relaxed);
        }
    }

    /// Counts `bytes` copied in `direction`.
    pub fn count_copy(&self, direction: Direction, bytes: u64) {
        self.copied[direction as usize].fetch_add(bytes, Relaxed);
    }

    /// Records one timed lane request.
    pub fn record_latency(&self, took: Duration) {
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let bucket = LATENCY_BOUNDS_NS
            .iter()
            .position(|&b| ns <= b)
            .unwrap_or(LATENCY_BOUNDS_NS.len());
        self.latency[bucket].fetch_add(1, Relaxed);
        self.latency_sum_ns.fetch_add(ns, Relaxed);
    }

    /// Marks the session live with its client's identity (called by the
    /// worker, which records its own pid too).
    pub fn go_live(&self, client_pid: u32, uid: u32, transport: u32) {
        self.worker_pid.store(std::process::id(), Relaxed);
        self.client_pid.store(client_pid, Relaxed);
        self.uid.store(uid, Relaxed);
        self.transport.store(transport, Relaxed);
        self.started_ms.store(millis(SystemTime::now()), Relaxed);
        self.state.store(LIVE, std::sync::atomic::Ordering::Release);
    }

    /// Names the session's devices by UUID, in its own order (called by the
    /// worker before it goes live).
    pub fn set_devices(&self, uuids: &[[u8; 16]]) {
        for (share, uuid) in self.devices.iter().zip(uuids) {
            let (lo, hi) = uuid.split_at(8);
            for (w, half) in share.uuid.iter().zip([lo, hi]) {
                let word = u64::from_le_bytes(half.try_into().expect("8 bytes"));
                w.store(word, Relaxed);
            }
        }
    }

    /// Publishes the device memory the session holds: `by_device[i]` on its
    /// device `i`, and `elsewhere` on no device the slot names (past
    /// [`SLOT_DEVICES`], or unknown). The total is their sum.
    pub fn publish_memory(&self, by_device: &[u64], elsewhere: u64) {
        let mut total = elsewhere;
        for (i, &bytes) in by_device.iter().enumerate() {
            total = total.saturating_add(bytes);
            if let Some(share) = self.devices.get(i) {
                share.memory.store(bytes, Relaxed);
            }
        }
        for share in self.devices.iter().skip(by_device.len()) {
            share.memory.store(0, Relaxed);
        }
        self.device_memory.store(total, Relaxed);
    }

    /// Publishes the contexts the session has on each of its devices.
    pub fn publish_contexts(&self, by_device: &[u64]) {
        for (i, share) in self.devices.iter().enumerate() {
            share
                .contexts
                .store(by_device.get(i).copied().unwrap_or(0), Relaxed);
        }
    }

    /// The devices the session named ([`Slot::set_devices`]) and its use of
    /// each.
    pub fn device_uses(&self) -> Vec<DeviceUse> {
        self.devices
            .iter()
            .map(|d| DeviceUse {
                uuid: d.uuid(),
                memory: d.memory.load(Relaxed),
                contexts: d.contexts.load(Relaxed),
            })
            .filter(|d| d.uuid != [0; 16])
            .collect()
    }

    /// Zeroes every field: the slot is free again.
    pub fn clear(&self) {
        let words = [
            &self.worker_pid,
            &self.client_pid,
            &self.uid,
            &self.transport,
            &self.refusal,
            &self.fault,
        ];
        for w in words {
            w.store(0, Relaxed);
        }
        for d in &self.devices {
            d.clear();
        }
        let counters = [
            &self.started_ms,
            &self.device_memory,
            &self.latency_sum_ns,
            &self.guest,
        ];
        let arrays = [
            &self.copied[..],
            &self.latency[..],
            &self.calls[..],
            &self.errors[..],
        ];
        for c in counters.into_iter().chain(arrays.into_iter().flatten()) {
            c.store(0, Relaxed);
        }
        self.state.store(FREE, std::sync::atomic::Ordering::Release);
    }

    /// What `list` reports of a live slot, with its values checked.
    pub fn record(&self) -> Option<SessionRecord> {
        if self.state.load(std::sync::atomic::Ordering::Acquire) != LIVE {
            return None;
        }
        let code = self.transport.load(Relaxed);
        Some(SessionRecord {
            worker_pid: self.worker_pid.load(Relaxed).into(),
            client_pid: self.client_pid.load(Relaxed).into(),
            uid: self.uid.load(Relaxed).into(),
            transport: if transport::name(code) == "unknown" {
                0
            } else {
                code
            }
            .into(),
            device_memory: self.device_memory.load(Relaxed).into(),
            started_ms: self.started_ms.load(Relaxed).into(),
            // The supervisor fills it in from its own records.
            tenant: [0; vgpu_proto::sessions::TENANT_NAME_BYTES],
        })
    }
}

fn millis(t: SystemTime) -> u64 {
    let ms = t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis();
    u64::try_from(ms).unwrap_or(u64::MAX)
}

/// The mapped table.
pub struct Table {
    base: NonNull<Slot>,
    fd: OwnedFd,
}

// SAFETY: the mapping is shared memory owned by this value and only ever
// accessed through atomics, so any thread may hold or use it.
unsafe impl Send for Table {}
// SAFETY: as above.
unsafe impl Sync for Table {}

const TABLE_BYTES: usize = MAX_SESSIONS * std::mem::size_of::<Slot>();

impl Table {
    /// A new table of free slots: a memfd that the supervisor hands each
    /// worker it starts (`crate::spawn::spawn`), sealed at its size so that
    /// no worker can shrink it under the supervisor (which would then die
    /// of SIGBUS on its next read).
    pub fn create() -> std::io::Result<Table> {
        Table::map(crate::shared::sealed_memfd("vgpu-sessions", TABLE_BYTES)?)
    }

    /// Maps a table a supervisor created; anything but its exact size, or
    /// a memfd whose size is not sealed, is refused.
    pub fn map(fd: OwnedFd) -> std::io::Result<Table> {
        let base = crate::shared::map_sealed(&fd, TABLE_BYTES, "session table")?.cast::<Slot>();
        Ok(Table { base, fd })
    }

    /// The descriptor workers inherit.
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// Slot `i`, if it exists.
    pub fn slot(&self, i: usize) -> Option<&Slot> {
        if i >= MAX_SESSIONS {
            return None;
        }
        // SAFETY: `i` is in bounds and the mapping, page-aligned and
        // `TABLE_BYTES` long, lives as long as `&self`; a slot is atomics
        // only (valid for any bytes) and is only accessed through them.
        Some(unsafe { &*self.base.as_ptr().add(i) })
    }

    /// Every slot with its index.
    pub fn slots(&self) -> impl Iterator<Item = (usize, &Slot)> {
        (0..MAX_SESSIONS).filter_map(move |i| self.slot(i).map(|s| (i, s)))
    }

    /// The live sessions, as the wire carries them.
    pub fn records(&self) -> Vec<SessionRecord> {
        self.slots().filter_map(|(_, s)| s.record()).collect()
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        // SAFETY: exactly the range mapped in `map`; no reference into it
        // outlives `self`.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), TABLE_BYTES) };
    }
}

/// One live session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    pub worker_pid: u32,
    pub client_pid: u32,
    pub uid: u32,
    /// `unix+rings`, `unix`, `tcp`, `ivshmem`, or `unknown`.
    pub transport: String,
    /// Bytes of device memory this session holds now.
    pub device_memory: u64,
    pub started: SystemTime,
    /// Its use of each of its devices (empty where only the wire record
    /// was read).
    pub devices: Vec<DeviceUse>,
    /// The VM guest it comes from ([`Slot::guest`]), or 0.
    pub guest: u64,
}

impl From<&SessionRecord> for SessionInfo {
    fn from(r: &SessionRecord) -> SessionInfo {
        SessionInfo {
            worker_pid: r.worker_pid.get(),
            client_pid: r.client_pid.get(),
            uid: r.uid.get(),
            transport: transport::name(r.transport.get()).to_owned(),
            device_memory: r.device_memory.get(),
            started: UNIX_EPOCH + Duration::from_millis(r.started_ms.get()),
            devices: Vec::new(),
            guest: 0,
        }
    }
}

impl Slot {
    /// What [`list`] reports of a live slot: its record, its devices and
    /// its guest.
    pub fn info(&self) -> Option<SessionInfo> {
        let mut info = SessionInfo::from(&self.record()?);
        info.devices = self.device_uses();
        info.guest = self.guest.load(Relaxed);
        Some(info)
    }
}

/// This process's table: the supervisor's own, or the one a worker inherited.
static TABLE: OnceLock<Table> = OnceLock::new();
/// The worker's own slot.
static OWN: OnceLock<&'static Slot> = OnceLock::new();

/// Installs the supervisor's new table; `None` if one is installed already.
pub fn install(table: Table) -> Option<&'static Table> {
    TABLE.set(table).ok()?;
    TABLE.get()
}

/// The table of this process, once installed or attached.
pub fn table() -> Option<&'static Table> {
    TABLE.get()
}

/// In a worker: maps the inherited table and takes slot `slot` as its own.
pub fn attach(fd: OwnedFd, slot: usize) -> std::io::Result<()> {
    if slot >= MAX_SESSIONS {
        return Err(std::io::Error::other(format!(
            "session slot {slot} is not below {MAX_SESSIONS}"
        )));
    }
    // Whatever this worker starts (the driver's helpers) must not inherit it.
    rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC)?;
    let table = install(Table::map(fd)?)
        .ok_or_else(|| std::io::Error::other("a session table is attached already"))?;
    if let Some(own) = table.slot(slot) {
        let _ = OWN.set(own);
    }
    Ok(())
}

/// The worker's own slot (`None` outside a worker started by a supervisor).
pub fn own() -> Option<&'static Slot> {
    OWN.get().copied()
}

/// In a worker: counts `bytes` copied in `direction` (a copy the driver
/// accepted; async ones are counted when issued).
pub fn count_copy(direction: Direction, bytes: u64) {
    if let Some(s) = own() {
        s.count_copy(direction, bytes);
    }
}

/// In a worker: records why the session did not start.
pub fn refuse(why: Refusal) {
    if let Some(s) = own() {
        s.refusal.store(why as u32, Relaxed);
    }
}

/// Every live session of this mediator; callable in the supervisor and in
/// any worker (empty where no table is attached).
pub fn list() -> Vec<SessionInfo> {
    table().map_or_else(Vec::new, |t| {
        t.slots().filter_map(|(_, s)| s.info()).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_wire_id_has_a_counter() {
        for op in Op::ALL {
            assert!(
                (*op as usize) < OP_SLOTS,
                "{} needs OP_SLOTS > {}",
                op.name(),
                *op as usize
            );
        }
    }

    #[test]
    fn slots_live_and_clear() {
        let table = Table::create().expect("table");
        let s = table.slot(3).expect("slot");
        assert!(table.slot(MAX_SESSIONS).is_none());
        assert!(table.records().is_empty(), "zero pages are free slots");
        s.state.store(STARTING, Relaxed);
        s.worker_pid.store(77, Relaxed);
        assert!(
            table.records().is_empty(),
            "a starting session is not listed"
        );
        s.go_live(1234, 1000, transport::UNIX_RINGS);
        assert_eq!(s.worker_pid.load(Relaxed), std::process::id());
        s.worker_pid.store(77, Relaxed);
        s.device_memory.store(4096, Relaxed);
        s.count_call(Op::MemAlloc);
        s.count_error(Op::MemAlloc);
        s.count_copy(Direction::DtoH, 10);
        s.record_latency(Duration::from_micros(3));
        s.record_latency(Duration::from_secs(5));
        // A second mapping sees the same slot, as a worker does.
        let dup = table.fd().try_clone().expect("dup");
        let other = Table::map(dup).expect("map");
        let info: Vec<SessionInfo> = other.records().iter().map(SessionInfo::from).collect();
        assert_eq!(info.len(), 1);
        assert_eq!(
            (
                info[0].worker_pid,
                info[0].client_pid,
                info[0].uid,
                info[0].device_memory
            ),
            (77, 1234, 1000, 4096)
        );
        assert_eq!(info[0].transport, "unix+rings");
        let o = other.slot(3).expect("slot");
        assert_eq!(o.calls[Op::MemAlloc as usize].load(Relaxed), 1);
        assert_eq!(o.errors[Op::MemAlloc as usize].load(Relaxed), 1);
        assert_eq!(o.latency[2].load(Relaxed), 1, "3 µs is in the 5 µs bucket");
        assert_eq!(o.latency[LATENCY_BUCKETS - 1].load(Relaxed), 1);
        // A transport code nobody knows is reported as unknown.
        o.transport.store(99, Relaxed);
        assert_eq!(SessionInfo::from(&other.records()[0]).transport, "unknown");
        s.clear();
        assert!(other.records().is_empty());
        assert_eq!(o.calls[Op::MemAlloc as usize].load(Relaxed), 0);
    }

    #[test]
    fn devices_are_named_by_uuid_and_sum_to_the_total() {
        let table = Table::create().expect("table");
        let s = table.slot(5).expect("slot");
        let (a, b) = ([1u8; 16], [2u8; 16]);
        s.set_devices(&[a, b]);
        s.publish_memory(&[100, 20], 3);
        s.publish_contexts(&[0, 1]);
        s.go_live(1, 2, transport::UNIX);
        let info = s.info().expect("live");
        assert_eq!(info.device_memory, 123, "the total is the sum");
        let uses: Vec<(u8, u64, u64)> = info
            .devices
            .iter()
            .map(|d| (d.uuid[0], d.memory, d.contexts))
            .collect();
        assert_eq!(uses, [(1, 100, 0), (2, 20, 1)]);
        // Fewer devices than before: the others hold nothing now.
        s.publish_memory(&[7], 0);
        let memory: Vec<u64> = s.device_uses().iter().map(|d| d.memory).collect();
        assert_eq!((memory, s.device_memory.load(Relaxed)), (vec![7, 0], 7));
        s.clear();
        assert!(s.device_uses().is_empty());
    }

    #[test]
    fn foreign_files_are_refused() {
        let fd = rustix::fs::memfd_create("x", rustix::fs::MemfdFlags::CLOEXEC).expect("memfd");
        rustix::fs::ftruncate(&fd, 4096).expect("truncate");
        assert!(Table::map(fd).is_err());
        // The right size, but a worker could shrink it: refused too.
        let fd = rustix::fs::memfd_create("y", rustix::fs::MemfdFlags::CLOEXEC).expect("memfd");
        rustix::fs::ftruncate(&fd, TABLE_BYTES as u64).expect("truncate");
        assert!(Table::map(fd).is_err());
        assert_eq!(Refusal::from_code(2), Some(Refusal::Driver));
        assert_eq!(Refusal::from_code(0), None);
        assert_eq!(Refusal::from_code(99), None);
    }
}
