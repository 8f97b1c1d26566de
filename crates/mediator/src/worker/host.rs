//! Pinned host memory shared with the client.
//!
//! `cuMemHostAlloc` in the client becomes a memfd that the worker maps,
//! registers with the driver (`cuMemHostRegister`) and sends back over the
//! lane. The client maps the same pages, at the same address when it can, so
//! copies to and from them need no bytes on the socket, and the device
//! pointer of the pages is the one the driver reports in the worker.

use std::ffi::{c_uint, c_void};
use std::os::fd::AsFd;

use rustix::fs::{ftruncate, memfd_create, MemfdFlags};
use rustix::mm::{mmap, munmap, MapFlags, ProtFlags};

use vgpu_abi::types::CUstreamCaptureMode;
use vgpu_proto::{
    host_alloc, mem_free_host, mem_host_alloc, mem_share, memcpy_dtoh_shared, memcpy_htod_shared,
    Request,
};
use zerocopy::little_endian::U64;

use super::calls::{message, ok, size, Reply};
use super::exec::{checked, Lane};
use super::status::{HOST_MEMORY_NOT_REGISTERED, INVALID_VALUE, NOT_SUPPORTED, OUT_OF_MEMORY};
use super::tables::{HostAlloc, Range, RangeOwner};
use super::Session;
use crate::driver::{entry, DevPtr, Status};
use crate::sessions::Direction;

/// `CU_MEMHOSTALLOC_*` flags map one to one onto `CU_MEMHOSTREGISTER_*`
/// (portable 1, device map 2); write-combined (4) has no registration form.
const REGISTER_FLAGS: c_uint = 0x1 | 0x2;
const CU_STREAM_CAPTURE_MODE_RELAXED: CUstreamCaptureMode = CUstreamCaptureMode(2);
/// Largest pinned allocation one call may make.
const MAX_PINNED: usize = 1 << 40;

/// Shared pinned memory: the reply gives its worker address and device
/// pointer, and the memfd follows it.
pub fn mem_host_alloc(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_host_alloc::Request = message(req)?;
    let (len, flags) = (size(r.bytes.get())?, r.flags.get());
    let register = (flags & REGISTER_FLAGS) | 0x2;
    if flags & host_alloc::STAGING != 0 {
        // The client's own staging memory, which it may need while the
        // application captures: registering pinned memory is an unsafe call
        // in global capture mode, so it runs in relaxed mode.
        return relaxed(s, || share(s, "MemHostAlloc", 0, len, register));
    }
    share(s, "MemHostAlloc", 0, len, register)
}

/// Runs `f` with this thread's capture mode relaxed, then restores it.
fn relaxed<T>(s: &Session, f: impl FnOnce() -> Result<T, Status>) -> Result<T, Status> {
    let exchange = entry(s.driver.cuThreadExchangeStreamCaptureMode)?;
    let mut mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    // SAFETY: a live local the driver reads and writes.
    ok(unsafe { exchange(&mut mode) })?;
    let out = f();
    // SAFETY: as above; `mode` now holds the thread's previous mode.
    let _ = unsafe { exchange(&mut mode) };
    out
}

/// Managed or registered memory: shared pages at the client's `address`
/// (or where the worker chooses, for 0), registered with the client's
/// `CU_MEMHOSTREGISTER_*` flags; the memfd follows the reply.
pub fn mem_share(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_share::Request = message(req)?;
    let (len, flags) = (size(r.bytes.get())?, r.flags.get());
    share(s, "MemShare", r.address.get(), len, flags)
}

/// Maps a new memfd of `len` bytes at `at` (exactly there, never over
/// another mapping; anywhere for 0), registers it with the driver with
/// `flags`, records it as this session's shared host memory and passes the
/// memfd after the reply. `op` names the operation in the log.
fn share(s: &Session, op: &str, at: u64, len: usize, flags: c_uint) -> Result<Reply, Status> {
    if s.remote {
        // The client of a TCP session keeps its host memory to itself.
        tracing::warn!("{op} refused: a TCP session cannot share pages");
        return Err(NOT_SUPPORTED);
    }
    if len == 0 || len > MAX_PINNED {
        return Err(INVALID_VALUE);
    }
    let fd = memfd_create("vgpu-pinned", MemfdFlags::CLOEXEC).map_err(|_| OUT_OF_MEMORY)?;
    ftruncate(&fd, len as u64).map_err(|_| OUT_OF_MEMORY)?;
    let fixed = if at == 0 {
        MapFlags::empty()
    } else {
        MapFlags::FIXED_NOREPLACE
    };
    let hint = super::tables::as_handle(size(at)?);
    // SAFETY: a fresh shared mapping of a file we own; with an address it
    // is MAP_FIXED_NOREPLACE, which fails rather than replace a mapping.
    let addr = unsafe {
        mmap(
            hint,
            len,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::SHARED | fixed,
            &fd,
            0,
        )
    }
    .map_err(|_| INVALID_VALUE)?;
    let unmap = |addr: *mut c_void| {
        // SAFETY: `addr` is the mapping made above, of `len` bytes.
        let _ = unsafe { munmap(addr, len) };
    };
    if at != 0 && addr as u64 != at {
        // An old kernel without MAP_FIXED_NOREPLACE takes the address as a hint.
        unmap(addr);
        return Err(INVALID_VALUE);
    }
    let register = entry(s.driver.cuMemHostRegister_v2)?;
    // SAFETY: the pages are mapped and stay mapped until `free` unregisters them.
    let st = unsafe { register(addr, len, flags) };
    if let Err(st) = ok(st) {
        unmap(addr);
        return Err(st);
    }
    let mut dptr: DevPtr = 0;
    let device_pointer = entry(s.driver.cuMemHostGetDevicePointer_v2)?;
    // SAFETY: the pages were just registered; live out-pointer. Without
    // DEVICEMAP the driver may refuse: the pages then have no device pointer.
    let st = unsafe { device_pointer(&mut dptr, addr, 0) };
    if ok(st).is_err() {
        dptr = 0;
    }
    let base = addr as u64;
    let sent = fd.as_fd().try_clone_to_owned().map_err(|_| OUT_OF_MEMORY)?;
    let mut t = s.tables();
    t.host.insert(base, HostAlloc { len, dptr, fd });
    if dptr != 0 {
        t.ranges.insert(
            dptr,
            Range {
                size: len as u64,
                owner: RangeOwner::Host { base },
                device: None,
            },
        );
    }
    if dptr != base {
        t.ranges.insert(
            base,
            Range {
                size: len as u64,
                owner: RangeOwner::Host { base },
                device: None,
            },
        );
    }
    let reply = mem_host_alloc::Reply {
        address: U64::new(base),
        dptr: U64::new(dptr),
    };
    Ok(Reply {
        fd: Some(sent),
        ..Reply::new(&reply, Vec::new())
    })
}

/// Unregisters and unmaps shared pinned memory. The pages are unmapped and
/// forgotten even when the driver already dropped the registration (its
/// context was destroyed), so nothing leaks.
pub fn mem_free_host(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_free_host::Request = message(req)?;
    let base = r.address.get();
    let alloc = s.tables().host.remove(&base).ok_or(INVALID_VALUE)?;
    let addr = super::tables::as_handle(size(base)?);
    // SAFETY: `addr` is the base of a mapping registered by `alloc`.
    let st = unsafe { entry(s.driver.cuMemHostUnregister)?(addr) };
    // SAFETY: the mapping of `alloc.len` bytes made by `alloc`, no longer registered.
    let _ = unsafe { munmap(addr, alloc.len) };
    s.tables()
        .ranges
        .retain(|_, r| r.owner != RangeOwner::Host { base });
    match st {
        HOST_MEMORY_NOT_REGISTERED => Ok(Reply::default()),
        st => ok(st).map(|()| Reply::default()),
    }
}

/// Device from shared pinned host memory at its worker address.
pub fn memcpy_htod_shared(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &memcpy_htod_shared::Request = message(req)?;
    let (dst, bytes) = (r.dst.get(), r.bytes.get());
    let stream = checked(s, &[(dst, bytes)], r.stream.get())?.cast();
    let src = check(s, r.host.get(), bytes)?;
    let len = size(bytes)?;
    // SAFETY: both ranges are checked: the device range is live and the
    // source lies in a shared pinned allocation of this session.
    ok(unsafe {
        if r.is_async != 0 {
            entry(s.driver.cuMemcpyHtoDAsync_v2)?(dst, src, len, stream)
        } else {
            entry(s.driver.cuMemcpyHtoD_v2)?(dst, src, len)
        }
    })?;
    crate::sessions::count_copy(Direction::HtoD, bytes);
    Ok(Reply::default())
}

/// Shared pinned host memory at its worker address from device.
pub fn memcpy_dtoh_shared(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &memcpy_dtoh_shared::Request = message(req)?;
    let (src, bytes) = (r.src.get(), r.bytes.get());
    let stream = checked(s, &[(src, bytes)], r.stream.get())?.cast();
    let dst = check(s, r.host.get(), bytes)?;
    let len = size(bytes)?;
    // SAFETY: as for `memcpy_htod_shared`, in the other direction.
    ok(unsafe {
        if r.is_async != 0 {
            entry(s.driver.cuMemcpyDtoHAsync_v2)?(dst, src, len, stream)
        } else {
            entry(s.driver.cuMemcpyDtoH_v2)?(dst, src, len)
        }
    })?;
    crate::sessions::count_copy(Direction::DtoH, bytes);
    Ok(Reply::default())
}

/// Checks that `[addr, addr + len)` lies inside one shared pinned allocation.
pub fn check(s: &Session, addr: u64, len: u64) -> Result<*mut c_void, Status> {
    let t = s.tables();
    let Some((&base, a)) = t.host.range(..=addr).next_back() else {
        return Err(INVALID_VALUE);
    };
    match addr.checked_add(len) {
        Some(end) if end <= base + a.len as u64 => Ok(super::tables::as_handle(size(addr)?)),
        _ => Err(INVALID_VALUE),
    }
}
