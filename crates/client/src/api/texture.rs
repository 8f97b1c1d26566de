//! Texture and surface objects. Their descriptors travel as their bytes
//! (array handles in them are the session's ids, which the worker
//! translates); the object is the driver's own value, handed to the
//! application unchanged because kernels take it as a parameter.

use std::mem::size_of;

use vgpu_abi::types::{
    CUsurfObject, CUtexObject, CUDA_RESOURCE_DESC, CUDA_RESOURCE_VIEW_DESC, CUDA_TEXTURE_DESC,
};
use vgpu_proto::{tex_object_create, tex_object_describe, tex_object_destroy};
use zerocopy::little_endian::U64;

use crate::edge::{non_null, write_out, CuError, CuResult};
use crate::runtime::runtime;

/// Which descriptor of an object a getter asks for.
#[derive(Debug, Clone, Copy)]
pub enum What {
    Resource,
    Texture,
    View,
}

/// The bytes of the C struct at `p` (checked non-NULL).
///
/// # Safety
/// `p` must be NULL or point to a readable `T`.
unsafe fn bytes<T>(p: *const T) -> CuResult<Vec<u8>> {
    non_null(p)?;
    // SAFETY: non-NULL and readable by the contract.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), size_of::<T>()) }.to_vec())
}

/// `cuTexObjectCreate`.
///
/// # Safety
/// Every pointer must be NULL or valid as the CUDA API defines it.
pub unsafe fn create(
    p: *mut CUtexObject,
    res: *const CUDA_RESOURCE_DESC,
    tex: *const CUDA_TEXTURE_DESC,
    view: *const CUDA_RESOURCE_VIEW_DESC,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(p)?;
    // SAFETY: forwarded from this function's contract.
    let mut blob = unsafe { bytes(res) }?;
    // SAFETY: forwarded from this function's contract.
    blob.extend(unsafe { bytes(tex) }?);
    if !view.is_null() {
        // SAFETY: forwarded from this function's contract.
        blob.extend(unsafe { bytes(view) }?);
    }
    let r = tex_object_create::Request {
        surface: 0,
        view: u8::from(!view.is_null()),
    };
    let (rep, _) = s.request(&r, &blob)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(p, rep.object.get()) }
}

/// `cuSurfObjectCreate`.
///
/// # Safety
/// Every pointer must be NULL or valid as the CUDA API defines it.
pub unsafe fn create_surface(p: *mut CUsurfObject, res: *const CUDA_RESOURCE_DESC) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(p)?;
    // SAFETY: forwarded from this function's contract.
    let blob = unsafe { bytes(res) }?;
    let r = tex_object_create::Request {
        surface: 1,
        view: 0,
    };
    let (rep, _) = s.request(&r, &blob)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(p, rep.object.get()) }
}

/// `cuTexObjectDestroy` (`surface` false) and `cuSurfObjectDestroy`.
pub fn destroy(object: u64, surface: bool) -> CuResult<()> {
    let s = runtime().session()?;
    let r = tex_object_destroy::Request {
        object: U64::new(object),
        surface: u8::from(surface),
    };
    s.request(&r, &[]).map(drop)
}

/// The getters: the descriptor `what` of `object`, written to `out`.
///
/// # Safety
/// `out` must be NULL or valid for a write of the descriptor `what` names.
pub unsafe fn describe(out: *mut u8, object: u64, surface: bool, what: What) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(out)?;
    let (code, len) = match what {
        What::Resource => (0, size_of::<CUDA_RESOURCE_DESC>()),
        What::Texture => (1, size_of::<CUDA_TEXTURE_DESC>()),
        What::View => (2, size_of::<CUDA_RESOURCE_VIEW_DESC>()),
    };
    let r = tex_object_describe::Request {
        object: U64::new(object),
        surface: u8::from(surface),
        what: code,
    };
    let (_, back) = s.request(&r, &[])?;
    if back.len() != len {
        return Err(CuError::UNKNOWN);
    }
    // SAFETY: `out` holds the descriptor's `len` bytes by the contract.
    unsafe { std::ptr::copy_nonoverlapping(back.as_ptr(), out, len) };
    Ok(())
}
