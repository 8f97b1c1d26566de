//! Device-memory quotas: one counter per tenant, shared by every worker of
//! that tenant, in a sealed memfd the supervisor makes ([`QuotaTable`]).
//!
//! # Layout
//!
//! [`MAX_TENANTS`] counters of bytes in use, then one counter per session
//! slot ([`crate::sessions::MAX_SESSIONS`]) of the bytes that slot's worker
//! has charged to its tenant. Atomics only: zero pages are an idle table.
//! The limits are not in the table: each worker gets its tenant's limit on
//! its command line, so no worker can raise it for the others.
//!
//! # Charging
//!
//! The worker charges what its session slot's `device_memory` counts (its
//! allocations, pitched, stream-ordered and from pools, and the bytes of
//! its `cuMemCreate` handles: see `docs/metrics.md`):
//! - before a call that takes device memory runs, [`reserve`] adds the
//!   request's size to the tenant's counter with a compare-and-swap that
//!   fails past the limit (the call then returns
//!   `CUDA_ERROR_OUT_OF_MEMORY` without reaching the driver);
//! - whenever the session's held memory changes, [`publish`] moves the
//!   tenant's counter by the change (this is where frees give bytes back);
//! - after the call, [`release`] takes the reservation back off. Between
//!   the publish and the release the allocation counts twice, for a few
//!   microseconds: a concurrent allocation near the limit may fail early,
//!   never late.
//!
//! Increases go to the tenant's counter before the slot's; decreases leave
//! the slot's first. When a worker ends, however it ends, the supervisor
//! subtracts what the slot says it charged ([`QuotaTable::give_back`]), so
//! a killed worker returns its usage and, at worst (killed between the two
//! adds), leaves a few bytes counted: an error in the tenant's disfavour,
//! never a way past its limit.

use std::os::fd::OwnedFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Mutex, OnceLock};

use crate::sessions::MAX_SESSIONS;

/// Tenants a mediator serves at most (a config with more is refused).
pub const MAX_TENANTS: usize = 64;

#[repr(C)]
struct Layout {
    /// Bytes in use, by tenant index.
    used: [AtomicU64; MAX_TENANTS],
    /// Bytes charged, by session slot.
    charged: [AtomicU64; MAX_SESSIONS],
    /// Launch clocks and busy marks, by tenant index ([`super::pacing`]).
    clock: [AtomicU64; MAX_TENANTS],
    busy_until: [AtomicU64; MAX_TENANTS],
}

const TABLE_BYTES: usize = std::mem::size_of::<Layout>();

/// The mapped counters.
pub struct QuotaTable {
    base: NonNull<Layout>,
    fd: OwnedFd,
}

// SAFETY: the mapping is shared memory owned by this value and only ever
// accessed through atomics, so any thread may hold or use it.
unsafe impl Send for QuotaTable {}
// SAFETY: as above.
unsafe impl Sync for QuotaTable {}

/// Adds `n` to `a`, saturating.
fn add(a: &AtomicU64, n: u64) {
    let _ = a.fetch_update(SeqCst, SeqCst, |v| Some(v.saturating_add(n)));
}

/// Subtracts `n` from `a`, stopping at zero.
fn sub(a: &AtomicU64, n: u64) {
    let _ = a.fetch_update(SeqCst, SeqCst, |v| Some(v.saturating_sub(n)));
}

impl QuotaTable {
    /// A new table of zero counters, sealed at its size (a worker that
    /// could shrink it would make the supervisor fault on its next read).
    pub fn create() -> std::io::Result<QuotaTable> {
        QuotaTable::map(crate::shared::sealed_memfd("vgpu-quotas", TABLE_BYTES)?)
    }

    /// Maps a table a supervisor made; anything but its exact, sealed
    /// size is refused.
    pub fn map(fd: OwnedFd) -> std::io::Result<QuotaTable> {
        let base = crate::shared::map_sealed(&fd, TABLE_BYTES, "quota table")?.cast::<Layout>();
        Ok(QuotaTable { base, fd })
    }

    fn layout(&self) -> &Layout {
        // SAFETY: the mapping is `TABLE_BYTES` long, page-aligned, and lives
        // as long as `&self`; `Layout` is atomics only, valid for any bytes,
        // and is only accessed through them.
        unsafe { self.base.as_ref() }
    }

    /// The descriptor workers inherit.
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// The tenants' launch clocks ([`super::pacing`]).
    pub fn clocks(&self) -> super::pacing::Clocks<'_> {
        let l = self.layout();
        super::pacing::Clocks {
            clock: &l.clock,
            busy_until: &l.busy_until,
        }
    }

    /// Bytes tenant `tenant` uses now, across its sessions.
    pub fn used(&self, tenant: usize) -> u64 {
        self.layout().used.get(tenant).map_or(0, |u| u.load(SeqCst))
    }

    /// Bytes session slot `slot` has charged.
    pub fn charged(&self, slot: usize) -> u64 {
        self.layout()
            .charged
            .get(slot)
            .map_or(0, |c| c.load(SeqCst))
    }

    /// Adds `bytes` to tenant `tenant` unless that takes it past `limit`.
    fn try_charge(&self, tenant: usize, slot: usize, bytes: u64, limit: u64) -> bool {
        let l = self.layout();
        let (Some(used), Some(charged)) = (l.used.get(tenant), l.charged.get(slot)) else {
            return true;
        };
        let fits = used
            .fetch_update(SeqCst, SeqCst, |v| {
                v.checked_add(bytes).filter(|&after| after <= limit)
            })
            .is_ok();
        if fits {
            add(charged, bytes);
        }
        fits
    }

    /// Adds `bytes` to tenant `tenant`, past its limit if need be (memory
    /// the driver already gave).
    fn charge(&self, tenant: usize, slot: usize, bytes: u64) {
        let l = self.layout();
        if let (Some(used), Some(charged)) = (l.used.get(tenant), l.charged.get(slot)) {
            add(used, bytes);
            add(charged, bytes);
        }
    }

    /// Takes `bytes` off slot `slot` and its tenant `tenant`.
    fn uncharge(&self, tenant: usize, slot: usize, bytes: u64) {
        let l = self.layout();
        if let (Some(used), Some(charged)) = (l.used.get(tenant), l.charged.get(slot)) {
            sub(charged, bytes);
            sub(used, bytes);
        }
    }

    /// In the supervisor, once the worker of `slot` (a session of tenant
    /// `tenant`) has ended: gives back what it charged; returns the bytes.
    pub fn give_back(&self, tenant: usize, slot: usize) -> u64 {
        let l = self.layout();
        let Some(charged) = l.charged.get(slot) else {
            return 0;
        };
        let bytes = charged.swap(0, SeqCst);
        if let Some(used) = l.used.get(tenant) {
            sub(used, bytes);
        }
        bytes
    }
}

impl Drop for QuotaTable {
    fn drop(&mut self) {
        // SAFETY: exactly the range mapped in `map`; no reference into it
        // outlives `self`.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), TABLE_BYTES) };
    }
}

/// A worker's quota: its tenant's counter, its slot and its limit.
struct Own {
    table: QuotaTable,
    tenant: usize,
    slot: usize,
    limit: u64,
    /// The tenant's compute weight, when tenants' launches are paced.
    weight: Option<u32>,
    /// The held bytes last published ([`publish`]).
    published: Mutex<u64>,
}

/// The worker's quota, once attached.
static OWN: OnceLock<Own> = OnceLock::new();

/// In a worker: maps the inherited table and charges tenant `tenant` from
/// session slot `slot`, up to `limit` bytes; with `weight`, its launches
/// are paced ([`super::pacing`]).
pub fn attach(
    fd: OwnedFd,
    tenant: usize,
    slot: usize,
    limit: u64,
    weight: Option<u32>,
) -> std::io::Result<()> {
    if tenant >= MAX_TENANTS || slot >= MAX_SESSIONS {
        return Err(std::io::Error::other(format!(
            "tenant {tenant} or slot {slot} out of range"
        )));
    }
    rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC)?;
    let own = Own {
        table: QuotaTable::map(fd)?,
        tenant,
        slot,
        limit,
        weight,
        published: Mutex::new(0),
    };
    OWN.set(own)
        .map_err(|_| std::io::Error::other("a quota table is attached already"))
}

/// Whether this worker serves a tenant's session (its quota is attached).
pub fn attached() -> bool {
    OWN.get().is_some()
}

/// The worker's tenant limit and what the tenant uses now (all of its
/// sessions); `None` without a quota.
pub fn view() -> Option<(u64, u64)> {
    OWN.get().map(|o| (o.limit, o.table.used(o.tenant)))
}

/// In a worker: reserves `bytes` of the tenant's quota for a call about to
/// take device memory; `false` if that would pass the limit. Without a
/// quota, always `true`.
pub fn reserve(bytes: u64) -> bool {
    OWN.get()
        .is_none_or(|o| bytes == 0 || o.table.try_charge(o.tenant, o.slot, bytes, o.limit))
}

/// In a worker: paces one launch by the tenant's weight (a no-op without
/// weights).
pub fn pace_launch() {
    if let Some((o, weight)) = OWN.get().and_then(|o| Some((o, o.weight?))) {
        o.table.clocks().pace(o.tenant, weight);
    }
}

/// In a worker: charges `bytes` the driver already gave (past the limit
/// if need be), until [`release`]d.
pub fn keep(bytes: u64) {
    if let Some(o) = OWN.get().filter(|_| bytes > 0) {
        o.table.charge(o.tenant, o.slot, bytes);
    }
}

/// In a worker: gives back a reservation once its call has run.
pub fn release(bytes: u64) {
    if let Some(o) = OWN.get().filter(|_| bytes > 0) {
        o.table.uncharge(o.tenant, o.slot, bytes);
    }
}

/// In a worker: the session now holds `held` bytes of device memory;
/// moves the tenant's counter by the change since the last call.
pub fn publish(held: u64) {
    let Some(o) = OWN.get() else {
        return;
    };
    let mut last = o.published.lock().unwrap_or_else(|e| e.into_inner());
    if held > *last {
        o.table.charge(o.tenant, o.slot, held - *last);
    } else {
        o.table.uncharge(o.tenant, o.slot, *last - held);
    }
    *last = held;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_stop_at_the_limit_and_are_given_back() {
        let t = QuotaTable::create().expect("table");
        assert!(t.try_charge(2, 5, 600, 1000));
        assert!(t.try_charge(2, 6, 400, 1000), "two slots share the tenant");
        assert!(!t.try_charge(2, 6, 1, 1000), "at the limit");
        assert!(
            t.try_charge(3, 7, 1000, 1000),
            "another tenant is unaffected"
        );
        assert_eq!((t.used(2), t.charged(5), t.charged(6)), (1000, 600, 400));
        t.uncharge(2, 6, 100);
        assert!(t.try_charge(2, 6, 100, 1000));
        t.charge(2, 6, 50);
        assert_eq!(t.used(2), 1050, "memory already given is counted");
        assert!(!t.try_charge(2, 5, 1, 1000));
        // The worker of slot 5 is gone: its 600 bytes come back.
        assert_eq!(t.give_back(2, 5), 600);
        assert_eq!((t.used(2), t.charged(5)), (450, 0));
        assert_eq!(t.give_back(2, 5), 0, "once");
        assert!(!t.try_charge(2, 6, u64::MAX, u64::MAX), "no overflow");
        // A second mapping, as a worker has, sees the same counters.
        let other = QuotaTable::map(t.fd().try_clone().expect("dup")).expect("map");
        assert_eq!(other.used(2), 450);
        assert_eq!(other.used(3), 1000);
    }

    #[test]
    fn unsealed_or_foreign_files_are_refused() {
        let fd = rustix::fs::memfd_create("x", rustix::fs::MemfdFlags::CLOEXEC).expect("memfd");
        rustix::fs::ftruncate(&fd, TABLE_BYTES as u64).expect("truncate");
        assert!(QuotaTable::map(fd).is_err());
    }
}
