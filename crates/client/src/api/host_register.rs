//! `cuMemHostRegister`: the application's own pages become pages shared
//! with the worker, at the same address, and the worker registers them with
//! the driver, so copies through them need no bytes on the socket and a
//! kernel reads and writes them where the application does.
//!
//! The pages are moved in place: the worker maps a new memfd at the same
//! address in its process, the client copies the current bytes into it and
//! maps it over the application's range with `MAP_FIXED`. What that cannot
//! do (docs/adr/0005-managed-memory-and-host-registration.md):
//! - pages that an earlier registration moved are moved again as they are;
//! - shared anonymous mappings move too, so a process that shares them
//!   (a forked child) no longer sees the application's stores;
//! - shared file mappings give `CUDA_ERROR_INVALID_VALUE`, as driver 580
//!   answers for them; private file mappings and the stack keep their own
//!   pages: registering them fails with `CUDA_ERROR_NOT_SUPPORTED` and a
//!   logged reason;
//! - a store another thread makes to the range while it moves may be lost;
//! - the whole pages around the range move, so two registrations that share
//!   a page meet: the second gives
//!   `CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED`.
//!
//! When the worker cannot map the same address (it is in use there), it
//! maps the pages elsewhere: copies still go through them, and the device
//! pointer is the one `cuMemHostGetDevicePointer` reports.

use std::ffi::{c_uint, c_void};
use std::fs;

use crate::edge::{wire, CuError, CuResult};
use crate::objects::{HostInfo, HostKind};
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
    let start = p as u64;
    let end = start
        .checked_add(len as u64)
        .ok_or(CuError::INVALID_VALUE)?;
    let base = start & !(PAGE - 1);
    let top = end
        .checked_next_multiple_of(PAGE)
        .ok_or(CuError::INVALID_VALUE)?;
    let span = wire::usize(top - base);
    match overlaps(s, base, top) {
        Some(HostKind::Registered { .. }) => return Err(CuError::HOST_MEMORY_ALREADY_REGISTERED),
        // Pinned or managed memory of the driver's own is not the
        // application's to register.
        Some(_) => return Err(CuError::INVALID_VALUE),
        None => {}
    }
    let prot = movable(base, top)?;
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
    let info = HostInfo {
        len: span as u64,
        worker: tmp.worker,
        dptr: tmp.dptr,
        flags: (flags & PORTABLE) | DEVICEMAP,
        local: false,
        ctx,
        kind: HostKind::Registered {
            start,
            len: len as u64,
        },
    };
    s.objects().host.insert(base, info);
    Ok(())
}

/// `cuMemHostUnregister`: `p` must be the pointer a registration was made
/// with. The worker lets go of the pages; the application keeps them, with
/// their bytes. A pointer inside registered, pinned or managed memory that
/// is not such a start is `CUDA_ERROR_INVALID_VALUE`; any other
/// `CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED`, as the driver answers.
pub fn unregister(p: *mut c_void) -> CuResult<()> {
    let s = runtime().session()?;
    let start = p as u64;
    let found = s.objects().host_range(start, 1).filter(|(_, i)| !i.local);
    let (base, info) = found.ok_or(CuError::HOST_MEMORY_NOT_REGISTERED)?;
    if !matches!(info.kind, HostKind::Registered { start: s0, .. } if s0 == start) {
        return Err(CuError::INVALID_VALUE);
    }
    s.objects().host.remove(&base);
    super::host::free_shared(s, info.worker)
}

/// What made the host memory this session already shares that `[base,
/// top)` meets, if any.
fn overlaps(s: &Session, base: u64, top: u64) -> Option<HostKind> {
    let o = s.objects();
    o.host
        .range(..top)
        .next_back()
        .filter(|(&b, i)| b + i.len > base)
        .map(|(_, i)| i.kind)
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
