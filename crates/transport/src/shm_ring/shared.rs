//! Rings inside a larger shared mapping: an ivshmem BAR holds many rings at
//! offsets ([`Ring::init_at`], [`Ring::attach_at`]), and a guest's ring ends
//! wake the host through a [`Doorbell`] (`crate::ivshmem`).

use std::os::fd::BorrowedFd;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use super::{
    Mapping, Ring, HEADER_LEN, HEADER_LEN_U32, MAGIC, MAX_CAPACITY, MIN_CAPACITY, OFF_CAPACITY,
    OFF_DATA_SEQ, OFF_DATA_SLEEPING, OFF_END, OFF_HEADER_LEN, OFF_MAGIC, OFF_SPACE_SEQ,
    OFF_SPACE_SLEEPING, OFF_VERSION, VERSION,
};
use crate::TransportError;

/// Rings the peer's doorbell: how a ring end inside an ivshmem BAR wakes a
/// host that sleeps on its futex (the host cannot see the guest's futexes).
/// A ring with a doorbell is a *guest* end: it never sleeps on a futex
/// either (nothing on the host could wake it) but polls with backoff
/// ([`crate::wake`]).
pub trait Doorbell: Send + Sync + std::fmt::Debug {
    /// Tells the peer that something changed in shared memory.
    fn ring(&self);
}

/// A whole `MAP_SHARED` mapping of a file (an ivshmem memfd or a PCI BAR),
/// in which rings live at offsets ([`Ring::init_at`], [`Ring::attach_at`]).
/// Unmapped when the last ring and owner let go of it.
#[derive(Debug)]
pub struct SharedMem {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: plain shared memory, only touched through atomics and raw copies
// (as `Mapping`).
unsafe impl Send for SharedMem {}
// SAFETY: as above.
unsafe impl Sync for SharedMem {}

impl SharedMem {
    /// Maps the first `len` bytes of `fd` read-write and shared.
    pub fn map(fd: BorrowedFd<'_>, len: usize) -> Result<Arc<SharedMem>, TransportError> {
        let m = Mapping::new(fd, len)?;
        let (base, len) = (m.base, m.len);
        std::mem::forget(m);
        Ok(Arc::new(SharedMem { base, len }))
    }

    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is mapped (never: a mapping is at least a page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The atomic `u32` at `off`, if it lies 4-aligned inside the mapping.
    pub fn u32_at(&self, off: usize) -> Option<&AtomicU32> {
        if !off.is_multiple_of(4) || off.checked_add(4)? > self.len {
            return None;
        }
        // SAFETY: checked just above: aligned (page-aligned base) and inside
        // the live mapping, which `&self` keeps; shared words are only ever
        // accessed atomically.
        Some(unsafe { &*self.base.as_ptr().add(off).cast::<AtomicU32>() })
    }

    /// The atomic `u64` at `off`, if it lies 8-aligned inside the mapping.
    pub fn u64_at(&self, off: usize) -> Option<&AtomicU64> {
        if !off.is_multiple_of(8) || off.checked_add(8)? > self.len {
            return None;
        }
        // SAFETY: as for `u32_at`, with 8-byte alignment.
        Some(unsafe { &*self.base.as_ptr().add(off).cast::<AtomicU64>() })
    }

    /// Copies `dst.len()` bytes at `off` out; `false` (no copy) if the
    /// range leaves the mapping.
    pub fn read(&self, off: usize, dst: &mut [u8]) -> bool {
        if off.checked_add(dst.len()).is_none_or(|end| end > self.len) {
            return false;
        }
        // SAFETY: the range is inside the live mapping (checked); `dst` is
        // private memory; no reference to the shared bytes is formed.
        unsafe {
            ptr::copy_nonoverlapping(self.base.as_ptr().add(off), dst.as_mut_ptr(), dst.len())
        };
        true
    }

    /// Copies `src` in at `off`; `false` (no copy) if the range leaves the
    /// mapping.
    pub fn write(&self, off: usize, src: &[u8]) -> bool {
        if off.checked_add(src.len()).is_none_or(|end| end > self.len) {
            return false;
        }
        // SAFETY: as for `read`, in the other direction.
        unsafe { ptr::copy_nonoverlapping(src.as_ptr(), self.base.as_ptr().add(off), src.len()) };
        true
    }

    /// Wakes whoever sleeps on the futexes of the ring at `off`: its data
    /// pair when `data`, its space pair otherwise. For the host end of an
    /// ivshmem ring, whose guest peer rings a doorbell instead of waking a
    /// futex: the words are bumped and woken only when their sleeping flag
    /// is set, so an idle ring costs one load. A ring that does not fit
    /// is skipped.
    pub fn wake_ring(&self, off: usize, data: bool) {
        let (seq, sleeping) = if data {
            (OFF_DATA_SEQ, OFF_DATA_SLEEPING)
        } else {
            (OFF_SPACE_SEQ, OFF_SPACE_SLEEPING)
        };
        let (Some(seq), Some(sleeping)) = (
            off.checked_add(seq).and_then(|o| self.u32_at(o)),
            off.checked_add(sleeping).and_then(|o| self.u32_at(o)),
        ) else {
            return;
        };
        if sleeping.load(Ordering::Acquire) != 0 {
            seq.fetch_add(1, Ordering::Release);
            let _ = rustix::thread::futex::wake(seq, rustix::thread::futex::Flags::empty(), 1);
        }
    }
}

impl Drop for SharedMem {
    fn drop(&mut self) {
        // SAFETY: exactly the range mapped in `map`; every ring window into
        // it holds an `Arc` to `self`, so none outlives it.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

impl Ring {
    /// The window of `mem` for a ring of `capacity` at `off`.
    fn window(
        mem: &Arc<SharedMem>,
        off: usize,
        capacity: usize,
    ) -> Result<Mapping, TransportError> {
        if !capacity.is_power_of_two()
            || !(MIN_CAPACITY..=MAX_CAPACITY).contains(&capacity)
            || !off.is_multiple_of(4096)
            || off
                .checked_add(HEADER_LEN + capacity)
                .is_none_or(|end| end > mem.len)
        {
            return Err(TransportError::Corrupt(
                "ring window outside the shared memory",
            ));
        }
        Ok(Mapping {
            // SAFETY: `off` is inside the mapping (checked above).
            base: unsafe { NonNull::new_unchecked(mem.base.as_ptr().add(off)) },
            len: HEADER_LEN + capacity,
            owner: Some(Arc::clone(mem)),
        })
    }

    /// Lays out a fresh ring of `capacity` bytes at `off` inside `mem`
    /// (page-aligned): indices, wake words and states zero, the data area
    /// zeroed (a ring laid out again where one was before must not find
    /// the old ring's record tags at the counters it starts from again),
    /// then the header constants, the magic last (Release). For rings
    /// inside an ivshmem BAR, whose two ends both map `mem`; the other end
    /// binds with [`Ring::attach_at`]. `doorbell`: see [`Doorbell`].
    pub fn init_at(
        mem: &Arc<SharedMem>,
        off: usize,
        capacity: usize,
        doorbell: Option<Arc<dyn Doorbell>>,
    ) -> Result<Ring, TransportError> {
        let map = Ring::window(mem, off, capacity)?;
        map.u64_at(OFF_MAGIC).store(0, Ordering::Release);
        for o in (OFF_VERSION..OFF_END).step_by(4) {
            map.u32_at(o).store(0, Ordering::Relaxed);
        }
        // SAFETY: the data area lies inside the window (checked by
        // `window`), which the live `mem` maps; no reference to it exists.
        unsafe { ptr::write_bytes(map.base.as_ptr().add(HEADER_LEN), 0, capacity) };
        map.u32_at(OFF_VERSION).store(VERSION, Ordering::Relaxed);
        map.u32_at(OFF_HEADER_LEN)
            .store(HEADER_LEN_U32, Ordering::Relaxed);
        map.u64_at(OFF_CAPACITY)
            .store(capacity as u64, Ordering::Relaxed);
        map.u64_at(OFF_MAGIC).store(MAGIC, Ordering::Release);
        Ok(Ring {
            map,
            capacity,
            doorbell,
        })
    }

    /// Binds to a ring the peer laid out at `off` inside `mem`, checking its
    /// header against what this side expects (`capacity`): a peer cannot
    /// make this side read or write outside the window.
    pub fn attach_at(
        mem: &Arc<SharedMem>,
        off: usize,
        capacity: usize,
        doorbell: Option<Arc<dyn Doorbell>>,
    ) -> Result<Ring, TransportError> {
        let map = Ring::window(mem, off, capacity)?;
        if map.u64_at(OFF_MAGIC).load(Ordering::Acquire) != MAGIC
            || map.u32_at(OFF_VERSION).load(Ordering::Relaxed) != VERSION
            || map.u32_at(OFF_HEADER_LEN).load(Ordering::Relaxed) != HEADER_LEN_U32
            || map.u64_at(OFF_CAPACITY).load(Ordering::Relaxed) != capacity as u64
        {
            return Err(TransportError::Corrupt(
                "ring header does not match the layout",
            ));
        }
        Ok(Ring {
            map,
            capacity,
            doorbell,
        })
    }
}
