//! "Device" memory: real host allocations, 256-byte aligned, tracked per context, with
//! every access checked against the live allocations.

use std::ptr;

use crate::context;
use crate::cu::{CUdeviceptr, CUresult};
use crate::error::{err, Res};
use crate::ffi::us;
use crate::state::memory::Allocation;
use crate::state::State;

/// Allocates `size` bytes for context `ctx`, charging its device's budget.
pub(crate) fn alloc(st: &mut State, budget: u64, ctx: usize, size: usize) -> Res<CUdeviceptr> {
    if size == 0 {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "allocation of 0 bytes");
    }
    let device = context::live(st, ctx)?.device;
    let used = st.used[device];
    if (size as u64) > budget - used {
        return err(
            CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            format!(
                "{size} bytes requested, {} of the simulated budget left",
                budget - used
            ),
        );
    }
    let Some(a) = Allocation::new(ctx, device, size) else {
        return err(
            CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            format!("host allocation of {size} bytes failed"),
        );
    };
    let base = a.base();
    st.allocs.insert(base, a);
    st.used[device] += size as u64;
    Ok(base)
}

/// Frees the allocation whose base address is `base`; freeing NULL is a
/// no-op that succeeds, as on the real driver.
pub(crate) fn free(st: &mut State, base: CUdeviceptr) -> Res<()> {
    if base == 0 {
        return Ok(());
    }
    if crate::ipc::is_opened(st, base) {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!(
                "{base:#x} was opened by cuIpcOpenMemHandle: close it with cuIpcCloseMemHandle"
            ),
        );
    }
    match st.allocs.remove(&base) {
        Some(a) => {
            st.used[a.device] -= a.size as u64;
            // Forget what was known about the allocation (pointer facts, its pool).
            st.ext.facts.forget(base);
            crate::pool::released(st, base);
            Ok(())
        }
        None => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{base:#x} is not the base of a live allocation"),
        ),
    }
}

/// The live allocation containing `addr`: (base, allocation).
pub(crate) fn containing(st: &State, addr: CUdeviceptr) -> Option<(u64, &Allocation)> {
    let (&base, a) = st.allocs.range(..=addr).next_back()?;
    (addr - base < a.size as u64).then_some((base, a))
}

/// A raw pointer to `len` bytes at device address `addr`, which must lie wholly inside one
/// live allocation (`CUDA_ERROR_INVALID_VALUE` otherwise).
pub(crate) fn range(st: &State, addr: CUdeviceptr, len: usize) -> Res<*mut u8> {
    match try_range(st, addr, len) {
        Some(p) => Ok(p),
        None => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("device range {addr:#x}+{len} is not inside one live allocation"),
        ),
    }
}

/// Like [`range`], without an error value. Page-locked host ranges count as device memory
/// at their own address (unified addressing); a mapped range counts once its access is
/// set (`crate::vmm`).
pub(crate) fn try_range(st: &State, addr: CUdeviceptr, len: usize) -> Option<*mut u8> {
    let Some((base, a)) = containing(st, addr) else {
        if crate::vmm::reserved(st, addr) {
            return crate::vmm::try_range(st, addr, len);
        }
        return crate::hostmem::try_range(st, addr, len);
    };
    let off = us(addr - base);
    if len > a.size - off {
        return None;
    }
    // SAFETY: `off < a.size`, so the result stays inside the block.
    Some(unsafe { a.ptr().add(off) })
}

/// One end of a copy.
#[derive(Clone, Copy, Debug)]
pub(crate) enum End {
    /// A device address, checked against the live allocations.
    Device(CUdeviceptr),
    /// A host address given by the caller; its validity is the caller's responsibility.
    Host(*mut u8),
}

impl End {
    /// Classifies a unified address: device if it lies in a live allocation or a
    /// reservation, else host.
    pub fn unified(st: &State, addr: CUdeviceptr) -> Self {
        if containing(st, addr).is_some() || crate::vmm::reserved(st, addr) {
            End::Device(addr)
        } else {
            End::Host(ptr::with_exposed_provenance_mut(us(addr)))
        }
    }

    fn resolve(self, st: &State, len: usize, what: &str) -> Res<*mut u8> {
        match self {
            End::Device(addr) => range(st, addr, len),
            End::Host(p) if p.is_null() => err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("{what} host pointer is NULL"),
            ),
            End::Host(p) => Ok(p),
        }
    }
}

/// Copies `len` bytes from `src` to `dst` after checking both ends. Nothing is touched if
/// either check fails.
///
/// # Safety
/// Every `End::Host` pointer must be valid for `len` bytes of reads (source) or writes
/// (destination).
pub(crate) unsafe fn copy(st: &State, dst: End, src: End, len: usize) -> Res<()> {
    if len == 0 {
        return Ok(());
    }
    let d = dst.resolve(st, len, "destination")?;
    let s = src.resolve(st, len, "source")?;
    // SAFETY: device ends were checked to lie inside live allocations; host ends are valid
    // by this function's contract. `ptr::copy` allows overlap.
    unsafe { ptr::copy(s, d, len) };
    Ok(())
}

/// `cuMemsetD{8,16,32}`: stores `count` elements of `pattern` (1, 2 or 4 bytes) at `dst`.
pub(crate) fn memset(st: &State, dst: CUdeviceptr, pattern: &[u8], count: usize) -> Res<()> {
    let width = pattern.len();
    if !dst.is_multiple_of(width as u64) {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("memset destination {dst:#x} is not {width}-byte aligned"),
        );
    }
    let Some(len) = count.checked_mul(width) else {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "memset size overflows");
    };
    if len == 0 {
        return Ok(());
    }
    let p = range(st, dst, len)?;
    if let [byte] = pattern {
        // SAFETY: `p..p+len` lies inside a live allocation.
        unsafe { ptr::write_bytes(p, *byte, len) };
        return Ok(());
    }
    for i in 0..count {
        // SAFETY: `p..p+len` lies inside a live allocation and `i * width + width <= len`.
        unsafe { ptr::copy_nonoverlapping(pattern.as_ptr(), p.add(i * width), width) };
    }
    Ok(())
}

/// `cuMemsetD2D{8,16,32}`: stores `height` rows of `width` elements of `pattern` (1, 2
/// or 4 bytes), rows `pitch` bytes apart, at `dst`. `dst`, and `pitch` when there is more
/// than one row, must be aligned to the element size, and the pitch must hold a row.
/// The whole pitched span, from the first byte of row 0 to the last byte of the last
/// row, must lie inside one live allocation; otherwise nothing is touched.
pub(crate) fn memset_2d(
    st: &State,
    dst: CUdeviceptr,
    pitch: usize,
    pattern: &[u8],
    width: usize,
    height: usize,
) -> Res<()> {
    let size = pattern.len();
    let bad = |why: String| err(CUresult::CUDA_ERROR_INVALID_VALUE, why);
    if !dst.is_multiple_of(size as u64) || (height > 1 && !pitch.is_multiple_of(size)) {
        return bad(format!(
            "2D memset destination {dst:#x} or pitch {pitch} is not {size}-byte aligned"
        ));
    }
    let Some(row) = width.checked_mul(size) else {
        return bad("2D memset row size overflows".into());
    };
    if row == 0 || height == 0 {
        return Ok(());
    }
    if height > 1 && pitch < row {
        return bad(format!(
            "pitch {pitch} is smaller than a row of {row} bytes"
        ));
    }
    let Some(span) = (height - 1)
        .checked_mul(pitch)
        .and_then(|s| s.checked_add(row))
    else {
        return bad("2D memset span overflows".into());
    };
    let p = range(st, dst, span)?;
    for r in 0..height {
        // SAFETY: `r * pitch + row <= span`, and `p..p+span` lies inside a live allocation.
        let start = unsafe { p.add(r * pitch) };
        if let [byte] = pattern {
            // SAFETY: as above; the row's `row` bytes are inside the span.
            unsafe { ptr::write_bytes(start, *byte, row) };
            continue;
        }
        for i in 0..width {
            // SAFETY: as above; `i * size + size <= row`.
            unsafe { ptr::copy_nonoverlapping(pattern.as_ptr(), start.add(i * size), size) };
        }
    }
    Ok(())
}

/// `cuMemGetInfo_v2` for `device`: (free, total).
pub(crate) fn info(st: &State, budget: u64, device: usize) -> (u64, u64) {
    (budget - st.used[device], budget)
}
