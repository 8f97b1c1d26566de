//! Tests of pitched allocations and `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS`, and
//! of host registration as the worker uses it for managed and registered
//! memory: a kernel's stores reach the registered pages at their own address.

use std::ffi::c_void;
use std::ptr::null;

use super::*;

const SYNC_MEMOPS: CUpointer_attribute = CUpointer_attribute::CU_POINTER_ATTRIBUTE_SYNC_MEMOPS;

fn sync_memops(p: CUdeviceptr) -> (CUresult, c_uint) {
    let mut v: c_uint = 7;
    // SAFETY: a live out-value of the attribute's type.
    let r = unsafe { cuPointerGetAttribute((&raw mut v).cast(), SYNC_MEMOPS, p) };
    (r, v)
}

#[test]
fn pitched_allocation_rows_are_aligned_and_checked() {
    let _g = setup();
    primary(0);
    let (mut p, mut pitch) = (0, 0);
    // SAFETY: valid out-pointers.
    let r = unsafe { cuMemAllocPitch_v2(&mut p, &mut pitch, 100, 10, 4) };
    assert_eq!(r, OK);
    assert_eq!(pitch, 512);
    let rows = vec![3u8; pitch * 10];
    assert_eq!(htod(p, &rows), OK);
    assert_eq!(htod(p, &vec![3u8; pitch * 10 + 1]), INVALID_VALUE);
    for (w, h, e) in [(100, 10, 3), (0, 10, 4), (100, 0, 4), (usize::MAX, 2, 4)] {
        let (mut q, mut qp) = (0, 0);
        // SAFETY: valid out-pointers.
        let r = unsafe { cuMemAllocPitch_v2(&mut q, &mut qp, w, h, e) };
        assert_eq!(r, INVALID_VALUE, "{w}x{h}, element {e}");
    }
    // SAFETY: NULL out-pointers are refused before anything is written.
    let r = unsafe { cuMemAllocPitch_v2(null_mut(), &mut pitch, 100, 10, 4) };
    assert_eq!(r, INVALID_VALUE);
    assert_eq!(cuMemFree_v2(p), OK);
}

#[test]
fn sync_memops_is_set_and_read_back_on_device_memory_only() {
    let _g = setup();
    primary(0);
    let p = alloc(4096);
    assert_eq!(sync_memops(p), (OK, 0));
    let one: c_uint = 1;
    let on = (&raw const one).cast::<c_void>();
    // SAFETY: `on` points at an unsigned int.
    assert_eq!(unsafe { cuPointerSetAttribute(on, SYNC_MEMOPS, p + 8) }, OK);
    assert_eq!(sync_memops(p), (OK, 1));
    let ctx_attr = CUpointer_attribute::CU_POINTER_ATTRIBUTE_CONTEXT;
    // SAFETY: as above.
    let r = unsafe { cuPointerSetAttribute(on, ctx_attr, p) };
    assert_eq!(r, INVALID_VALUE);
    // SAFETY: NULL is refused.
    let r = unsafe { cuPointerSetAttribute(null(), SYNC_MEMOPS, p) };
    assert_eq!(r, INVALID_VALUE);
    let mut host = vec![0u8; 64];
    let h = host.as_mut_ptr() as CUdeviceptr;
    // SAFETY: as above; `h` is not device memory.
    let r = unsafe { cuPointerSetAttribute(on, SYNC_MEMOPS, h) };
    assert_eq!(r, INVALID_VALUE);
    assert_eq!(cuMemFree_v2(p), OK);
    // A new allocation at the same base starts without it.
    let q = alloc(4096);
    assert_eq!(sync_memops(q), (OK, 0));
    assert_eq!(cuMemFree_v2(q), OK);
}

#[test]
fn kernel_stores_reach_registered_pages_at_their_address() {
    let _g = setup();
    primary(0);
    let mut pages = vec![0u32; 1024];
    let p = pages.as_mut_ptr().cast::<c_void>();
    // PORTABLE | DEVICEMAP, as the worker registers managed memory.
    // SAFETY: `pages` outlives the registration.
    assert_eq!(unsafe { cuMemHostRegister_v2(p, 4096, 3) }, OK);
    let mut d = 0;
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { cuMemHostGetDevicePointer_v2(&mut d, p, 0) }, OK);
    assert_eq!(d, p as CUdeviceptr);
    let m = load(c"VGPU-SIM-MODULE 1\nkernel fill_u32\n").expect("module");
    let f = function(m, c"fill_u32").expect("fill_u32");
    let (mut ptr, mut v, mut n) = (d, 0xFEED_u32, 1024_i32);
    let mut args = [
        (&raw mut ptr).cast::<c_void>(),
        (&raw mut v).cast(),
        (&raw mut n).cast(),
    ];
    assert_eq!(launch(f, 8, 128, &mut args), OK);
    assert_eq!(cuCtxSynchronize(), OK);
    assert!(pages.iter().all(|&x| x == 0xFEED));
    assert_eq!(cuMemHostUnregister(p), OK);
    assert_eq!(
        cuMemHostUnregister(p),
        CUresult::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED
    );
}

#[test]
fn managed_memory_is_shared_by_the_host_and_kernels() {
    let _g = setup();
    let ctx = primary(0);
    let mut m = 0;
    // SAFETY: valid out-pointers, or bad arguments where the test wants the error.
    unsafe {
        assert_eq!(cuMemAllocManaged(&mut m, 4096, 0), INVALID_VALUE);
        assert_eq!(cuMemAllocManaged(&mut m, 0, 1), INVALID_VALUE);
        assert_eq!(cuMemAllocManaged(null_mut(), 4096, 1), INVALID_VALUE);
        assert_eq!(cuMemAllocManaged(&mut m, 4000, 1), OK);
    }
    let host = m as *mut u32;
    // SAFETY: the managed block holds 4000 zeroed bytes at `m`.
    unsafe { host.add(999).write(7) };
    let mo = load(c"VGPU-SIM-MODULE 1\nkernel fill_u32\n").expect("module");
    let f = function(mo, c"fill_u32").expect("fill_u32");
    let (mut ptr, mut v, mut n) = (m, 0xCAFE_u32, 999_i32);
    let mut args = [
        (&raw mut ptr).cast::<c_void>(),
        (&raw mut v).cast(),
        (&raw mut n).cast(),
    ];
    assert_eq!(launch(f, 8, 128, &mut args), OK);
    assert_eq!(cuCtxSynchronize(), OK);
    // SAFETY: as above.
    let seen = unsafe { std::slice::from_raw_parts(host, 1000) };
    assert!(seen[..999].iter().all(|&x| x == 0xCAFE));
    assert_eq!(seen[999], 7, "the host's store is kept");
    let mut back = [0u32; 1];
    assert_eq!(dtoh(&mut back, m + 999 * 4), OK);
    assert_eq!(back, [7]);

    let attr = |a: CUpointer_attribute| {
        let mut v = 0u64;
        // SAFETY: 8 writable bytes hold any of the attributes asked.
        let r = unsafe { cuPointerGetAttribute((&raw mut v).cast(), a, m + 8) };
        (r, v)
    };
    use CUpointer_attribute as A;
    assert_eq!(attr(A::CU_POINTER_ATTRIBUTE_IS_MANAGED), (OK, 1));
    assert_eq!(attr(A::CU_POINTER_ATTRIBUTE_MEMORY_TYPE), (OK, 2));
    assert_eq!(attr(A::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR), (OK, m));
    assert_eq!(attr(A::CU_POINTER_ATTRIBUTE_RANGE_SIZE), (OK, 4000));
    assert_eq!(attr(A::CU_POINTER_ATTRIBUTE_CONTEXT), (OK, ctx as u64));

    let mut flags = 0;
    let p = m as *mut c_void;
    // SAFETY: valid out-pointers; the page-locking calls refuse managed memory.
    unsafe {
        assert_eq!(cuMemHostGetFlags(&mut flags, p), OK);
        assert_eq!(flags, 0x2, "DEVICEMAP");
        assert_eq!(cuMemHostGetDevicePointer_v2(&mut ptr, p, 0), INVALID_VALUE);
        assert_eq!(cuMemHostRegister_v2(p, 4096, 0), INVALID_VALUE);
    }
    assert_eq!(cuMemHostUnregister(p), INVALID_VALUE);
    assert_eq!(cuMemFreeHost(p), INVALID_VALUE);
    assert_eq!(cuMemFree_v2(m), OK);
    assert_eq!(cuMemFree_v2(m), INVALID_VALUE);
}
