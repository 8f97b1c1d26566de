//! `cuMemHostRegister`: the application's own pages become pages shared
//! with the worker, at the same address, and the worker registers them with
//! the driver, so copies through them need no bytes on the socket and a
//! kernel reads and writes them where the application does.
//!
//! The pages are moved in place: the worker maps a new memfd at the same
//! address in its process, the client copies the current bytes into it and
//! maps it over the application's range with `MAP_FIXED`. What that cannot
//! do (docs/adr/0005-managed-memory-and-host-registration.md):
//! - pages that an earlier registration moved and left are moved again as
//!   they are;
//! - shared anonymous mappings move too, so a process that shares them
//!   (a forked child) no longer sees the application's stores;
//! - shared file mappings give `CUDA_ERROR_INVALID_VALUE`, as driver 580
//!   answers for them; private file mappings and the stack keep their own
//!   pages: registering them fails with `CUDA_ERROR_NOT_SUPPORTED` and a
//!   logged reason;
//! - a store another thread makes to the range while it moves may be lost.
//!
//! Whole pages move, so registrations of disjoint bytes may share a page
//! (two small `malloc` blocks side by side), as driver 580 accepts. A
//! registration moves only the pages no live registration moved yet; the
//! moved pages (a run, one worker mapping each) stay registered while any
//! registration's pages meet them. A shared page keeps the flags of the
//! registration that moved it on the device side; `cuMemHostGetFlags` and
//! the pointer attributes answer per registration. A registration that
//! spans runs is served by each: copies through it are staged, and a kernel
//! reaches it at its host address when the worker mapped its runs at the
//! application's addresses (the usual case).
//!
//! When the worker cannot map the same address (it is in use there), it
//! maps the pages elsewhere: copies still go through them, and the device
//! pointer is the one `cuMemHostGetDevicePointer` reports.

use std::ffi::{c_uint, c_void};
use std::fs;

use crate::edge::{wire, CuError, CuResult};
use crate::objects::{HostInfo, HostKind, Objects, Registration};
use crate::runtime::{runtime, Session};

/// `CU_MEMHOSTREGISTER_PORTABLE | DEVICEMAP | IOMEMORY | READ_ONLY`.
const REGISTER_FLAGS: c_uint = 0xF;
/// `CU_MEMHOSTREGISTER_IOMEMORY`.
const REGISTER_IOMEMORY: c_uint = 0x4;
/// `CU_MEMHOSTALLOC_PORTABLE | DEVICEMAP`: what `cuMemHostGetFlags` reports
/// of registered memory, which is always mapped for the device.
const PORTABLE: c_uint = 0x1;
const DEVICEMAP: c_uint = 0x2;
const PAGE: u64 = 4096;
/// How the worker's memfds show in `/proc/self/maps`.
const MEMFD_NAME: &str = "/memfd:vgpu-pinned";

/// The whole pages around `len` bytes at `start`: `[base, top)`.
fn pages(start: u64, len: u64) -> CuResult<(u64, u64)> {
    let end = start.checked_add(len).ok_or(CuError::INVALID_VALUE)?;
    let top = end
        .checked_next_multiple_of(PAGE)
        .ok_or(CuError::INVALID_VALUE)?;
    Ok((start & !(PAGE - 1), top))
}

/// `cuMemHostRegister` and `cuMemHostRegister_v2`.
pub fn register(p: *mut c_void, len: usize, flags: c_uint) -> CuResult<()> {
    let s = runtime().session()?;
    let ctx = crate::context::current();
    if !s.objects().contexts.contains_key(&ctx) {
        return Err(CuError::INVALID_CONTEXT);
    }
    if p.is_null() || len == 0 || flags & !REGISTER_FLAGS != 0 {
        return Err(CuError::INVALID_VALUE);
    }
    if flags & REGISTER_IOMEMORY != 0 {
        // The pages vgpu can register are the application's RAM, never a
        // device's I/O memory: the driver refuses such pages so.
        crate::log::line(format_args!(
            "cuMemHostRegister: CU_MEMHOSTREGISTER_IOMEMORY on memory that is not I/O memory"
        ));
        return Err(CuError::INVALID_VALUE);
    }
    if s.remote {
        crate::log::line(format_args!(
            "cuMemHostRegister: the mediator is remote (TCP) and cannot reach this process's pages"
        ));
        return Err(CuError::NOT_SUPPORTED);
    }
    let _one_at_a_time = s.registering.lock().unwrap_or_else(|e| e.into_inner());
    let start = p as u64;
    let (base, top) = pages(start, len as u64)?;
    let gaps = {
        let o = s.objects();
        if registered_bytes_meet(&o, start, start + len as u64) {
            return Err(CuError::HOST_MEMORY_ALREADY_REGISTERED);
        }
        let runs = runs_in(&o, base, top);
        if runs
            .iter()
            .any(|(_, i)| i.local || !matches!(i.kind, HostKind::Registered { .. }))
        {
            // Pinned or managed memory of the driver's own is not the
            // application's to register.
            return Err(CuError::INVALID_VALUE);
        }
        gaps(base, top, &runs)
    };
    // Every page to move must be movable before any moves.
    let protections = gaps
        .iter()
        .map(|&(b, t)| movable(b, t))
        .collect::<CuResult<Vec<_>>>()?;
    let mut moved = Vec::new();
    for (&(b, t), &prot) in gaps.iter().zip(&protections) {
        match move_pages(s, b, t, prot, flags) {
            Ok(shared) => moved.push((b, shared)),
            Err(e) => {
                for (_, shared) in moved {
                    let _ = super::host::free_shared(s, shared.worker);
                }
                return Err(e);
            }
        }
    }
    let mut o = s.objects();
    for (b, shared) in moved {
        let info = HostInfo {
            len: shared.len,
            worker: shared.worker,
            dptr: shared.dptr,
            flags: (flags & PORTABLE) | DEVICEMAP,
            local: false,
            ctx,
            kind: HostKind::Registered {
                start,
                len: len as u64,
            },
        };
        o.host.insert(b, info);
    }
    let registration = Registration {
        len: len as u64,
        flags: (flags & PORTABLE) | DEVICEMAP,
    };
    o.registrations.insert(start, registration);
    Ok(())
}

/// Pages moved into shared memory: their length and the worker's address
/// and device pointer for them.
struct Moved {
    len: u64,
    worker: u64,
    dptr: u64,
}

/// Moves the application's pages `[base, top)`, of protection `prot`, into
/// pages shared with the worker, registered with `flags`.
fn move_pages(
    s: &Session,
    base: u64,
    top: u64,
    prot: libc::c_int,
    flags: c_uint,
) -> CuResult<Moved> {
    let span = wire::usize(top - base);
    let shared = match super::host::share_at(s, base, span, flags, false)? {
        Some(v) => v,
        None => super::host::share_at(s, 0, span, flags, false)?.ok_or(CuError::OUT_OF_MEMORY)?,
    };
    let (tmp, fd) = shared;
    // Move the application's bytes into the shared pages, then put the
    // shared pages where the application's were.
    // SAFETY: `tmp.at` is a fresh mapping of `span` bytes and `[base, top)`
    // is the application's readable memory (checked by `movable`); the two
    // cannot overlap, the fresh one having been placed where nothing was.
    unsafe {
        std::ptr::copy_nonoverlapping(
            wire::handle::<u8>(base).cast_const(),
            tmp.at.cast::<u8>(),
            span,
        )
    };
    // SAFETY: replaces the application's own pages `[base, top)`, which it
    // asked to register, by the same bytes in the shared file.
    let moved = unsafe {
        libc::mmap(
            wire::handle::<c_void>(base),
            span,
            prot,
            libc::MAP_SHARED | libc::MAP_FIXED,
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            0,
        )
    };
    if tmp.at as u64 != base {
        // SAFETY: the temporary view made by `share_at`, no longer needed.
        unsafe { libc::munmap(tmp.at, span) };
    }
    if moved == libc::MAP_FAILED {
        let _ = super::host::free_shared(s, tmp.worker);
        return Err(CuError::OUT_OF_MEMORY);
    }
    Ok(Moved {
        len: span as u64,
        worker: tmp.worker,
        dptr: tmp.dptr,
    })
}

/// `cuMemHostUnregister`: `p` must be the pointer a registration was made
/// with. The moved pages that no other registration's pages meet any more
/// are let go by the worker; the application keeps them, with their bytes.
/// A pointer inside registered, pinned or managed memory that is not such a
/// start is `CUDA_ERROR_INVALID_VALUE`; any other
/// `CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED`, as the driver answers.
pub fn unregister(p: *mut c_void) -> CuResult<()> {
    let s = runtime().session()?;
    let _one_at_a_time = s.registering.lock().unwrap_or_else(|e| e.into_inner());
    let start = p as u64;
    let released = {
        let mut o = s.objects();
        let Some(r) = o.registrations.remove(&start) else {
            // Pages only registrations moved answer for their registrations' bytes.
            let pinned = o
                .host_range(start, 1)
                .is_some_and(|(_, i)| !i.local && !matches!(i.kind, HostKind::Registered { .. }));
            return Err(if pinned || o.registration_at(start).is_some() {
                CuError::INVALID_VALUE
            } else {
                CuError::HOST_MEMORY_NOT_REGISTERED
            });
        };
        let (base, top) = pages(start, r.len)?;
        let unused: Vec<u64> = runs_in(&o, base, top)
            .into_iter()
            .filter(|&(b, i)| !pages_meet(&o, b, b + i.len))
            .map(|(b, _)| b)
            .collect();
        unused
            .into_iter()
            .filter_map(|b| o.host.remove(&b))
            .collect::<Vec<_>>()
    };
    let mut result = Ok(());
    for info in released {
        result = result.and(super::host::free_shared(s, info.worker));
    }
    result
}

/// The host pages this session shares that meet `[base, top)`, in order.
fn runs_in(o: &Objects, base: u64, top: u64) -> Vec<(u64, HostInfo)> {
    let first = o
        .host
        .range(..base)
        .next_back()
        .filter(|(&b, i)| b + i.len > base)
        .map(|(&b, &i)| (b, i));
    first
        .into_iter()
        .chain(o.host.range(base..top).map(|(&b, &i)| (b, i)))
        .collect()
}

/// The parts of `[base, top)` that none of `runs` (in order) covers.
fn gaps(base: u64, top: u64, runs: &[(u64, HostInfo)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut at = base;
    for &(b, i) in runs {
        if b > at {
            out.push((at, b.min(top)));
        }
        at = at.max(b + i.len);
    }
    if at < top {
        out.push((at, top));
    }
    out
}

/// Whether a live registration's bytes meet `[start, end)`.
fn registered_bytes_meet(o: &Objects, start: u64, end: u64) -> bool {
    o.registrations
        .range(..end)
        .next_back()
        .is_some_and(|(&s, r)| s + r.len > start)
}

/// Whether a live registration's pages meet `[base, top)`. Registrations
/// are disjoint and ordered, so the last one starting below `top` ends last.
fn pages_meet(o: &Objects, base: u64, top: u64) -> bool {
    o.registrations
        .range(..top)
        .next_back()
        .is_some_and(|(&s, r)| (s + r.len).next_multiple_of(PAGE) > base)
}

/// The protection of `[base, top)` if every page of it is private anonymous
/// memory of this process, which can move into shared pages; otherwise why
/// not, logged.
fn movable(base: u64, top: u64) -> CuResult<libc::c_int> {
    let maps = fs::read_to_string("/proc/self/maps").map_err(|_| CuError::OPERATING_SYSTEM)?;
    let mut covered = base;
    let mut prot = None;
    for line in maps.lines() {
        let Some(m) = Mapping::parse(line) else {
            continue;
        };
        if m.end <= covered || m.start >= top {
            continue;
        }
        if m.start > covered {
            break;
        }
        if m.shared_file {
            return Err(CuError::INVALID_VALUE);
        }
        if !m.anonymous {
            crate::log::line(format_args!(
                "cuMemHostRegister: {base:#x}..{top:#x} is not private anonymous memory ({}); \
                 vgpu can share only such pages with the worker",
                m.what
            ));
            return Err(CuError::NOT_SUPPORTED);
        }
        if prot.is_some_and(|p| p != m.prot) {
            crate::log::line(format_args!(
                "cuMemHostRegister: {base:#x}..{top:#x} mixes page protections"
            ));
            return Err(CuError::NOT_SUPPORTED);
        }
        if m.prot & libc::PROT_READ == 0 {
            // Pages the application cannot read: the driver refuses them.
            return Err(CuError::INVALID_VALUE);
        }
        prot = Some(m.prot);
        covered = m.end;
        if covered >= top {
            return Ok(m.prot);
        }
    }
    // Part of the range is not mapped: the driver refuses such a range.
    Err(CuError::INVALID_VALUE)
}

/// One line of `/proc/self/maps`.
struct Mapping<'a> {
    start: u64,
    end: u64,
    prot: libc::c_int,
    anonymous: bool,
    /// A shared mapping of a file (not anonymous shared memory).
    shared_file: bool,
    what: &'a str,
}

impl<'a> Mapping<'a> {
    fn parse(line: &'a str) -> Option<Self> {
        let mut f = line.split_whitespace();
        let (start, end) = f.next()?.split_once('-')?;
        let perms = f.next()?.as_bytes();
        let (_offset, _dev, inode) = (f.next()?, f.next()?, f.next()?);
        let what = f.next().unwrap_or("");
        let mut prot = libc::PROT_NONE;
        if perms.first() == Some(&b'r') {
            prot |= libc::PROT_READ;
        }
        if perms.get(1) == Some(&b'w') {
            prot |= libc::PROT_WRITE;
        }
        let private = perms.get(3) == Some(&b'p');
        // Pages a registration moved and an unregistration left in place.
        let ours = what.starts_with(MEMFD_NAME);
        // `mmap(MAP_SHARED | MAP_ANONYMOUS)` shows as deleted /dev/zero.
        let shared_anonymous = !private && what.starts_with("/dev/zero");
        let private_anonymous = private && inode == "0" && (what.is_empty() || what == "[heap]");
        Some(Mapping {
            start: u64::from_str_radix(start, 16).ok()?,
            end: u64::from_str_radix(end, 16).ok()?,
            prot,
            anonymous: ours || shared_anonymous || private_anonymous,
            shared_file: !private && !ours && !shared_anonymous,
            what,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(len: u64) -> HostInfo {
        HostInfo {
            len,
            worker: 0,
            dptr: 0,
            flags: DEVICEMAP,
            local: false,
            ctx: 0,
            kind: HostKind::Registered { start: 0, len: 1 },
        }
    }

    #[test]
    fn gaps_are_the_pages_no_run_covers() {
        let p = PAGE;
        assert_eq!(gaps(0, 4 * p, &[]), vec![(0, 4 * p)]);
        // A run before the range, one inside it, one past its end.
        let runs = [(0, run(2 * p)), (3 * p, run(p)), (5 * p, run(2 * p))];
        assert_eq!(gaps(p, 6 * p, &runs), vec![(2 * p, 3 * p), (4 * p, 5 * p)]);
        assert_eq!(gaps(0, 2 * p, &runs[..1]), vec![]);
    }

    #[test]
    fn pages_meet_follows_the_registered_bytes() {
        let mut o = Objects::default();
        let reg = |len| Registration {
            len,
            flags: DEVICEMAP,
        };
        o.registrations.insert(100, reg(100));
        o.registrations.insert(PAGE + 4000, reg(200));
        assert!(pages_meet(&o, 0, PAGE), "the first page holds both");
        assert!(
            pages_meet(&o, 2 * PAGE, 3 * PAGE),
            "the second crosses into the third page"
        );
        assert!(!pages_meet(&o, 3 * PAGE, 4 * PAGE));
        assert!(registered_bytes_meet(&o, 150, 160));
        assert!(
            !registered_bytes_meet(&o, 200, 300),
            "disjoint bytes of a shared page"
        );
        assert_eq!(o.registration_at(199).map(|(s, _)| s), Some(100));
        assert_eq!(o.registration_at(200), None);
    }
}
