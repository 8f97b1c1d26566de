//! Tests of virtual memory management: reservations, physical allocations, mappings and
//! access, with the driver's answers to bad input. They share the parent module's lock
//! and set-up, and give back everything they make (the model is process-wide, not
//! per context).

use std::ptr::null;

use super::*;

const GRAN: usize = 2 << 20;
/// The granularity as a device address offset.
const G: u64 = GRAN as u64;
const NOT_SUPPORTED: CUresult = CUresult::CUDA_ERROR_NOT_SUPPORTED;
const OUT_OF_MEMORY: CUresult = CUresult::CUDA_ERROR_OUT_OF_MEMORY;

fn prop(dev: c_int) -> CUmemAllocationProp {
    CUmemAllocationProp {
        type_: CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
        location: CUmemLocation {
            type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: dev,
        },
        ..Default::default()
    }
}

fn reserve(size: usize) -> CUdeviceptr {
    let mut va = 0;
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { cuMemAddressReserve(&mut va, size, 0, 0, 0) }, OK);
    va
}

fn create(size: usize) -> Result<CUmemGenericAllocationHandle, CUresult> {
    let mut h = 0;
    // SAFETY: valid out-pointer and properties.
    match unsafe { cuMemCreate(&mut h, size, &prop(0), 0) } {
        OK => Ok(h),
        e => Err(e),
    }
}

fn access(va: CUdeviceptr, size: usize, dev: c_int, flags: u32) -> CUresult {
    let d = CUmemAccessDesc {
        location: CUmemLocation {
            type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: dev,
        },
        flags: CUmemAccess_flags(flags),
    };
    // SAFETY: one valid descriptor.
    unsafe { cuMemSetAccess(va, size, &d, 1) }
}

fn free_bytes() -> usize {
    let (mut f, mut t) = (0, 0);
    // SAFETY: valid out-pointers.
    assert_eq!(unsafe { cuMemGetInfo_v2(&mut f, &mut t) }, OK);
    f
}

#[test]
fn granularity_and_properties_are_checked() {
    let _g = setup();
    primary(0);
    let mut g = 0;
    // SAFETY: valid out-pointer and properties throughout.
    unsafe {
        assert_eq!(
            cuMemGetAllocationGranularity(&mut g, &prop(0), CUmemAllocationGranularity_flags(1)),
            OK
        );
        assert_eq!(g, GRAN);
        assert_eq!(
            cuMemGetAllocationGranularity(&mut g, &prop(0), CUmemAllocationGranularity_flags(2)),
            INVALID_VALUE
        );
        assert_eq!(
            cuMemGetAllocationGranularity(&mut g, &prop(7), CUmemAllocationGranularity_flags(0)),
            CUresult::CUDA_ERROR_INVALID_DEVICE
        );
        let mut win = prop(0);
        win.requestedHandleTypes = CUmemAllocationHandleType(2);
        let mut h = 0;
        assert_eq!(cuMemCreate(&mut h, GRAN, &win, 0), NOT_SUPPORTED);
        assert_eq!(cuMemCreate(&mut h, GRAN, null(), 0), INVALID_VALUE);
        assert_eq!(cuMemCreate(&mut h, GRAN, &prop(0), 1), INVALID_VALUE);
    }
    assert_eq!(create(BUDGET + GRAN), Err(OUT_OF_MEMORY));
}

#[test]
fn released_memory_lives_while_mapped() {
    let _g = setup();
    primary(0);
    let before = free_bytes();
    let va = reserve(2 * GRAN);
    let h = create(GRAN).expect("created");
    assert_eq!(free_bytes(), before - GRAN);
    assert_eq!(cuMemMap(va, GRAN, 0, h, 0), OK);
    assert_eq!(access(va, GRAN, 0, 3), OK);
    assert_eq!(htod(va, &[1u32, 2, 3]), OK);
    assert_eq!(cuMemRelease(h), OK);
    // Released, still mapped: the bytes stay, the handle is gone.
    let mut back = [0u32; 3];
    assert_eq!(dtoh(&mut back, va), OK);
    assert_eq!(back, [1, 2, 3]);
    assert_eq!(cuMemRelease(h), INVALID_VALUE);
    // Retaining through the mapping brings the handle back.
    let mut again = 0;
    let inside = ptr::with_exposed_provenance_mut(usize::try_from(va + 8).expect("64-bit"));
    // SAFETY: valid out-pointer; the address is only looked up.
    let r = unsafe { cuMemRetainAllocationHandle(&mut again, inside) };
    assert_eq!(r, OK);
    assert_eq!(again, h);
    assert_eq!(cuMemRelease(h), OK);
    assert_eq!(cuMemUnmap(va, GRAN), OK);
    assert_eq!(free_bytes(), before, "freed at the unmap");
    assert_eq!(dtoh(&mut back, va), INVALID_VALUE);
    assert_eq!(cuMemAddressFree(va, 2 * GRAN), OK);
}

#[test]
fn mappings_and_access_follow_the_driver() {
    let _g = setup();
    primary(0);
    let va = reserve(4 * GRAN);
    let h = create(2 * GRAN).expect("created");
    // Off the granularity, outside the reservation, past the allocation.
    assert_eq!(cuMemMap(va + 4096, GRAN, 0, h, 0), INVALID_VALUE);
    assert_eq!(cuMemMap(va + 3 * G, 2 * GRAN, 0, h, 0), INVALID_VALUE);
    assert_eq!(cuMemMap(va, 2 * GRAN, GRAN, h, 0), INVALID_VALUE);
    assert_eq!(cuMemMap(va, GRAN, 0, 0x1234_5678, 0), INVALID_VALUE);
    // Two mappings of the one allocation, at two offsets.
    assert_eq!(cuMemMap(va, GRAN, GRAN, h, 0), OK);
    assert_eq!(cuMemMap(va + G, GRAN, 0, h, 0), OK);
    assert_eq!(cuMemMap(va, GRAN, 0, h, 0), INVALID_VALUE, "already mapped");
    // No access until it is set; PROT_NONE takes it away again.
    assert_eq!(htod(va, &[7u8]), INVALID_VALUE);
    assert_eq!(access(va, 2 * GRAN, 0, 3), OK);
    assert_eq!(htod(va, &[7u8]), OK);
    let loc = CUmemLocation {
        type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
        id: 0,
    };
    let mut flags = 9;
    // SAFETY: valid out-pointer and location.
    unsafe {
        assert_eq!(cuMemGetAccess(&mut flags, &loc, va), OK);
        assert_eq!(flags, 3);
        assert_eq!(cuMemGetAccess(&mut flags, &loc, va + 2 * G), INVALID_VALUE);
    }
    assert_eq!(access(va, GRAN, 0, 0), OK);
    assert_eq!(htod(va, &[7u8]), INVALID_VALUE);
    // Partial ranges, unmapped ranges and bad flags are refused.
    assert_eq!(access(va, GRAN / 2, 0, 3), INVALID_VALUE);
    assert_eq!(access(va, 3 * GRAN, 0, 3), INVALID_VALUE);
    assert_eq!(access(va, GRAN, 0, 2), INVALID_VALUE);
    assert_eq!(access(va, GRAN, 5, 3), CUresult::CUDA_ERROR_INVALID_DEVICE);
    assert_eq!(cuMemUnmap(va, GRAN / 2), INVALID_VALUE);
    assert_eq!(cuMemAddressFree(va + 1, 4 * GRAN), INVALID_VALUE);
    assert_eq!(
        cuMemAddressFree(va, 2 * GRAN),
        INVALID_VALUE,
        "not the whole reservation"
    );
    assert_eq!(cuMemUnmap(va, 2 * GRAN), OK, "both mappings at once");
    assert_eq!(cuMemRelease(h), OK);
    assert_eq!(cuMemAddressFree(va, 4 * GRAN), OK);
    assert_eq!(cuMemAddressFree(va, 4 * GRAN), INVALID_VALUE);
}

#[test]
fn freeing_a_reservation_unmaps_what_is_left() {
    let _g = setup();
    primary(0);
    let before = free_bytes();
    let va = reserve(2 * GRAN);
    let h = create(GRAN).expect("created");
    assert_eq!(cuMemMap(va, GRAN, 0, h, 0), OK);
    assert_eq!(access(va, GRAN, 0, 3), OK);
    assert_eq!(cuMemRelease(h), OK);
    assert_eq!(free_bytes(), before - GRAN, "still mapped");
    assert_eq!(cuMemAddressFree(va, 2 * GRAN), OK);
    assert_eq!(
        free_bytes(),
        before,
        "unmapped and freed with the reservation"
    );
    assert_eq!(htod(va, &[1u8]), INVALID_VALUE);
}

#[test]
fn reservations_are_aligned_and_device_memory() {
    let _g = setup();
    primary(0);
    let mut va = 0;
    // SAFETY: valid out-pointer throughout.
    unsafe {
        assert_eq!(
            cuMemAddressReserve(&mut va, GRAN + 1, 0, 0, 0),
            INVALID_VALUE
        );
        assert_eq!(cuMemAddressReserve(&mut va, 0, 0, 0, 0), INVALID_VALUE);
        assert_eq!(
            cuMemAddressReserve(&mut va, GRAN, 3 << 20, 0, 0),
            INVALID_VALUE
        );
        assert_eq!(cuMemAddressReserve(&mut va, GRAN, 8 << 20, 0, 0), OK);
    }
    assert_eq!(va % (8 << 20), 0);
    // A unified copy into an unmapped reservation is a device copy, refused.
    let src = [1u8; 16];
    // SAFETY: the host side is a live buffer; the device side is checked.
    let r = unsafe { cuMemcpy(va, src.as_ptr() as CUdeviceptr, 16) };
    assert_eq!(r, INVALID_VALUE);
    assert_eq!(cuMemAddressFree(va, GRAN), OK);
}
