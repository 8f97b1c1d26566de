//! Tensor maps. The driver encodes a map from its arguments; the global
//! address in it is a device address, passed through unchanged, so the
//! worker's driver encodes and the 128 bytes come back to the application's
//! `CUtensorMap`. Only the elements each array has are read:
//! `globalStrides` has `rank - 1`, the im2col corners `rank - 2`.

use std::mem::size_of;

use vgpu_abi::types::{
    cuuint32_t, cuuint64_t, CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill,
    CUtensorMapIm2ColWideMode, CUtensorMapInterleave, CUtensorMapL2promotion, CUtensorMapSwizzle,
};
use vgpu_proto::{tensor_map_encode, tensor_map_replace_address};
use zerocopy::little_endian::{I32, U32, U64};

use crate::call;
use crate::edge::{non_null, CuError, CuResult};
use crate::runtime::runtime;

/// The most dimensions a tensor map has.
const MAX_RANK: u32 = 5;

/// The alignment the driver requires of the application's map.
const MAP_ALIGN: usize = 64;

/// `CUDA_ERROR_INVALID_VALUE` for a NULL map or one not 64-byte aligned, as
/// the driver (the worker encodes into a map of its own, always aligned).
fn check_map(map: *mut CUtensorMap) -> CuResult<()> {
    non_null(map)?;
    if !(map as usize).is_multiple_of(MAP_ALIGN) {
        return Err(CuError::INVALID_VALUE);
    }
    Ok(())
}

/// The form of an encode call and what only that form takes.
#[derive(Debug, Clone, Copy)]
pub enum Form {
    /// `cuTensorMapEncodeTiled`: its `boxDim`.
    Tiled { box_dim: *const cuuint32_t },
    /// `cuTensorMapEncodeIm2col`: its corners, `rank - 2` elements each.
    Im2col {
        lower: *const core::ffi::c_int,
        upper: *const core::ffi::c_int,
    },
    /// `cuTensorMapEncodeIm2colWide`: its corner widths and mode.
    Wide {
        lower: core::ffi::c_int,
        upper: core::ffi::c_int,
        mode: CUtensorMapIm2ColWideMode,
    },
}

/// The arguments every encode form shares.
#[derive(Debug, Clone, Copy)]
pub struct Common {
    pub data_type: CUtensorMapDataType,
    pub rank: cuuint32_t,
    pub address: *mut core::ffi::c_void,
    pub global_dim: *const cuuint64_t,
    pub global_strides: *const cuuint64_t,
    pub element_strides: *const cuuint32_t,
    pub interleave: CUtensorMapInterleave,
    pub swizzle: CUtensorMapSwizzle,
    pub l2_promotion: CUtensorMapL2promotion,
    pub oob_fill: CUtensorMapFloatOOBfill,
}

/// Writes the map's bytes from a reply to the application's map.
///
/// # Safety
/// `map` must be non-NULL and valid for a write of a `CUtensorMap`.
unsafe fn write_map(map: *mut CUtensorMap, back: &[u8]) -> CuResult<()> {
    if back.len() != size_of::<CUtensorMap>() {
        return Err(CuError::UNKNOWN);
    }
    // SAFETY: `map` holds a `CUtensorMap` by the contract; `back` has its size.
    unsafe { std::ptr::copy_nonoverlapping(back.as_ptr(), map.cast::<u8>(), back.len()) };
    Ok(())
}

/// The three encode calls.
///
/// # Safety
/// Every pointer must be NULL or valid as the CUDA API defines it for
/// `c.rank` dimensions.
pub unsafe fn encode(
    map: *mut CUtensorMap,
    c: Common,
    form: Form,
    channels_per_pixel: cuuint32_t,
    pixels_per_column: cuuint32_t,
) -> CuResult<()> {
    let s = runtime().session()?;
    check_map(map)?;
    let min_rank = if matches!(form, Form::Tiled { .. }) {
        1
    } else {
        3
    };
    if !(min_rank..=MAX_RANK).contains(&c.rank) {
        return Err(CuError::INVALID_VALUE);
    }
    let rank = c.rank as usize;
    let mut blob = Vec::new();
    // SAFETY: the application's arrays (this one and those below), of the
    // lengths the CUDA API gives for `rank`, checked to be 1..=5.
    blob.extend_from_slice(unsafe { call::elements_at(c.global_dim, rank) }?);
    // SAFETY: as above.
    blob.extend_from_slice(unsafe { call::elements_at(c.global_strides, rank - 1) }?);
    let (mut kind, mut lower_width, mut upper_width, mut mode) = (0u8, 0, 0, 0);
    match form {
        Form::Tiled { box_dim } => {
            // SAFETY: as above.
            blob.extend_from_slice(unsafe { call::elements_at(box_dim, rank) }?);
        }
        Form::Im2col { .. } => kind = 1,
        Form::Wide {
            lower,
            upper,
            mode: m,
        } => {
            (kind, lower_width, upper_width, mode) = (2, lower, upper, m.0);
        }
    }
    // SAFETY: as above.
    blob.extend_from_slice(unsafe { call::elements_at(c.element_strides, rank) }?);
    if let Form::Im2col { lower, upper } = form {
        // SAFETY: as above; the corners have `rank - 2` elements.
        blob.extend_from_slice(unsafe { call::elements_at(lower, rank - 2) }?);
        // SAFETY: as above.
        blob.extend_from_slice(unsafe { call::elements_at(upper, rank - 2) }?);
    }
    let r = tensor_map_encode::Request {
        kind,
        data_type: U32::new(c.data_type.0),
        rank: U32::new(c.rank),
        address: U64::new(c.address as usize as u64),
        channels_per_pixel: U32::new(channels_per_pixel),
        pixels_per_column: U32::new(pixels_per_column),
        interleave: U32::new(c.interleave.0),
        mode: U32::new(mode),
        swizzle: U32::new(c.swizzle.0),
        l2_promotion: U32::new(c.l2_promotion.0),
        oob_fill: U32::new(c.oob_fill.0),
        lower_width: I32::new(lower_width),
        upper_width: I32::new(upper_width),
    };
    let (_, back) = s.request(&r, &blob)?;
    // SAFETY: checked non-NULL; the application's map.
    unsafe { write_map(map, &back) }
}

/// `cuTensorMapReplaceAddress`.
///
/// # Safety
/// `map` must be NULL or valid for reads and writes of a `CUtensorMap`.
pub unsafe fn replace_address(
    map: *mut CUtensorMap,
    address: *mut core::ffi::c_void,
) -> CuResult<()> {
    let s = runtime().session()?;
    check_map(map)?;
    // SAFETY: non-NULL; a readable `CUtensorMap` by the contract.
    let blob = unsafe { call::elements_at(map.cast_const(), 1) }?.to_vec();
    let r = tensor_map_replace_address::Request {
        address: U64::new(address as usize as u64),
    };
    let (_, back) = s.request(&r, &blob)?;
    // SAFETY: checked non-NULL; the application's map.
    unsafe { write_map(map, &back) }
}
