//! Page-locked host memory: ranges registered with `cuMemHostRegister` and blocks
//! allocated with `cuMemHostAlloc`/`cuMemAllocHost`; managed memory
//! (`cuMemAllocManaged`), a block the host and the simulated device share.
//!
//! With unified addressing the device pointer of a host range is its host pointer, so a
//! registered range is valid for device copies, memsets and kernels at its own address
//! (see [`try_range`], consulted by [`crate::memory::try_range`]). Ranges belong to the
//! context that was current when they were made and vanish with it.

use std::ffi::c_void;
use std::ptr;

use crate::context;
use crate::cu::CUresult;
use crate::error::{err, Res};
use crate::ffi::us;
use crate::state::hostmem::{Block, Region};
use crate::state::State;

/// `CU_MEMHOSTREGISTER_PORTABLE | DEVICEMAP | IOMEMORY | READ_ONLY`.
const REGISTER_FLAGS: u32 = 0xF;
/// `CU_MEMHOSTREGISTER_PORTABLE`, `CU_MEMHOSTREGISTER_DEVICEMAP`.
const REGISTER_PORTABLE: u32 = 0x1;
const REGISTER_DEVICEMAP: u32 = 0x2;
/// `CU_MEMHOSTREGISTER_IOMEMORY`: the range is a device's I/O memory.
const REGISTER_IOMEMORY: u32 = 0x4;
/// `CU_MEM_ATTACH_GLOBAL`, `CU_MEM_ATTACH_HOST`.
const ATTACH_GLOBAL: u32 = 0x1;
const ATTACH_HOST: u32 = 0x2;
/// `CU_MEMHOSTALLOC_PORTABLE | DEVICEMAP | WRITECOMBINED`.
const ALLOC_FLAGS: u32 = 0x7;

/// The range containing `addr`: (base, region).
pub(crate) fn containing(st: &State, addr: u64) -> Option<(u64, &Region)> {
    let (&base, r) = st.ext.host.regions.range(..=addr).next_back()?;
    (addr - base < r.len as u64).then_some((base, r))
}

/// A pointer to `len` bytes at `addr` if they lie inside one page-locked range.
pub(crate) fn try_range(st: &State, addr: u64, len: usize) -> Option<*mut u8> {
    let (base, r) = containing(st, addr)?;
    let off = us(addr - base);
    if len > r.len - off {
        return None;
    }
    Some(match r.block_ptr() {
        // SAFETY: `off < r.len`, so the result stays inside the block.
        Some(p) => unsafe { p.add(off) },
        // The caller registered this memory and exposed its address by doing so.
        None => ptr::with_exposed_provenance_mut(us(addr)),
    })
}

/// Fails with `CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED` if `[base, base + len)` meets a
/// registered range, and with `CUDA_ERROR_INVALID_VALUE` if it meets a `cuMemHostAlloc`
/// block or device memory (driver 580's answers).
fn check_free(st: &State, base: u64, len: usize) -> Res<()> {
    let end = base + len as u64;
    let meets = st.ext.host.regions.range(..end).next_back();
    if let Some((_, r)) = meets.filter(|(&b, r)| b + r.len as u64 > base) {
        if r.allocated() {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("{base:#x}+{len} overlaps memory from cuMemHostAlloc"),
            );
        }
        return err(
            CUresult::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
            format!("{base:#x}+{len} overlaps a registered range"),
        );
    }
    let dev = st.allocs.range(..end).next_back();
    if dev.is_some_and(|(&b, a)| b + a.size as u64 > base) {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{base:#x}+{len} overlaps simulated device memory"),
        );
    }
    Ok(())
}

/// `cuMemHostRegister_v2`: page-locks the caller's `[p, p + len)` for the current context.
pub(crate) fn register(st: &mut State, p: *mut c_void, len: usize, flags: u32) -> Res<()> {
    let ctx = context::current_usable(st)?;
    if flags & !REGISTER_FLAGS != 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("cuMemHostRegister flags {flags:#x} are not valid"),
        );
    }
    if flags & REGISTER_IOMEMORY != 0 {
        // Driver 580 refuses ordinary memory registered as I/O memory so; the
        // simulated device has no I/O memory at all.
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "the simulated device has no I/O memory to register",
        );
    }
    let base = p.expose_provenance() as u64;
    if base == 0 || len == 0 || base.checked_add(len as u64).is_none() {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("cannot register {base:#x}+{len}"),
        );
    }
    check_free(st, base, len)?;
    let device = context::live(st, ctx)?.device;
    st.ext
        .host
        .regions
        .insert(base, Region::registered(ctx, device, len, flags));
    Ok(())
}

/// `cuMemHostUnregister`: `p` must be the base of a registered (not allocated) range.
/// Inside page-locked memory otherwise is `CUDA_ERROR_INVALID_VALUE`, outside it
/// `CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED` (driver 580's answers).
pub(crate) fn unregister(st: &mut State, p: *mut c_void) -> Res<()> {
    context::current(st)?;
    let addr = p.addr() as u64;
    match containing(st, addr) {
        Some((base, r)) if base == addr && !r.allocated() => {
            st.ext.host.regions.remove(&base);
            Ok(())
        }
        Some((base, _)) => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!(
                "{addr:#x} lies in page-locked memory at {base:#x} but is no registration's base"
            ),
        ),
        None => err(
            CUresult::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
            format!("{addr:#x} is not registered"),
        ),
    }
}

/// `cuMemHostGetDevicePointer_v2`: with unified addressing, the host pointer itself.
pub(crate) fn device_pointer(st: &State, p: *mut c_void, flags: u32) -> Res<u64> {
    context::current_usable(st)?;
    if flags != 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("cuMemHostGetDevicePointer flags {flags:#x} must be 0"),
        );
    }
    let addr = p.addr() as u64;
    match containing(st, addr) {
        Some((_, r)) if !r.managed => Ok(addr),
        _ => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{addr:#x} is not page-locked host memory"),
        ),
    }
}

/// `cuMemHostAlloc`: a zeroed, page-aligned, page-locked block for the current context.
pub(crate) fn alloc(st: &mut State, len: usize, flags: u32) -> Res<*mut c_void> {
    let ctx = context::current_usable(st)?;
    if flags & !ALLOC_FLAGS != 0 || len == 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("cuMemHostAlloc of {len} bytes with flags {flags:#x}"),
        );
    }
    let block = Block::new(len)?;
    let ptr = block.ptr();
    let base = ptr.expose_provenance() as u64;
    let device = context::live(st, ctx)?.device;
    st.ext
        .host
        .regions
        .insert(base, Region::with_block(ctx, device, flags, block));
    Ok(ptr.cast())
}

/// `cuMemFreeHost`: `p` must be the base of a block from `cuMemHostAlloc`.
pub(crate) fn free(st: &mut State, p: *mut c_void) -> Res<()> {
    context::current(st)?;
    let base = p.addr() as u64;
    match st.ext.host.regions.get(&base) {
        Some(r) if r.allocated() && !r.managed => {
            st.ext.host.regions.remove(&base);
            Ok(())
        }
        _ => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{base:#x} was not allocated by cuMemHostAlloc"),
        ),
    }
}

/// `cuMemAllocManaged`: zeroed, page-aligned memory that the host and the simulated
/// device share at one address (the simulated device runs on the host, so every store
/// is seen by both at once). `flags` must be `CU_MEM_ATTACH_GLOBAL` or `_HOST`.
pub(crate) fn alloc_managed(st: &mut State, len: usize, flags: u32) -> Res<u64> {
    let ctx = context::current_usable(st)?;
    if len == 0 || !matches!(flags, ATTACH_GLOBAL | ATTACH_HOST) {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("cuMemAllocManaged of {len} bytes with flags {flags:#x}"),
        );
    }
    let block = Block::new(len)?;
    let base = block.ptr().expose_provenance() as u64;
    let device = context::live(st, ctx)?.device;
    st.ext
        .host
        .regions
        .insert(base, Region::managed(ctx, device, flags, block));
    Ok(base)
}

/// `cuMemFree` of managed memory: `Some` when `dptr` is the base of a managed block
/// (which is then freed), `None` when it is not managed memory.
pub(crate) fn free_managed(st: &mut State, dptr: u64) -> Option<()> {
    st.ext.host.regions.get(&dptr).filter(|r| r.managed)?;
    st.ext.host.regions.remove(&dptr);
    st.ext.facts.forget(dptr);
    Some(())
}

/// `cuMemHostGetFlags`: the flags of the `cuMemHostAlloc` block containing `p`; for a
/// registered range, `CU_MEMHOSTALLOC_DEVICEMAP` with `PORTABLE` if it was registered so
/// (registered memory is always mapped; driver 580's answer).
pub(crate) fn flags(st: &State, p: *mut c_void) -> Res<u32> {
    context::current(st)?;
    match containing(st, p.addr() as u64) {
        Some((_, r)) if r.managed => Ok(REGISTER_DEVICEMAP),
        Some((_, r)) if r.allocated() => Ok(r.flags),
        Some((_, r)) => Ok((r.flags & REGISTER_PORTABLE) | REGISTER_DEVICEMAP),
        None => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "pointer is not in page-locked memory",
        ),
    }
}
