//! Pinned host memory of a TCP session: pages of this process only.
//!
//! A worker on another host cannot map this process's pages, so on a TCP
//! session (`crate::remote`) `cuMemHostAlloc`/`cuMemAllocHost` allocate
//! zeroed anonymous pages here and record them with [`HostInfo::local`]
//! set. They are host allocations for `cuMemFreeHost`, `cuMemHostGetFlags`
//! and `cuPointerGetAttribute(s)`. Copies to and from them send their bytes
//! like any host memory: [`super::host::shared`] never names them, so the
//! `Memcpy*Shared` operations are never used for them (the worker of a TCP
//! session refuses `MemHostAlloc`, so it has no shared pages either).
//!
//! They have no device address: `cuMemHostGetDevicePointer` and the
//! `CU_POINTER_ATTRIBUTE_DEVICE_POINTER` attribute fail with
//! `CUDA_ERROR_INVALID_VALUE` (what the driver returns for host memory it
//! has not mapped for the device) and a logged reason. A kernel cannot use
//! them either.

use std::ffi::{c_uint, c_void};

use crate::edge::{write_out, CuError, CuResult};
use crate::objects::{HostInfo, HostKind};
use crate::runtime::Session;

/// `CU_MEMORYTYPE_HOST`.
const MEMORY_TYPE_HOST: u64 = 1;

/// `cuMemHostAlloc` on a TCP session.
///
/// # Safety
/// `pp` must be valid for a write (checked non-NULL by the caller).
pub unsafe fn alloc(s: &Session, pp: *mut *mut c_void, len: usize, flags: c_uint) -> CuResult<()> {
    let ctx = crate::context::current();
    if !s.objects().contexts.contains_key(&ctx) {
        return Err(CuError::INVALID_CONTEXT);
    }
    // SAFETY: a new private anonymous mapping at an address of the kernel's
    // choosing; it replaces nothing. Its pages read as zeros.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(CuError::OUT_OF_MEMORY);
    }
    crate::log::once(
        "local pinned memory",
        format_args!(
            "cuMemHostAlloc: the mediator is remote (TCP), so pinned host memory stays in this \
             process; copies to and from it send its bytes, and it has no device address"
        ),
    );
    let info = HostInfo {
        len: len as u64,
        worker: 0,
        dptr: 0,
        flags,
        local: true,
        ctx,
        kind: HostKind::Alloc,
    };
    s.objects().host.insert(p as u64, info);
    // SAFETY: checked non-NULL by the caller; the application's out-pointer.
    unsafe { write_out(pp, p) }
}

/// Why local pages have no device address, logged.
pub fn no_device_address(what: &str, p: u64) -> CuError {
    crate::log::line(format_args!(
        "{what}: {p:#x} is pinned host memory of a TCP session; it lives only in this process \
         and has no device address (CUDA_ERROR_INVALID_VALUE)"
    ));
    CuError::INVALID_VALUE
}

/// The value of pointer attribute `attr` for `ptr` in the local pages at
/// `base`; `None` when there is none to give.
pub(super) fn value(s: &Session, attr: u32, ptr: u64, base: u64, info: &HostInfo) -> Option<u64> {
    Some(match attr {
        1 => info.ctx,
        2 => MEMORY_TYPE_HOST,
        4 => ptr,
        8 => 0,
        9 => {
            let device = s.objects().contexts.get(&info.ctx)?.device;
            u64::from(u32::from_ne_bytes(device.to_ne_bytes()))
        }
        11 => base,
        12 => info.len,
        13 => 1,
        _ => return None,
    })
}
