//! Managed memory (`cuMemAllocManaged`) on one host: pages shared with the
//! worker at the same address, registered there with the driver
//! (`CU_MEMHOSTREGISTER_PORTABLE | DEVICEMAP`), so the device, the worker
//! and the application see one copy of the bytes: coherent after every
//! synchronization and, as mapped pinned memory is, while kernels run; no
//! page ever migrates (docs/adr/0005-managed-memory-and-host-registration.md).
//!
//! What the driver keeps about managed ranges is kept here, per page:
//! advice (`cuMemAdvise`), the last prefetch location (`cuMemPrefetchAsync`)
//! and the stream attachment (`cuStreamAttachMemAsync`). Those calls are
//! checked with the driver's rules and answered here, with no round trip;
//! `cuMemRangeGetAttribute(s)` reads them back ([`super::managed_range`]).
//! A TCP session cannot share pages: `cuMemAllocManaged` gives
//! `CUDA_ERROR_NOT_SUPPORTED` there, with a logged reason.

use std::ffi::{c_uint, c_void};

use vgpu_abi::types::{CUdevice, CUdeviceptr, CUmemLocation, CUmem_advise};

use crate::edge::{non_null, wire, write_out, CuError, CuResult};
use crate::objects::{HostInfo, HostKind};
use crate::runtime::{runtime, Session};

/// Bookkeeping granularity: the host's page.
pub(crate) const PAGE: u64 = 4096;
/// `CU_MEM_ATTACH_GLOBAL`, `CU_MEM_ATTACH_HOST`, `CU_MEM_ATTACH_SINGLE`.
const ATTACH_GLOBAL: c_uint = 1;
const ATTACH_HOST: c_uint = 2;
const ATTACH_SINGLE: c_uint = 4;
/// `CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY`, `..._CONCURRENT_MANAGED_ACCESS`.
const ATTR_MANAGED_MEMORY: usize = 83;
const ATTR_CONCURRENT_MANAGED_ACCESS: usize = 89;
/// `CU_DEVICE_CPU`.
pub(crate) const DEVICE_CPU: i32 = -1;
/// `CUmemLocationType`: invalid, device, host, host NUMA node, current NUMA node.
pub(crate) const LOC_INVALID: u32 = 0;
pub(crate) const LOC_DEVICE: u32 = 1;
pub(crate) const LOC_HOST: u32 = 2;
pub(crate) const LOC_HOST_NUMA: u32 = 3;
pub(crate) const LOC_HOST_NUMA_CURRENT: u32 = 4;
/// `CUmem_advise`.
const SET_READ_MOSTLY: u32 = 1;
const UNSET_READ_MOSTLY: u32 = 2;
const SET_PREFERRED_LOCATION: u32 = 3;
const UNSET_PREFERRED_LOCATION: u32 = 4;
const SET_ACCESSED_BY: u32 = 5;
const UNSET_ACCESSED_BY: u32 = 6;

/// A memory location as `CUmemLocation` gives it; type 0 is "none".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Loc {
    pub kind: u32,
    pub id: i32,
}

/// What the driver keeps about one page of a managed range (pages that
/// agree share one entry, [`super::managed_range::Pages`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Page {
    pub read_mostly: bool,
    pub preferred: Loc,
    /// Bit 0: the host; bit `1 + d`: device `d`.
    pub accessed_by: u64,
    pub last_prefetch: Loc,
}

/// A managed allocation.
#[derive(Debug)]
pub struct Managed {
    pub(crate) len: u64,
    pub(crate) ctx: u64,
    pub(crate) device: i32,
    /// `CU_MEM_ATTACH_*` of the allocation or the last stream attachment.
    pub(crate) attach: c_uint,
    /// `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS`, on from the start.
    pub(crate) sync_memops: bool,
    pub(crate) pages: super::managed_range::Pages,
}

/// `cuMemAllocManaged`.
///
/// # Safety
/// `dptr` must be NULL or valid for a write.
pub unsafe fn alloc(dptr: *mut CUdeviceptr, len: usize, flags: c_uint) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(dptr)?;
    let ctx = crate::context::current();
    let device = s
        .objects()
        .contexts
        .get(&ctx)
        .map(|c| c.device)
        .ok_or(CuError::INVALID_CONTEXT)?;
    if len == 0 || (flags != ATTACH_GLOBAL && flags != ATTACH_HOST) {
        return Err(CuError::INVALID_VALUE);
    }
    if s.device(device)?.attr(ATTR_MANAGED_MEMORY) != Some(1) {
        return Err(CuError::NOT_SUPPORTED);
    }
    if s.remote {
        crate::log::line(format_args!(
            "cuMemAllocManaged: the mediator is remote (TCP); managed memory needs pages this \
             process shares with the worker (CUDA_ERROR_NOT_SUPPORTED)"
        ));
        return Err(CuError::NOT_SUPPORTED);
    }
    let span = (len as u64)
        .checked_next_multiple_of(PAGE)
        .ok_or(CuError::OUT_OF_MEMORY)?;
    let at = share(s, wire::usize(span))?;
    let info = HostInfo {
        len: span,
        worker: at,
        dptr: at,
        // What `cuMemHostGetFlags` reports of managed memory, which driver
        // 580 answers for: mapped for the device.
        flags: 0x2,
        local: false,
        ctx,
        kind: HostKind::Managed,
    };
    let pages = super::managed_range::Pages::new(span / PAGE);
    let managed = Managed {
        len: len as u64,
        ctx,
        device,
        attach: flags,
        sync_memops: true,
        pages,
    };
    let mut o = s.objects();
    o.host.insert(at, info);
    o.managed.insert(at, managed);
    drop(o);
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(dptr, at) }
}

/// How managed pages are registered with the worker's driver:
/// `CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP`.
const SHARE_FLAGS: c_uint = 0x1 | 0x2;

/// Shared, registered pages of `span` bytes at one address in both
/// processes, whose device pointer is that address too.
fn share(s: &Session, span: usize) -> CuResult<u64> {
    // Reserve an address here and ask the worker for the same one; if it
    // has something there, take the worker's choice if it is free here.
    let hole = reserve(None, span).ok_or(CuError::OUT_OF_MEMORY)?;
    let shared = match super::host::share_at(s, hole as u64, span, SHARE_FLAGS, true) {
        Ok(Some((v, _))) => v,
        other => {
            // SAFETY: the reservation made above, unused.
            unsafe { libc::munmap(hole, span) };
            match other {
                Err(e) => return Err(e),
                _ => {
                    super::host::share_at(s, 0, span, SHARE_FLAGS, false)?
                        .ok_or(CuError::OUT_OF_MEMORY)?
                        .0
                }
            }
        }
    };
    let first = (shared.at as u64, shared.worker, shared.dptr);
    if let Some(at) = accept(s, shared, span) {
        return Ok(at);
    }
    // Both processes place mappings top-down from similar bases, so their
    // first choices can collide: try addresses far below both.
    for _ in 0..FAR_TRIES {
        if let Some(at) = share_far(s, span)? {
            return Ok(at);
        }
    }
    crate::log::line(format_args!(
        "cuMemAllocManaged: no address common to this process, the worker and the device \
         ({:#x}, {:#x}, {:#x}) (CUDA_ERROR_OUT_OF_MEMORY)",
        first.0, first.1, first.2
    ));
    Err(CuError::OUT_OF_MEMORY)
}

/// A new private reservation of `span` bytes: at `at` exactly (never over
/// a mapping of this process), or where the kernel chooses.
fn reserve(at: Option<u64>, span: usize) -> Option<*mut c_void> {
    let (hint, fixed) = match at {
        Some(at) => (wire::handle::<c_void>(at), libc::MAP_FIXED_NOREPLACE),
        None => (std::ptr::null_mut(), 0),
    };
    // SAFETY: a new private reservation; MAP_FIXED_NOREPLACE fails rather
    // than replace anything of this process.
    let hole = unsafe {
        libc::mmap(
            hint,
            span,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | fixed,
            -1,
            0,
        )
    };
    if hole == libc::MAP_FAILED {
        return None;
    }
    if at.is_some_and(|at| hole as u64 != at) {
        // An old kernel took the address as a hint only.
        // SAFETY: the reservation just made, unused.
        unsafe { libc::munmap(hole, span) };
        return None;
    }
    Some(hole)
}

/// The address of `shared` when this process, the worker and the device
/// see it at one address; otherwise `None`, with the pages given back.
fn accept(s: &Session, shared: super::host::Shared, span: usize) -> Option<u64> {
    if shared.at as u64 == shared.worker && shared.dptr == shared.worker {
        return Some(shared.worker);
    }
    // SAFETY: the mapping `share_at` made here, not yet handed out.
    unsafe { libc::munmap(shared.at, span) };
    let _ = super::host::free_shared(s, shared.worker);
    None
}

/// Random addresses [`share`] tries after the kernels' own choices.
const FAR_TRIES: usize = 8;
/// Where those addresses lie: 16 TiB to 48 TiB, far below where either
/// process's mappings grow down from and above where their heaps grow up.
const FAR: std::ops::Range<u64> = (16 << 40)..(48 << 40);

/// One try of [`share`] at a random page-aligned address in [`FAR`]:
/// reserved here first, then shared by the worker exactly there; `None`
/// when either side, or the device, has something there.
fn share_far(s: &Session, span: usize) -> CuResult<Option<u64>> {
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let at = (FAR.start + random % (FAR.end - FAR.start)) & !(PAGE - 1);
    let Some(hole) = reserve(Some(at), span) else {
        return Ok(None);
    };
    let Some((shared, _)) = super::host::share_at(s, at, span, SHARE_FLAGS, true)? else {
        // SAFETY: the reservation made above, unused.
        unsafe { libc::munmap(hole, span) };
        return Ok(None);
    };
    // The worker mapped them at `at` exactly, and so did this process.
    Ok(accept(s, shared, span))
}

/// `cuMemFree` of a managed allocation; `None` when `dptr` is not one.
pub fn free(s: &Session, dptr: u64) -> Option<CuResult<()>> {
    let mut o = s.objects();
    o.managed.remove(&dptr)?;
    let info = o.host.remove(&dptr)?;
    drop(o);
    let result = super::host::free_shared(s, info.worker);
    // SAFETY: the mapping made by `alloc`, of `info.len` bytes; the
    // application freed it.
    unsafe { libc::munmap(wire::handle::<c_void>(dptr), wire::usize(info.len)) };
    Some(result)
}

/// The base and size (as asked for) of the managed allocation holding `ptr`.
pub(crate) fn range_of(s: &Session, ptr: u64) -> Option<(u64, u64)> {
    let o = s.objects();
    let (&base, m) = o.managed.range(..=ptr).next_back()?;
    (ptr - base < m.len).then_some((base, m.len))
}

/// The managed allocation holding `[ptr, ptr + count)`: its base.
/// `CUDA_ERROR_INVALID_VALUE` for an empty range or one not inside a
/// managed allocation, as the driver answers.
pub(crate) fn holder(s: &Session, ptr: u64, count: usize) -> CuResult<u64> {
    let o = s.objects();
    let (&base, m) = o
        .managed
        .range(..=ptr)
        .next_back()
        .ok_or(CuError::INVALID_VALUE)?;
    let end = ptr
        .checked_add(count as u64)
        .ok_or(CuError::INVALID_VALUE)?;
    if count == 0 || end > base + m.len {
        return Err(CuError::INVALID_VALUE);
    }
    Ok(base)
}

/// Applies `f` to the pages of `[ptr, ptr + count)` in the allocation at `base`.
fn each_page(s: &Session, base: u64, ptr: u64, count: usize, mut f: impl FnMut(&mut Page)) {
    let mut o = s.objects();
    let Some(m) = o.managed.get_mut(&base) else {
        return;
    };
    let first = (ptr - base) / PAGE;
    let last = (ptr - base + count as u64).div_ceil(PAGE);
    m.pages.update(first, last, &mut f);
}

/// A location a managed range may be prefetched to or advised for: a
/// device of the session (`CUDA_ERROR_INVALID_DEVICE` otherwise) or the
/// host. `concurrent` asks that a device report concurrent managed access,
/// as prefetching to a device requires.
fn check_location(s: &Session, loc: Loc, concurrent: bool) -> CuResult<Loc> {
    match loc.kind {
        LOC_DEVICE => {
            let d = s.device(loc.id)?;
            if concurrent && d.attr(ATTR_CONCURRENT_MANAGED_ACCESS) != Some(1) {
                return Err(CuError::INVALID_DEVICE);
            }
            Ok(loc)
        }
        LOC_HOST => Ok(Loc {
            kind: LOC_HOST,
            id: 0,
        }),
        LOC_HOST_NUMA if loc.id >= 0 => Ok(loc),
        LOC_HOST_NUMA_CURRENT => Ok(loc),
        _ => Err(CuError::INVALID_VALUE),
    }
}

/// The location a first-form `CUdevice` names (`CU_DEVICE_CPU` is the host).
fn device_location(device: CUdevice) -> Loc {
    if device == DEVICE_CPU {
        Loc {
            kind: LOC_HOST,
            id: 0,
        }
    } else if device < 0 {
        // Neither the host nor a device.
        Loc {
            kind: LOC_DEVICE,
            id: -2,
        }
    } else {
        Loc {
            kind: LOC_DEVICE,
            id: device,
        }
    }
}

fn location(l: CUmemLocation) -> Loc {
    Loc {
        kind: l.type_.0,
        id: l.id,
    }
}

/// `cuMemPrefetchAsync` (first form): to `device`, `CU_DEVICE_CPU` for the host.
pub fn prefetch(ptr: CUdeviceptr, count: usize, device: CUdevice, stream: u64) -> CuResult<()> {
    prefetch_to(ptr, count, device_location(device), 0, stream)
}

/// `cuMemPrefetchAsync_v2`.
pub fn prefetch_v2(
    ptr: CUdeviceptr,
    count: usize,
    loc: CUmemLocation,
    flags: c_uint,
    stream: u64,
) -> CuResult<()> {
    prefetch_to(ptr, count, location(loc), flags, stream)
}

/// Checks a prefetch as the driver does and records its location. The
/// pages are where both the host and the device reach them already, so no
/// byte moves.
pub(crate) fn prefetch_to(
    ptr: u64,
    count: usize,
    loc: Loc,
    flags: c_uint,
    stream: u64,
) -> CuResult<()> {
    let s = runtime().session()?;
    check_stream(s, stream)?;
    if flags != 0 {
        return Err(CuError::INVALID_VALUE);
    }
    let base = holder(s, ptr, count)?;
    let loc = check_location(s, loc, true)?;
    each_page(s, base, ptr, count, |p| p.last_prefetch = loc);
    Ok(())
}

/// `CUDA_ERROR_INVALID_CONTEXT` without a current context,
/// `CUDA_ERROR_INVALID_HANDLE` for a stream that is not a live one of it.
pub(crate) fn check_stream(s: &Session, stream: u64) -> CuResult<()> {
    let ctx = crate::context::current();
    let o = s.objects();
    if !o.contexts.contains_key(&ctx) {
        return Err(CuError::INVALID_CONTEXT);
    }
    if !o.stream_ok(ctx, stream) {
        return Err(CuError::INVALID_HANDLE);
    }
    Ok(())
}

/// `cuMemAdvise` (first form): for `device`, `CU_DEVICE_CPU` for the host.
pub fn advise(
    ptr: CUdeviceptr,
    count: usize,
    advice: CUmem_advise,
    device: CUdevice,
) -> CuResult<()> {
    advise_at(
        ptr,
        count,
        advice.0,
        device_location(device),
        CuError::INVALID_DEVICE,
    )
}

/// `cuMemAdvise_v2`.
pub fn advise_v2(
    ptr: CUdeviceptr,
    count: usize,
    advice: CUmem_advise,
    loc: CUmemLocation,
) -> CuResult<()> {
    advise_at(ptr, count, advice.0, location(loc), CuError::INVALID_VALUE)
}

/// Checks advice as the driver does and records it on each page. A location
/// that is no device of the session gives `bad_location` (driver 580:
/// `CUDA_ERROR_INVALID_DEVICE` for the first form's `CUdevice`,
/// `CUDA_ERROR_INVALID_VALUE` for a `CUmemLocation`).
fn advise_at(ptr: u64, count: usize, advice: u32, loc: Loc, bad_location: CuError) -> CuResult<()> {
    let s = runtime().session()?;
    if !s
        .objects()
        .contexts
        .contains_key(&crate::context::current())
    {
        return Err(CuError::INVALID_CONTEXT);
    }
    if !(SET_READ_MOSTLY..=UNSET_ACCESSED_BY).contains(&advice) {
        return Err(CuError::INVALID_VALUE);
    }
    let base = holder(s, ptr, count)?;
    // Read-mostly advice ignores the location.
    let loc = match advice {
        SET_READ_MOSTLY | UNSET_READ_MOSTLY => loc,
        _ => check_location(s, loc, false).map_err(|_| bad_location)?,
    };
    // A NUMA node as the preferred location is accepted but reads back as
    // none (driver 580, on a host it reports one node for).
    let preferred = match loc.kind {
        LOC_HOST_NUMA | LOC_HOST_NUMA_CURRENT => Loc::default(),
        _ => loc,
    };
    let bit = match loc.kind {
        LOC_DEVICE => 1u64
            .checked_shl(u32::try_from(loc.id + 1).unwrap_or(64))
            .unwrap_or(0),
        _ => 1,
    };
    each_page(s, base, ptr, count, |p| match advice {
        SET_READ_MOSTLY => p.read_mostly = true,
        UNSET_READ_MOSTLY => p.read_mostly = false,
        SET_PREFERRED_LOCATION => p.preferred = preferred,
        UNSET_PREFERRED_LOCATION => p.preferred = Loc::default(),
        SET_ACCESSED_BY => p.accessed_by |= bit,
        _ => p.accessed_by &= !bit,
    });
    Ok(())
}

/// `cuStreamAttachMemAsync(_ptsz)` of a managed allocation; `None` when
/// `ptr` is not in one (the worker's driver answers for other memory).
/// The length must be 0 or the allocation's, and `ptr` its base.
pub fn attach(sid: u64, ptr: u64, length: usize, flags: c_uint) -> Option<CuResult<()>> {
    let s = runtime().session().ok()?;
    let (base, len) = range_of(s, ptr)?;
    Some(attach_to(s, sid, (base, len), ptr, length, flags))
}

/// Checks an attachment of the managed allocation `(base, len)` as the
/// driver does and records its flags.
fn attach_to(
    s: &Session,
    sid: u64,
    (base, len): (u64, u64),
    ptr: u64,
    length: usize,
    flags: c_uint,
) -> CuResult<()> {
    check_stream(s, sid)?;
    let valid = [ATTACH_GLOBAL, ATTACH_HOST, ATTACH_SINGLE];
    if !valid.contains(&flags) || ptr != base || (length != 0 && length as u64 != len) {
        return Err(CuError::INVALID_VALUE);
    }
    if flags == ATTACH_SINGLE && sid < 3 {
        // A single-stream attachment needs a stream of its own.
        return Err(CuError::INVALID_VALUE);
    }
    if let Some(m) = s.objects().managed.get_mut(&base) {
        m.attach = flags;
    }
    Ok(())
}

/// What pointer attributes say of a managed allocation where its pages,
/// registered host memory to the worker's driver, would read otherwise.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PointerFacts {
    base: u64,
    len: u64,
    ctx: u64,
    device: i32,
    sync_memops: bool,
}

/// Sets `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS` of the managed allocation at
/// `base`; false when there is none.
pub(crate) fn set_sync_memops(s: &Session, base: u64, on: bool) -> bool {
    let mut o = s.objects();
    o.managed
        .get_mut(&base)
        .map(|m| m.sync_memops = on)
        .is_some()
}

/// The facts of the managed allocation at `base`, if it is one.
pub(crate) fn pointer_facts(s: &Session, base: u64) -> Option<PointerFacts> {
    let o = s.objects();
    let m = o.managed.get(&base)?;
    Some(PointerFacts {
        base,
        len: m.len,
        ctx: m.ctx,
        device: m.device,
        sync_memops: m.sync_memops,
    })
}

impl PointerFacts {
    /// The value of pointer attribute `attr` at `ptr`, where managed memory
    /// answers differently from registered host memory.
    pub(crate) fn value(&self, attr: u32, ptr: u64) -> Option<u64> {
        Some(match attr {
            // CU_POINTER_ATTRIBUTE_CONTEXT: the allocating context.
            1 => self.ctx,
            // MEMORY_TYPE: CU_MEMORYTYPE_DEVICE, as the driver reports
            // managed memory on a device with concurrent managed access.
            2 => 2,
            // DEVICE_POINTER, HOST_POINTER: one address everywhere.
            3 | 4 => ptr,
            // SYNC_MEMOPS: on unless set off.
            6 => u64::from(self.sync_memops),
            // IS_MANAGED.
            8 => 1,
            // DEVICE_ORDINAL: the allocating context's device.
            9 => u64::from(self.device.cast_unsigned()),
            // RANGE_START_ADDR, RANGE_SIZE: the allocation as asked for.
            11 => self.base,
            12 => self.len,
            // IS_LEGACY_CUDA_IPC_CAPABLE: managed memory cannot be exported.
            10 => 0,
            // MAPPED.
            13 => 1,
            // ALLOWED_HANDLE_TYPES: none.
            14 => 0,
            // ACCESS_FLAGS: read and write.
            16 => 3,
            // MEMPOOL_HANDLE: none, as for every allocation outside a pool.
            17 => 0,
            _ => return None,
        })
    }
}
