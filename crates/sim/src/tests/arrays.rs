//! Tests of CUDA arrays, the copies with an array side, mipmapped arrays and texture
//! objects. They share the parent module's lock and set-up.

use std::mem::zeroed;

use super::*;

const OUT_OF_MEMORY: CUresult = CUresult::CUDA_ERROR_OUT_OF_MEMORY;

fn descriptor(w: usize, h: usize, d: usize, format: u32, channels: u32) -> CUDA_ARRAY3D_DESCRIPTOR {
    CUDA_ARRAY3D_DESCRIPTOR {
        Width: w,
        Height: h,
        Depth: d,
        Format: CUarray_format(format),
        NumChannels: channels,
        Flags: 0,
    }
}

fn create(d: &CUDA_ARRAY3D_DESCRIPTOR) -> Result<CUarray, CUresult> {
    let mut a = null_mut();
    // SAFETY: valid out-pointer and descriptor.
    match unsafe { cuArray3DCreate_v2(&mut a, d) } {
        OK => Ok(a),
        e => Err(e),
    }
}

/// A 3D copy between a packed host box and an array box at `(x, y, z)`.
fn copy_box(
    array: CUarray,
    host: *mut u8,
    (x, y, z): (usize, usize, usize),
    (w, h, d): (usize, usize, usize),
    to_array: bool,
) -> CUresult {
    // SAFETY: all-zero bytes are a valid descriptor.
    let mut c: CUDA_MEMCPY3D = unsafe { zeroed() };
    let (host_type, array_type) = (CUmemorytype(1), CUmemorytype(3));
    if to_array {
        (c.srcMemoryType, c.srcHost, c.srcPitch, c.srcHeight) = (host_type, host.cast(), w, h);
        (c.dstMemoryType, c.dstArray) = (array_type, array);
        (c.dstXInBytes, c.dstY, c.dstZ) = (x, y, z);
    } else {
        (c.srcMemoryType, c.srcArray) = (array_type, array);
        (c.srcXInBytes, c.srcY, c.srcZ) = (x, y, z);
        (c.dstMemoryType, c.dstHost, c.dstPitch, c.dstHeight) = (host_type, host.cast(), w, h);
    }
    (c.WidthInBytes, c.Height, c.Depth) = (w, h, d);
    // SAFETY: the host box is `w * h * d` bytes, packed, as the caller passes.
    unsafe { cuMemcpy3D_v2(&c) }
}

#[test]
fn arrays_lay_out_rows_and_layers_and_bound_copies() {
    let _g = setup();
    primary(0);
    // 8 x 4 x 3 elements of 2 x u16: rows of 32 bytes.
    let a = create(&descriptor(8, 4, 3, 0x02, 2)).expect("a 3D array");
    let mut all: Vec<u8> = (0..32 * 4 * 3u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(
        copy_box(a, all.as_mut_ptr(), (0, 0, 0), (32, 4, 3), true),
        OK
    );
    // The box at (8 bytes, row 1, layer 2), 8 bytes x 2 rows x 1 layer.
    let mut part = vec![0u8; 16];
    assert_eq!(
        copy_box(a, part.as_mut_ptr(), (8, 1, 2), (8, 2, 1), false),
        OK
    );
    let at = |y: usize, z: usize| (z * 4 + y) * 32 + 8;
    assert_eq!(&part[..8], &all[at(1, 2)..at(1, 2) + 8]);
    assert_eq!(&part[8..], &all[at(2, 2)..at(2, 2) + 8]);
    // One byte, row or layer too far.
    assert_eq!(
        copy_box(a, part.as_mut_ptr(), (25, 0, 0), (8, 1, 1), false),
        INVALID_VALUE
    );
    assert_eq!(
        copy_box(a, part.as_mut_ptr(), (0, 3, 0), (8, 2, 1), false),
        INVALID_VALUE
    );
    assert_eq!(
        copy_box(a, part.as_mut_ptr(), (0, 0, 3), (8, 1, 1), false),
        INVALID_VALUE
    );
    // The run forms see the array as its bytes.
    let mut run = [0u8; 4];
    // SAFETY: `run` holds 4 bytes.
    let st = unsafe { cuMemcpyAtoH_v2(run.as_mut_ptr().cast(), a, 32 * 4 * 3 - 4, 4) };
    assert_eq!(st, OK);
    assert_eq!(run, all[all.len() - 4..]);
    // SAFETY: as above.
    let past = unsafe { cuMemcpyAtoH_v2(run.as_mut_ptr().cast(), a, 32 * 4 * 3 - 3, 4) };
    assert_eq!(past, INVALID_VALUE);
    assert_eq!(cuArrayDestroy(a), OK);
    assert_eq!(cuArrayDestroy(a), INVALID_HANDLE);
    assert_eq!(
        copy_box(a, part.as_mut_ptr(), (0, 0, 0), (8, 1, 1), false),
        INVALID_HANDLE
    );
}

#[test]
fn arrays_count_against_the_budget() {
    let _g = setup();
    primary(0);
    let (free, _) = mem_info();
    // 1024 x 1024 float4: 16 MiB.
    let a = create(&descriptor(1024, 1024, 0, 0x20, 4)).expect("a 2D array");
    assert_eq!(mem_info().0, free - (16 << 20));
    // More than the 64 MiB budget left.
    assert_eq!(
        create(&descriptor(4096, 4096, 0, 0x20, 1)).err(),
        Some(OUT_OF_MEMORY)
    );
    assert_eq!(cuArrayDestroy(a), OK);
    assert_eq!(mem_info().0, free);
    // A destroyed context gives its arrays back.
    create(&descriptor(1024, 1024, 0, 0x20, 4)).expect("a 2D array");
    assert_eq!(cuDevicePrimaryCtxReset_v2(0), OK);
    primary(0);
    assert_eq!(mem_info().0, free);
}

#[test]
fn mipmapped_levels_halve_and_leave_with_their_array() {
    let _g = setup();
    primary(0);
    let (free, _) = mem_info();
    let d = descriptor(64, 16, 0, 0x01, 1);
    let mut m = null_mut();
    // SAFETY: valid out-pointer and descriptor.
    let st = unsafe { cuMipmappedArrayCreate(&mut m, &d, 8) };
    assert_eq!(st, INVALID_VALUE);
    // SAFETY: as above.
    assert_eq!(unsafe { cuMipmappedArrayCreate(&mut m, &d, 3) }, OK);
    let mut level = null_mut();
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { cuMipmappedArrayGetLevel(&mut level, m, 2) }, OK);
    // SAFETY: all-zero bytes are a valid descriptor.
    let mut got: CUDA_ARRAY3D_DESCRIPTOR = unsafe { zeroed() };
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { cuArray3DGetDescriptor_v2(&mut got, level) }, OK);
    assert_eq!((got.Width, got.Height, got.Depth), (16, 4, 0));
    assert_eq!(mem_info().0, free - (64 * 16 + 32 * 8 + 16 * 4));
    assert_eq!(cuMipmappedArrayDestroy(m), OK);
    assert_eq!(mem_info().0, free);
    // SAFETY: valid out-pointer.
    let st = unsafe { cuArray3DGetDescriptor_v2(&mut got, level) };
    assert_eq!(st, INVALID_HANDLE);
}

#[test]
fn texture_objects_keep_what_they_were_made_with() {
    let _g = setup();
    primary(0);
    let a = create(&descriptor(16, 16, 0, 0x20, 1)).expect("a 2D array");
    // SAFETY: all-zero bytes are valid descriptors.
    let (mut res, mut tex): (CUDA_RESOURCE_DESC, CUDA_TEXTURE_DESC) =
        unsafe { (zeroed(), zeroed()) };
    res.resType = CUresourcetype::CU_RESOURCE_TYPE_ARRAY;
    res.res.array.hArray = a;
    tex.flags = 1;
    let mut t = 0;
    // SAFETY: valid pointers.
    let st = unsafe { cuTexObjectCreate(&mut t, &res, &tex, ptr::null()) };
    assert_eq!(st, OK);
    assert_ne!(t, 0);
    // A surface over an array made without SURFACE_LDST: driver 580 makes it.
    let mut s = 0;
    // SAFETY: valid pointers.
    assert_eq!(unsafe { cuSurfObjectCreate(&mut s, &res) }, OK);
    assert_ne!(s, 0);
    // SAFETY: all-zero bytes are a valid descriptor.
    let mut got: CUDA_TEXTURE_DESC = unsafe { zeroed() };
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { cuTexObjectGetTextureDesc(&mut got, t) }, OK);
    assert_eq!(got.flags, 1);
    // A linear resource outside every allocation.
    res.resType = CUresourcetype::CU_RESOURCE_TYPE_LINEAR;
    res.res.linear.devPtr = 0xdead_0000;
    res.res.linear.format = CUarray_format(0x20);
    res.res.linear.numChannels = 1;
    res.res.linear.sizeInBytes = 64;
    let mut bad = 0;
    // SAFETY: valid pointers.
    let st = unsafe { cuTexObjectCreate(&mut bad, &res, &tex, ptr::null()) };
    assert_eq!(st, INVALID_VALUE);
    assert_eq!(cuTexObjectDestroy(t), OK);
    assert_eq!(cuTexObjectDestroy(t), INVALID_HANDLE);
    assert_eq!(cuArrayDestroy(a), OK);
}

#[test]
fn first_forms_are_refused_in_a_primary_context() {
    let _g = setup();
    primary(0);
    let a = create(&descriptor(64, 0, 0, 0x20, 1)).expect("an array of the _v2 form");
    let d1 = CUDA_ARRAY_DESCRIPTOR_v1 {
        Width: 64,
        Height: 0,
        Format: CUarray_format(0x20),
        NumChannels: 1,
    };
    let mut b = null_mut();
    // SAFETY: valid out-pointer and descriptor.
    assert_eq!(unsafe { cuArrayCreate(&mut b, &d1) }, INVALID_CONTEXT);
    assert!(b.is_null(), "a refused create wrote a handle");
    // SAFETY: all-zero bytes are a valid descriptor.
    let mut got: CUDA_ARRAY_DESCRIPTOR_v1 = unsafe { zeroed() };
    // SAFETY: valid out-pointer.
    let r = unsafe { cuArrayGetDescriptor(&mut got, a) };
    assert_eq!(r, INVALID_CONTEXT);
    assert_eq!(cuMemcpyAtoA(a, 0, a, 0, 16), INVALID_CONTEXT);
    // The array itself is untouched: the _v2 form still describes it.
    // SAFETY: all-zero bytes are a valid descriptor.
    let mut got2: CUDA_ARRAY_DESCRIPTOR = unsafe { zeroed() };
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { cuArrayGetDescriptor_v2(&mut got2, a) }, OK);
    assert_eq!(got2.Width, 64);
    assert_eq!(cuArrayDestroy(a), OK);
}
