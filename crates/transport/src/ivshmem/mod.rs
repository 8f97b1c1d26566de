//! The ivshmem PCI transport: vgpu sessions of processes in a VM guest, over
//! the shared memory of a QEMU `ivshmem-doorbell` device.
//!
//! The host's mediator speaks QEMU's ivshmem-server protocol ([`server`])
//! and gives each guest (each QEMU connection) a memfd of its own, so no
//! guest ever sees another's memory. The guest sees that memfd as the
//! device's BAR2 and its registers as BAR0 ([`guest`]). Inside BAR2, each
//! guest process that uses vgpu claims a *region*; the region holds the
//! rings of its session's control stream and of its lanes, byte streams
//! over [`crate::shm_ring`] rings ([`stream`]). The host serves each
//! claimed region with a worker, exactly as a local session.
//!
//! # Memory layout (BAR2)
//!
//! All integers little-endian; offsets in bytes.
//!
//! ```text
//! 0x0000 device header, written by the host once (the guest only reads it)
//!   0x00 magic          u64  "VGPUIVSH"
//!   0x08 version        u32  1
//!   0x0c regions        u32  number of regions (1..=MAX_REGIONS)
//!   0x10 region_offset  u64  where region 0 starts (TABLE_END)
//!   0x18 region_len     u64  slots * slot_len
//!   0x20 slots          u32  per region: slot 0 is the control stream,
//!                            slots 1.. are lanes
//!   0x24 ring_capacity  u32  data bytes of every ring (a power of two)
//!   0x28 host_peer      u32  the host's ivshmem peer id (doorbell target)
//!   0x2c vectors        u32  interrupt vectors the host listens on
//! 0x1000 region table: MAX_REGIONS entries of ENTRY_LEN bytes; entry r:
//!   +0x00 owner         AtomicU64  generation << 32 | ready << 31 | pid
//! TABLE_END: region r at region_offset + r * region_len; in it, slot s at
//!   s * slot_len; a slot is two rings (shm_ring layout, 4096-byte header):
//!   guest → host at +0, host → guest at +(4096 + ring_capacity).
//! ```
//!
//! # Claiming a region (guest processes)
//!
//! An owner word is *free* (pid 0, ready 0), *claimed* (a pid), or
//! *draining* (pid 0, ready 1: given back, its worker may still run). A
//! process claims a free entry `r` by a compare-and-swap to `(generation +
//! 1, ready 0, its pid)`; it then lays out the control slot's rings, binds
//! its ends, and stores `ready 1` (Release), then rings the doorbell. The
//! host serves a claimed, ready word with a worker. Giving a region back
//! is a compare-and-swap from the process's own word to *draining*
//! (`generation + 1`): at exit (an `atexit` handler that the client
//! registers when it connects, which releases only a region of its own
//! pid, so a forked child never releases its parent's), or by another
//! process for a dead owner: any process that claims first drains every
//! region whose pid no longer exists (`kill(pid, 0)` fails with `ESRCH`).
//! The host's worker of a region ends when the word changes from the one it
//! serves. Only the host frees a draining word, and only once no worker of
//! that region is left: so a new claimant never lays out rings that an old
//! worker still reads. When a worker ends on its own (it failed), the host
//! frees its word too, which ends the guest process's session. Processes
//! of one guest must share a pid namespace for the liveness test to hold.
//!
//! # Wake-ups
//!
//! Guest to host: a guest ring end rings the doorbell (BAR0 `Doorbell` =
//! `host_peer << 16 | vector`, vector = region % vectors) where a host
//! end would `futex_wake` ([`crate::wake`], "Guest ends"); QEMU signals the
//! host's eventfd of that vector, and the mediator wakes every host ring
//! end of that vector's regions that announced a sleep. Host to guest: the
//! guest polls with backoff (spin, yield, then naps of 20 µs doubling to
//! 1 ms); interrupts would need a guest driver.
//!
//! # Trust
//!
//! The guest is untrusted. The host never reads the device header back
//! (it keeps its own [`Layout`]); it reads only owner words (any value is
//! a valid word: it either names a region the host serves or not) and the
//! rings, which validate every index and length ([`crate::shm_ring`]);
//! ring windows are computed from the host's layout, never from guest
//! data. A guest can only break its own sessions.

#[doc(hidden)]
pub mod fuzz;
pub mod guest;
pub mod server;
pub mod stream;

use std::sync::atomic::Ordering;

use crate::shm_ring::{SharedMem, HEADER_LEN, MAX_CAPACITY, MIN_CAPACITY};

/// `"VGPUIVSH"`, little-endian.
pub const MAGIC: u64 = u64::from_le_bytes(*b"VGPUIVSH");
/// Layout version.
pub const VERSION: u32 = 1;
/// Where the region table starts.
pub const TABLE_OFFSET: usize = 0x1000;
/// Bytes of one region-table entry.
pub const ENTRY_LEN: usize = 64;
/// Most regions (sessions) one device holds.
pub const MAX_REGIONS: usize = 64;
/// Where the regions may start.
pub const TABLE_END: usize = TABLE_OFFSET + MAX_REGIONS * ENTRY_LEN;
/// Most slots a region may have.
pub const MAX_SLOTS: usize = 64;
/// Default ring capacity: 256 KiB each way per slot.
pub const DEFAULT_RING: usize = 256 << 10;
/// Default slots per region: the control stream and 8 lanes.
pub const DEFAULT_SLOTS: usize = 9;
/// Default shared memory per guest (64 MiB: 14 regions with the defaults).
pub const DEFAULT_SIZE: usize = 64 << 20;

/// The owner word's ready bit.
pub const READY: u64 = 1 << 31;
const PID_MASK: u64 = READY - 1;

/// How the BAR is cut into regions and slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub regions: usize,
    pub slots: usize,
    pub ring_capacity: usize,
    pub host_peer: u16,
    pub vectors: u16,
}

/// Why a device header was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LayoutError {
    /// The magic or version is not this one's.
    #[error("not a vgpu ivshmem device (magic or version)")]
    Magic,
    /// A field is out of range or the regions leave the BAR.
    #[error("device header out of range: {0}")]
    Range(&'static str),
}

impl Layout {
    /// The host's layout for shared memory of `size` bytes.
    pub fn for_size(
        size: usize,
        slots: usize,
        ring_capacity: usize,
        host_peer: u16,
        vectors: u16,
    ) -> Result<Layout, LayoutError> {
        let mut l = Layout {
            regions: 1,
            slots,
            ring_capacity,
            host_peer,
            vectors,
        };
        l.check_shape()?;
        l.regions = (size.saturating_sub(TABLE_END) / l.region_len()).min(MAX_REGIONS);
        if l.regions == 0 {
            return Err(LayoutError::Range("the memory holds no region"));
        }
        Ok(l)
    }

    fn check_shape(&self) -> Result<(), LayoutError> {
        if !(2..=MAX_SLOTS).contains(&self.slots) {
            return Err(LayoutError::Range("slots"));
        }
        if !self.ring_capacity.is_power_of_two()
            || !(MIN_CAPACITY.max(4096)..=MAX_CAPACITY / 64).contains(&self.ring_capacity)
        {
            return Err(LayoutError::Range("ring capacity"));
        }
        if self.vectors == 0 {
            return Err(LayoutError::Range("vectors"));
        }
        Ok(())
    }

    /// Bytes of a slot: two rings.
    pub fn slot_len(&self) -> usize {
        2 * (HEADER_LEN + self.ring_capacity)
    }

    /// Bytes of a region.
    pub fn region_len(&self) -> usize {
        self.slots * self.slot_len()
    }

    /// Bytes from the start of the BAR to the end of the last region.
    pub fn end(&self) -> usize {
        TABLE_END + self.regions * self.region_len()
    }

    /// Offset of region `r`'s slot `s` guest → host ring (`to_host`) or
    /// host → guest ring; `None` outside the layout.
    pub fn ring_offset(&self, r: usize, s: usize, to_host: bool) -> Option<usize> {
        if r >= self.regions || s >= self.slots {
            return None;
        }
        let back = if to_host {
            0
        } else {
            HEADER_LEN + self.ring_capacity
        };
        Some(TABLE_END + r * self.region_len() + s * self.slot_len() + back)
    }

    /// The doorbell vector of region `r`.
    pub fn vector(&self, r: usize) -> u16 {
        u16::try_from(r % usize::from(self.vectors)).unwrap_or(0)
    }

    /// The regions whose doorbell is `vector`.
    pub fn regions_of(&self, vector: u16) -> impl Iterator<Item = usize> + '_ {
        (0..self.regions).filter(move |r| self.vector(*r) == vector)
    }

    /// The device header's bytes.
    pub fn header(&self) -> [u8; 0x30] {
        let mut h = [0u8; 0x30];
        let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX).to_le_bytes();
        h[0x00..0x08].copy_from_slice(&MAGIC.to_le_bytes());
        h[0x08..0x0c].copy_from_slice(&VERSION.to_le_bytes());
        h[0x0c..0x10].copy_from_slice(&n(self.regions));
        h[0x10..0x18].copy_from_slice(&(TABLE_END as u64).to_le_bytes());
        h[0x18..0x20].copy_from_slice(&(self.region_len() as u64).to_le_bytes());
        h[0x20..0x24].copy_from_slice(&n(self.slots));
        h[0x24..0x28].copy_from_slice(&n(self.ring_capacity));
        h[0x28..0x2c].copy_from_slice(&u32::from(self.host_peer).to_le_bytes());
        h[0x2c..0x30].copy_from_slice(&u32::from(self.vectors).to_le_bytes());
        h
    }

    /// Parses a device header read from a BAR of `bar_len` bytes (the
    /// guest's side), checking every field and that the regions fit.
    pub fn parse(h: &[u8], bar_len: usize) -> Result<Layout, LayoutError> {
        let u32_at = |o: usize| -> Result<u32, LayoutError> {
            h.get(o..o + 4)
                .and_then(|b| b.try_into().ok())
                .map(u32::from_le_bytes)
                .ok_or(LayoutError::Range("short header"))
        };
        let u64_at = |o: usize| -> Result<u64, LayoutError> {
            h.get(o..o + 8)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_le_bytes)
                .ok_or(LayoutError::Range("short header"))
        };
        if u64_at(0)? != MAGIC || u32_at(0x08)? != VERSION {
            return Err(LayoutError::Magic);
        }
        let size = |v: u32| usize::try_from(v).map_err(|_| LayoutError::Range("size"));
        let l = Layout {
            regions: size(u32_at(0x0c)?)?,
            slots: size(u32_at(0x20)?)?,
            ring_capacity: size(u32_at(0x24)?)?,
            host_peer: u16::try_from(u32_at(0x28)?).map_err(|_| LayoutError::Range("host peer"))?,
            vectors: u16::try_from(u32_at(0x2c)?).map_err(|_| LayoutError::Range("vectors"))?,
        };
        l.check_shape()?;
        if !(1..=MAX_REGIONS).contains(&l.regions) {
            return Err(LayoutError::Range("regions"));
        }
        if u64_at(0x10)? != TABLE_END as u64 || u64_at(0x18)? != l.region_len() as u64 {
            return Err(LayoutError::Range("region offset or length"));
        }
        if l.end() > bar_len {
            return Err(LayoutError::Range("regions end past the BAR"));
        }
        Ok(l)
    }
}

/// A region-table owner word, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    pub generation: u32,
    pub ready: bool,
    /// 0: free.
    pub pid: u32,
}

impl Owner {
    pub fn decode(w: u64) -> Owner {
        Owner {
            generation: u32::try_from(w >> 32).unwrap_or(0),
            ready: w & READY != 0,
            pid: u32::try_from(w & PID_MASK).unwrap_or(0),
        }
    }

    pub fn encode(self) -> u64 {
        u64::from(self.generation) << 32
            | if self.ready { READY } else { 0 }
            | u64::from(self.pid) & PID_MASK
    }

    /// Whether a worker should serve this word.
    pub fn serve(self) -> bool {
        self.ready && self.pid != 0
    }
}

/// The owner word of region `r` in `mem`; `None` past the table or memory.
pub fn owner_word(mem: &SharedMem, r: usize) -> Option<&std::sync::atomic::AtomicU64> {
    if r >= MAX_REGIONS {
        return None;
    }
    mem.u64_at(TABLE_OFFSET + r * ENTRY_LEN)
}

/// Moves region `r`'s word from `was` to pid 0 with the next generation
/// and the given ready bit; `false` if the word was no longer `was`.
fn advance(mem: &SharedMem, r: usize, was: u64, ready: bool) -> bool {
    let Some(w) = owner_word(mem, r) else {
        return false;
    };
    let next = Owner {
        generation: Owner::decode(was).generation.wrapping_add(1),
        ready,
        pid: 0,
    };
    w.compare_exchange(was, next.encode(), Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
}

/// Gives region `r` back (the guest, for itself or a dead owner): its word
/// goes from `was` to draining, for the host to free.
pub fn drain_region(mem: &SharedMem, r: usize, was: u64) -> bool {
    advance(mem, r, was, true)
}

/// Frees region `r` whose word is `was` (the host, once no worker of the
/// region is left).
pub fn free_region(mem: &SharedMem, r: usize, was: u64) -> bool {
    advance(mem, r, was, false)
}

/// What the host should do for region `r` whose owner word reads `word`,
/// given the word its worker serves (`None`: no worker).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing to do.
    Keep,
    /// Start a worker for this word.
    Serve(u64),
    /// The worker's session is over (given back, reclaimed or forged); the
    /// worker sees this itself, the host only wakes it.
    End,
    /// No worker is left: free this draining word.
    Free(u64),
}

/// Decides [`Action`] for one owner word: the doorbell protocol's core,
/// fuzzed with arbitrary words.
pub fn action(word: u64, served: Option<u64>) -> Action {
    let o = Owner::decode(word);
    match served {
        Some(s) if s == word => Action::Keep,
        Some(_) => Action::End,
        None if o.serve() => Action::Serve(word),
        None if o.pid == 0 && o.ready => Action::Free(word),
        None => Action::Keep,
    }
}

/// The doorbell register's value that rings `peer`'s `vector`.
pub fn doorbell_value(peer: u16, vector: u16) -> u32 {
    u32::from(peer) << 16 | u32::from(vector)
}

/// The (peer, vector) a doorbell register value names.
pub fn parse_doorbell(v: u32) -> (u16, u16) {
    (
        u16::try_from(v >> 16).unwrap_or(u16::MAX),
        u16::try_from(v & 0xffff).unwrap_or(u16::MAX),
    )
}

/// BAR0 register offsets (ivshmem spec).
pub mod regs {
    /// Interrupt mask (revision 0 interrupts; unused).
    pub const INTR_MASK: usize = 0;
    /// Interrupt status (unused).
    pub const INTR_STATUS: usize = 4;
    /// This guest's peer id (read-only).
    pub const IV_POSITION: usize = 8;
    /// Write `peer << 16 | vector` to interrupt that peer's vector.
    pub const DOORBELL: usize = 12;
    /// Bytes of BAR0 that vgpu maps (the 256-byte BAR, rounded to a page).
    pub const MAP_LEN: usize = 4096;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        Layout::for_size(DEFAULT_SIZE, DEFAULT_SLOTS, DEFAULT_RING, 0, 1).expect("layout")
    }

    #[test]
    fn the_default_layout_fits_and_round_trips() {
        let l = layout();
        assert_eq!(l.regions, 14);
        assert!(l.end() <= DEFAULT_SIZE);
        assert_eq!(Layout::parse(&l.header(), DEFAULT_SIZE), Ok(l));
        assert!(l.ring_offset(13, 8, false).is_some());
        assert_eq!(l.ring_offset(14, 0, true), None);
        assert_eq!(l.ring_offset(0, 9, true), None);
        assert_eq!(l.ring_offset(0, 0, true), Some(TABLE_END));
    }

    #[test]
    fn bad_headers_are_refused() {
        let l = layout();
        assert_eq!(
            Layout::parse(&l.header(), l.end() - 1),
            Err(LayoutError::Range("regions end past the BAR"))
        );
        let mut h = l.header();
        h[0] ^= 1;
        assert_eq!(Layout::parse(&h, DEFAULT_SIZE), Err(LayoutError::Magic));
        let mut h = l.header();
        h[0x24..0x28].copy_from_slice(&3000u32.to_le_bytes());
        assert!(Layout::parse(&h, DEFAULT_SIZE).is_err());
        let mut h = l.header();
        h[0x0c..0x10].copy_from_slice(&0u32.to_le_bytes());
        assert!(Layout::parse(&h, DEFAULT_SIZE).is_err());
        assert!(Layout::parse(&h[..0x20], DEFAULT_SIZE).is_err());
        assert!(Layout::for_size(1 << 20, DEFAULT_SLOTS, DEFAULT_RING, 0, 1).is_err());
    }

    #[test]
    fn owner_words_and_actions() {
        let o = Owner {
            generation: 7,
            ready: true,
            pid: 4242,
        };
        assert_eq!(Owner::decode(o.encode()), o);
        assert_eq!(action(o.encode(), None), Action::Serve(o.encode()));
        assert_eq!(action(o.encode(), Some(o.encode())), Action::Keep);
        let draining = Owner {
            generation: 8,
            ready: true,
            pid: 0,
        }
        .encode();
        assert_eq!(action(draining, Some(o.encode())), Action::End);
        assert_eq!(action(draining, None), Action::Free(draining));
        let free = Owner {
            generation: 9,
            ready: false,
            pid: 0,
        }
        .encode();
        assert_eq!(action(free, None), Action::Keep);
        let claiming = Owner { ready: false, ..o }.encode();
        assert_eq!(action(claiming, None), Action::Keep, "not ready yet");
        assert_eq!(doorbell_value(3, 1), 0x0003_0001);
        assert_eq!(parse_doorbell(0x0003_0001), (3, 1));
    }
}
