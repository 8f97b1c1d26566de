//! The supervisor's side of the session table ([`crate::sessions`]): which
//! slot each worker has, and the totals of workers that have ended.
//!
//! Counters live in the workers' slots while they run. When a worker ends,
//! [`Census::ended`] adds its slot into [`Totals`] and frees the slot, under
//! the same lock as [`Census::snapshot`], so a scrape never counts a
//! session twice or loses one.

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Mutex, MutexGuard};

use vgpu_proto::sessions::SessionRecord;

use crate::sessions::{
    Direction, Refusal, Slot, Table, LATENCY_BUCKETS, LIVE, MAX_SESSIONS, OP_SLOTS, STARTING,
};

/// Counters summed over sessions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Totals {
    /// Sessions whose handshake completed.
    pub started: u64,
    /// Sessions refused, by [`Refusal::index`].
    pub refused: [u64; Refusal::ALL.len()],
    /// Workers that ended by a signal or with a status other than 0 and 1.
    pub crashes: u64,
    /// Requests and failed requests by wire id.
    pub calls: Vec<u64>,
    pub errors: Vec<u64>,
    /// Bytes copied by [`Direction`].
    pub copied: [u64; 3],
    pub latency: [u64; LATENCY_BUCKETS],
    pub latency_sum_ns: u64,
}

impl Default for Totals {
    fn default() -> Self {
        Totals {
            started: 0,
            refused: [0; Refusal::ALL.len()],
            crashes: 0,
            calls: vec![0; OP_SLOTS],
            errors: vec![0; OP_SLOTS],
            copied: [0; 3],
            latency: [0; LATENCY_BUCKETS],
            latency_sum_ns: 0,
        }
    }
}

impl Totals {
    /// Adds a slot's counters (saturating: a slot's values are reports).
    fn add(&mut self, s: &Slot) {
        let add = |to: &mut u64, v: &std::sync::atomic::AtomicU64| {
            *to = to.saturating_add(v.load(Relaxed));
        };
        for (to, v) in self.calls.iter_mut().zip(&s.calls) {
            add(to, v);
        }
        for (to, v) in self.errors.iter_mut().zip(&s.errors) {
            add(to, v);
        }
        for d in Direction::ALL {
            add(&mut self.copied[d as usize], &s.copied[d as usize]);
        }
        for (to, v) in self.latency.iter_mut().zip(&s.latency) {
            add(to, v);
        }
        add(&mut self.latency_sum_ns, &s.latency_sum_ns);
    }
}

/// What a scrape sees: the totals including live sessions, and each live
/// session's uid and device memory.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub totals: Totals,
    /// Live sessions.
    pub live: u64,
    /// Device memory held, by uid.
    pub memory_by_uid: Vec<(u32, u64)>,
    /// Device memory held, by uid and device (its UUID), for every device
    /// a live session of the uid sees.
    pub memory_by_device: Vec<((u32, [u8; 16]), u64)>,
    /// Each tenant's use, filled in by the caller that knows the tenants
    /// (`crate::tenants::supervise::Tenancy::usage`).
    pub tenants: Vec<crate::tenants::supervise::TenantUsage>,
}

struct Inner {
    /// Slot of each running worker, by pid.
    workers: HashMap<u32, usize>,
    /// Slots the supervisor has handed out.
    taken: Vec<bool>,
    /// Counters of the workers that ended.
    totals: Totals,
}

/// The supervisor's record of its workers' slots.
pub struct Census {
    table: &'static Table,
    inner: Mutex<Inner>,
}

/// A slot reserved for a worker about to start ([`Census::reserve`]).
pub struct Reservation<'a> {
    inner: MutexGuard<'a, Inner>,
    table: &'static Table,
    pub slot: usize,
}

impl Reservation<'_> {
    /// The worker started as `pid`: the slot is its own until it ends.
    pub fn started(mut self, pid: u32) {
        if let Some(s) = self.table.slot(self.slot) {
            s.worker_pid.store(pid, Relaxed);
        }
        self.inner.workers.insert(pid, self.slot);
    }

    /// The worker did not start: the slot is free again.
    pub fn failed(mut self) {
        if let Some(s) = self.table.slot(self.slot) {
            s.clear();
        }
        self.inner.taken[self.slot] = false;
        self.inner.totals.refused[Refusal::WorkerStart.index()] += 1;
    }
}

impl Census {
    pub fn new(table: &'static Table) -> Census {
        Census {
            table,
            inner: Mutex::new(Inner {
                workers: HashMap::new(),
                taken: vec![false; MAX_SESSIONS],
                totals: Totals::default(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a free slot for a worker about to start, holding the census
    /// until the worker's pid is recorded (so its end cannot be seen first);
    /// `None`, counted as a refusal, when every slot is taken.
    pub fn reserve(&self) -> Option<Reservation<'_>> {
        self.reserve_within(MAX_SESSIONS)
    }

    /// [`Census::reserve`] while fewer than `limit` workers hold a slot;
    /// at the limit `None`, counted as refused for [`Refusal::Workers`].
    pub fn reserve_within(&self, limit: usize) -> Option<Reservation<'_>> {
        let mut inner = self.lock();
        let Some(slot) = inner.taken.iter().position(|t| !t) else {
            inner.totals.refused[Refusal::Capacity.index()] += 1;
            return None;
        };
        if inner.taken.iter().filter(|t| **t).count() >= limit {
            inner.totals.refused[Refusal::Workers.index()] += 1;
            return None;
        }
        inner.taken[slot] = true;
        if let Some(s) = self.table.slot(slot) {
            s.clear();
            s.state
                .store(STARTING, std::sync::atomic::Ordering::Release);
        }
        Some(Reservation {
            inner,
            table: self.table,
            slot,
        })
    }

    /// Counts a connection the supervisor refused before any worker or
    /// slot was given to it.
    pub fn refused(&self, why: Refusal) {
        self.lock().totals.refused[why.index()] += 1;
    }

    /// Workers that hold a slot now.
    pub fn workers(&self) -> usize {
        self.lock().workers.len()
    }

    /// Worker `pid` ended (`crashed`: by a signal, or with a status other
    /// than 0 and 1): its counters join the totals and its slot is freed.
    /// `false` for a pid that is not one of this census's workers.
    pub fn ended(&self, pid: u32, crashed: bool) -> bool {
        self.ended_with(pid, crashed, || {})
    }

    /// [`Census::ended`], running `before_free` (the tenants' give-back)
    /// under the census lock before the slot is freed: no new worker can
    /// take the slot first, and the worker's start was recorded in full.
    pub fn ended_with(&self, pid: u32, crashed: bool, before_free: impl FnOnce()) -> bool {
        let mut inner = self.lock();
        let Some(slot) = inner.workers.remove(&pid) else {
            return false;
        };
        before_free();
        inner.taken[slot] = false;
        let Some(s) = self.table.slot(slot) else {
            return true;
        };
        let t = &mut inner.totals;
        t.add(s);
        if s.state.load(std::sync::atomic::Ordering::Acquire) == LIVE {
            t.started += 1;
        } else if let Some(why) = Refusal::from_code(s.refusal.load(Relaxed)) {
            t.refused[why.index()] += 1;
        } else if !crashed {
            // Ended before its handshake without saying why: no valid hello came.
            t.refused[Refusal::Handshake.index()] += 1;
        }
        if crashed {
            t.crashes += 1;
        }
        s.clear();
        true
    }

    /// The live sessions of this census's workers, as a status query
    /// answers them: slots no worker of ours holds are never listed, and
    /// the worker pid is the supervisor's own record.
    pub fn records(&self) -> Vec<SessionRecord> {
        let inner = self.lock();
        let mut list: Vec<SessionRecord> = inner
            .workers
            .iter()
            .filter_map(|(&pid, &slot)| {
                let mut r = self.table.slot(slot)?.record()?;
                r.worker_pid = pid.into();
                Some(r)
            })
            .collect();
        list.sort_unstable_by_key(|r| r.started_ms.get());
        list
    }

    /// The totals with every running worker's counters added.
    pub fn snapshot(&self) -> Snapshot {
        let inner = self.lock();
        let mut snap = Snapshot {
            totals: inner.totals.clone(),
            ..Snapshot::default()
        };
        let mut by_uid: HashMap<u32, u64> = HashMap::new();
        let mut by_device: HashMap<(u32, [u8; 16]), u64> = HashMap::new();
        for &slot in inner.workers.values() {
            let Some(s) = self.table.slot(slot) else {
                continue;
            };
            snap.totals.add(s);
            if s.state.load(std::sync::atomic::Ordering::Acquire) == LIVE {
                snap.live += 1;
                snap.totals.started += 1;
                let uid = s.uid.load(Relaxed);
                let held = by_uid.entry(uid).or_default();
                *held = held.saturating_add(s.device_memory.load(Relaxed));
                for d in s.device_uses() {
                    let held = by_device.entry((uid, d.uuid)).or_default();
                    *held = held.saturating_add(d.memory);
                }
            }
        }
        snap.memory_by_uid = by_uid.into_iter().collect();
        snap.memory_by_uid.sort_unstable();
        snap.memory_by_device = by_device.into_iter().collect();
        snap.memory_by_device.sort_unstable();
        snap
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vgpu_proto::Op;

    fn census() -> Census {
        let table = Box::leak(Box::new(Table::create().expect("table")));
        Census::new(table)
    }

    #[test]
    fn ended_sessions_fold_into_the_totals() {
        let c = census();
        let r = c.reserve().expect("slot");
        let slot = r.slot;
        r.started(100);
        let s = c.table.slot(slot).expect("slot");
        assert_eq!(c.snapshot().live, 0, "starting, not live");
        s.go_live(5, 1000, vgpu_proto::sessions::transport::UNIX);
        s.count_call(Op::MemAlloc);
        s.set_devices(&[[7; 16]]);
        s.publish_memory(&[300], 0);
        let snap = c.snapshot();
        assert_eq!(snap.memory_by_device, [((1000, [7; 16]), 300)]);
        assert_eq!((snap.live, snap.totals.started), (1, 1));
        s.worker_pid.store(666, Relaxed);
        let listed = c.records();
        assert_eq!(listed.len(), 1);
        assert_eq!(
            listed[0].worker_pid.get(),
            100,
            "the supervisor's own record"
        );
        // A slot no worker holds, made live by someone, is not listed.
        c.table.slot(slot + 1).expect("slot").go_live(9, 9, 1);
        assert_eq!(c.records().len(), 1);
        c.table.slot(slot + 1).expect("slot").clear();
        assert_eq!(snap.memory_by_uid, [(1000, 300)]);
        assert_eq!(snap.totals.calls[Op::MemAlloc as usize], 1);
        assert!(c.ended(100, false));
        assert!(!c.ended(100, false), "once only");
        let snap = c.snapshot();
        assert_eq!((snap.live, snap.totals.started), (0, 1));
        assert!(snap.memory_by_uid.is_empty());
        assert_eq!(snap.totals.calls[Op::MemAlloc as usize], 1, "kept");
        assert_eq!(s.state.load(Relaxed), crate::sessions::FREE);
    }

    #[test]
    fn refusals_and_crashes_are_counted() {
        let c = census();
        let r = c.reserve().expect("slot");
        let slot = r.slot;
        r.started(1);
        c.table
            .slot(slot)
            .expect("slot")
            .refusal
            .store(Refusal::Driver as u32, Relaxed);
        c.ended(1, false);
        c.reserve().expect("slot").started(2);
        c.ended(2, false);
        c.reserve().expect("slot").started(3);
        c.ended(3, true);
        c.reserve().expect("slot").failed();
        let t = c.snapshot().totals;
        assert_eq!(t.refused[Refusal::Driver.index()], 1);
        assert_eq!(t.refused[Refusal::Handshake.index()], 1);
        assert_eq!(t.refused[Refusal::WorkerStart.index()], 1);
        assert_eq!((t.crashes, t.started), (1, 0));
        for pid in (1000..).take(MAX_SESSIONS) {
            c.reserve().expect("a free slot").started(pid);
        }
        assert!(c.reserve().is_none());
        assert_eq!(c.snapshot().totals.refused[Refusal::Capacity.index()], 1);
    }

    #[test]
    fn the_worker_limit_is_kept() {
        let c = census();
        c.reserve_within(2).expect("first").started(1);
        c.reserve_within(2).expect("second").started(2);
        assert!(c.reserve_within(2).is_none());
        assert_eq!(c.workers(), 2);
        c.ended(1, false);
        c.reserve_within(2).expect("a worker ended").started(3);
        assert_eq!(c.snapshot().totals.refused[Refusal::Workers.index()], 1);
    }
}
