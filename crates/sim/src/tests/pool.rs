//! Tests of the memory pools: what `tests/c/pools.c` does not reach through the
//! mediator (a second device, pool limits, the simulated device's refusals, context
//! destruction). They share the parent module's lock and set-up; every pool a test
//! makes current it puts back.

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use super::*;

const NOT_SUPPORTED: CUresult = CUresult::CUDA_ERROR_NOT_SUPPORTED;
const OUT_OF_MEMORY: CUresult = CUresult::CUDA_ERROR_OUT_OF_MEMORY;

fn location(dev: c_int) -> CUmemLocation {
    CUmemLocation {
        type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
        id: dev,
    }
}

fn props(dev: c_int, max_size: usize) -> CUmemPoolProps {
    // SAFETY: a C struct of integers and a pointer, valid all zero.
    let mut p: CUmemPoolProps = unsafe { std::mem::zeroed() };
    p.allocType = CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location = location(dev);
    p.maxSize = max_size;
    p
}

fn create(p: &CUmemPoolProps) -> Result<CUmemoryPool, CUresult> {
    let mut pool = null_mut();
    // SAFETY: valid out-pointer and properties.
    match unsafe { cuMemPoolCreate(&mut pool, p) } {
        OK => Ok(pool),
        e => Err(e),
    }
}

fn get_u64(pool: CUmemoryPool, attr: u32) -> u64 {
    let mut v = u64::MAX;
    // SAFETY: an 8-byte value for a cuuint64_t attribute.
    let r = unsafe {
        cuMemPoolGetAttribute(
            pool,
            CUmemPool_attribute(attr),
            (&raw mut v).cast::<c_void>(),
        )
    };
    assert_eq!(r, OK, "attribute {attr}");
    v
}

fn set_u64(pool: CUmemoryPool, attr: u32, mut v: u64) -> CUresult {
    // SAFETY: an 8-byte value for a cuuint64_t attribute.
    unsafe {
        cuMemPoolSetAttribute(
            pool,
            CUmemPool_attribute(attr),
            (&raw mut v).cast::<c_void>(),
        )
    }
}

fn alloc_from(pool: CUmemoryPool, bytes: usize) -> Result<CUdeviceptr, CUresult> {
    let mut p = 0;
    // SAFETY: valid out-pointer; the legacy stream.
    match unsafe { cuMemAllocFromPoolAsync(&mut p, bytes, pool, null_mut()) } {
        OK => Ok(p),
        e => Err(e),
    }
}

#[test]
fn peer_access_and_devices() {
    let _g = setup();
    primary(0);
    let pool = create(&props(0, 0)).expect("a pool on device 0");
    let mut flags = CUmemAccess_flags(9);
    let mut peer = location(1);
    // SAFETY: valid out-pointer and location.
    let r = unsafe { cuMemPoolGetAccess(&mut flags, pool, &mut peer) };
    assert_eq!(r, OK);
    assert_eq!(flags, CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE);
    let grant = |dev, f| CUmemAccessDesc {
        location: location(dev),
        flags: f,
    };
    let rw = CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    let read = CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READ;
    let none = CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE;
    // SAFETY: one descriptor each.
    unsafe {
        assert_eq!(cuMemPoolSetAccess(pool, &grant(1, rw), 1), OK);
        assert_eq!(cuMemPoolGetAccess(&mut flags, pool, &mut peer), OK);
        assert_eq!(flags, rw);
        // Read-only, or taking the own device's access away, is refused, and a refused
        // list changes nothing.
        let bad = [grant(1, none), grant(0, none)];
        assert_eq!(cuMemPoolSetAccess(pool, bad.as_ptr(), 2), INVALID_VALUE);
        assert_eq!(cuMemPoolSetAccess(pool, &grant(1, read), 1), INVALID_VALUE);
        assert_eq!(cuMemPoolGetAccess(&mut flags, pool, &mut peer), OK);
        assert_eq!(flags, rw);
        assert_eq!(cuMemPoolSetAccess(pool, &grant(7, rw), 1), INVALID_VALUE);
        assert_eq!(cuMemPoolSetAccess(pool, null(), 0), OK);
    }
    // A pool of device 0 cannot be device 1's current pool.
    assert_eq!(cuDeviceSetMemPool(1, pool), INVALID_VALUE);
    let mut def1 = null_mut();
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { cuDeviceGetDefaultMemPool(&mut def1, 1) }, OK);
    assert_ne!(def1, pool);
    assert_eq!(cuMemPoolDestroy(pool), OK);
}

#[test]
fn limits_and_refusals() {
    let _g = setup();
    primary(0);
    let pool = create(&props(0, 1 << 20)).expect("a pool of at most 1 MiB");
    let a = alloc_from(pool, 768 << 10).expect("under the limit");
    assert_eq!(alloc_from(pool, 512 << 10), Err(OUT_OF_MEMORY));
    assert_eq!(alloc_from(pool, 0), Err(INVALID_VALUE));
    assert_eq!(get_u64(pool, 7), 768 << 10);
    // The high watermark resets to the current value.
    assert_eq!(cuMemFreeAsync(a, null_mut()), OK);
    assert_eq!(get_u64(pool, 8), 768 << 10);
    assert_eq!(set_u64(pool, 8, 0), OK);
    assert_eq!(get_u64(pool, 8), 0);
    // With a threshold of 0 nothing freed is kept.
    assert_eq!(get_u64(pool, 5), 0);
    assert_eq!(cuMemPoolDestroy(pool), OK);

    let mut p = props(0, 0);
    p.location.type_ = CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST;
    assert_eq!(create(&p), Err(NOT_SUPPORTED));
    let mut p = props(0, 0);
    p.allocType = CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_MANAGED;
    assert_eq!(create(&p), Err(NOT_SUPPORTED));
    assert_eq!(create(&props(5, 0)), Err(INVALID_VALUE));
    let mut p = props(0, 0);
    p.handleTypes = CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_WIN32;
    assert_eq!(create(&p), Err(INVALID_VALUE));
    let mut pool = null_mut();
    let mut host = location(0);
    host.type_ = CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST;
    let pinned = CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    // SAFETY: valid out-pointers and locations.
    unsafe {
        assert_eq!(cuMemGetMemPool(&mut pool, &mut host, pinned), NOT_SUPPORTED);
        assert_eq!(
            cuMemGetMemPool(&mut pool, null_mut(), pinned),
            INVALID_VALUE
        );
        assert_eq!(
            cuDeviceGetMemPool(&mut pool, 2),
            CUresult::CUDA_ERROR_INVALID_DEVICE
        );
    }
}

#[test]
fn pools_outlive_contexts() {
    let _g = setup();
    primary(0);
    let pool = create(&props(0, 0)).expect("a pool");
    alloc_from(pool, 4096).expect("an allocation");
    assert_eq!(cuDevicePrimaryCtxReset_v2(0), OK);
    // The context's allocations are gone, and so is their use of the pool; the pool
    // itself belongs to the device.
    assert_eq!(get_u64(pool, 7), 0);
    primary(0);
    let b = alloc_from(pool, 4096).expect("an allocation after the reset");
    let mut owner: CUmemoryPool = null_mut();
    // SAFETY: an 8-byte value for CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE.
    let r = unsafe {
        cuPointerGetAttribute(
            (&raw mut owner).cast(),
            CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
            b,
        )
    };
    assert_eq!((r, owner), (OK, pool));
    assert_eq!(cuMemFreeAsync(b, null_mut()), OK);
    assert_eq!(cuMemPoolDestroy(pool), OK);
}
