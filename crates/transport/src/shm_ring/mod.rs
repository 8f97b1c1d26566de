//! Single-producer/single-consumer rings of variable-length messages in
//! shared memory (a sealed memfd mapped `MAP_SHARED` by both processes).
//!
//! # Memory layout
//!
//! One memfd of `HEADER_LEN + capacity` bytes. All integers are native-endian
//! (little-endian on every supported target); offsets are in bytes.
//!
//! ```text
//! header page (HEADER_LEN = 4096)
//!   0x000  magic          u64  "VGPURING" (written last by the creator)
//!   0x008  version        u32  3
//!   0x00c  header_len     u32  4096
//!   0x010  capacity       u64  data-area bytes: a power of two, 64 B ..= 1 GiB
//!   0x080  tail           AtomicU64  bytes ever published (producer writes)
//!   0x100  head           AtomicU64  bytes ever released (consumer writes)
//!   0x180  data_seq       AtomicU32  futex word: "data arrived" (producer bumps)
//!   0x184  data_sleeping  AtomicU32  1 while the consumer sleeps on data_seq
//!   0x200  space_seq      AtomicU32  futex word: "space freed" (consumer bumps)
//!   0x204  space_sleeping AtomicU32  1 while the producer sleeps on space_seq
//!   0x280  producer_state AtomicU32  0 free, 1 attached, 2 closed
//!   0x284  consumer_state AtomicU32  0 free, 1 attached, 2 closed
//! data area (capacity bytes) at HEADER_LEN
//! ```
//!
//! Each group starts its own 128-byte block, so the two sides never write the
//! same cache line (nor an adjacent-line prefetch pair) on the fast path:
//! `tail` is the producer's, `head` the consumer's, the wake pairs are written
//! only around sleeps, the states once.
//!
//! `head` and `tail` are monotonically increasing byte counters (they never
//! wrap in practice: 2^64 bytes); the data position of counter `i` is
//! `i & (capacity - 1)`. `tail - head` is the number of published, unreleased
//! bytes, never more than `capacity`; both stay multiples of 64 (a cache
//! line).
//!
//! # Messages
//!
//! A record is a 16-byte header, two words: the *tag* `!pos` (the bitwise
//! complement of the record's own counter `pos`) and `len as u64` (upper 32
//! bits zero); then `len` payload bytes, then padding up to a multiple of
//! 64 bytes. So every record starts a cache line, and a small message (up
//! to 48 payload bytes: a synchronizing request, most replies) is one line,
//! which crosses between the cores in one transfer; at 8-byte alignment
//! most such records straddled two lines, the second fetched only after
//! the first was seen (on a 16-CPU Xeon host whose cores hand a line over
//! in 70-100 ns, `gpu/core_to_core.c`). Records are *split*, not wrapped:
//! a record that reaches the end of the data area continues at its start.
//! Header words never split (positions and capacity are multiples of 64);
//! the payload is
//! copied in up to two pieces. So no space is wasted on wrap markers, there
//! is no marker state for a peer to corrupt, and the largest message is
//! `capacity - 16` bytes. Payload is always copied out, so contiguity would
//! buy nothing.
//!
//! The tag is how the consumer sees a new record: it polls the tag word at
//! its `head`, in the record's own cache line, rather than the producer's
//! `tail` in another line, so a message crosses between the cores in one
//! line, not two in series. A stale word at that position is from an
//! earlier lap, whose counter differs by a multiple of the capacity, or a
//! payload word; neither equals `!head` unless a peer wrote it so (fresh
//! zero pages never do: `!head` is zero only at the counter `u64::MAX`).
//! A forged tag can only garble what the consumer copies, as a forged
//! payload can (see Trust).
//!
//! # Publish order
//!
//! - Producer: copy the payload, store the length word (Relaxed), store the
//!   tag (Release), then `tail.store(Release)`, then
//!   [`crate::wake::notify`] the consumer.
//! - Consumer: load the tag at `head` (Acquire); if it is `!head`, read the
//!   length word and the payload. The consumer publishes `head`
//!   (`head.store(Release)`, then notify the producer) in batches: when it
//!   finds no message (before it waits), or once [`RELEASE_BATCH`] of the
//!   capacity has been taken since the last publish. A producer far ahead of
//!   its consumer (posted kernel launches filling the ring) then finds space
//!   in large steps instead of one message at a time, so the two cores stop
//!   trading the `head` line (and the producer sleeps instead of spinning)
//!   on every message. Freed space is never hidden from a producer for
//!   longer than the consumer takes to reach the end of what was published,
//!   and a consumer that waits for data has always published everything.
//! - Producer, when its cached view of `head` shows too little space:
//!   `head.load(Acquire)`, so the consumer's reads of a slot happen before the
//!   producer overwrites it.
//! - Closing (Drop): `state.store(CLOSED, Release)` after the last publish,
//!   then [`crate::wake::wake_always`]. A consumer that finds the ring empty loads the
//!   producer's state (Acquire) and, if closed, loads the tag again: messages
//!   published before the close are still delivered, then [`PeerGone`].
//!
//! # Wake-up protocol
//!
//! Spin for [`WaitPolicy::spin`], then sleep on the side's futex word with the
//! announce / re-check / wait-on-expected-value protocol described and proved
//! in [`crate::wake`].
//!
//! # Trust
//!
//! The peer may be hostile. Each side keeps its own index in private memory
//! and only *stores* it to the header; the peer's index is read once per use,
//! into a local, and checked with `if`s (`tail - head <= capacity`, multiple
//! of 8, record length at most the largest message) before it steers a copy.
//! A failed check is [`Corrupt`], never a panic or an out-of-bounds access.
//! [`Ring::map`] validates magic, version, sizes and the memfd's seals before
//! it reads anything else, and keeps its own copy of the capacity; the memfd is
//! sealed against shrinking, so the peer cannot truncate the pages under us
//! (`SIGBUS`). No Rust reference (`&[u8]`/`&mut [u8]`) is ever formed over the
//! data area: bytes move with `ptr::copy_nonoverlapping`, indices and header
//! words through atomics. A hostile peer writing a slot we are copying can
//! only garble the bytes we copy, which the protocol layer validates anyway.
//!
//! # Rings in a larger mapping
//!
//! A ring may also live at a page-aligned offset of a larger shared
//! mapping ([`SharedMem`]: an ivshmem BAR, `crate::ivshmem`), laid out by
//! [`Ring::init_at`] (which zeroes the data area too: a ring laid out where
//! one was before must not find old tags at its counters) and bound by
//! [`Ring::attach_at`], which checks the header against the layout the
//! binding side expects. Such a window is not sealed memory of its own;
//! its owner keeps the whole mapping alive. A guest's ends carry a
//! [`Doorbell`] (see `crate::wake`, "Guest ends").
//!
//! [`PeerGone`]: TransportError::PeerGone
//! [`Corrupt`]: TransportError::Corrupt

use std::cell::Cell;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use rustix::fs::{MemfdFlags, SealFlags};
use rustix::mm::{MapFlags, ProtFlags};

mod consumer;
#[doc(hidden)]
pub mod fuzz;
mod producer;
mod shared;

use crate::wake::SharedWake;
pub use crate::wake::WaitPolicy;
use crate::TransportError;
pub use consumer::{Consumer, Message};
pub use producer::Producer;
pub use shared::{Doorbell, SharedMem};

/// `"VGPURING"`, little-endian.
pub const MAGIC: u64 = u64::from_le_bytes(*b"VGPURING");
/// Layout version; bumped on any change to the header or record format
/// (3: records are whole cache lines).
pub const VERSION: u32 = 3;
/// Bytes before the data area.
pub const HEADER_LEN: usize = 4096;
/// Smallest data area.
pub const MIN_CAPACITY: usize = 64;
/// Largest data area.
pub const MAX_CAPACITY: usize = 1 << 30;
/// Bytes of a record header: the tag, then the length.
pub const RECORD_HEADER: usize = 16;
/// The consumer publishes `head` at the latest once this fraction
/// (1/`RELEASE_BATCH`) of the capacity has been taken since it last did
/// (see "Publish order").
pub const RELEASE_BATCH: u64 = 16;

const OFF_MAGIC: usize = 0x000;
const OFF_VERSION: usize = 0x008;
const OFF_HEADER_LEN: usize = 0x00c;
const OFF_CAPACITY: usize = 0x010;
const OFF_TAIL: usize = 0x080;
const OFF_HEAD: usize = 0x100;
const OFF_DATA_SEQ: usize = 0x180;
const OFF_DATA_SLEEPING: usize = 0x184;
const OFF_SPACE_SEQ: usize = 0x200;
const OFF_SPACE_SLEEPING: usize = 0x204;
const OFF_PRODUCER_STATE: usize = 0x280;
const OFF_CONSUMER_STATE: usize = 0x284;
const OFF_END: usize = 0x288;
const _: () = assert!(OFF_END <= HEADER_LEN && HEADER_LEN.is_multiple_of(8));

/// Bytes of a cache line.
const CACHE_LINE: u64 = 64;
/// Bytes past the message being taken that the consumer prefetches when
/// messages are waiting (the message was there at its first look): the next
/// few requests' lines come over from the producer's core while the caller
/// works on this one (a kernel launch takes microseconds in the driver).
const PREFETCH_AHEAD: u64 = 512;

const STATE_FREE: u32 = 0;
const STATE_ATTACHED: u32 = 1;
const STATE_CLOSED: u32 = 2;

#[allow(clippy::cast_possible_truncation)] // 4096 fits.
const HEADER_LEN_U32: u32 = HEADER_LEN as u32;
// Counters and offsets convert between u64 and usize freely below.
const _: () = assert!(usize::BITS == 64, "the rings assume a 64-bit target");

/// `v` as usize; lossless, as usize is 64 bits wide (asserted above).
#[allow(clippy::cast_possible_truncation)]
const fn to_usize(v: u64) -> usize {
    v as usize
}

/// The tag of a record at counter `pos` (module docs, "Messages").
const fn tag(pos: u64) -> u64 {
    !pos
}

/// Bytes a record of `len` payload bytes takes in the ring: whole cache
/// lines (module docs, "Messages").
const fn record_len(len: u64) -> u64 {
    (RECORD_HEADER as u64 + len + (CACHE_LINE - 1)) & !(CACHE_LINE - 1)
}

/// A `MAP_SHARED` mapping of a whole ring memfd (unmapped on drop), or a
/// window into a larger [`SharedMem`] that `owner` keeps mapped.
#[derive(Debug)]
struct Mapping {
    base: NonNull<u8>,
    len: usize,
    owner: Option<Arc<SharedMem>>,
}

// SAFETY: the mapping is plain shared memory owned by this value; it is only
// touched through atomics and raw-pointer copies, never through references
// that assume exclusive access, so any thread may hold or use it.
unsafe impl Send for Mapping {}
// SAFETY: as above; concurrent access goes through atomics or raw copies.
unsafe impl Sync for Mapping {}

impl Mapping {
    fn new(fd: BorrowedFd<'_>, len: usize) -> Result<Mapping, TransportError> {
        // SAFETY: a null hint lets the kernel pick a fresh range, so no
        // existing Rust object is aliased or replaced; `fd` is a valid
        // descriptor for the duration of the call.
        let p = unsafe {
            rustix::mm::mmap(
                ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                fd,
                0,
            )
        }
        .map_err(std::io::Error::from)?;
        let base = NonNull::new(p.cast::<u8>()).ok_or(TransportError::Io(
            std::io::Error::other("mmap returned null"),
        ))?;
        Ok(Mapping {
            base,
            len,
            owner: None,
        })
    }

    /// The atomic word at header offset `off` (a constant of this module:
    /// 8-aligned for `u64`, inside `HEADER_LEN <= len`).
    fn u64_at(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off.is_multiple_of(8) && off + 8 <= HEADER_LEN);
        // SAFETY: `off` is one of this module's header offsets, 8-aligned and
        // inside the mapping (HEADER_LEN <= len, the base is page-aligned);
        // the mapping lives as long as `&self`, and the memory is only ever
        // accessed atomically at this offset.
        unsafe { &*self.base.as_ptr().add(off).cast::<AtomicU64>() }
    }

    /// The atomic `u32` at header offset `off` (4-aligned, inside the header).
    fn u32_at(&self, off: usize) -> &AtomicU32 {
        debug_assert!(off.is_multiple_of(4) && off + 4 <= HEADER_LEN);
        // SAFETY: as for `u64_at`, with 4-byte alignment.
        unsafe { &*self.base.as_ptr().add(off).cast::<AtomicU32>() }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if self.owner.is_some() {
            return; // A window: the owner unmaps.
        }
        // SAFETY: `base`/`len` are exactly the range mapped in `new`, and no
        // reference into it outlives `self` (they all borrow `self`).
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

/// One mapping of a ring, not yet bound to a role.
#[derive(Debug)]
pub struct Ring {
    map: Mapping,
    /// Private copy, validated once: never re-read from shared memory.
    capacity: usize,
    /// Set on a guest end inside an ivshmem BAR ([`Doorbell`]).
    doorbell: Option<Arc<dyn Doorbell>>,
}

impl Ring {
    /// Creates a ring with a data area of `capacity` bytes (a power of two,
    /// [`MIN_CAPACITY`]..=[`MAX_CAPACITY`]) in a fresh memfd sealed against
    /// resizing. Returns this side's mapping and the memfd to send to the
    /// peer (over `SCM_RIGHTS`), which maps it with [`Ring::map`].
    pub fn create(capacity: usize) -> Result<(Ring, OwnedFd), TransportError> {
        if !capacity.is_power_of_two() || !(MIN_CAPACITY..=MAX_CAPACITY).contains(&capacity) {
            return Err(TransportError::Capacity(capacity));
        }
        let total = HEADER_LEN + capacity;
        let io = std::io::Error::from;
        let fd =
            rustix::fs::memfd_create("vgpu-ring", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)
                .map_err(io)?;
        rustix::fs::ftruncate(&fd, total as u64).map_err(io)?;
        rustix::fs::fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL)
            .map_err(io)?;
        let map = Mapping::new(fd.as_fd(), total)?;
        // Fresh memfd pages are zero: indices, wake words and states start at 0.
        map.u32_at(OFF_VERSION).store(VERSION, Ordering::Relaxed);
        map.u32_at(OFF_HEADER_LEN)
            .store(HEADER_LEN_U32, Ordering::Relaxed);
        map.u64_at(OFF_CAPACITY)
            .store(capacity as u64, Ordering::Relaxed);
        map.u64_at(OFF_MAGIC).store(MAGIC, Ordering::Release);
        Ok((
            Ring {
                map,
                capacity,
                doorbell: None,
            },
            fd,
        ))
    }

    /// Maps a ring received from the peer, validating the memfd (seals, size)
    /// and the header (magic, version, header length, capacity) before
    /// trusting anything in it. The descriptor may be closed afterwards.
    pub fn map(fd: impl AsFd) -> Result<Ring, TransportError> {
        let fd = fd.as_fd();
        let io = std::io::Error::from;
        let seals = rustix::fs::fcntl_get_seals(fd)
            .map_err(|_| TransportError::Corrupt("descriptor is not a sealable memfd"))?;
        if !seals.contains(SealFlags::SHRINK) {
            return Err(TransportError::Corrupt(
                "memfd is not sealed against shrinking",
            ));
        }
        let size = rustix::fs::fstat(fd).map_err(io)?.st_size;
        let size = usize::try_from(size).map_err(|_| TransportError::Corrupt("memfd size"))?;
        if !(HEADER_LEN + MIN_CAPACITY..=HEADER_LEN + MAX_CAPACITY).contains(&size) {
            return Err(TransportError::Corrupt("memfd size out of range"));
        }
        let map = Mapping::new(fd, size)?;
        if map.u64_at(OFF_MAGIC).load(Ordering::Acquire) != MAGIC {
            return Err(TransportError::Corrupt("bad magic"));
        }
        if map.u32_at(OFF_VERSION).load(Ordering::Relaxed) != VERSION {
            return Err(TransportError::Corrupt("unsupported version"));
        }
        if map.u32_at(OFF_HEADER_LEN).load(Ordering::Relaxed) != HEADER_LEN_U32 {
            return Err(TransportError::Corrupt("bad header length"));
        }
        let capacity = usize::try_from(map.u64_at(OFF_CAPACITY).load(Ordering::Relaxed))
            .ok()
            .filter(|c| {
                c.is_power_of_two()
                    && (MIN_CAPACITY..=MAX_CAPACITY).contains(c)
                    && HEADER_LEN + c == size
            })
            .ok_or(TransportError::Corrupt("capacity does not match the memfd"))?;
        Ok(Ring {
            map,
            capacity,
            doorbell: None,
        })
    }

    /// Bytes in the data area.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Largest message this ring carries: `capacity - 16`.
    pub fn max_message(&self) -> usize {
        self.capacity - RECORD_HEADER
    }

    /// The capacity as a counter distance.
    fn cap(&self) -> u64 {
        self.capacity as u64
    }

    /// Binds this mapping as the ring's only producer.
    pub fn into_producer(self) -> Result<Producer, TransportError> {
        let (head, tail) = self.indices()?;
        self.claim(OFF_PRODUCER_STATE, "producer")?;
        Ok(Producer {
            ring: self,
            tail: Cell::new(tail),
            head_cache: Cell::new(head),
        })
    }

    /// Binds this mapping as the ring's only consumer.
    pub fn into_consumer(self) -> Result<Consumer, TransportError> {
        let (head, _) = self.indices()?;
        self.claim(OFF_CONSUMER_STATE, "consumer")?;
        Ok(Consumer {
            ring: self,
            head: Cell::new(head),
            published: Cell::new(head),
        })
    }

    fn claim(&self, off: usize, role: &'static str) -> Result<(), TransportError> {
        self.map
            .u32_at(off)
            .compare_exchange(
                STATE_FREE,
                STATE_ATTACHED,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .map(drop)
            .map_err(|_| TransportError::RoleTaken(role))
    }

    /// Current (head, tail), checked.
    fn indices(&self) -> Result<(u64, u64), TransportError> {
        let head = self.head().load(Ordering::Acquire);
        let tail = self.tail().load(Ordering::Acquire);
        if !head.is_multiple_of(CACHE_LINE)
            || !tail.is_multiple_of(CACHE_LINE)
            || tail.wrapping_sub(head) > self.cap()
        {
            return Err(TransportError::Corrupt("head/tail out of range"));
        }
        Ok((head, tail))
    }

    fn tail(&self) -> &AtomicU64 {
        self.map.u64_at(OFF_TAIL)
    }
    fn head(&self) -> &AtomicU64 {
        self.map.u64_at(OFF_HEAD)
    }
    fn state(&self, off: usize) -> u32 {
        self.map.u32_at(off).load(Ordering::Acquire)
    }
    fn data_wake(&self) -> SharedWake<'_> {
        SharedWake {
            seq: self.map.u32_at(OFF_DATA_SEQ),
            sleeping: self.map.u32_at(OFF_DATA_SLEEPING),
            doorbell: self.doorbell.as_deref(),
            nap: Cell::new(crate::wake::FIRST_NAP),
        }
    }
    fn space_wake(&self) -> SharedWake<'_> {
        SharedWake {
            seq: self.map.u32_at(OFF_SPACE_SEQ),
            sleeping: self.map.u32_at(OFF_SPACE_SLEEPING),
            doorbell: self.doorbell.as_deref(),
            nap: Cell::new(crate::wake::FIRST_NAP),
        }
    }

    /// Data-area offset of counter `pos`.
    fn offset(&self, pos: u64) -> usize {
        to_usize(pos & (self.cap() - 1))
    }

    /// The record header word (tag or length) at counter `pos`.
    fn record_word(&self, pos: u64) -> Result<&AtomicU64, TransportError> {
        let off = self.offset(pos);
        if !off.is_multiple_of(8) {
            return Err(TransportError::Corrupt("misaligned record"));
        }
        // SAFETY: `off + 8 <= capacity` (off < capacity, both multiples of 8),
        // so the word lies inside the data area of the live mapping; it is
        // 8-aligned (page-aligned base, HEADER_LEN and off multiples of 8);
        // header words are only ever accessed atomically.
        Ok(unsafe {
            &*self
                .map
                .base
                .as_ptr()
                .add(HEADER_LEN + off)
                .cast::<AtomicU64>()
        })
    }

    /// Prefetches the data-area lines of counters `from..to` (see
    /// [`crate::prefetch`]).
    fn prefetch(&self, from: u64, to: u64) {
        let data = self.map.base.as_ptr().wrapping_add(HEADER_LEN);
        let mut pos = from & !(CACHE_LINE - 1);
        while pos < to {
            crate::prefetch(data.wrapping_add(self.offset(pos)));
            pos = pos.wrapping_add(CACHE_LINE);
        }
    }

    /// Copies `src` into the data area from counter `pos` on, wrapping at the
    /// end. Fails (no copy) if `src` is longer than the data area.
    fn write_data(&self, pos: u64, src: &[u8]) -> Result<(), TransportError> {
        let cap = self.capacity;
        if src.len() > cap {
            return Err(TransportError::TooLarge {
                len: src.len(),
                max: self.max_message(),
            });
        }
        let off = self.offset(pos);
        let first = src.len().min(cap - off);
        let data = self.map.base.as_ptr().wrapping_add(HEADER_LEN);
        // SAFETY: `off + first <= cap` and `src.len() - first <= off` (as
        // `src.len() <= cap`), so both destination ranges lie inside the data
        // area of the live mapping; `src` is private memory, so the ranges
        // cannot overlap. No reference to the shared bytes is formed.
        unsafe {
            ptr::copy_nonoverlapping(src.as_ptr(), data.add(off), first);
            ptr::copy_nonoverlapping(src.as_ptr().add(first), data, src.len() - first);
        }
        Ok(())
    }

    /// Fills `dst` from the data area from counter `pos` on, wrapping at the
    /// end. Fails (no copy) if `dst` is longer than the data area.
    fn read_data(&self, pos: u64, dst: &mut [MaybeUninit<u8>]) -> Result<(), TransportError> {
        let cap = self.capacity;
        if dst.len() > cap {
            return Err(TransportError::Corrupt("read longer than the ring"));
        }
        let off = self.offset(pos);
        let first = dst.len().min(cap - off);
        let data = self.map.base.as_ptr().wrapping_add(HEADER_LEN);
        let out = dst.as_mut_ptr().cast::<u8>();
        // SAFETY: as in `write_data`, both source ranges lie inside the data
        // area; `dst` is private memory valid for `dst.len()` bytes, and any
        // byte value is a valid `MaybeUninit<u8>`.
        unsafe {
            ptr::copy_nonoverlapping(data.add(off), out, first);
            ptr::copy_nonoverlapping(data, out.add(first), dst.len() - first);
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // Byte patterns wrap on purpose.
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// A producer and a consumer on two mappings of one memfd, as two
    /// processes would have them, plus a third mapping for tampering.
    fn pair(cap: usize) -> (Producer, Consumer, Ring) {
        let (ring, fd) = Ring::create(cap).expect("create");
        let peer = Ring::map(&fd).expect("map");
        let evil = Ring::map(&fd).expect("map");
        (
            ring.into_producer().expect("producer"),
            peer.into_consumer().expect("consumer"),
            evil,
        )
    }

    fn pop(c: &Consumer) -> Option<Vec<u8>> {
        let mut buf = Vec::new();
        c.try_pop_into(&mut buf).expect("pop").then_some(buf)
    }

    #[test]
    fn create_rejects_bad_capacities() {
        for cap in [0, 1, 32, 100, 4095, MAX_CAPACITY * 2] {
            assert!(
                matches!(Ring::create(cap), Err(TransportError::Capacity(_))),
                "{cap}"
            );
        }
    }

    #[test]
    fn push_pop_in_order_with_parts_and_empty_messages() {
        let (p, c, _) = pair(4096);
        assert_eq!(pop(&c), None);
        assert!(p.try_push(&[b"hello ", b"", b"world"]).expect("push"));
        assert!(p.try_push(&[]).expect("push empty"));
        assert!(p.try_push(&[b"x"]).expect("push"));
        assert_eq!(pop(&c).as_deref(), Some(&b"hello world"[..]));
        assert_eq!(pop(&c).as_deref(), Some(&b""[..]));
        assert_eq!(pop(&c).as_deref(), Some(&b"x"[..]));
        assert_eq!(pop(&c), None);
    }

    #[test]
    fn pop_with_copies_parts_of_a_message_where_asked() {
        let (p, c, _) = pair(256);
        assert_eq!(c.try_pop_with(|_| Ok(())).expect("empty"), None);
        // Walk the messages over the wrap point.
        for lap in 0..20u8 {
            let msg: Vec<u8> = (0..21).map(|i| lap.wrapping_add(i)).collect();
            assert!(p.try_push(&[&msg[..5], &msg[5..]]).expect("push"));
            let (head, tail) = c
                .try_pop_with(|m| {
                    assert_eq!(m.len(), 21);
                    let mut head = [0u8; 5];
                    let mut tail = [0u8; 16];
                    m.read(0, &mut head)?;
                    m.read(5, &mut tail)?;
                    let mut past = [0u8; 2];
                    assert!(matches!(
                        m.read(20, &mut past),
                        Err(TransportError::TooLarge { len: 22, max: 21 })
                    ));
                    assert!(m.read(usize::MAX, &mut past).is_err());
                    Ok((head, tail))
                })
                .expect("pop")
                .expect("a message");
            assert_eq!((&head[..], &tail[..]), (&msg[..5], &msg[5..]));
        }
        // A failing reader still takes the message.
        assert!(p.try_push(&[b"abc"]).expect("push"));
        assert!(p.try_push(&[b"def"]).expect("push"));
        assert!(c
            .try_pop_with(|_| Err::<(), _>(TransportError::NoFd))
            .is_err());
        assert_eq!(pop(&c).as_deref(), Some(&b"def"[..]));
        // The waiting form.
        assert!(p.try_push(&[b"xyz"]).expect("push"));
        let got = c
            .pop_with(&WaitPolicy::busy(), |m| {
                let mut b = vec![0u8; m.len()];
                m.read(0, &mut b)?;
                Ok(b)
            })
            .expect("pop_with");
        assert_eq!(got, b"xyz");
    }

    #[test]
    fn head_is_published_in_batches_or_once_empty() {
        // 4096 bytes: a batch is 256 bytes, 4 records of one 64-byte line
        // (16 header + 48 payload bytes at most).
        let (p, c, _) = pair(4096);
        let mut pushed = 0u32;
        while p
            .try_push(&[&pushed.to_le_bytes(), &[0; 44]])
            .expect("push")
        {
            pushed += 1;
        }
        assert_eq!(pushed, 64, "the ring holds 64 records");
        let space = |p: &Producer| p.try_push(&[&[7; 16]]).expect("push");
        for i in 0..3 {
            assert_eq!(pop(&c).map(|m| m[0]), Some(i));
        }
        assert!(!space(&p), "3 records taken, not yet published");
        assert_eq!(pop(&c).map(|m| m[0]), Some(3));
        assert!(space(&p), "the 4th record completes a batch");
        for _ in 4..65 {
            assert!(pop(&c).is_some());
        }
        assert_eq!(pop(&c), None);
        for i in 0..64 {
            assert!(space(&p), "all taken and published: record {i} fits");
        }
        assert!(!space(&p), "full again");
        for _ in 0..64 {
            assert!(pop(&c).is_some());
        }
        // Taken short of a batch: published once the consumer finds the
        // ring empty (as it does before it waits).
        for _ in 0..3 {
            assert!(space(&p));
        }
        for _ in 0..3 {
            assert!(pop(&c).is_some());
        }
        assert!(
            !p.try_push(&[&[0; 4080]]).expect("push"),
            "not published yet"
        );
        assert_eq!(pop(&c), None);
        assert!(
            p.try_push(&[&[0; 4080]]).expect("push"),
            "the whole ring is free"
        );
    }

    #[test]
    fn full_then_space_after_pop() {
        let (p, c, _) = pair(128);
        // 128 bytes hold two one-line records (16 header + 16 payload, then
        // padding to 64).
        for i in 0..2u8 {
            assert!(p.try_push(&[&[i; 16]]).expect("push"), "record {i}");
        }
        assert!(!p.try_push(&[&[9; 1]]).expect("full"));
        assert_eq!(pop(&c), Some(vec![0; 16]));
        // Taken, and published once the consumer finds nothing more.
        assert_eq!(pop(&c), Some(vec![1; 16]));
        assert_eq!(pop(&c), None);
        assert!(p.try_push(&[&[2; 16]]).expect("space again"));
        assert!(p.try_push(&[&[3; 16]]).expect("space again"));
        assert!(!p.try_push(&[&[]]).expect("full again"));
        for i in 2..4u8 {
            assert_eq!(pop(&c), Some(vec![i; 16]));
        }
        assert_eq!(pop(&c), None);
    }

    #[test]
    fn wrap_around_splits_payload() {
        let (p, c, _) = pair(256);
        // Records of one to four lines walk the split point over every line
        // of the ring, many laps.
        for round in 0..500u32 {
            let len = (round * 37 % 241) as usize;
            let msg: Vec<u8> = (0..len).map(|i| (round as usize * 31 + i) as u8).collect();
            assert!(p
                .try_push(&[&msg[..len / 2], &msg[len / 2..]])
                .expect("push"));
            assert_eq!(pop(&c), Some(msg), "round {round}");
        }
    }

    #[test]
    fn max_size_message_fits_exactly_and_one_more_byte_does_not() {
        let (p, c, _) = pair(256);
        assert_eq!(p.max_message(), 240);
        // Move the indices off zero so the big record splits.
        assert!(p.try_push(&[&[1; 20]]).expect("push"));
        assert_eq!(pop(&c), Some(vec![1; 20]));
        assert_eq!(pop(&c), None, "publishes the space");
        let big: Vec<u8> = (0..240).map(|i| i as u8).collect();
        assert!(p.try_push(&[&big]).expect("max"));
        assert!(!p.try_push(&[]).expect("now full"));
        assert_eq!(pop(&c), Some(big));
        let e = p.try_push(&[&[0; 200], &[0; 41]]).expect_err("too large");
        assert!(
            matches!(e, TransportError::TooLarge { len: 241, max: 240 }),
            "{e}"
        );
    }

    #[test]
    fn roles_are_claimed_once() {
        let (ring, fd) = Ring::create(64).expect("create");
        let _p = ring.into_producer().expect("producer");
        let again = Ring::map(&fd).expect("map").into_producer();
        assert!(matches!(again, Err(TransportError::RoleTaken("producer"))));
        let _c = Ring::map(&fd)
            .expect("map")
            .into_consumer()
            .expect("consumer");
        let again = Ring::map(&fd).expect("map").into_consumer();
        assert!(matches!(again, Err(TransportError::RoleTaken("consumer"))));
    }

    #[test]
    fn producer_close_delivers_the_rest_then_peer_gone() {
        let (p, c, _) = pair(64);
        p.try_push(&[b"last"]).expect("push");
        drop(p);
        assert!(c.peer_closed());
        assert_eq!(pop(&c).as_deref(), Some(&b"last"[..]));
        let mut buf = Vec::new();
        assert!(matches!(
            c.try_pop_into(&mut buf),
            Err(TransportError::PeerGone)
        ));
        let r = c.pop_into(&mut buf, &WaitPolicy::default());
        assert!(matches!(r, Err(TransportError::PeerGone)));
    }

    #[test]
    fn consumer_close_fails_pushes() {
        let (p, c, _) = pair(64);
        drop(c);
        assert!(p.peer_closed());
        assert!(matches!(p.try_push(&[b"x"]), Err(TransportError::PeerGone)));
    }

    #[test]
    fn blocking_waits_time_out() {
        let (p, c, _) = pair(64);
        let policy = WaitPolicy::default().with_timeout(Duration::from_millis(30));
        let mut buf = Vec::new();
        let t0 = Instant::now();
        assert!(matches!(
            c.pop_into(&mut buf, &policy),
            Err(TransportError::Timeout)
        ));
        assert!(t0.elapsed() >= Duration::from_millis(30));
        p.push(&[&[0; 48]], &policy).expect("fills the ring");
        assert!(matches!(
            p.push(&[b"x"], &policy),
            Err(TransportError::Timeout)
        ));
    }

    #[test]
    fn blocked_waiters_are_woken_by_close() {
        let (p, c, _) = pair(64);
        let t = std::thread::spawn(move || {
            let mut buf = Vec::new();
            c.pop_into(
                &mut buf,
                &WaitPolicy::sleep().with_timeout(Duration::from_secs(10)),
            )
        });
        std::thread::sleep(Duration::from_millis(20));
        drop(p);
        assert!(matches!(
            t.join().expect("join"),
            Err(TransportError::PeerGone)
        ));

        let (p, c, _) = pair(64);
        p.try_push(&[&[0; 48]]).expect("fill");
        let t = std::thread::spawn(move || {
            p.push(
                &[b"x"],
                &WaitPolicy::sleep().with_timeout(Duration::from_secs(10)),
            )
        });
        std::thread::sleep(Duration::from_millis(20));
        drop(c);
        assert!(matches!(
            t.join().expect("join"),
            Err(TransportError::PeerGone)
        ));
    }

    #[test]
    fn threads_stream_through_a_small_ring_with_futex_waits() {
        let (p, c, _) = pair(256);
        const N: u32 = 20_000;
        // Spin zero: every wait goes through the futex path.
        let policy = WaitPolicy::sleep().with_timeout(Duration::from_secs(20));
        let t = std::thread::spawn(move || {
            for i in 0..N {
                let len = (i % 97) as usize;
                p.push(&[&i.to_le_bytes(), &vec![i as u8; len]], &policy)
                    .expect("push");
            }
        });
        let mut buf = Vec::new();
        for i in 0..N {
            c.pop_into(&mut buf, &policy).expect("pop");
            assert_eq!(buf[..4], i.to_le_bytes());
            assert_eq!(buf.len(), 4 + (i % 97) as usize);
            assert!(buf[4..].iter().all(|&b| b == i as u8));
        }
        t.join().expect("join");
    }

    // ---- a hostile or broken peer: errors, never panics or UB ----

    fn corrupt(r: Result<bool, TransportError>) -> &'static str {
        match r {
            Err(TransportError::Corrupt(why)) => why,
            other => panic!("expected Corrupt, got {other:?}"),
        }
    }

    #[test]
    fn map_validates_the_header() {
        let cases: [(usize, u64, &str); 4] = [
            (OFF_MAGIC, 0x1234, "bad magic"),
            (OFF_VERSION, 1, "unsupported version"),
            (OFF_HEADER_LEN, 8192, "bad header length"),
            (OFF_CAPACITY, 128, "capacity does not match the memfd"),
        ];
        for (off, value, why) in cases {
            let (ring, fd) = Ring::create(64).expect("create");
            if off == OFF_VERSION || off == OFF_HEADER_LEN {
                ring.map.u32_at(off).store(value as u32, Ordering::Relaxed);
            } else {
                ring.map.u64_at(off).store(value, Ordering::Relaxed);
            }
            match Ring::map(&fd) {
                Err(TransportError::Corrupt(w)) => assert_eq!(w, why),
                other => panic!("{why}: got {other:?}"),
            }
        }
        // A capacity that is not a power of two, with a matching file size.
        let (ring, fd) = Ring::create(64).expect("create");
        ring.map.u64_at(OFF_CAPACITY).store(96, Ordering::Relaxed);
        assert!(matches!(Ring::map(&fd), Err(TransportError::Corrupt(_))));
    }

    #[test]
    fn map_rejects_unsealed_or_foreign_descriptors() {
        let fd = rustix::fs::memfd_create("x", MemfdFlags::CLOEXEC).expect("memfd");
        rustix::fs::ftruncate(&fd, (HEADER_LEN + 64) as u64).expect("truncate");
        assert!(matches!(Ring::map(&fd), Err(TransportError::Corrupt(_))));
        let file = tempfile::tempfile().expect("tempfile");
        assert!(matches!(Ring::map(&file), Err(TransportError::Corrupt(_))));
        // Sealed, but too small to hold a header.
        let fd = rustix::fs::memfd_create("x", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)
            .expect("memfd");
        rustix::fs::ftruncate(&fd, 100).expect("truncate");
        rustix::fs::fcntl_add_seals(&fd, SealFlags::SHRINK).expect("seal");
        assert!(matches!(Ring::map(&fd), Err(TransportError::Corrupt(_))));
    }

    #[test]
    fn map_rejects_broken_indices() {
        let (ring, fd) = Ring::create(64).expect("create");
        ring.tail().store(72, Ordering::Relaxed);
        let r = Ring::map(&fd).expect("map").into_consumer();
        assert!(matches!(r, Err(TransportError::Corrupt(_))));
        ring.tail().store(4, Ordering::Relaxed);
        let r = Ring::map(&fd).expect("map").into_producer();
        assert!(matches!(r, Err(TransportError::Corrupt(_))));
    }

    #[test]
    fn consumer_ignores_the_tail_index() {
        // The consumer reads records by their tags; a scribbled `tail`
        // changes nothing it reads.
        for bad_tail in [72, 12, u64::MAX - 7] {
            let (p, c, evil) = pair(64);
            evil.tail().store(bad_tail, Ordering::Release);
            assert_eq!(pop(&c), None);
            p.try_push(&[b"ok"]).expect("push");
            evil.tail().store(bad_tail, Ordering::Release);
            assert_eq!(pop(&c).as_deref(), Some(&b"ok"[..]));
        }
    }

    #[test]
    fn consumer_rejects_bad_record_headers() {
        let (p, c, evil) = pair(64);
        p.try_push(&[&[7; 8]]).expect("push");
        let mut buf = Vec::new();
        // Longer than the largest message (48 bytes here).
        for bad in [49, u64::from(u32::MAX), 1 << 40] {
            evil.record_word(8)
                .expect("word")
                .store(bad, Ordering::Relaxed);
            assert_eq!(
                corrupt(c.try_pop_into(&mut buf)),
                "record length out of range"
            );
        }
        // Repaired, the message comes through.
        evil.record_word(8)
            .expect("word")
            .store(8, Ordering::Relaxed);
        assert_eq!(pop(&c), Some(vec![7; 8]));
        // A tag that is not the record's own is no record.
        p.try_push(&[&[8; 8]]).expect("push");
        let at: u64 = 64;
        evil.record_word(at)
            .expect("word")
            .store(tag(at.wrapping_sub(64)), Ordering::Relaxed);
        assert_eq!(pop(&c), None, "a tag of the lap before");
        evil.record_word(at)
            .expect("word")
            .store(tag(at), Ordering::Relaxed);
        assert_eq!(pop(&c), Some(vec![8; 8]));
    }

    #[test]
    fn producer_rejects_a_head_out_of_range() {
        let (p, _c, evil) = pair(64);
        for i in 0..4u8 {
            p.try_push(&[&[i; 8]]).expect("push");
        }
        // The consumer claims to have released more than was published.
        evil.head().store(128, Ordering::Release);
        assert_eq!(corrupt(p.try_push(&[b"x"])), "head index out of range");
        // A head moved backwards only makes the ring look full.
        evil.head().store(0, Ordering::Release);
        assert!(!p.try_push(&[b"x"]).expect("full"));
    }

    #[test]
    fn scribbled_wake_words_cost_only_time() {
        let (p, c, evil) = pair(64);
        evil.map
            .u32_at(OFF_DATA_SLEEPING)
            .store(u32::MAX, Ordering::Relaxed);
        evil.map
            .u32_at(OFF_DATA_SEQ)
            .store(u32::MAX, Ordering::Relaxed);
        p.try_push(&[b"ok"]).expect("push");
        let mut buf = Vec::new();
        c.pop_into(
            &mut buf,
            &WaitPolicy::sleep().with_timeout(Duration::from_secs(5)),
        )
        .expect("pop");
        assert_eq!(buf, b"ok");
        evil.map
            .u32_at(OFF_PRODUCER_STATE)
            .store(77, Ordering::Relaxed);
        assert!(matches!(
            c.pop_into(
                &mut buf,
                &WaitPolicy::sleep().with_timeout(Duration::from_millis(10))
            ),
            Err(TransportError::Timeout)
        ));
    }
}
