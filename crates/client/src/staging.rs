//! Pageable copies staged through pinned memory shared with the worker.
//!
//! A synchronous copy of at least [`MIN_STAGED`] bytes between pageable host
//! memory and the device goes through a staging arena: [`ARENA`] bytes of
//! pinned pages that the worker mapped and registered with the driver
//! (`MemHostAlloc`), cut into [`SLOTS`] slots.
//!
//! - **Host to device.** The client copies a chunk of the source into a slot
//!   with several threads, then asks the worker to copy the slot to the device
//!   (`MemcpyHtoDShared`, a DMA from registered memory); while the worker
//!   runs it, the client fills the next slot.
//! - **Device to host.** The client asks for several chunks at once
//!   (`MemcpyDtoHShared`); as each reply arrives it copies that slot out with
//!   several threads while the worker's DMA fills the next.
//!
//! Each byte is copied once by the CPU (in parallel) and once by DMA, and the
//! two overlap. A slot is reused only after the reply of the call that used
//! it: with [`SLOTS`] slots and at most `SLOTS - 1` calls in flight, the call
//! that used a slot before has always been answered
//! ([`crate::runtime::Session::call_window`]).
//!
//! Arenas belong to the session: a copy takes an idle one or maps a new one
//! (at most [`MAX_ARENAS`]; beyond that, or when the worker cannot pin
//! memory, the copy takes the ordinary path through the lane). The worker
//! frees them with the session.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use rayon::prelude::*;
use vgpu_proto::{memcpy_dtoh_shared, memcpy_htod_shared, Op};
use zerocopy::little_endian::U64;
use zerocopy::IntoBytes;

use crate::edge::{CuError, CuResult};
use crate::runtime::Session;

/// Smallest copy worth staging.
pub const MIN_STAGED: usize = 1 << 20;
/// Bytes of one staging arena.
const ARENA: usize = 32 << 20;
/// Slots of an arena: chunks in flight plus the one being copied here.
const SLOTS: usize = 4;
/// Smallest chunk of a staged copy.
const MIN_CHUNK: usize = 256 << 10;
/// Bytes one thread copies at a time.
const STRIPE: usize = 1 << 20;
/// Arenas a session maps at most (copies running at once).
const MAX_ARENAS: usize = 8;

/// One arena: the same pages at the client's and the worker's address.
struct Arena {
    at: *mut u8,
    worker: u64,
}

// SAFETY: an arena is a mapping owned by the session; it moves between
// threads only through the session's idle list, and one copy uses it at a time.
unsafe impl Send for Arena {}

/// A session's staging arenas and copy threads.
pub struct Stager {
    /// Whether staging is possible (the worker can share memory with us).
    enabled: bool,
    /// Threads that copy host memory in parallel (`VGPU_COPY_THREADS`).
    threads: usize,
    pool: OnceLock<Option<rayon::ThreadPool>>,
    idle: Mutex<Vec<Arena>>,
    /// Arenas mapped so far.
    mapped: Mutex<usize>,
    /// Copies staged so far, for the trace summary and the tests.
    pub staged: AtomicU64,
}

impl std::fmt::Debug for Stager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stager")
            .field("enabled", &self.enabled)
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

impl Stager {
    pub fn new(enabled: bool, threads: usize) -> Stager {
        Stager {
            enabled,
            threads: threads.max(1),
            pool: OnceLock::new(),
            idle: Mutex::new(Vec::new()),
            mapped: Mutex::new(0),
            staged: AtomicU64::new(0),
        }
    }

    /// An idle arena, or a new one; `None` when staging is off or no arena
    /// can be had (the caller takes the ordinary path).
    fn take(&self, s: &Session) -> Option<Arena> {
        if !self.enabled {
            return None;
        }
        if let Some(a) = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return Some(a);
        }
        let mut mapped = self.mapped.lock().unwrap_or_else(|e| e.into_inner());
        if *mapped >= MAX_ARENAS {
            return None;
        }
        // Portable: the pages serve copies in every context.
        match crate::api::map_shared(s, ARENA, 1) {
            Ok(shared) => {
                *mapped += 1;
                Some(Arena {
                    at: shared.at.cast(),
                    worker: shared.worker,
                })
            }
            Err(e) => {
                crate::log::line(format_args!(
                    "cannot map a staging arena ({e:?}); pageable copies take the lane"
                ));
                None
            }
        }
    }

    fn give_back(&self, a: Arena) {
        self.staged.fetch_add(1, Ordering::Relaxed);
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).push(a);
    }

    /// Copies `n` bytes from `src` to `dst` with the copy threads.
    ///
    /// # Safety
    /// `src` must be readable and `dst` writable for `n` bytes, and nothing
    /// else may write either range meanwhile.
    unsafe fn copy(&self, dst: *mut u8, src: *const u8, n: usize) {
        let pool = self.pool.get_or_init(|| {
            if self.threads < 2 {
                return None;
            }
            rayon::ThreadPoolBuilder::new()
                .num_threads(self.threads)
                .thread_name(|i| format!("vgpu-copy-{i}"))
                .build()
                .ok()
        });
        let stripes = n.div_ceil(STRIPE);
        let (dst, src) = (Addr(dst), Addr(src.cast_mut()));
        let one = |k: usize| {
            let at = k * STRIPE;
            let len = STRIPE.min(n - at);
            // SAFETY: stripe `k` lies inside both ranges (the caller's
            // promise); stripes do not overlap, so threads never share bytes.
            unsafe { std::ptr::copy_nonoverlapping(src.at(at), dst.at(at), len) };
        };
        match pool {
            Some(pool) if stripes > 1 => {
                pool.install(|| (0..stripes).into_par_iter().for_each(one))
            }
            _ => (0..stripes).for_each(one),
        }
    }

    /// A synchronous copy of `src` to device address `dst` through an arena.
    /// `None`: no arena (take the ordinary path).
    pub fn htod(&self, s: &Session, dst: u64, src: &[u8]) -> Option<CuResult<()>> {
        let arena = self.take(s)?;
        let chunk = chunk_len(src.len());
        let count = src.len().div_ceil(chunk);
        let result = s.call_window(
            Op::MemcpyHtoDShared,
            count,
            SLOTS - 1,
            |i| {
                let (at, len) = (i * chunk, chunk.min(src.len() - i * chunk));
                let slot = (i % SLOTS) * chunk;
                // SAFETY: the slot lies in the arena (chunk * SLOTS <= ARENA)
                // and the worker is done with it (see the module docs); the
                // source is the application's buffer of `src.len()` bytes.
                unsafe { self.copy(arena.at.add(slot), src.as_ptr().add(at), len) };
                let to = dst.checked_add(at as u64).ok_or(CuError::INVALID_VALUE)?;
                let r = memcpy_htod_shared::Request {
                    dst: U64::new(to),
                    host: U64::new(arena.worker + slot as u64),
                    bytes: U64::new(len as u64),
                    stream: U64::new(0),
                    is_async: 0,
                };
                Ok(r.as_bytes().to_vec())
            },
            |_| Ok(()),
        );
        self.give_back(arena);
        Some(result)
    }

    /// A synchronous copy of device address `src` to `dst` through an
    /// arena. `None`: no arena (take the ordinary path).
    pub fn dtoh(&self, s: &Session, dst: &mut [u8], src: u64) -> Option<CuResult<()>> {
        let arena = self.take(s)?;
        let n = dst.len();
        let chunk = chunk_len(n);
        let count = n.div_ceil(chunk);
        let out = dst.as_mut_ptr();
        let result = s.call_window(
            Op::MemcpyDtoHShared,
            count,
            SLOTS - 1,
            |i| {
                let (at, len) = (i * chunk, chunk.min(n - i * chunk));
                let slot = (i % SLOTS) * chunk;
                let from = src.checked_add(at as u64).ok_or(CuError::INVALID_VALUE)?;
                let r = memcpy_dtoh_shared::Request {
                    host: U64::new(arena.worker + slot as u64),
                    src: U64::new(from),
                    bytes: U64::new(len as u64),
                    stream: U64::new(0),
                    is_async: 0,
                };
                Ok(r.as_bytes().to_vec())
            },
            |i| {
                let (at, len) = (i * chunk, chunk.min(n - i * chunk));
                let slot = (i % SLOTS) * chunk;
                // SAFETY: the worker's DMA into this slot finished before its
                // reply; `out` is the application's buffer of `n` bytes.
                unsafe { self.copy(out.add(at), arena.at.add(slot), len) };
                Ok(())
            },
        );
        self.give_back(arena);
        Some(result)
    }
}

/// A raw address the copy threads share (each writes its own stripe).
#[derive(Clone, Copy)]
struct Addr(*mut u8);

impl Addr {
    /// The address `off` bytes further on.
    ///
    /// # Safety
    /// `off` must stay inside the range the address starts.
    unsafe fn at(self, off: usize) -> *mut u8 {
        // SAFETY: the caller keeps `off` inside the range.
        unsafe { self.0.add(off) }
    }
}

// SAFETY: only used by `Stager::copy`, whose threads touch disjoint stripes
// of ranges the caller owns for the duration of the copy.
unsafe impl Send for Addr {}
// SAFETY: as above.
unsafe impl Sync for Addr {}

/// The chunk of a staged copy of `n` bytes: a slot's share of the arena,
/// smaller for copies that would not fill the slots, so even a copy of a
/// few MiB has chunks in flight.
fn chunk_len(n: usize) -> usize {
    let slot = ARENA / SLOTS;
    n.div_ceil(SLOTS)
        .next_multiple_of(64 << 10)
        .clamp(MIN_CHUNK, slot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_fit_the_slots() {
        assert_eq!(chunk_len(MIN_STAGED), MIN_CHUNK);
        assert_eq!(chunk_len(4 << 20), 1 << 20);
        assert_eq!(chunk_len(256 << 20), ARENA / SLOTS);
        for n in [MIN_STAGED, 3 << 20, 5_000_001, 33 << 20, 1 << 30] {
            assert!(chunk_len(n) * SLOTS <= ARENA, "{n}");
        }
    }

    #[test]
    fn parallel_copies_move_every_byte() {
        let stager = Stager::new(true, 3);
        for n in [1, STRIPE - 1, STRIPE, 5 * STRIPE + 17] {
            let src: Vec<u8> = (0..n).map(|i| (i * 7 + i / 251).to_le_bytes()[0]).collect();
            let mut dst = vec![0u8; n];
            // SAFETY: both buffers are `n` bytes and owned here.
            unsafe { stager.copy(dst.as_mut_ptr(), src.as_ptr(), n) };
            assert_eq!(dst, src, "{n} bytes");
        }
    }
}
