//! Tensor maps. The simulated device checks the arguments as the CUDA
//! documentation states the driver's requirements and encodes a
//! deterministic 128-byte map of its own layout (word 0 the global
//! address, then the arguments packed); nothing reads it but
//! `cuTensorMapReplaceAddress`, since the simulated device runs no TMA.

use std::ffi::c_int;

use crate::cu::{
    cuuint32_t, cuuint64_t, CUresult, CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill,
    CUtensorMapIm2ColWideMode, CUtensorMapInterleave, CUtensorMapL2promotion, CUtensorMapSwizzle,
};
use crate::error::{err, Res};
use crate::ffi::run;
use crate::state;

const INVALID: CUresult = CUresult::CUDA_ERROR_INVALID_VALUE;
/// The most dimensions a tensor map has.
const MAX_RANK: u32 = 5;
/// `CU_TENSOR_MAP_INTERLEAVE_32B`.
const INTERLEAVE_32B: u32 = 2;
/// Word 15's tag: a map this device encoded.
const TAG: u64 = 0x5653_494d_544d_4150;

/// The bytes of one element of a data type (the packed sub-byte forms
/// count as one), or `None` for a value the enum does not have.
fn element_size(t: CUtensorMapDataType) -> Option<u64> {
    Some(match t.0 {
        0 | 13..=15 => 1,
        1 | 6 | 9 => 2,
        2 | 3 | 7 | 10..=12 => 4,
        4 | 5 | 8 => 8,
        _ => return None,
    })
}

/// The swizzle's span in bytes (0 for none), or `None` for a value the
/// enum does not have.
fn swizzle_span(s: CUtensorMapSwizzle) -> Option<u64> {
    Some(match s.0 {
        0 => 0,
        1 => 32,
        2 => 64,
        3..=6 => 128,
        _ => return None,
    })
}

/// `n` elements at `p` (none for 0; NULL otherwise is an error).
///
/// # Safety
/// `p` must be NULL or valid for reads of `n` elements.
unsafe fn read<T: Copy>(p: *const T, n: usize, what: &str) -> Res<Vec<T>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return err(INVALID, format!("{what} is NULL"));
    }
    // SAFETY: non-NULL and readable for `n` elements by the contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) }.to_vec())
}

/// Checks an application's map pointer: non-NULL, 64-byte aligned.
fn check_map(map: *mut CUtensorMap) -> Res<()> {
    if map.is_null() {
        return err(INVALID, "tensorMap is NULL");
    }
    if !(map as usize).is_multiple_of(64) {
        return err(INVALID, "tensorMap is not 64-byte aligned");
    }
    Ok(())
}

/// A map's words, before they are stored.
struct Encoded {
    words: [u64; 16],
}

/// Checks the shared arguments and packs them; `box_dim` is `None` for the
/// im2col forms (their box comes from the pixel arguments).
#[allow(clippy::too_many_arguments)]
fn encode(
    kind: u64,
    ty: CUtensorMapDataType,
    rank: u32,
    address: u64,
    dim: &[u64],
    strides: &[u64],
    box_dim: Option<&[u32]>,
    elem: &[u32],
    il: CUtensorMapInterleave,
    sw: CUtensorMapSwizzle,
    l2: CUtensorMapL2promotion,
    oob: CUtensorMapFloatOOBfill,
) -> Res<Encoded> {
    let size = element_size(ty).map_or_else(|| err(INVALID, "unknown data type"), Ok)?;
    let span = swizzle_span(sw).map_or_else(|| err(INVALID, "unknown swizzle"), Ok)?;
    if il.0 > INTERLEAVE_32B || l2.0 > 3 || oob.0 > 1 {
        return err(INVALID, "unknown interleave, L2 promotion or fill");
    }
    if il.0 != 0 && rank < 3 {
        return err(INVALID, "an interleaved map has rank 3 or more");
    }
    let align = if il.0 == INTERLEAVE_32B { 32 } else { 16 };
    if !address.is_multiple_of(align) {
        return err(
            INVALID,
            format!("globalAddress is not {align}-byte aligned"),
        );
    }
    if dim.iter().any(|&d| d == 0 || d > 1 << 32) {
        return err(INVALID, "a globalDim is 0 or above 2^32");
    }
    if strides
        .iter()
        .any(|&s| !s.is_multiple_of(align) || s >= 1 << 40)
    {
        return err(
            INVALID,
            format!("a globalStride is not a multiple of {align} or is 2^40 or more"),
        );
    }
    if elem.iter().any(|&e| e == 0 || e > 8) {
        return err(INVALID, "an elementStride is not 1..=8");
    }
    let mut words = [0u64; 16];
    if let Some(b) = box_dim {
        if b.iter().any(|&d| d == 0 || d > 256) {
            return err(INVALID, "a boxDim is not 1..=256");
        }
        let inner = u64::from(b[0]) * size;
        if il.0 == 0 && !inner.is_multiple_of(16) {
            return err(INVALID, "the inner box is not a multiple of 16 bytes");
        }
        if il.0 == 0 && span != 0 && inner > span {
            return err(INVALID, "the inner box is wider than the swizzle span");
        }
        words[11] = b
            .iter()
            .enumerate()
            .map(|(i, &d)| u64::from(d) << (12 * i))
            .sum();
    }
    words[0] = address;
    words[1] = u64::from(ty.0)
        | u64::from(rank) << 8
        | u64::from(il.0) << 16
        | u64::from(sw.0) << 24
        | u64::from(l2.0) << 32
        | u64::from(oob.0) << 40
        | kind << 48;
    words[2..2 + dim.len()].copy_from_slice(dim);
    words[7..7 + strides.len()].copy_from_slice(strides);
    words[12] = elem
        .iter()
        .enumerate()
        .map(|(i, &e)| u64::from(e) << (4 * i))
        .sum();
    words[15] = TAG;
    Ok(Encoded { words })
}

/// Writes the map.
fn store(map: *mut CUtensorMap, e: &Encoded) {
    // SAFETY: checked non-NULL and aligned by `check_map`; the caller's map.
    unsafe { (*map).opaque = e.words };
}

/// Checks the rank against `min` and the map pointer.
fn check_head(map: *mut CUtensorMap, rank: u32, min: u32) -> Res<usize> {
    state::sim()?;
    check_map(map)?;
    if !(min..=MAX_RANK).contains(&rank) {
        return err(INVALID, format!("tensorRank {rank} is not {min}..=5"));
    }
    Ok(rank as usize)
}

/// `cuTensorMapEncodeTiled`.
///
/// # Safety
/// Every pointer must be NULL or valid as the CUDA API requires for `rank`.
#[no_mangle]
pub unsafe extern "C" fn cuTensorMapEncodeTiled(
    map: *mut CUtensorMap,
    ty: CUtensorMapDataType,
    rank: cuuint32_t,
    address: *mut core::ffi::c_void,
    dim: *const cuuint64_t,
    strides: *const cuuint64_t,
    box_dim: *const cuuint32_t,
    elem: *const cuuint32_t,
    il: CUtensorMapInterleave,
    sw: CUtensorMapSwizzle,
    l2: CUtensorMapL2promotion,
    oob: CUtensorMapFloatOOBfill,
) -> CUresult {
    run("cuTensorMapEncodeTiled", || {
        let n = check_head(map, rank, 1)?;
        // SAFETY: the caller's arrays, of the lengths for `rank` (1..=5).
        let (d, s, b, e) = unsafe {
            (
                read(dim, n, "globalDim")?,
                read(strides, n - 1, "globalStrides")?,
                read(box_dim, n, "boxDim")?,
                read(elem, n, "elementStrides")?,
            )
        };
        let enc = encode(
            0,
            ty,
            rank,
            address as u64,
            &d,
            &s,
            Some(&b),
            &e,
            il,
            sw,
            l2,
            oob,
        )?;
        store(map, &enc);
        Ok(())
    })
}

/// `cuTensorMapEncodeIm2col`.
///
/// # Safety
/// Every pointer must be NULL or valid as the CUDA API requires for `rank`.
#[no_mangle]
pub unsafe extern "C" fn cuTensorMapEncodeIm2col(
    map: *mut CUtensorMap,
    ty: CUtensorMapDataType,
    rank: cuuint32_t,
    address: *mut core::ffi::c_void,
    dim: *const cuuint64_t,
    strides: *const cuuint64_t,
    lower: *const c_int,
    upper: *const c_int,
    channels: cuuint32_t,
    pixels: cuuint32_t,
    elem: *const cuuint32_t,
    il: CUtensorMapInterleave,
    sw: CUtensorMapSwizzle,
    l2: CUtensorMapL2promotion,
    oob: CUtensorMapFloatOOBfill,
) -> CUresult {
    run("cuTensorMapEncodeIm2col", || {
        let n = check_head(map, rank, 3)?;
        // SAFETY: the caller's arrays, of the lengths for `rank` (1..=5).
        let (d, s, lo, up, e) = unsafe {
            (
                read(dim, n, "globalDim")?,
                read(strides, n - 1, "globalStrides")?,
                read(lower, n - 2, "pixelBoxLowerCorner")?,
                read(upper, n - 2, "pixelBoxUpperCorner")?,
                read(elem, n, "elementStrides")?,
            )
        };
        im2col_pixels(channels, pixels)?;
        let mut enc = encode(
            1,
            ty,
            rank,
            address as u64,
            &d,
            &s,
            None,
            &e,
            il,
            sw,
            l2,
            oob,
        )?;
        enc.words[13] = u64::from(channels) | u64::from(pixels) << 32;
        enc.words[14] = corners(&lo) | corners(&up) << 32;
        store(map, &enc);
        Ok(())
    })
}

/// `cuTensorMapEncodeIm2colWide`.
///
/// # Safety
/// Every pointer must be NULL or valid as the CUDA API requires for `rank`.
#[no_mangle]
pub unsafe extern "C" fn cuTensorMapEncodeIm2colWide(
    map: *mut CUtensorMap,
    ty: CUtensorMapDataType,
    rank: cuuint32_t,
    address: *mut core::ffi::c_void,
    dim: *const cuuint64_t,
    strides: *const cuuint64_t,
    lower: c_int,
    upper: c_int,
    channels: cuuint32_t,
    pixels: cuuint32_t,
    elem: *const cuuint32_t,
    il: CUtensorMapInterleave,
    mode: CUtensorMapIm2ColWideMode,
    sw: CUtensorMapSwizzle,
    l2: CUtensorMapL2promotion,
    oob: CUtensorMapFloatOOBfill,
) -> CUresult {
    run("cuTensorMapEncodeIm2colWide", || {
        let n = check_head(map, rank, 3)?;
        // SAFETY: the caller's arrays, of the lengths for `rank` (1..=5).
        let (d, s, e) = unsafe {
            (
                read(dim, n, "globalDim")?,
                read(strides, n - 1, "globalStrides")?,
                read(elem, n, "elementStrides")?,
            )
        };
        im2col_pixels(channels, pixels)?;
        if mode.0 > 1 {
            return err(INVALID, "unknown im2col wide mode");
        }
        let mut enc = encode(
            2,
            ty,
            rank,
            address as u64,
            &d,
            &s,
            None,
            &e,
            il,
            sw,
            l2,
            oob,
        )?;
        enc.words[13] = u64::from(channels) | u64::from(pixels) << 32;
        enc.words[14] = corners(&[lower]) | corners(&[upper]) << 32 | u64::from(mode.0) << 63;
        store(map, &enc);
        Ok(())
    })
}

/// `cuTensorMapReplaceAddress`: the address checked as when encoding, for
/// the interleave the map was encoded with.
///
/// # Safety
/// `map` must be NULL or valid for reads and writes of a `CUtensorMap`.
#[no_mangle]
pub unsafe extern "C" fn cuTensorMapReplaceAddress(
    map: *mut CUtensorMap,
    address: *mut core::ffi::c_void,
) -> CUresult {
    run("cuTensorMapReplaceAddress", || {
        state::sim()?;
        check_map(map)?;
        // SAFETY: checked non-NULL and aligned; the caller's map.
        let words = unsafe { &mut (*map).opaque };
        let il = (words[1] >> 16) & 0xff;
        let align = if il == u64::from(INTERLEAVE_32B) {
            32
        } else {
            16
        };
        if !(address as u64).is_multiple_of(align) {
            return err(
                INVALID,
                format!("globalAddress is not {align}-byte aligned"),
            );
        }
        words[0] = address as u64;
        Ok(())
    })
}

/// The im2col pixel arguments: `channelsPerPixel` 1..=256 and
/// `pixelsPerColumn` 1..=1024, as documented.
fn im2col_pixels(channels: u32, pixels: u32) -> Res<()> {
    if !(1..=256).contains(&channels) || !(1..=1024).contains(&pixels) {
        return err(INVALID, "channelsPerPixel or pixelsPerColumn out of range");
    }
    Ok(())
}

/// Corner offsets packed a byte each (their range is small).
fn corners(c: &[c_int]) -> u64 {
    c.iter()
        .enumerate()
        .map(|(i, &v)| u64::from(v.to_le_bytes()[0]) << (8 * i))
        .sum()
}
