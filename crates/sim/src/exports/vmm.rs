//! Virtual memory management: reservations, physical allocations, mappings and access
//! (the model is `crate::vmm`).

use std::ffi::{c_int, c_ulonglong, c_void};

use crate::cu::{
    CUdeviceptr, CUmemAccessDesc, CUmemAllocationGranularity_flags, CUmemAllocationHandleType,
    CUmemAllocationProp, CUmemGenericAllocationHandle, CUmemLocation, CUmemRangeHandleType,
    CUresult,
};
use crate::error::{err, Res};
use crate::ffi::{run, us, Out};
use crate::state;
use crate::{vmm, vmm_share};

/// A C struct the caller passes by pointer, copied out.
///
/// # Safety
/// `p` must be NULL or valid for a read of a `T`.
unsafe fn read<T: Copy>(p: *const T, what: &str) -> Res<T> {
    if p.is_null() {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{what} is NULL"),
        );
    }
    // SAFETY: non-NULL, and valid for a read by this function's contract.
    Ok(unsafe { p.read_unaligned() })
}

/// The bytes of an allocation's properties, as `cuMemGetAllocationPropertiesFromHandle`
/// gives them back.
fn prop_bytes(prop: &CUmemAllocationProp) -> [u8; 32] {
    const { assert!(size_of::<CUmemAllocationProp>() == 32) };
    let mut out = [0u8; 32];
    // SAFETY: `out` holds exactly the struct's 32 bytes; the copy reads a live value.
    unsafe {
        std::ptr::copy_nonoverlapping(std::ptr::from_ref(prop).cast::<u8>(), out.as_mut_ptr(), 32);
    }
    // The Windows metadata pointer means nothing here: it is not kept.
    out[16..24].fill(0);
    out
}

/// `cuMemGetAllocationGranularity`: 2 MiB, minimum and recommended.
///
/// # Safety
/// `prop` must be NULL or valid for reads.
pub(crate) unsafe fn mem_get_allocation_granularity(
    granularity: Out<usize>,
    prop: *const CUmemAllocationProp,
    option: CUmemAllocationGranularity_flags,
) -> Res<()> {
    let sim = state::sim()?;
    // SAFETY: forwarded from this function's contract.
    let prop = unsafe { read(prop, "prop") }?;
    granularity.write(us(vmm::granularity(sim, &prop, option.0)?));
    Ok(())
}

/// `cuMemGetAccess`: the flags set for `location` at mapped address `ptr`.
///
/// # Safety
/// `location` must be NULL or valid for reads.
pub(crate) unsafe fn mem_get_access(
    flags: Out<c_ulonglong>,
    location: *const CUmemLocation,
    ptr: CUdeviceptr,
) -> Res<()> {
    let sim = state::sim()?;
    // SAFETY: forwarded from this function's contract.
    let loc = unsafe { read(location, "location") }?;
    flags.write(vmm::get_access(sim, &sim.lock(), &loc, ptr)?);
    Ok(())
}

/// `cuMemAddressReserve`.
///
/// # Safety
/// `ptr` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemAddressReserve(
    ptr: *mut CUdeviceptr,
    size: usize,
    alignment: usize,
    _addr: CUdeviceptr,
    flags: c_ulonglong,
) -> CUresult {
    run("cuMemAddressReserve", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(ptr, "ptr") }?;
        out.write(vmm::reserve(
            &mut sim.lock(),
            size as u64,
            alignment as u64,
            flags,
        )?);
        Ok(())
    })
}

/// `cuMemAddressFree`.
#[no_mangle]
pub extern "C" fn cuMemAddressFree(ptr: CUdeviceptr, size: usize) -> CUresult {
    run("cuMemAddressFree", || {
        vmm::address_free(&mut state::sim()?.lock(), ptr, size as u64)
    })
}

/// `cuMemCreate`.
///
/// # Safety
/// `handle` must be NULL or valid for writes, `prop` NULL or valid for reads.
#[no_mangle]
pub unsafe extern "C" fn cuMemCreate(
    handle: *mut CUmemGenericAllocationHandle,
    size: usize,
    prop: *const CUmemAllocationProp,
    flags: c_ulonglong,
) -> CUresult {
    run("cuMemCreate", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(handle, "handle") }?;
        // SAFETY: forwarded from this function's contract.
        let prop = unsafe { read(prop, "prop") }?;
        let bytes = prop_bytes(&prop);
        let mut st = sim.lock();
        out.write(vmm::create(sim, &mut st, size as u64, &prop, bytes, flags)?);
        Ok(())
    })
}

/// `cuMemRelease`.
#[no_mangle]
pub extern "C" fn cuMemRelease(handle: CUmemGenericAllocationHandle) -> CUresult {
    run("cuMemRelease", || {
        vmm::release(&mut state::sim()?.lock(), handle)
    })
}

/// `cuMemMap`.
#[no_mangle]
pub extern "C" fn cuMemMap(
    ptr: CUdeviceptr,
    size: usize,
    offset: usize,
    handle: CUmemGenericAllocationHandle,
    flags: c_ulonglong,
) -> CUresult {
    run("cuMemMap", || {
        let mut st = state::sim()?.lock();
        vmm::map(&mut st, ptr, size as u64, offset as u64, handle, flags)
    })
}

/// `cuMemUnmap`.
#[no_mangle]
pub extern "C" fn cuMemUnmap(ptr: CUdeviceptr, size: usize) -> CUresult {
    run("cuMemUnmap", || {
        vmm::unmap(&mut state::sim()?.lock(), ptr, size as u64)
    })
}

/// `cuMemSetAccess`.
///
/// # Safety
/// `desc` must be NULL or valid for reads of `count` descriptors.
#[no_mangle]
pub unsafe extern "C" fn cuMemSetAccess(
    ptr: CUdeviceptr,
    size: usize,
    desc: *const CUmemAccessDesc,
    count: usize,
) -> CUresult {
    run("cuMemSetAccess", || {
        let sim = state::sim()?;
        if desc.is_null() || count == 0 {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "no access descriptor");
        }
        // SAFETY: non-NULL, and valid for `count` reads by this function's contract.
        let descs: Vec<CUmemAccessDesc> = (0..count)
            .map(|i| unsafe { desc.add(i).read_unaligned() })
            .collect();
        vmm::set_access(sim, &mut sim.lock(), ptr, size as u64, &descs)
    })
}

/// `cuMemRetainAllocationHandle`.
///
/// # Safety
/// `handle` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemRetainAllocationHandle(
    handle: *mut CUmemGenericAllocationHandle,
    addr: *mut c_void,
) -> CUresult {
    run("cuMemRetainAllocationHandle", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(handle, "handle") }?;
        out.write(vmm::retain(
            &mut sim.lock(),
            addr.expose_provenance() as u64,
        )?);
        Ok(())
    })
}

/// `cuMemGetAllocationPropertiesFromHandle`.
///
/// # Safety
/// `prop` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemGetAllocationPropertiesFromHandle(
    prop: *mut CUmemAllocationProp,
    handle: CUmemGenericAllocationHandle,
) -> CUresult {
    run("cuMemGetAllocationPropertiesFromHandle", || {
        let sim = state::sim()?;
        if prop.is_null() {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "prop is NULL");
        }
        let bytes = vmm::properties(&sim.lock(), handle)?;
        // SAFETY: non-NULL, and valid for a write of the struct's 32 bytes by this
        // function's contract.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), prop.cast::<u8>(), 32) };
        Ok(())
    })
}

/// `cuMemExportToShareableHandle` (`crate::vmm_share`): a POSIX file descriptor of the
/// allocation's pages, written as an `int`.
///
/// # Safety
/// `shareable` must be NULL or valid for writes of the type's handle.
#[no_mangle]
pub unsafe extern "C" fn cuMemExportToShareableHandle(
    shareable: *mut c_void,
    handle: CUmemGenericAllocationHandle,
    kind: CUmemAllocationHandleType,
    flags: c_ulonglong,
) -> CUresult {
    run("cuMemExportToShareableHandle", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(shareable.cast::<c_int>(), "shareableHandle") }?;
        let mut st = sim.lock();
        if kind.0 != vmm_share::POSIX_FD {
            return vmm_share::export_other(&st, handle, kind.0);
        }
        out.write(vmm_share::export_fd(&mut st, handle, flags)?);
        Ok(())
    })
}

/// `cuMemImportFromShareableHandle` of a POSIX file descriptor (`os_handle` is its
/// number); the caller keeps the descriptor.
///
/// # Safety
/// `handle` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemImportFromShareableHandle(
    handle: *mut CUmemGenericAllocationHandle,
    os_handle: *mut c_void,
    kind: CUmemAllocationHandleType,
) -> CUresult {
    run("cuMemImportFromShareableHandle", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(handle, "handle") }?;
        if kind.0 != vmm_share::POSIX_FD {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!(
                    "handle type {:#x}: only POSIX file descriptors are simulated",
                    kind.0
                ),
            );
        }
        let fd = c_int::try_from(os_handle as usize).unwrap_or(-1);
        out.write(vmm_share::import_fd(&mut sim.lock(), fd)?);
        Ok(())
    })
}

/// `cuMemGetHandleForAddressRange` as a dma-buf descriptor, written as an `int`.
///
/// # Safety
/// `handle` must be NULL or valid for writes of an `int`.
#[no_mangle]
pub unsafe extern "C" fn cuMemGetHandleForAddressRange(
    handle: *mut c_void,
    dptr: CUdeviceptr,
    size: usize,
    kind: CUmemRangeHandleType,
    flags: c_ulonglong,
) -> CUresult {
    run("cuMemGetHandleForAddressRange", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(handle.cast::<c_int>(), "handle") }?;
        out.write(vmm_share::range_fd(
            &mut sim.lock(),
            dptr,
            size as u64,
            kind.0,
            flags,
        )?);
        Ok(())
    })
}

/// `cuMemMapArrayAsync` and `_ptsz`: the simulated device makes no sparse
/// arrays, so a live array or mipmapped array is refused as the driver
/// refuses one that is not sparse (`CUDA_ERROR_INVALID_VALUE`).
///
/// # Safety
/// `infos` must be NULL or hold `count` readable map infos.
unsafe fn map_array(
    name: &str,
    infos: *mut crate::cu::CUarrayMapInfo,
    count: std::ffi::c_uint,
    stream_key: usize,
) -> crate::cu::CUresult {
    crate::ffi::run(name, || {
        let st = state::sim()?.lock();
        crate::stream::usable(&st, stream_key)?;
        if infos.is_null() || count == 0 {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "no map infos");
        }
        for i in 0..count as usize {
            // SAFETY: `i < count` map infos are readable by this function's contract.
            let info = unsafe { infos.add(i).read_unaligned() };
            // SAFETY: both union members are handles.
            let k = unsafe { info.resource.array } as usize;
            if info.resourceType == crate::cu::CUresourcetype::CU_RESOURCE_TYPE_MIPMAPPED_ARRAY {
                crate::array::get_mipmapped(&st, k)?;
            } else {
                crate::array::get(&st, k)?;
            }
        }
        err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "the simulated device makes no sparse arrays",
        )
    })
}

/// `cuMemMapArrayAsync`.
///
/// # Safety
/// `infos` must be NULL or hold `count` readable map infos.
#[no_mangle]
pub unsafe extern "C" fn cuMemMapArrayAsync(
    infos: *mut crate::cu::CUarrayMapInfo,
    count: std::ffi::c_uint,
    stream: crate::cu::CUstream,
) -> crate::cu::CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe { map_array("cuMemMapArrayAsync", infos, count, crate::ffi::key(stream)) }
}

/// `cuMemMapArrayAsync_ptsz`: the NULL stream is the per-thread stream.
///
/// # Safety
/// `infos` must be NULL or hold `count` readable map infos.
#[no_mangle]
pub unsafe extern "C" fn cuMemMapArrayAsync_ptsz(
    infos: *mut crate::cu::CUarrayMapInfo,
    count: std::ffi::c_uint,
    stream: crate::cu::CUstream,
) -> crate::cu::CUresult {
    let k = super::stream::ptsz(stream);
    // SAFETY: forwarded from this function's contract.
    unsafe { map_array("cuMemMapArrayAsync_ptsz", infos, count, k) }
}
