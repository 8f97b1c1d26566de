//! Device memory: allocation (stream-ordered included), copies (sync and async) and
//! memsets; the 2D memsets are in `memset_2d`.

use std::ffi::{c_uchar, c_uint, c_ushort, c_void};

use super::stream::ptsz;
use crate::context;
use crate::cu::{CUdeviceptr, CUdeviceptr_v1, CUresult, CUstream};
use crate::error::{err, Res};
use crate::ffi::{key, run, us, Out};
use crate::graph;
use crate::memory::{self, End};
use crate::pool;
use crate::state::{self, State};
use crate::stream;

mod memset_2d;

pub(crate) use memset_2d::*;

/// `cuMemAlloc_v2`: a zeroed, 256-byte aligned allocation in the current context.
///
/// # Safety
/// `dptr` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemAlloc_v2(dptr: *mut CUdeviceptr, bytesize: usize) -> CUresult {
    run("cuMemAlloc_v2", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(dptr, "dptr") }?;
        let mut st = sim.lock();
        let ctx = context::current_usable(&st)?;
        graph::forbid_unsafe(&mut st, "cuMemAlloc")?;
        out.write(memory::alloc(&mut st, sim.cfg.memory_bytes, ctx, bytesize)?);
        Ok(())
    })
}

/// Row alignment of pitched allocations: the simulated device's choice, the
/// alignment driver 580 gives rows on current GPUs.
const PITCH_ALIGNMENT: usize = 512;

/// `cuMemAllocPitch_v2`: `height` rows of `width` bytes, each row starting
/// `PITCH_ALIGNMENT`-aligned. The element size must be 4, 8 or 16 and both
/// dimensions non-zero (`CUDA_ERROR_INVALID_VALUE` otherwise).
///
/// # Safety
/// `dptr` and `pitch` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemAllocPitch_v2(
    dptr: *mut CUdeviceptr,
    pitch: *mut usize,
    width: usize,
    height: usize,
    element: std::ffi::c_uint,
) -> CUresult {
    run("cuMemAllocPitch_v2", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let (out, pitch_out) = unsafe { (Out::new(dptr, "dptr")?, Out::new(pitch, "pPitch")?) };
        if !matches!(element, 4 | 8 | 16) || width == 0 || height == 0 {
            return crate::error::err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("pitched allocation {width}x{height}, element size {element}"),
            );
        }
        let Some((row, bytes)) = width
            .checked_next_multiple_of(PITCH_ALIGNMENT)
            .and_then(|row| Some((row, row.checked_mul(height)?)))
        else {
            return crate::error::err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("pitched allocation {width}x{height} overflows"),
            );
        };
        let mut st = sim.lock();
        let ctx = context::current_usable(&st)?;
        graph::forbid_unsafe(&mut st, "cuMemAllocPitch")?;
        out.write(memory::alloc(&mut st, sim.cfg.memory_bytes, ctx, bytes)?);
        pitch_out.write(row);
        Ok(())
    })
}

/// `cuMemFree_v2`: `dptr` must be the base of a live allocation.
#[no_mangle]
pub extern "C" fn cuMemFree_v2(dptr: CUdeviceptr) -> CUresult {
    run("cuMemFree_v2", || {
        let sim = state::sim()?;
        let mut st = sim.lock();
        context::current_usable(&st)?;
        if crate::hostmem::free_managed(&mut st, dptr).is_some() {
            return Ok(());
        }
        memory::free(&mut st, dptr)
    })
}

/// `cuMemAllocManaged`: memory the host and the simulated device share at one address
/// (`crate::hostmem::alloc_managed`); freed with `cuMemFree`.
///
/// # Safety
/// `dptr` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemAllocManaged(
    dptr: *mut CUdeviceptr,
    bytesize: usize,
    flags: std::ffi::c_uint,
) -> CUresult {
    run("cuMemAllocManaged", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(dptr, "dptr") }?;
        out.write(crate::hostmem::alloc_managed(
            &mut sim.lock(),
            bytesize,
            flags,
        )?);
        Ok(())
    })
}

/// Runs a copy on the current context (`stream == None`) or on a stream.
///
/// # Safety
/// Host ends must be valid for `len` bytes, as for [`memory::copy`].
unsafe fn copy_on(
    name: &str,
    stream_h: Option<CUstream>,
    dst: impl FnOnce(&State) -> End,
    src: impl FnOnce(&State) -> End,
    len: usize,
) -> CUresult {
    run(name, || {
        let sim = state::sim()?;
        let mut st = sim.lock();
        check_queue(&st, stream_h)?;
        let (d, s) = (dst(&st), src(&st));
        if !capture_or_forbid(&mut st, stream_h, name, || graph::Work::Copy {
            dst: graph::CopyEnd::of(&d),
            src: graph::CopyEnd::of(&s),
            len,
        })? {
            return Ok(());
        }
        // SAFETY: forwarded from this function's contract.
        unsafe { memory::copy(&st, d, s, len) }
    })
}

/// Work on a capturing stream is recorded, not run (`Ok(false)`); a synchronous call is
/// refused while an open capture forbids it.
fn capture_or_forbid(
    st: &mut State,
    stream_h: Option<CUstream>,
    name: &str,
    work: impl FnOnce() -> graph::Work,
) -> Res<bool> {
    match stream_h {
        Some(h) => Ok(!graph::captured(st, key(h), work)?),
        None => graph::forbid_unsafe(st, name).map(|()| true),
    }
}

/// Checks that work may be enqueued: on the current context, or on the given stream.
fn check_queue(st: &State, stream_h: Option<CUstream>) -> Res<()> {
    match stream_h {
        None => context::current_usable(st).map(|_| ()),
        Some(h) => stream::usable(st, key(h)).map(|_| ()),
    }
}

/// `cuMemcpyHtoD_v2`.
///
/// # Safety
/// `src` must be valid for `n` bytes of reads.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyHtoD_v2(
    dst: CUdeviceptr,
    src: *const c_void,
    n: usize,
) -> CUresult {
    let s = End::Host(src.cast_mut().cast());
    // SAFETY: forwarded from this function's contract.
    unsafe { copy_on("cuMemcpyHtoD_v2", None, |_| End::Device(dst), |_| s, n) }
}

/// `cuMemcpyDtoH_v2`.
///
/// # Safety
/// `dst` must be valid for `n` bytes of writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoH_v2(dst: *mut c_void, src: CUdeviceptr, n: usize) -> CUresult {
    let d = End::Host(dst.cast());
    // SAFETY: forwarded from this function's contract.
    unsafe { copy_on("cuMemcpyDtoH_v2", None, |_| d, |_| End::Device(src), n) }
}

/// `cuMemcpyDtoD_v2`.
#[no_mangle]
pub extern "C" fn cuMemcpyDtoD_v2(dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> CUresult {
    // SAFETY: both ends are device addresses, checked against the live allocations.
    unsafe {
        copy_on(
            "cuMemcpyDtoD_v2",
            None,
            |_| End::Device(dst),
            |_| End::Device(src),
            n,
        )
    }
}

/// `cuMemcpyHtoDAsync_v2`: runs at once, in stream order.
///
/// # Safety
/// `src` must be valid for `n` bytes of reads.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyHtoDAsync_v2(
    dst: CUdeviceptr,
    src: *const c_void,
    n: usize,
    stream: CUstream,
) -> CUresult {
    let s = End::Host(src.cast_mut().cast());
    // SAFETY: forwarded from this function's contract.
    unsafe {
        copy_on(
            "cuMemcpyHtoDAsync_v2",
            Some(stream),
            |_| End::Device(dst),
            |_| s,
            n,
        )
    }
}

/// `cuMemcpyDtoHAsync_v2`: runs at once, in stream order.
///
/// # Safety
/// `dst` must be valid for `n` bytes of writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoHAsync_v2(
    dst: *mut c_void,
    src: CUdeviceptr,
    n: usize,
    stream: CUstream,
) -> CUresult {
    let d = End::Host(dst.cast());
    // SAFETY: forwarded from this function's contract.
    unsafe {
        copy_on(
            "cuMemcpyDtoHAsync_v2",
            Some(stream),
            |_| d,
            |_| End::Device(src),
            n,
        )
    }
}

/// `cuMemcpyDtoDAsync_v2`: runs at once, in stream order.
#[no_mangle]
pub extern "C" fn cuMemcpyDtoDAsync_v2(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    n: usize,
    stream: CUstream,
) -> CUresult {
    let (d, s) = (End::Device(dst), End::Device(src));
    // SAFETY: both ends are device addresses, checked against the live allocations.
    unsafe { copy_on("cuMemcpyDtoDAsync_v2", Some(stream), |_| d, |_| s, n) }
}

/// `cuMemcpy` (unified addressing): an address inside a live allocation is device
/// memory, any other address is host memory.
///
/// # Safety
/// Addresses that are not device memory must be valid host memory for `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpy(dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> CUresult {
    let (d, s) = (
        |st: &State| End::unified(st, dst),
        |st: &State| End::unified(st, src),
    );
    // SAFETY: forwarded from this function's contract.
    unsafe { copy_on("cuMemcpy", None, d, s, n) }
}

/// `cuMemcpyAsync` (unified addressing), run at once in stream order.
///
/// # Safety
/// As for [`cuMemcpy`].
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyAsync(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    n: usize,
    stream: CUstream,
) -> CUresult {
    let (d, s) = (
        |st: &State| End::unified(st, dst),
        |st: &State| End::unified(st, src),
    );
    // SAFETY: forwarded from this function's contract.
    unsafe { copy_on("cuMemcpyAsync", Some(stream), d, s, n) }
}

fn memset_on(
    name: &str,
    stream_h: Option<CUstream>,
    dst: CUdeviceptr,
    pattern: &[u8],
    n: usize,
) -> CUresult {
    run(name, || {
        let sim = state::sim()?;
        let mut st = sim.lock();
        check_queue(&st, stream_h)?;
        if !capture_or_forbid(&mut st, stream_h, name, || graph::Work::Memset {
            dst,
            pattern: pattern.to_vec(),
            count: n,
        })? {
            return Ok(());
        }
        memory::memset(&st, dst, pattern, n)
    })
}

/// `cuMemsetD8_v2`.
#[no_mangle]
pub extern "C" fn cuMemsetD8_v2(dst: CUdeviceptr, uc: c_uchar, n: usize) -> CUresult {
    memset_on("cuMemsetD8_v2", None, dst, &[uc], n)
}

/// `cuMemsetD16_v2`: `dst` must be 2-byte aligned.
#[no_mangle]
pub extern "C" fn cuMemsetD16_v2(dst: CUdeviceptr, us: c_ushort, n: usize) -> CUresult {
    memset_on("cuMemsetD16_v2", None, dst, &us.to_ne_bytes(), n)
}

/// `cuMemsetD32_v2`: `dst` must be 4-byte aligned.
#[no_mangle]
pub extern "C" fn cuMemsetD32_v2(dst: CUdeviceptr, ui: c_uint, n: usize) -> CUresult {
    memset_on("cuMemsetD32_v2", None, dst, &ui.to_ne_bytes(), n)
}

/// `cuMemsetD8Async`.
#[no_mangle]
pub extern "C" fn cuMemsetD8Async(
    dst: CUdeviceptr,
    uc: c_uchar,
    n: usize,
    stream: CUstream,
) -> CUresult {
    memset_on("cuMemsetD8Async", Some(stream), dst, &[uc], n)
}

/// `cuMemsetD16Async`.
#[no_mangle]
pub extern "C" fn cuMemsetD16Async(
    dst: CUdeviceptr,
    us: c_ushort,
    n: usize,
    stream: CUstream,
) -> CUresult {
    memset_on("cuMemsetD16Async", Some(stream), dst, &us.to_ne_bytes(), n)
}

/// `cuMemsetD32Async`.
#[no_mangle]
pub extern "C" fn cuMemsetD32Async(
    dst: CUdeviceptr,
    ui: c_uint,
    n: usize,
    stream: CUstream,
) -> CUresult {
    memset_on("cuMemsetD32Async", Some(stream), dst, &ui.to_ne_bytes(), n)
}

/// `cuMemAllocAsync`: a zeroed, 256-byte aligned allocation in the stream's context, made
/// at once (every stream is always idle).
///
/// # Safety
/// `dptr` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemAllocAsync(
    dptr: *mut CUdeviceptr,
    bytesize: usize,
    h_stream: CUstream,
) -> CUresult {
    run("cuMemAllocAsync", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(dptr, "dptr") }?;
        let mut st = sim.lock();
        out.write(pool::alloc(
            &mut st,
            sim.cfg.memory_bytes,
            bytesize,
            None,
            key(h_stream),
        )?);
        Ok(())
    })
}

/// `cuMemFreeAsync`: frees at once; `dptr` must be the base of a live allocation.
#[no_mangle]
pub extern "C" fn cuMemFreeAsync(dptr: CUdeviceptr, h_stream: CUstream) -> CUresult {
    run("cuMemFreeAsync", || {
        pool::free(&mut state::sim()?.lock(), dptr, key(h_stream))
    })
}

/// `cuMemGetAddressRange_v2`: base and size of the allocation containing `dptr`
/// (`CUDA_ERROR_NOT_FOUND` if none). Either out-pointer may be NULL.
pub(crate) fn mem_get_address_range_v2(
    pbase: Option<Out<CUdeviceptr>>,
    psize: Option<Out<usize>>,
    dptr: CUdeviceptr,
) -> Res<()> {
    let sim = state::sim()?;
    let st = sim.lock();
    context::current(&st)?;
    let found = match memory::containing(&st, dptr) {
        Some((base, a)) => Some((base, a.size)),
        // A mapped range: the mapping holding the address.
        None => crate::vmm::facts(&st, dptr).map(|(base, size, ..)| (base, crate::ffi::us(size))),
    };
    let Some((base, size)) = found else {
        return err(
            CUresult::CUDA_ERROR_NOT_FOUND,
            format!("{dptr:#x} is not inside a live allocation"),
        );
    };
    let (b_out, s_out) = (pbase, psize);
    if let Some(o) = b_out {
        o.write(base);
    }
    if let Some(o) = s_out {
        o.write(size);
    }
    Ok(())
}

/// `cuMemGetInfo_v2`: the budget minus live allocations of the current context's device.
pub(crate) fn mem_get_info_v2(f_out: Out<usize>, t_out: Out<usize>) -> Res<()> {
    let sim = state::sim()?;
    let st = sim.lock();
    let device = context::live(&st, context::current(&st)?)?.device;
    let (f, t) = memory::info(&st, sim.cfg.memory_bytes, device);
    f_out.write(us(f));
    t_out.write(us(t));
    Ok(())
}

/// `cuMemGetInfo`, the 32-bit form: as `cuMemGetInfo_v2`, each value
/// clamped to `u32::MAX` (the simulated device's choice; its default budget
/// fits).
pub(crate) fn mem_get_info(f_out: Out<c_uint>, t_out: Out<c_uint>) -> Res<()> {
    let sim = state::sim()?;
    let st = sim.lock();
    let device = context::live(&st, context::current(&st)?)?.device;
    let (f, t) = memory::info(&st, sim.cfg.memory_bytes, device);
    f_out.write(c_uint::try_from(f).unwrap_or(c_uint::MAX));
    t_out.write(c_uint::try_from(t).unwrap_or(c_uint::MAX));
    Ok(())
}
