//! Pinned host memory: pages shared with the worker, which has registered
//! them with the driver. The client maps them at the worker's address when
//! that address is free here, so a host pointer means the same thing on both
//! sides, as unified addressing promises.
//!
//! On a TCP session nothing can be shared: the pages stay in this process
//! ([`super::host_local`]).

use std::ffi::{c_uint, c_void};
use std::os::fd::AsRawFd;

use vgpu_abi::types::CUdeviceptr;
use vgpu_proto::{mem_free_host, mem_host_alloc, mem_share};
use zerocopy::little_endian::{U32, U64};

use crate::edge::{non_null, wire, write_out, CuError, CuResult};
use crate::objects::{HostInfo, HostKind, Registration};
use crate::runtime::{runtime, Session};

/// `CU_MEMHOSTALLOC_PORTABLE | DEVICEMAP | WRITECOMBINED`.
const KNOWN_FLAGS: c_uint = 0x7;

/// # Safety
/// `pp` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
pub unsafe fn alloc(pp: *mut *mut c_void, len: usize, flags: c_uint) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(pp)?;
    if len == 0 || flags & !KNOWN_FLAGS != 0 {
        return Err(CuError::INVALID_VALUE);
    }
    if s.remote {
        // SAFETY: `pp` checked non-NULL; the application's out-pointer.
        return unsafe { super::host_local::alloc(s, pp, len, flags) };
    }
    let shared = map_shared(s, len, flags)?;
    let info = HostInfo {
        len: len as u64,
        worker: shared.worker,
        dptr: shared.dptr,
        flags,
        local: false,
        ctx: 0,
        kind: HostKind::Alloc,
    };
    s.objects().host.insert(shared.at as u64, info);
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(pp, shared.at) }
}

/// The 32-bit first forms of the memory calls (`cuMemAlloc`,
/// `cuMemAllocHost`, `cuMemFree`, `cuMemAllocPitch`, `cuMemGetAddressRange`,
/// `cuMemHostGetDevicePointer`, with `CUdeviceptr_v1` addresses): driver 580
/// answers every one of them `CUDA_ERROR_INVALID_CONTEXT` with a current
/// primary context, before it reads an argument (the forms predate the
/// contexts it makes; `gpu/first_forms.py` shows it). vgpu answers the same
/// without a round trip.
pub fn first_form() -> CuResult<()> {
    runtime().session()?;
    Err(CuError::INVALID_CONTEXT)
}

/// Frees shared pinned memory at its worker address.
pub(crate) fn free_shared(s: &Session, worker: u64) -> CuResult<()> {
    let r = mem_free_host::Request {
        address: U64::new(worker),
    };
    s.request(&r, &[]).map(drop)
}

/// Pinned pages shared with the worker, as mapped on each side.
pub(crate) struct Shared {
    /// Where the client mapped them.
    pub at: *mut c_void,
    /// Where the worker mapped them.
    pub worker: u64,
    /// Their device pointer.
    pub dptr: u64,
}

/// Asks the worker for `len` bytes of pinned memory (`MemHostAlloc` with
/// `flags`) and maps them here, at the worker's address when it is free.
pub(crate) fn map_shared(s: &Session, len: usize, flags: c_uint) -> CuResult<Shared> {
    let r = mem_host_alloc::Request {
        bytes: U64::new(len as u64),
        flags: U32::new(flags),
    };
    let (rep, fd) = s.request_fd(&r)?;
    map_here(s, rep.address.get(), rep.dptr.get(), len, &fd, false)
}

/// Asks the worker to share `len` bytes mapped at `at` in its process (0:
/// where it chooses) and registered with `flags` (`MemShare`); maps them
/// here at the same address, replacing the mapping at `at` when `replace`.
/// `None` when the worker cannot map them at `at`.
pub(crate) fn share_at(
    s: &Session,
    at: u64,
    len: usize,
    flags: c_uint,
    replace: bool,
) -> CuResult<Option<(Shared, std::os::fd::OwnedFd)>> {
    let r = mem_share::Request {
        address: U64::new(at),
        bytes: U64::new(len as u64),
        flags: U32::new(flags),
    };
    let (rep, fd) = match s.request_fd(&r) {
        Ok(v) => v,
        Err(CuError::INVALID_VALUE) if at != 0 => return Ok(None),
        Err(e) => return Err(e),
    };
    let shared = map_here(s, rep.address.get(), rep.dptr.get(), len, &fd, replace)?;
    Ok(Some((shared, fd)))
}

/// Maps the worker's memfd `fd` here, at `worker` when that address is free
/// (or over what is there, when `replace`), elsewhere otherwise.
fn map_here(
    s: &Session,
    worker: u64,
    dptr: u64,
    len: usize,
    fd: &std::os::fd::OwnedFd,
    replace: bool,
) -> CuResult<Shared> {
    let hint = wire::handle::<c_void>(worker);
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    let fixed = if replace {
        libc::MAP_FIXED
    } else {
        libc::MAP_FIXED_NOREPLACE
    };
    // SAFETY: a new shared mapping of the worker's memfd. MAP_FIXED_NOREPLACE
    // never replaces an existing mapping, it fails instead; MAP_FIXED
    // (`replace`) replaces only the caller's own pages at `worker`.
    let mut p = unsafe { libc::mmap(hint, len, prot, libc::MAP_SHARED | fixed, fd.as_raw_fd(), 0) };
    if p == libc::MAP_FAILED && !replace {
        // SAFETY: as above, at an address of the kernel's choosing.
        p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
    }
    if p == libc::MAP_FAILED {
        let _ = free_shared(s, worker);
        return Err(CuError::OUT_OF_MEMORY);
    }
    Ok(Shared {
        at: p,
        worker,
        dptr,
    })
}

pub fn free(p: *mut c_void) -> CuResult<()> {
    let s = runtime().session()?;
    let base = p as u64;
    let info = s
        .objects()
        .host
        .remove(&base)
        .ok_or(CuError::INVALID_VALUE)?;
    if info.kind != HostKind::Alloc {
        // Registered or managed pages are not cuMemHostAlloc's to free.
        s.objects().host.insert(base, info);
        return Err(CuError::INVALID_VALUE);
    }
    let result = if info.local {
        Ok(())
    } else {
        free_shared(s, info.worker)
    };
    // SAFETY: the mapping made by `alloc`, of `info.len` bytes; the
    // application no longer uses it (it freed it).
    unsafe { libc::munmap(p, wire::usize(info.len)) };
    result
}

/// The pinned, registered or managed memory holding `p`.
fn lookup(p: *mut c_void) -> CuResult<(u64, HostInfo)> {
    let s = runtime().session()?;
    let found = s.objects().host_range(p as u64, 1);
    found.ok_or(CuError::INVALID_VALUE)
}

/// # Safety
/// `pdptr` must be NULL or valid for a write; `p` is only looked up, never
/// dereferenced.
pub unsafe fn device_pointer(
    pdptr: *mut CUdeviceptr,
    p: *mut c_void,
    flags: c_uint,
) -> CuResult<()> {
    non_null(pdptr)?;
    if flags != 0 {
        return Err(CuError::INVALID_VALUE);
    }
    let (base, info) = lookup(p)?;
    registered_here(&info, p)?;
    if info.kind == HostKind::Managed {
        // Managed memory is not mapped pinned memory (driver 580).
        return Err(CuError::INVALID_VALUE);
    }
    if info.local {
        return Err(super::host_local::no_device_address(
            "cuMemHostGetDevicePointer",
            p as u64,
        ));
    }
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(pdptr, info.dptr + (p as u64 - base)) }
}

/// # Safety
/// `pflags` must be NULL or valid for a write; `p` is only looked up, never
/// dereferenced.
pub unsafe fn get_flags(pflags: *mut c_uint, p: *mut c_void) -> CuResult<()> {
    non_null(pflags)?;
    let (_, info) = lookup(p)?;
    let own = registered_here(&info, p)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(pflags, own.map_or(info.flags, |r| r.flags)) }
}

/// For pages a registration moved, the registration whose bytes hold `p`:
/// registrations sharing pages answer each for its own bytes, and a byte no
/// live registration holds is not registered memory
/// (`CUDA_ERROR_INVALID_VALUE`, as the driver answers). `None` for other
/// host memory.
fn registered_here(info: &HostInfo, p: *mut c_void) -> CuResult<Option<Registration>> {
    if !matches!(info.kind, HostKind::Registered { .. }) {
        return Ok(None);
    }
    let found = runtime().session()?.objects().registration_at(p as u64);
    found.map(|(_, r)| Some(r)).ok_or(CuError::INVALID_VALUE)
}

/// The worker's address for `[p, p + len)` if it lies in shared pinned
/// memory (never in the local pages of a TCP session).
pub fn shared(p: *const c_void, len: usize) -> Option<u64> {
    let s = runtime().session().ok()?;
    let found = s.objects().host_range(p as u64, len as u64);
    found
        .filter(|(_, info)| !info.local)
        .map(|(base, info)| info.worker + (p as u64 - base))
}
