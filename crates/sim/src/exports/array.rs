//! CUDA arrays: creation, descriptors, destruction, and the copies with an
//! array on one side (`crate::array` checks and moves the bytes).

use std::ffi::c_void;

use crate::array::{self, Run};
use crate::context;
use crate::cu::{
    CUDA_ARRAY3D_DESCRIPTOR_v1, CUDA_ARRAY_DESCRIPTOR_v1, CUarray, CUarray_format, CUdevice,
    CUdeviceptr, CUdeviceptr_v1, CUmipmappedArray, CUresult, CUstream, CUDA_ARRAY3D_DESCRIPTOR,
    CUDA_ARRAY_DESCRIPTOR, CUDA_ARRAY_MEMORY_REQUIREMENTS, CUDA_ARRAY_SPARSE_PROPERTIES,
    CUDA_MEMCPY3D,
};
use crate::error::{err, Res};
use crate::ffi::{key, run, Out};
use crate::state;
use crate::stream;

/// # Safety
/// `p` must be NULL or readable.
unsafe fn read<T>(p: *const T, what: &str) -> Res<T> {
    if p.is_null() {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{what} is NULL"),
        );
    }
    // SAFETY: non-NULL and readable by the contract.
    Ok(unsafe { p.read_unaligned() })
}

/// `cuArrayCreate_v2`: a 1D (`Height` 0) or 2D array.
///
/// # Safety
/// `p` must be NULL or readable.
pub(crate) unsafe fn array_create_v2(
    out: Out<CUarray>,
    p: *const CUDA_ARRAY_DESCRIPTOR,
) -> Res<()> {
    // SAFETY: forwarded from this function's contract.
    let d = unsafe { read(p, "pAllocateArray") }?;
    let d3 = CUDA_ARRAY3D_DESCRIPTOR {
        Width: d.Width,
        Height: d.Height,
        Depth: 0,
        Format: d.Format,
        NumChannels: d.NumChannels,
        Flags: 0,
    };
    let sim = state::sim()?;
    let k = array::create(&mut sim.lock(), sim.cfg.memory_bytes, &d3)?;
    out.write(k as CUarray);
    Ok(())
}

/// `cuArray3DCreate_v2`.
///
/// # Safety
/// `p` must be NULL or readable.
pub(crate) unsafe fn array3d_create_v2(
    out: Out<CUarray>,
    p: *const CUDA_ARRAY3D_DESCRIPTOR,
) -> Res<()> {
    // SAFETY: forwarded from this function's contract.
    let d = unsafe { read(p, "pAllocateArray") }?;
    let sim = state::sim()?;
    let k = array::create(&mut sim.lock(), sim.cfg.memory_bytes, &d)?;
    out.write(k as CUarray);
    Ok(())
}

/// `cuArrayGetDescriptor_v2`: width, height, format and channels (a 3D
/// array's depth is not part of this descriptor).
pub(crate) fn array_get_descriptor_v2(out: Out<CUDA_ARRAY_DESCRIPTOR>, h: CUarray) -> Res<()> {
    let sim = state::sim()?;
    let st = sim.lock();
    context::current(&st)?;
    let a = array::get(&st, key(h))?;
    out.write(CUDA_ARRAY_DESCRIPTOR {
        Width: a.width,
        Height: a.height,
        Format: CUarray_format(a.format),
        NumChannels: a.channels,
    });
    Ok(())
}

/// `cuArray3DGetDescriptor_v2`: 1D and 2D arrays report 0 for the absent
/// dimensions.
pub(crate) fn array3d_get_descriptor_v2(out: Out<CUDA_ARRAY3D_DESCRIPTOR>, h: CUarray) -> Res<()> {
    let sim = state::sim()?;
    let st = sim.lock();
    context::current(&st)?;
    let a = array::get(&st, key(h))?;
    out.write(CUDA_ARRAY3D_DESCRIPTOR {
        Width: a.width,
        Height: a.height,
        Depth: a.depth,
        Format: CUarray_format(a.format),
        NumChannels: a.channels,
        Flags: a.flags,
    });
    Ok(())
}

/// Runs a run copy on the current context (`stream_h` None) or a stream.
///
/// # Safety
/// Host sides must hold `n` bytes.
unsafe fn run_copy(dst: Run, src: Run, n: usize, stream_h: Option<CUstream>) -> Res<()> {
    let sim = state::sim()?;
    let st = sim.lock();
    match stream_h {
        None => context::current_usable(&st).map(drop)?,
        Some(h) => stream::usable(&st, key(h)).map(drop)?,
    }
    // SAFETY: forwarded from this function's contract.
    unsafe { array::copy_run(&st, dst, src, n) }
}

/// `cuMemcpyAtoD_v2`.
pub(crate) fn memcpy_atod_v2(dst: CUdeviceptr, src: CUarray, offset: usize, n: usize) -> Res<()> {
    // SAFETY: no host side.
    unsafe { run_copy(Run::Device(dst), Run::Array(key(src), offset), n, None) }
}

/// `cuMemcpyDtoA_v2`.
pub(crate) fn memcpy_dtoa_v2(dst: CUarray, offset: usize, src: CUdeviceptr, n: usize) -> Res<()> {
    // SAFETY: no host side.
    unsafe { run_copy(Run::Array(key(dst), offset), Run::Device(src), n, None) }
}

/// `cuMemcpyAtoA_v2`.
pub(crate) fn memcpy_atoa_v2(
    dst: CUarray,
    dst_offset: usize,
    src: CUarray,
    src_offset: usize,
    n: usize,
) -> Res<()> {
    let (d, s) = (
        Run::Array(key(dst), dst_offset),
        Run::Array(key(src), src_offset),
    );
    // SAFETY: no host side.
    unsafe { run_copy(d, s, n, None) }
}

/// Why the simulated device refuses a sparse or deferred-mapping query: it
/// makes neither kind of array (the driver answers `CUDA_ERROR_INVALID_VALUE`
/// for arrays of other kinds).
const NOT_SPARSE: &str = "the simulated device makes no sparse or deferred-mapping arrays";

/// `cuArrayGetMemoryRequirements`: only for deferred-mapping arrays.
pub(crate) fn array_get_memory_requirements(
    _out: Out<CUDA_ARRAY_MEMORY_REQUIREMENTS>,
    h: CUarray,
    device: CUdevice,
) -> Res<()> {
    let sim = state::sim()?;
    sim.check_device(device)?;
    let st = sim.lock();
    context::current(&st)?;
    array::get(&st, key(h))?;
    err(CUresult::CUDA_ERROR_INVALID_VALUE, NOT_SPARSE)
}

/// `cuArrayGetPlane`: the simulated formats have one plane, which is no plane.
pub(crate) fn array_get_plane(_out: Out<CUarray>, h: CUarray, plane: std::ffi::c_uint) -> Res<()> {
    let sim = state::sim()?;
    let st = sim.lock();
    context::current(&st)?;
    array::get(&st, key(h))?;
    err(
        CUresult::CUDA_ERROR_INVALID_VALUE,
        format!("plane {plane}: the array's format is not multi-planar"),
    )
}

/// `cuArrayGetSparseProperties`: only for sparse arrays.
pub(crate) fn array_get_sparse_properties(
    _out: Out<CUDA_ARRAY_SPARSE_PROPERTIES>,
    h: CUarray,
) -> Res<()> {
    let sim = state::sim()?;
    let st = sim.lock();
    context::current(&st)?;
    array::get(&st, key(h))?;
    err(CUresult::CUDA_ERROR_INVALID_VALUE, NOT_SPARSE)
}

/// `cuMipmappedArrayCreate`.
///
/// # Safety
/// `p` must be NULL or readable.
pub(crate) unsafe fn mipmapped_array_create(
    out: Out<CUmipmappedArray>,
    p: *const CUDA_ARRAY3D_DESCRIPTOR,
    levels: std::ffi::c_uint,
) -> Res<()> {
    // SAFETY: forwarded from this function's contract.
    let d = unsafe { read(p, "pMipmappedArrayDesc") }?;
    let sim = state::sim()?;
    let k = array::create_mipmapped(&mut sim.lock(), sim.cfg.memory_bytes, &d, levels)?;
    out.write(k as CUmipmappedArray);
    Ok(())
}

/// `cuMipmappedArrayGetLevel`.
pub(crate) fn mipmapped_array_get_level(
    out: Out<CUarray>,
    h: CUmipmappedArray,
    level: std::ffi::c_uint,
) -> Res<()> {
    let sim = state::sim()?;
    let st = sim.lock();
    context::current(&st)?;
    let m = array::get_mipmapped(&st, key(h))?;
    match m.levels.get(level as usize) {
        Some(&k) => {
            out.write(k as CUarray);
            Ok(())
        }
        None => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("level {level} of {}", m.levels.len()),
        ),
    }
}

/// `cuMipmappedArrayGetMemoryRequirements`: only for deferred-mapping arrays.
pub(crate) fn mipmapped_array_get_memory_requirements(
    _out: Out<CUDA_ARRAY_MEMORY_REQUIREMENTS>,
    h: CUmipmappedArray,
    device: CUdevice,
) -> Res<()> {
    let sim = state::sim()?;
    sim.check_device(device)?;
    let st = sim.lock();
    context::current(&st)?;
    array::get_mipmapped(&st, key(h))?;
    err(CUresult::CUDA_ERROR_INVALID_VALUE, NOT_SPARSE)
}

/// `cuMipmappedArrayGetSparseProperties`: only for sparse arrays.
pub(crate) fn mipmapped_array_get_sparse_properties(
    _out: Out<CUDA_ARRAY_SPARSE_PROPERTIES>,
    h: CUmipmappedArray,
) -> Res<()> {
    let sim = state::sim()?;
    let st = sim.lock();
    context::current(&st)?;
    array::get_mipmapped(&st, key(h))?;
    err(CUresult::CUDA_ERROR_INVALID_VALUE, NOT_SPARSE)
}

/// `cuMipmappedArrayDestroy`.
#[no_mangle]
pub extern "C" fn cuMipmappedArrayDestroy(h: CUmipmappedArray) -> CUresult {
    run("cuMipmappedArrayDestroy", || {
        let sim = state::sim()?;
        array::destroy_mipmapped(&mut sim.lock(), key(h))
    })
}

/// `cuArrayDestroy`.
#[no_mangle]
pub extern "C" fn cuArrayDestroy(h: CUarray) -> CUresult {
    run("cuArrayDestroy", || {
        let sim = state::sim()?;
        array::destroy(&mut sim.lock(), key(h))
    })
}

/// `cuMemcpyHtoA_v2`.
///
/// # Safety
/// `src` must be NULL or hold `n` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyHtoA_v2(
    dst: CUarray,
    offset: usize,
    src: *const c_void,
    n: usize,
) -> CUresult {
    run("cuMemcpyHtoA_v2", || {
        let s = Run::Host(src.cast_mut().cast());
        // SAFETY: forwarded from this function's contract.
        unsafe { run_copy(Run::Array(key(dst), offset), s, n, None) }
    })
}

/// `cuMemcpyHtoAAsync_v2`: runs at once, in stream order.
///
/// # Safety
/// As for [`cuMemcpyHtoA_v2`].
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyHtoAAsync_v2(
    dst: CUarray,
    offset: usize,
    src: *const c_void,
    n: usize,
    h_stream: CUstream,
) -> CUresult {
    run("cuMemcpyHtoAAsync_v2", || {
        let s = Run::Host(src.cast_mut().cast());
        // SAFETY: forwarded from this function's contract.
        unsafe { run_copy(Run::Array(key(dst), offset), s, n, Some(h_stream)) }
    })
}

/// `cuMemcpyAtoH_v2`.
///
/// # Safety
/// `dst` must be NULL or hold `n` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyAtoH_v2(
    dst: *mut c_void,
    src: CUarray,
    offset: usize,
    n: usize,
) -> CUresult {
    run("cuMemcpyAtoH_v2", || {
        let s = Run::Array(key(src), offset);
        // SAFETY: forwarded from this function's contract.
        unsafe { run_copy(Run::Host(dst.cast()), s, n, None) }
    })
}

/// `cuMemcpyAtoHAsync_v2`: runs at once, in stream order.
///
/// # Safety
/// As for [`cuMemcpyAtoH_v2`].
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyAtoHAsync_v2(
    dst: *mut c_void,
    src: CUarray,
    offset: usize,
    n: usize,
    h_stream: CUstream,
) -> CUresult {
    run("cuMemcpyAtoHAsync_v2", || {
        let s = Run::Array(key(src), offset);
        // SAFETY: forwarded from this function's contract.
        unsafe { run_copy(Run::Host(dst.cast()), s, n, Some(h_stream)) }
    })
}

/// Runs a 3D copy on the current context (`stream_h` None) or a stream.
///
/// # Safety
/// `p` must be NULL or a readable descriptor whose host sides hold the box.
unsafe fn copy_3d_on(name: &str, p: *const CUDA_MEMCPY3D, stream_h: Option<CUstream>) -> CUresult {
    run(name, || {
        let sim = state::sim()?;
        let st = sim.lock();
        match stream_h {
            None => context::current_usable(&st).map(drop)?,
            Some(h) => stream::usable(&st, key(h)).map(drop)?,
        }
        // SAFETY: forwarded from this function's contract.
        let c = unsafe { read(p, "pCopy") }?;
        // SAFETY: forwarded from this function's contract.
        unsafe { array::copy_3d(&st, &c) }
    })
}

/// `cuMemcpy3D_v2`: host, device, unified and array sides.
///
/// # Safety
/// `p_copy` must be NULL or a readable descriptor whose host sides hold the box.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpy3D_v2(p_copy: *const CUDA_MEMCPY3D) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe { copy_3d_on("cuMemcpy3D_v2", p_copy, None) }
}

/// `cuMemcpy3DAsync_v2`: runs at once, in stream order.
///
/// # Safety
/// As for [`cuMemcpy3D_v2`].
#[no_mangle]
pub unsafe extern "C" fn cuMemcpy3DAsync_v2(
    p_copy: *const CUDA_MEMCPY3D,
    h_stream: CUstream,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe { copy_3d_on("cuMemcpy3DAsync_v2", p_copy, Some(h_stream)) }
}

// ---- the 32-bit first forms and the per-thread forms ----

/// Every first form is a call of API version 3010. Driver 580 answers such a
/// call in a context of a later API version (a primary context, or one from
/// `cuCtxCreate_v2` and later) with CUDA_ERROR_INVALID_CONTEXT, as it does any
/// call that mixes API versions, before it looks at the arguments; the
/// simulated device makes no context of version 3010, so it answers each first
/// form so.
fn first_form() -> Res<()> {
    let sim = state::sim()?;
    context::current(&sim.lock())?;
    err(
        CUresult::CUDA_ERROR_INVALID_CONTEXT,
        "a call of API version 3010 in a context of a later API version",
    )
}

/// `cuArrayCreate` (see [`first_form`]).
///
/// # Safety
/// None beyond the generated stub's: the descriptor is not read.
pub(crate) unsafe fn array_create(
    _out: Out<CUarray>,
    _p: *const CUDA_ARRAY_DESCRIPTOR_v1,
) -> Res<()> {
    first_form()
}

/// `cuArray3DCreate` (see [`first_form`]).
///
/// # Safety
/// None beyond the generated stub's: the descriptor is not read.
pub(crate) unsafe fn array3d_create(
    _out: Out<CUarray>,
    _p: *const CUDA_ARRAY3D_DESCRIPTOR_v1,
) -> Res<()> {
    first_form()
}

/// `cuArrayGetDescriptor` (see [`first_form`]).
pub(crate) fn array_get_descriptor(_out: Out<CUDA_ARRAY_DESCRIPTOR_v1>, _h: CUarray) -> Res<()> {
    first_form()
}

/// `cuArray3DGetDescriptor` (see [`first_form`]).
pub(crate) fn array3d_get_descriptor(
    _out: Out<CUDA_ARRAY3D_DESCRIPTOR_v1>,
    _h: CUarray,
) -> Res<()> {
    first_form()
}

/// `cuMemcpyAtoD` (see [`first_form`]).
pub(crate) fn memcpy_atod(
    _dst: CUdeviceptr_v1,
    _src: CUarray,
    _offset: std::ffi::c_uint,
    _n: std::ffi::c_uint,
) -> Res<()> {
    first_form()
}

/// `cuMemcpyDtoA` (see [`first_form`]).
pub(crate) fn memcpy_dtoa(
    _dst: CUarray,
    _offset: std::ffi::c_uint,
    _src: CUdeviceptr_v1,
    _n: std::ffi::c_uint,
) -> Res<()> {
    first_form()
}

/// `cuMemcpyAtoA` (see [`first_form`]).
pub(crate) fn memcpy_atoa(
    _dst: CUarray,
    _dst_offset: std::ffi::c_uint,
    _src: CUarray,
    _src_offset: std::ffi::c_uint,
    _n: std::ffi::c_uint,
) -> Res<()> {
    first_form()
}

/// `cuMemcpyAtoD_v2_ptds`: the simulated device runs every copy in order,
/// so the per-thread default stream's copy is the synchronous one.
pub(crate) fn memcpy_atod_v2_ptds(
    dst: CUdeviceptr,
    src: CUarray,
    offset: usize,
    n: usize,
) -> Res<()> {
    memcpy_atod_v2(dst, src, offset, n)
}

/// `cuMemcpyDtoA_v2_ptds` (see [`memcpy_atod_v2_ptds`]).
pub(crate) fn memcpy_dtoa_v2_ptds(
    dst: CUarray,
    offset: usize,
    src: CUdeviceptr,
    n: usize,
) -> Res<()> {
    memcpy_dtoa_v2(dst, offset, src, n)
}

/// `cuMemcpyAtoA_v2_ptds` (see [`memcpy_atod_v2_ptds`]).
pub(crate) fn memcpy_atoa_v2_ptds(
    dst: CUarray,
    dst_offset: usize,
    src: CUarray,
    src_offset: usize,
    n: usize,
) -> Res<()> {
    memcpy_atoa_v2(dst, dst_offset, src, src_offset, n)
}
