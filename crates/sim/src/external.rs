//! External memory on the simulated device (`cuImportExternalMemory`,
//! `cuExternalMemoryGetMappedBuffer`, `cuDestroyExternalMemory`).
//!
//! The simulated device imports, as `CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD`, the
//! descriptors it exports itself: a memfd of an allocation's or a physical
//! allocation's pages (`crate::ipc`, `crate::vmm_share`). Another descriptor, or another
//! handle type, is `CUDA_ERROR_INVALID_VALUE` (the simulator's choice; the driver's
//! code for these is not known here). As on the driver, the descriptor belongs to CUDA
//! once the import succeeds. A mapped buffer maps the memfd's pages from its offset,
//! which must be page-aligned here; it counts against the device's budget and
//! `cuMemFree` frees it, also after the object is destroyed.

use std::os::fd::{FromRawFd, OwnedFd};

use crate::cu::{CUresult, CUDA_ARRAY3D_DESCRIPTOR};
use crate::error::{err, Res};
use crate::ffi::us;
use crate::state::memory::Allocation;
use crate::state::State;

/// `CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD`.
const OPAQUE_FD: u32 = 1;

fn bad<T>(why: impl Into<std::borrow::Cow<'static, str>>) -> Res<T> {
    err(CUresult::CUDA_ERROR_INVALID_VALUE, why)
}

/// The device of a memfd the simulated device exported, if `fd` is one.
fn exported_device(fd: i32) -> Option<usize> {
    let target = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
    let name = target
        .to_str()?
        .strip_prefix("/memfd:")?
        .strip_suffix(" (deleted)")?;
    if name.starts_with(crate::ipc::MEMFD_PREFIX) {
        // Allocations of every device share one memfd scheme; device 0 stands for them.
        return Some(0);
    }
    let prop = name.strip_prefix("vgpu-sim-vmm-")?.get(24..32)?;
    let mut id = [0u8; 4];
    for (i, b) in id.iter_mut().enumerate() {
        *b = u8::from_str_radix(prop.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(us(u64::from(u32::from_le_bytes(id))))
}

/// `cuImportExternalMemory` of `kind` with descriptor `fd` (for an opaque descriptor)
/// and `size` bytes.
pub(crate) fn import(st: &mut State, kind: u32, fd: i32, size: u64, flags: u32) -> Res<usize> {
    if kind != OPAQUE_FD {
        return bad(format!(
            "handle type {kind}: only opaque file descriptors are simulated"
        ));
    }
    if size == 0 || flags & !1 != 0 {
        return bad(format!("size {size}, flags {flags:#x}"));
    }
    let Some(device) = exported_device(fd).filter(|&d| d < st.used.len()) else {
        return bad(format!(
            "descriptor {fd} is not memory the simulated device exported"
        ));
    };
    // SAFETY: `fd` is open (its /proc link was just read); reading its size takes nothing.
    let len = rustix::fs::fstat(unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) })
        .map_or(0, |s| u64::try_from(s.st_size).unwrap_or(0));
    if size > len {
        return bad(format!("size {size} is more than the {len} bytes exported"));
    }
    // SAFETY: the import succeeds from here on, and with it the caller gives up `fd`.
    let own = unsafe { OwnedFd::from_raw_fd(fd) };
    let key = st.mint();
    st.ext.ipc.external.insert(key, (own, size, device));
    Ok(key)
}

/// `cuExternalMemoryGetMappedBuffer` in the current context.
pub(crate) fn mapped_buffer(
    st: &mut State,
    budget: u64,
    key: usize,
    offset: u64,
    size: u64,
    flags: u32,
) -> Res<u64> {
    let Some((fd, total, device)) = st.ext.ipc.external.get(&key) else {
        return err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            format!("{key:#x} is not a live external memory object"),
        );
    };
    let (total, device) = (*total, *device);
    let page = rustix::param::page_size() as u64;
    let end = offset.checked_add(size);
    if size == 0 || flags != 0 || end.is_none_or(|e| e > total) || !offset.is_multiple_of(page) {
        return bad(format!(
            "buffer {offset:#x}+{size:#x} (flags {flags:#x}) of an object of {total:#x} bytes"
        ));
    }
    if size > budget - st.used[device] {
        return err(
            CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            "over the simulated budget",
        );
    }
    let fd = fd.try_clone().map_err(|e| crate::error::Error {
        code: CUresult::CUDA_ERROR_OUT_OF_MEMORY,
        why: format!("dup: {e}").into(),
    })?;
    let ctx = crate::context::current(st)?;
    let Some(a) = Allocation::import_at(ctx, device, us(size), fd, offset) else {
        return err(CUresult::CUDA_ERROR_OUT_OF_MEMORY, "cannot map the buffer");
    };
    let base = a.base();
    st.allocs.insert(base, a);
    st.used[device] += size;
    Ok(base)
}

/// `cuExternalMemoryGetMappedMipmappedArray` in the current context: a
/// mipmapped array like `cuMipmappedArrayCreate`'s whose levels map the
/// object's bytes from `offset` (page-aligned here), each level from the
/// first page after the one before (the simulator's layout; the driver's is
/// its own). Levels that do not fit in the object are
/// `CUDA_ERROR_INVALID_VALUE`; `cuMipmappedArrayDestroy` unmaps them, also
/// after the object is destroyed.
pub(crate) fn mapped_mipmapped_array(
    st: &mut State,
    budget: u64,
    key: usize,
    offset: u64,
    d: &CUDA_ARRAY3D_DESCRIPTOR,
    levels: u32,
) -> Res<usize> {
    let Some((fd, total, _)) = st.ext.ipc.external.get(&key) else {
        return err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            format!("{key:#x} is not a live external memory object"),
        );
    };
    let total = *total;
    let page = rustix::param::page_size() as u64;
    if offset >= total || !offset.is_multiple_of(page) {
        return bad(format!(
            "mipmapped array at {offset:#x} of an object of {total:#x} bytes"
        ));
    }
    let fd = fd.try_clone().map_err(|e| crate::error::Error {
        code: CUresult::CUDA_ERROR_OUT_OF_MEMORY,
        why: format!("dup: {e}").into(),
    })?;
    let (mut at, mut past_end) = (offset, false);
    let mut block = |ctx: usize, device: usize, bytes: usize| {
        let end = at.checked_add(bytes as u64).filter(|&e| e <= total);
        past_end = end.is_none();
        let end = end?;
        let a = Allocation::import_at(ctx, device, bytes, fd.try_clone().ok()?, at)?;
        at = end.next_multiple_of(page);
        Some(a)
    };
    match crate::array::create_mipmapped_on(st, budget, d, levels, &mut block) {
        Err(_) if past_end => bad(format!(
            "{levels} levels from {offset:#x} do not fit an object of {total:#x} bytes"
        )),
        r => r,
    }
}

/// `cuDestroyExternalMemory`: mapped buffers stay until freed.
pub(crate) fn destroy(st: &mut State, key: usize) -> Res<()> {
    match st.ext.ipc.external.remove(&key) {
        Some(_) => Ok(()),
        None => err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            format!("{key:#x} is not a live external memory object"),
        ),
    }
}
