//! The simulated device's tensor maps, called directly: the im2col forms
//! and the argument checks the end-to-end C program does not reach.

use std::ffi::c_void;
use std::ptr::null_mut;

use vgpu_abi::types::{
    CUresult, CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapIm2ColWideMode,
    CUtensorMapInterleave, CUtensorMapL2promotion, CUtensorMapSwizzle,
};
use vgpu_sim::exports::*;

const ADDRESS: usize = 0x1000;
const F16: CUtensorMapDataType = CUtensorMapDataType(6);
const NONE_IL: CUtensorMapInterleave = CUtensorMapInterleave(0);
const NONE_SW: CUtensorMapSwizzle = CUtensorMapSwizzle(0);
const SW32: CUtensorMapSwizzle = CUtensorMapSwizzle(1);
const L2: CUtensorMapL2promotion = CUtensorMapL2promotion(0);
const FILL: CUtensorMapFloatOOBfill = CUtensorMapFloatOOBfill(0);

fn address(a: usize) -> *mut c_void {
    a as *mut c_void
}

/// A 2D tiled map of halves with `box_dim`, `swizzle` and `elem`.
fn tiled(box_dim: [u32; 2], sw: CUtensorMapSwizzle, elem: [u32; 2]) -> CUresult {
    // SAFETY: all-zero bytes are a valid map.
    let mut m: CUtensorMap = unsafe { std::mem::zeroed() };
    let (dim, strides) = ([64u64, 64], [128u64]);
    // SAFETY: arrays of the lengths rank 2 needs; `m` is aligned by its type.
    unsafe {
        cuTensorMapEncodeTiled(
            &mut m,
            F16,
            2,
            address(ADDRESS),
            dim.as_ptr(),
            strides.as_ptr(),
            box_dim.as_ptr(),
            elem.as_ptr(),
            NONE_IL,
            sw,
            L2,
            FILL,
        )
    }
}

#[test]
fn tensor_maps_on_the_simulated_device() {
    assert_eq!(cuInit(0), CUresult::CUDA_SUCCESS);
    // The box checks: a 16-byte inner box, none empty or above 256, a
    // swizzle span the inner box fits, element strides 1..=8.
    assert_eq!(tiled([8, 8], NONE_SW, [1, 1]), CUresult::CUDA_SUCCESS);
    assert_eq!(
        tiled([4, 8], NONE_SW, [1, 1]),
        CUresult::CUDA_ERROR_INVALID_VALUE
    );
    assert_eq!(
        tiled([8, 0], NONE_SW, [1, 1]),
        CUresult::CUDA_ERROR_INVALID_VALUE
    );
    assert_eq!(
        tiled([8, 512], NONE_SW, [1, 1]),
        CUresult::CUDA_ERROR_INVALID_VALUE
    );
    assert_eq!(tiled([16, 8], SW32, [1, 1]), CUresult::CUDA_SUCCESS);
    assert_eq!(
        tiled([32, 8], SW32, [1, 1]),
        CUresult::CUDA_ERROR_INVALID_VALUE
    );
    assert_eq!(
        tiled([8, 8], NONE_SW, [9, 1]),
        CUresult::CUDA_ERROR_INVALID_VALUE
    );

    // Im2col: rank 3 at least, corners of rank - 2 elements.
    // SAFETY: all-zero bytes are a valid map.
    let mut m: CUtensorMap = unsafe { std::mem::zeroed() };
    let dim = [64u64, 8, 8, 2];
    let strides = [128u64, 1024, 8192];
    let elem = [1u32; 4];
    let (lower, upper) = ([-1i32, -1], [1i32, 1]);
    // SAFETY: arrays of the lengths rank 4 needs.
    let r = unsafe {
        cuTensorMapEncodeIm2col(
            &mut m,
            F16,
            4,
            address(ADDRESS),
            dim.as_ptr(),
            strides.as_ptr(),
            lower.as_ptr(),
            upper.as_ptr(),
            64,
            32,
            elem.as_ptr(),
            NONE_IL,
            NONE_SW,
            L2,
            FILL,
        )
    };
    assert_eq!(r, CUresult::CUDA_SUCCESS);
    assert_eq!(m.opaque[0], ADDRESS as u64);
    // SAFETY: rank 2 is refused before any array is read.
    let r = unsafe {
        cuTensorMapEncodeIm2col(
            &mut m,
            F16,
            2,
            address(ADDRESS),
            dim.as_ptr(),
            strides.as_ptr(),
            null_mut(),
            null_mut(),
            64,
            32,
            elem.as_ptr(),
            NONE_IL,
            NONE_SW,
            L2,
            FILL,
        )
    };
    assert_eq!(r, CUresult::CUDA_ERROR_INVALID_VALUE);

    // Im2col wide: the widths by value and the mode checked.
    for (mode, want) in [
        (0, CUresult::CUDA_SUCCESS),
        (7, CUresult::CUDA_ERROR_INVALID_VALUE),
    ] {
        // SAFETY: arrays of the lengths rank 3 needs.
        let r = unsafe {
            cuTensorMapEncodeIm2colWide(
                &mut m,
                F16,
                3,
                address(ADDRESS),
                dim.as_ptr(),
                strides.as_ptr(),
                -1,
                1,
                64,
                32,
                elem.as_ptr(),
                NONE_IL,
                CUtensorMapIm2ColWideMode(mode),
                NONE_SW,
                L2,
                FILL,
            )
        };
        assert_eq!(r, want);
    }

    // Replacing the address keeps the rest of the map.
    let before = m.opaque;
    // SAFETY: `m` is a map this device encoded.
    let r = unsafe { cuTensorMapReplaceAddress(&mut m, address(0x2000)) };
    assert_eq!(r, CUresult::CUDA_SUCCESS);
    assert_eq!(m.opaque[0], 0x2000);
    assert_eq!(m.opaque[1..], before[1..]);
}
