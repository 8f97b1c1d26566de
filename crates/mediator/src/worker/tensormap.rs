//! Tensor maps, encoded by the driver. The global address goes to the
//! driver unchecked: the driver does not dereference it when encoding, and
//! a kernel that uses the map reaches memory through the launch path. The
//! arrays are read at the lengths the op's documentation gives, so the
//! driver never reads past what the client sent.

use std::mem::size_of;

use vgpu_abi::types::{
    cuuint32_t, cuuint64_t, CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill,
    CUtensorMapIm2ColWideMode, CUtensorMapInterleave, CUtensorMapL2promotion, CUtensorMapSwizzle,
};
use vgpu_proto::{tensor_map_encode, tensor_map_replace_address, Request};

use super::calls::{as_ptr, elements, message, ok, part, size, Reply};
use super::exec::Lane;
use super::status::INVALID_VALUE;
use super::Session;
use crate::driver::{entry, Status};

/// The most dimensions a tensor map has.
const MAX_RANK: usize = 5;

/// The next `n` elements of `T` of the blob.
fn take<T: Copy>(blob: &[u8], at: &mut usize, n: usize) -> Result<Vec<T>, Status> {
    let bytes = part(blob, at, n * size_of::<T>())?;
    // SAFETY: `T` is a plain C integer, valid for any bytes.
    Ok(unsafe { elements(bytes) })
}

/// The map's bytes, for a reply.
fn map_bytes(m: &CUtensorMap) -> Vec<u8> {
    m.opaque.iter().flat_map(|w| w.to_ne_bytes()).collect()
}

/// Encodes a tensor map: see the op's documentation.
pub fn tensor_map_encode(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &tensor_map_encode::Request = message(req)?;
    let rank = r.rank.get() as usize;
    let min_rank = if r.kind == 0 { 1 } else { 3 };
    if !(min_rank..=MAX_RANK).contains(&rank) {
        return Err(INVALID_VALUE);
    }
    let at = &mut 0usize;
    let dim: Vec<cuuint64_t> = take(&req.blob, at, rank)?;
    let strides: Vec<cuuint64_t> = take(&req.blob, at, rank - 1)?;
    let box_dim: Vec<cuuint32_t> = if r.kind == 0 {
        take(&req.blob, at, rank)?
    } else {
        Vec::new()
    };
    let elem: Vec<cuuint32_t> = take(&req.blob, at, rank)?;
    let (lower, upper): (Vec<i32>, Vec<i32>) = if r.kind == 1 {
        (
            take(&req.blob, at, rank - 2)?,
            take(&req.blob, at, rank - 2)?,
        )
    } else {
        (Vec::new(), Vec::new())
    };
    if *at != req.blob.len() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: all-zero bytes are a valid map (integers).
    let mut map: CUtensorMap = unsafe { std::mem::zeroed() };
    let address = as_ptr(size(r.address.get())?);
    let ty = CUtensorMapDataType(r.data_type.get());
    let il = CUtensorMapInterleave(r.interleave.get());
    let sw = CUtensorMapSwizzle(r.swizzle.get());
    let l2 = CUtensorMapL2promotion(r.l2_promotion.get());
    let oob = CUtensorMapFloatOOBfill(r.oob_fill.get());
    let (cpp, ppc) = (r.channels_per_pixel.get(), r.pixels_per_column.get());
    let rank32 = r.rank.get();
    // SAFETY: `map` is a local; every array holds the elements the driver
    // reads for `rank`; the address is only encoded, never dereferenced.
    ok(unsafe {
        match r.kind {
            0 => entry(s.driver.cuTensorMapEncodeTiled)?(
                &mut map,
                ty,
                rank32,
                address,
                dim.as_ptr(),
                strides.as_ptr(),
                box_dim.as_ptr(),
                elem.as_ptr(),
                il,
                sw,
                l2,
                oob,
            ),
            1 => entry(s.driver.cuTensorMapEncodeIm2col)?(
                &mut map,
                ty,
                rank32,
                address,
                dim.as_ptr(),
                strides.as_ptr(),
                lower.as_ptr(),
                upper.as_ptr(),
                cpp,
                ppc,
                elem.as_ptr(),
                il,
                sw,
                l2,
                oob,
            ),
            2 => entry(s.driver.cuTensorMapEncodeIm2colWide)?(
                &mut map,
                ty,
                rank32,
                address,
                dim.as_ptr(),
                strides.as_ptr(),
                r.lower_width.get(),
                r.upper_width.get(),
                cpp,
                ppc,
                elem.as_ptr(),
                il,
                CUtensorMapIm2ColWideMode(r.mode.get()),
                sw,
                l2,
                oob,
            ),
            _ => return Err(INVALID_VALUE),
        }
    })?;
    Ok(Reply {
        blob: map_bytes(&map),
        ..Reply::default()
    })
}

/// `cuTensorMapReplaceAddress` on the map the client sent.
pub fn tensor_map_replace_address(
    _: &mut Lane,
    s: &Session,
    req: &Request,
) -> Result<Reply, Status> {
    let r: &tensor_map_replace_address::Request = message(req)?;
    if req.blob.len() != size_of::<CUtensorMap>() {
        return Err(INVALID_VALUE);
    }
    let at = &mut 0usize;
    let words: Vec<cuuint64_t> = take(&req.blob, at, 16)?;
    // SAFETY: all-zero bytes are a valid map (integers).
    let mut map: CUtensorMap = unsafe { std::mem::zeroed() };
    map.opaque.copy_from_slice(&words);
    let address = as_ptr(size(r.address.get())?);
    // SAFETY: `map` is a local, aligned as its type requires; the address
    // is only encoded, never dereferenced.
    ok(unsafe { entry(s.driver.cuTensorMapReplaceAddress)?(&mut map, address) })?;
    Ok(Reply {
        blob: map_bytes(&map),
        ..Reply::default()
    })
}
