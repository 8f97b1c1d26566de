//! Tests of external memory's mipmapped arrays and of batched decompression on the
//! simulated device. They share the parent module's lock and set-up.

use std::ptr::null_mut;

use super::*;

const GRAN: usize = 2 << 20;

/// A physical allocation exported as a descriptor and imported as external memory,
/// with a buffer mapped over all of it: (object, buffer, handle).
fn imported() -> (CUexternalMemory, CUdeviceptr, CUmemGenericAllocationHandle) {
    let mut prop = CUmemAllocationProp {
        type_: CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
        location: CUmemLocation {
            type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: 0,
        },
        ..Default::default()
    };
    prop.requestedHandleTypes = CUmemAllocationHandleType(1);
    let mut h = 0;
    // SAFETY: valid out-pointer and properties.
    assert_eq!(unsafe { cuMemCreate(&mut h, GRAN, &prop, 0) }, OK);
    let mut fd: c_int = -1;
    // SAFETY: a valid out-pointer for a descriptor.
    let r = unsafe {
        cuMemExportToShareableHandle((&raw mut fd).cast(), h, prop.requestedHandleTypes, 0)
    };
    assert_eq!(r, OK);
    // SAFETY: an all-zero descriptor is valid; its fields are set below.
    let mut desc: CUDA_EXTERNAL_MEMORY_HANDLE_DESC = unsafe { std::mem::zeroed() };
    desc.type_ = CUexternalMemoryHandleType(1);
    desc.handle.fd = fd;
    desc.size = GRAN as u64;
    let mut ext = null_mut();
    // SAFETY: valid out-pointer and descriptor.
    assert_eq!(unsafe { cuImportExternalMemory(&mut ext, &desc) }, OK);
    // SAFETY: an all-zero descriptor is valid.
    let mut buf: CUDA_EXTERNAL_MEMORY_BUFFER_DESC = unsafe { std::mem::zeroed() };
    buf.size = GRAN as u64;
    let mut p = 0;
    // SAFETY: valid out-pointer and descriptor.
    let r = unsafe { cuExternalMemoryGetMappedBuffer(&mut p, ext, &buf) };
    assert_eq!(r, OK);
    (ext, p, h)
}

/// `cuExternalMemoryGetMappedMipmappedArray` of `md` on `ext`.
fn map_mipmap(
    ext: CUexternalMemory,
    md: &CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC,
) -> Result<CUmipmappedArray, CUresult> {
    let mut m = null_mut();
    // SAFETY: valid out-pointer and descriptor.
    match unsafe { cuExternalMemoryGetMappedMipmappedArray(&mut m, ext, md) } {
        OK => Ok(m),
        e => Err(e),
    }
}

/// `cuMemcpyHtoA_v2` of `words` to the start of `level`.
fn htoa(level: CUarray, words: &[u32]) -> CUresult {
    // SAFETY: `words` is readable for its length in bytes.
    unsafe { cuMemcpyHtoA_v2(level, 0, words.as_ptr().cast(), 4 * words.len()) }
}

/// A mipmapped array on external memory lays its levels over the object's bytes: each
/// level from the page after the one before; levels past the object are refused.
#[test]
fn mipmapped_levels_are_the_imported_bytes() {
    let _g = setup();
    primary(0);
    let (ext, buf, h) = imported();
    // SAFETY: an all-zero descriptor is valid; its fields are set below.
    let mut md: CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC = unsafe { std::mem::zeroed() };
    md.offset = 4096;
    md.arrayDesc.Width = 1024;
    md.arrayDesc.Format = CUarray_format(3);
    md.arrayDesc.NumChannels = 1;
    md.numLevels = 3;
    let m = map_mipmap(ext, &md).expect("mapped");
    let mut levels = [null_mut(); 3];
    for (i, l) in (0..).zip(levels.iter_mut()) {
        // SAFETY: valid out-pointer.
        assert_eq!(unsafe { cuMipmappedArrayGetLevel(l, m, i) }, OK);
    }
    // Level 0 (4096 bytes) at 4096, level 1 (2048) at 8192, level 2 at 12288.
    let words: Vec<u32> = (0..1024).collect();
    assert_eq!(htoa(levels[0], &words), OK);
    assert_eq!(htoa(levels[2], &[7, 9]), OK);
    let mut back = vec![0u32; 1024];
    assert_eq!(dtoh(&mut back, buf + 4096), OK);
    assert_eq!(back, words, "level 0 is the object's bytes from the offset");
    let mut two = [0u32; 2];
    assert_eq!(dtoh(&mut two, buf + 12288), OK);
    assert_eq!(two, [7, 9], "level 2 starts on the page after level 1");
    assert_eq!(cuMipmappedArrayDestroy(m), OK);
    // Levels that run past the object, an offset past it, and an unaligned offset.
    for offset in [GRAN as u64 - 4096, GRAN as u64, 100] {
        md.offset = offset;
        assert_eq!(map_mipmap(ext, &md).err(), Some(INVALID_VALUE), "{offset}");
    }
    assert_eq!(cuMemFree_v2(buf), OK);
    assert_eq!(cuDestroyExternalMemory(ext), OK);
    md.offset = 0;
    assert_eq!(map_mipmap(ext, &md).err(), Some(INVALID_HANDLE));
    assert_eq!(cuMemRelease(h), OK);
}

/// A Snappy batch decompresses in device memory and reports sizes; a bad operation's
/// index comes back, and the whole batch's errors give `usize::MAX`.
#[test]
fn snappy_batches_decompress_and_report_their_index() {
    let _g = setup();
    primary(0);
    let (src, dst, act) = (alloc(256), alloc(256), alloc(256));
    assert_eq!(
        htod(src, &[16u8, 0x0c, b'a', b'b', b'c', b'd', 0x2e, 4, 0]),
        OK
    );
    let op = |dst_off: u64, act_off: u64, algo: u32| CUmemDecompressParams {
        srcNumBytes: 9,
        dstNumBytes: 16,
        dstActBytes: ptr::with_exposed_provenance_mut(
            usize::try_from(act + act_off).expect("64-bit"),
        ),
        src: ptr::with_exposed_provenance(usize::try_from(src).expect("64-bit")),
        dst: ptr::with_exposed_provenance_mut(usize::try_from(dst + dst_off).expect("64-bit")),
        algo: CUmemDecompressAlgorithm(algo),
        padding: [0; 20],
    };
    let mut ops = [op(0, 0, 2), op(64, 4, 2)];
    let mut index = 7usize;
    // SAFETY: two operations and a writable index.
    let r = unsafe { cuMemBatchDecompressAsync(ops.as_mut_ptr(), 2, 0, &mut index, null_mut()) };
    assert_eq!((r, index), (OK, 7), "the index is left alone on success");
    let mut out = [0u8; 80];
    assert_eq!(dtoh(&mut out, dst), OK);
    assert_eq!(&out[..16], b"abcdabcdabcdabcd");
    assert_eq!(&out[64..80], b"abcdabcdabcdabcd");
    let mut sizes = [0u32; 2];
    assert_eq!(dtoh(&mut sizes, act), OK);
    assert_eq!(sizes, [16, 16]);
    // Deflate, which the simulated engine lacks, in the second operation; flags; no
    // operations.
    ops[1] = op(64, 4, 1);
    // SAFETY: as above.
    let r = unsafe { cuMemBatchDecompressAsync(ops.as_mut_ptr(), 2, 0, &mut index, null_mut()) };
    assert_eq!((r, index), (INVALID_VALUE, 1));
    // SAFETY: as above.
    let r = unsafe { cuMemBatchDecompressAsync(ops.as_mut_ptr(), 1, 1, &mut index, null_mut()) };
    assert_eq!((r, index), (INVALID_VALUE, usize::MAX));
    // SAFETY: as above.
    let r =
        unsafe { cuMemBatchDecompressAsync_ptsz(ops.as_mut_ptr(), 0, 0, null_mut(), null_mut()) };
    assert_eq!(r, INVALID_VALUE);
    for p in [src, dst, act] {
        assert_eq!(cuMemFree_v2(p), OK);
    }
}
