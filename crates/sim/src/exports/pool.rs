//! Memory pools: the model functions of the table's generated pool calls, and the
//! exports the table lists as hand-written (destruction, attributes, allocation from a
//! pool). What a pool is and does lives in [`crate::pool`].

use std::ffi::{c_int, c_ulonglong, c_void};

use super::stream::ptsz;
use crate::cu::{
    CUdevice_v1, CUdeviceptr, CUmemAccessDesc_v1, CUmemAccess_flags, CUmemAllocationHandleType,
    CUmemAllocationType, CUmemLocation, CUmemPoolProps_v1, CUmemPoolPtrExportData,
    CUmemPool_attribute, CUmemoryPool, CUresult, CUstream,
};
use crate::error::{err, Res};
use crate::ffi::{handle, key, run, Out};
use crate::state;
use crate::{pool, pool_share};

/// `CU_MEM_LOCATION_TYPE_DEVICE`, `_HOST` and `_HOST_NUMA`.
const LOCATION_DEVICE: u32 = 1;
const LOCATION_HOST: u32 = 2;
const LOCATION_HOST_NUMA: u32 = 3;
/// `CU_MEM_ALLOCATION_TYPE_PINNED` and `_MANAGED`.
const ALLOCATION_PINNED: u32 = 1;
const ALLOCATION_MANAGED: u32 = 2;

/// The device a memory location names. The simulated device has no host-memory pools
/// (`CUDA_ERROR_NOT_SUPPORTED`); anything but a device, the host or a host NUMA node
/// (`_HOST_NUMA_CURRENT` included, which names no pool) is `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
/// `loc` must be NULL or valid for a read.
unsafe fn location_device(loc: *const CUmemLocation) -> Res<usize> {
    if loc.is_null() {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "location is NULL");
    }
    // SAFETY: non-NULL, and valid for a read by the contract.
    let loc = unsafe { loc.read_unaligned() };
    match loc.type_.0 {
        LOCATION_DEVICE => {
            let sim = state::sim()?;
            sim.check_device(loc.id).or_else(|_| {
                err(
                    CUresult::CUDA_ERROR_INVALID_VALUE,
                    format!("location names device {}, which does not exist", loc.id),
                )
            })
        }
        LOCATION_HOST | LOCATION_HOST_NUMA => err(
            CUresult::CUDA_ERROR_NOT_SUPPORTED,
            "the simulated device has no host-memory pools",
        ),
        t => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{t} is not a memory location type"),
        ),
    }
}

/// An allocation type of a pool: pinned; managed pools are not simulated.
fn allocation_type(t: CUmemAllocationType) -> Res<()> {
    match t.0 {
        ALLOCATION_PINNED => Ok(()),
        ALLOCATION_MANAGED => err(
            CUresult::CUDA_ERROR_NOT_SUPPORTED,
            "the simulated device has no managed-memory pools",
        ),
        t => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{t} is not a pool allocation type"),
        ),
    }
}

/// `cuMemPoolCreate`: a pinned device pool with the driver's default attributes.
///
/// # Safety
/// `props` must be NULL or valid for a read.
pub(crate) unsafe fn mem_pool_create(
    out: Out<CUmemoryPool>,
    props: *const CUmemPoolProps_v1,
) -> Res<()> {
    let sim = state::sim()?;
    if props.is_null() {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "poolProps is NULL");
    }
    // SAFETY: non-NULL, and valid for a read by the contract.
    let props = unsafe { props.read_unaligned() };
    allocation_type(props.allocType)?;
    // SAFETY: a live local.
    let device = unsafe { location_device(&props.location) }?;
    let mut st = sim.lock();
    let p = pool::create(&mut st, device, props.maxSize as u64, props.handleTypes.0)?;
    out.write(handle(p));
    Ok(())
}

/// `cuMemPoolTrimTo`.
pub(crate) fn mem_pool_trim_to(p: CUmemoryPool, keep: usize) -> Res<()> {
    pool::trim(&mut state::sim()?.lock(), key(p), keep as u64)
}

/// `cuMemPoolSetAccess`: every descriptor is read and checked before any is applied.
///
/// # Safety
/// `map` must be NULL or valid for reads of `count` descriptors.
pub(crate) unsafe fn mem_pool_set_access(
    p: CUmemoryPool,
    map: *const CUmemAccessDesc_v1,
    count: usize,
) -> Res<()> {
    let sim = state::sim()?;
    let mut st = sim.lock();
    pool::live(&st, key(p))?;
    if count != 0 && map.is_null() {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "map is NULL");
    }
    let mut wanted = Vec::new();
    for i in 0..count {
        // SAFETY: `i < count`, and the caller's array holds `count` descriptors.
        let d = unsafe { map.add(i).read_unaligned() };
        // SAFETY: a live local.
        let device = unsafe { location_device(&d.location) }?;
        wanted.push((device, d.flags.0));
    }
    pool::set_access(&mut st, key(p), &wanted)
}

/// `cuMemPoolGetAccess`.
///
/// # Safety
/// `location` must be NULL or valid for a read.
pub(crate) unsafe fn mem_pool_get_access(
    flags: Out<CUmemAccess_flags>,
    p: CUmemoryPool,
    location: *mut CUmemLocation,
) -> Res<()> {
    let sim = state::sim()?;
    let st = sim.lock();
    pool::live(&st, key(p))?;
    // SAFETY: forwarded from this function's contract.
    let device = unsafe { location_device(location) }?;
    flags.write(CUmemAccess_flags(pool::access(&st, key(p), device)?));
    Ok(())
}

/// `cuDeviceGetDefaultMemPool`.
pub(crate) fn device_get_default_mem_pool(out: Out<CUmemoryPool>, dev: CUdevice_v1) -> Res<()> {
    let sim = state::sim()?;
    let device = sim.check_device(dev)?;
    out.write(handle(pool::default_pool(&mut sim.lock(), device)));
    Ok(())
}

/// `cuDeviceGetMemPool`: the device's current pool.
pub(crate) fn device_get_mem_pool(out: Out<CUmemoryPool>, dev: CUdevice_v1) -> Res<()> {
    let sim = state::sim()?;
    let device = sim.check_device(dev)?;
    out.write(handle(pool::current_pool(&mut sim.lock(), device)));
    Ok(())
}

/// `cuDeviceSetMemPool`: a live pool of that device becomes its current pool.
pub(crate) fn device_set_mem_pool(dev: CUdevice_v1, p: CUmemoryPool) -> Res<()> {
    let sim = state::sim()?;
    let device = sim.check_device(dev)?;
    pool::set_current(&mut sim.lock(), device, key(p))
}

/// `cuMemGetDefaultMemPool`: CUDA 13's `cuDeviceGetDefaultMemPool` by location.
///
/// # Safety
/// `location` must be NULL or valid for a read.
pub(crate) unsafe fn mem_get_default_mem_pool(
    out: Out<CUmemoryPool>,
    location: *mut CUmemLocation,
    type_: CUmemAllocationType,
) -> Res<()> {
    let sim = state::sim()?;
    allocation_type(type_)?;
    // SAFETY: forwarded from this function's contract.
    let device = unsafe { location_device(location) }?;
    out.write(handle(pool::default_pool(&mut sim.lock(), device)));
    Ok(())
}

/// `cuMemGetMemPool`: CUDA 13's `cuDeviceGetMemPool` by location.
///
/// # Safety
/// `location` must be NULL or valid for a read.
pub(crate) unsafe fn mem_get_mem_pool(
    out: Out<CUmemoryPool>,
    location: *mut CUmemLocation,
    type_: CUmemAllocationType,
) -> Res<()> {
    let sim = state::sim()?;
    allocation_type(type_)?;
    // SAFETY: forwarded from this function's contract.
    let device = unsafe { location_device(location) }?;
    out.write(handle(pool::current_pool(&mut sim.lock(), device)));
    Ok(())
}

/// `cuMemSetMemPool`: CUDA 13's `cuDeviceSetMemPool` by location.
///
/// # Safety
/// `location` must be NULL or valid for a read.
pub(crate) unsafe fn mem_set_mem_pool(
    location: *mut CUmemLocation,
    type_: CUmemAllocationType,
    p: CUmemoryPool,
) -> Res<()> {
    let sim = state::sim()?;
    allocation_type(type_)?;
    // SAFETY: forwarded from this function's contract.
    let device = unsafe { location_device(location) }?;
    pool::set_current(&mut sim.lock(), device, key(p))
}

/// `cuMemPoolDestroy`.
#[no_mangle]
pub extern "C" fn cuMemPoolDestroy(p: CUmemoryPool) -> CUresult {
    run("cuMemPoolDestroy", || {
        pool::destroy(&mut state::sim()?.lock(), key(p))
    })
}

/// The size of attribute `attr`'s value, or `CUDA_ERROR_INVALID_VALUE`.
fn value_size(attr: CUmemPool_attribute) -> Res<usize> {
    match vgpu_abi::values::mem_pool_attribute_size(attr) {
        Some(n) => Ok(n),
        None => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{} is not a CUmemPool_attribute", attr.0),
        ),
    }
}

/// `cuMemPoolGetAttribute`: writes an `int` or a `cuuint64_t`, as the attribute has.
///
/// # Safety
/// `value` must be NULL or valid for a write of the attribute's value type.
#[no_mangle]
pub unsafe extern "C" fn cuMemPoolGetAttribute(
    p: CUmemoryPool,
    attr: CUmemPool_attribute,
    value: *mut c_void,
) -> CUresult {
    run("cuMemPoolGetAttribute", || {
        let sim = state::sim()?;
        let v = pool::attribute(&sim.lock(), key(p), attr.0)?;
        let size = value_size(attr)?;
        if value.is_null() {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "value is NULL");
        }
        // SAFETY: non-NULL, and valid for a write of the attribute's type by the
        // contract; `attribute` gives a 0/1 flag for the `int` attributes.
        unsafe {
            if size == 4 {
                value
                    .cast::<i32>()
                    .write_unaligned(i32::try_from(v).unwrap_or(i32::MAX));
            } else {
                value.cast::<u64>().write_unaligned(v);
            }
        }
        Ok(())
    })
}

/// `cuMemPoolSetAttribute`: reads an `int` or a `cuuint64_t`, as the attribute has.
///
/// # Safety
/// `value` must be NULL or valid for a read of the attribute's value type.
#[no_mangle]
pub unsafe extern "C" fn cuMemPoolSetAttribute(
    p: CUmemoryPool,
    attr: CUmemPool_attribute,
    value: *mut c_void,
) -> CUresult {
    run("cuMemPoolSetAttribute", || {
        let sim = state::sim()?;
        let mut st = sim.lock();
        pool::live(&st, key(p))?;
        let size = value_size(attr)?;
        if value.is_null() {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "value is NULL");
        }
        // SAFETY: non-NULL, and valid for a read of the attribute's type by the
        // contract.
        let v = unsafe {
            if size == 4 {
                u64::from(value.cast::<i32>().read_unaligned().unsigned_abs())
            } else {
                value.cast::<u64>().read_unaligned()
            }
        };
        pool::set_attribute(&mut st, key(p), attr.0, v)
    })
}

/// Allocation from a pool on stream `stream_key`.
///
/// # Safety
/// `dptr` must be NULL or valid for a write.
unsafe fn alloc_from(
    name: &str,
    dptr: *mut CUdeviceptr,
    bytesize: usize,
    p: CUmemoryPool,
    stream_key: usize,
) -> CUresult {
    run(name, || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(dptr, "dptr") }?;
        let mut st = sim.lock();
        pool::live(&st, key(p))?;
        out.write(pool::alloc(
            &mut st,
            sim.cfg.memory_bytes,
            bytesize,
            Some(key(p)),
            stream_key,
        )?);
        Ok(())
    })
}

/// `cuMemAllocFromPoolAsync`: a zeroed, 256-byte aligned allocation from `pool` in the
/// stream's context, made at once.
///
/// # Safety
/// `dptr` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemAllocFromPoolAsync(
    dptr: *mut CUdeviceptr,
    bytesize: usize,
    p: CUmemoryPool,
    h_stream: CUstream,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe { alloc_from("cuMemAllocFromPoolAsync", dptr, bytesize, p, key(h_stream)) }
}

/// `cuMemAllocFromPoolAsync_ptsz`: NULL is the per-thread default stream.
///
/// # Safety
/// `dptr` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemAllocFromPoolAsync_ptsz(
    dptr: *mut CUdeviceptr,
    bytesize: usize,
    p: CUmemoryPool,
    h_stream: CUstream,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        alloc_from(
            "cuMemAllocFromPoolAsync_ptsz",
            dptr,
            bytesize,
            p,
            ptsz(h_stream),
        )
    }
}

/// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`, the only type simulated.
const POSIX_FD: u32 = 1;

/// `cuMemPoolExportToShareableHandle` (`crate::pool_share`): a POSIX file descriptor,
/// written as an `int`.
///
/// # Safety
/// `handle_out` must be NULL or valid for writes of the type's handle.
#[no_mangle]
pub unsafe extern "C" fn cuMemPoolExportToShareableHandle(
    handle_out: *mut c_void,
    pool: CUmemoryPool,
    kind: CUmemAllocationHandleType,
    flags: c_ulonglong,
) -> CUresult {
    run("cuMemPoolExportToShareableHandle", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(handle_out.cast::<c_int>(), "handle_out") }?;
        let mut st = sim.lock();
        if kind.0 != POSIX_FD {
            pool::live(&st, key(pool))?;
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("handle type {:#x}: the pool was not created for it", kind.0),
            );
        }
        out.write(pool_share::export_fd(&mut st, key(pool), flags)?);
        Ok(())
    })
}

/// `cuMemPoolImportFromShareableHandle` of a POSIX file descriptor (`handle` is its
/// number); the caller keeps the descriptor.
///
/// # Safety
/// `pool_out` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemPoolImportFromShareableHandle(
    pool_out: *mut CUmemoryPool,
    handle: *mut c_void,
    kind: CUmemAllocationHandleType,
    flags: c_ulonglong,
) -> CUresult {
    run("cuMemPoolImportFromShareableHandle", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(pool_out, "pool_out") }?;
        if kind.0 != POSIX_FD {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!(
                    "handle type {:#x}: only POSIX file descriptors are simulated",
                    kind.0
                ),
            );
        }
        let fd = c_int::try_from(handle as usize).unwrap_or(-1);
        let p = pool_share::import_fd(&mut sim.lock(), fd, flags)?;
        out.write(crate::ffi::handle(p));
        Ok(())
    })
}

/// `cuMemPoolExportPointer`.
///
/// # Safety
/// `share_data_out` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemPoolExportPointer(
    share_data_out: *mut CUmemPoolPtrExportData,
    ptr: CUdeviceptr,
) -> CUresult {
    run("cuMemPoolExportPointer", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(share_data_out, "shareData_out") }?;
        let data = pool_share::export_pointer(&mut sim.lock(), ptr)?;
        out.write(CUmemPoolPtrExportData { reserved: data });
        Ok(())
    })
}

/// `cuMemPoolImportPointer`.
///
/// # Safety
/// `ptr_out` must be NULL or valid for writes, `share_data` NULL or valid for reads.
#[no_mangle]
pub unsafe extern "C" fn cuMemPoolImportPointer(
    ptr_out: *mut CUdeviceptr,
    pool: CUmemoryPool,
    share_data: *mut CUmemPoolPtrExportData,
) -> CUresult {
    run("cuMemPoolImportPointer", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(ptr_out, "ptr_out") }?;
        if share_data.is_null() {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "shareData is NULL");
        }
        // SAFETY: non-NULL, readable by this function's contract.
        let data = unsafe { share_data.read_unaligned() }.reserved;
        let budget = sim.cfg.memory_bytes;
        out.write(pool_share::import_pointer(
            &mut sim.lock(),
            budget,
            key(pool),
            &data,
        )?);
        Ok(())
    })
}
