//! Texture and surface objects. A `CUDA_RESOURCE_DESC` is a union by
//! `resType`: an array's or mipmapped array's handle travels as the client's
//! id and is translated here (and back in the getter); a linear or pitched
//! range is checked against the session's live allocations before the
//! driver sees it. The objects themselves are the driver's values, which
//! kernels take as parameters: the worker records which ones the session
//! created, so destroying or describing any other value is refused, and
//! a destroyed context forgets its objects.

use std::mem::size_of;

use vgpu_abi::array::element_bytes;
use vgpu_abi::types::{
    CUresourcetype, CUDA_RESOURCE_DESC, CUDA_RESOURCE_VIEW_DESC, CUDA_TEXTURE_DESC,
};
use vgpu_abi::HandleKind;
use vgpu_proto::{tex_object_create, tex_object_describe, tex_object_destroy, Request};
use zerocopy::little_endian::U64;

use super::calls::{as_ptr, message, ok, Reply};
use super::exec::Lane;
use super::status::{INVALID_HANDLE, INVALID_VALUE};
use super::tables::TexObject;
use super::Session;
use crate::driver::{entry, Status};

/// Reads a `T` from the front of `bytes`, advancing it.
fn take<T: Copy>(bytes: &mut &[u8]) -> Result<T, Status> {
    if bytes.len() < size_of::<T>() {
        return Err(INVALID_VALUE);
    }
    let (head, rest) = bytes.split_at(size_of::<T>());
    *bytes = rest;
    // SAFETY: `head` holds `size_of::<T>()` bytes; `T` is a C struct of
    // integers, floats and pointers, valid for any bytes the client sent
    // (pointers in it are ids, translated before use).
    Ok(unsafe { head.as_ptr().cast::<T>().read_unaligned() })
}

/// The bytes of a C struct, for a reply.
fn bytes_of<T: Copy>(v: &T) -> Vec<u8> {
    // SAFETY: `v` is a live `T`; every byte of a `#[repr(C)]` struct the
    // driver filled in (padding included: it was zeroed first) is readable.
    unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), size_of::<T>()) }.to_vec()
}

/// Translates the handle in a resource descriptor to the real one and
/// checks its device range.
fn translate_in(s: &Session, d: &mut CUDA_RESOURCE_DESC) -> Result<(), Status> {
    let t = s.tables();
    match d.resType {
        CUresourcetype::CU_RESOURCE_TYPE_ARRAY => {
            // SAFETY: `resType` says the union holds `array`.
            let id = unsafe { d.res.array.hArray } as usize as u64;
            d.res.array.hArray = as_ptr(t.handle(HandleKind::Array, id)?);
        }
        CUresourcetype::CU_RESOURCE_TYPE_MIPMAPPED_ARRAY => {
            // SAFETY: `resType` says the union holds `mipmap`.
            let id = unsafe { d.res.mipmap.hMipmappedArray } as usize as u64;
            d.res.mipmap.hMipmappedArray = as_ptr(t.handle(HandleKind::MipmappedArray, id)?);
        }
        CUresourcetype::CU_RESOURCE_TYPE_LINEAR => {
            // SAFETY: `resType` says the union holds `linear`.
            let l = unsafe { d.res.linear };
            t.check(l.devPtr, l.sizeInBytes as u64)?;
        }
        CUresourcetype::CU_RESOURCE_TYPE_PITCH2D => {
            // SAFETY: `resType` says the union holds `pitch2D`.
            let p = unsafe { d.res.pitch2D };
            // Rows of `width` elements (of a size the worker may not know:
            // then a whole pitch), `pitchInBytes` apart.
            let element = element_bytes(p.format.0, p.numChannels);
            let row = element.map_or(Some(p.pitchInBytes as u64), |e| {
                (p.width as u64).checked_mul(e)
            });
            let span = (p.height as u64)
                .checked_sub(1)
                .and_then(|rows| rows.checked_mul(p.pitchInBytes as u64))
                .zip(row)
                .and_then(|(before, row)| before.checked_add(row));
            match span {
                Some(len) => t.check(p.devPtr, len)?,
                // No rows: the driver judges the descriptor.
                None if p.height == 0 => {}
                None => return Err(INVALID_VALUE),
            }
        }
        // Not a resource type: the driver refuses it.
        _ => {}
    }
    Ok(())
}

/// Translates the handle in a resource descriptor the driver wrote back to
/// the session's id.
fn translate_out(s: &Session, d: &mut CUDA_RESOURCE_DESC, ctx: u64) -> Result<(), Status> {
    let mut t = s.tables();
    let raw = |id: u64| usize::try_from(id).map_err(|_| INVALID_VALUE);
    match d.resType {
        CUresourcetype::CU_RESOURCE_TYPE_ARRAY => {
            // SAFETY: `resType` says the union holds `array`.
            let real = unsafe { d.res.array.hArray } as usize;
            d.res.array.hArray = as_ptr(raw(t.id_of(HandleKind::Array, real, ctx))?);
        }
        CUresourcetype::CU_RESOURCE_TYPE_MIPMAPPED_ARRAY => {
            // SAFETY: `resType` says the union holds `mipmap`.
            let real = unsafe { d.res.mipmap.hMipmappedArray } as usize;
            let id = t.id_of(HandleKind::MipmappedArray, real, ctx);
            d.res.mipmap.hMipmappedArray = as_ptr(raw(id)?);
        }
        _ => {}
    }
    Ok(())
}

/// Creates a texture or surface object: see the op's documentation.
pub fn tex_object_create(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &tex_object_create::Request = message(req)?;
    let mut blob = &req.blob[..];
    let mut res: CUDA_RESOURCE_DESC = take(&mut blob)?;
    translate_in(s, &mut res)?;
    let mut object = 0u64;
    let surface = r.surface != 0;
    if surface {
        // SAFETY: `res` is a whole descriptor whose handles are the
        // session's own and whose ranges are checked; `object` is a local.
        ok(unsafe { entry(s.driver.cuSurfObjectCreate)?(&mut object, &res) })?;
    } else {
        let tex: CUDA_TEXTURE_DESC = take(&mut blob)?;
        let view: Option<CUDA_RESOURCE_VIEW_DESC> = if r.view != 0 {
            Some(take(&mut blob)?)
        } else {
            None
        };
        let view_ptr = view.as_ref().map_or(std::ptr::null(), |v| v as *const _);
        // SAFETY: as above; `tex` and `view` are whole descriptors (or NULL).
        ok(unsafe { entry(s.driver.cuTexObjectCreate)?(&mut object, &res, &tex, view_ptr) })?;
    }
    if !blob.is_empty() {
        tracing::warn!("texture object request: {} stray bytes", blob.len());
    }
    s.tables().tex_objects.insert(
        object,
        TexObject {
            surface,
            ctx: req.ctx,
        },
    );
    Ok(Reply::new(
        &tex_object_create::Reply {
            object: U64::new(object),
        },
        Vec::new(),
    ))
}

/// The object, if the session created it as this kind.
fn known(s: &Session, object: u64, surface: bool) -> Result<(), Status> {
    match s.tables().tex_objects.get(&object) {
        Some(o) if o.surface == surface => Ok(()),
        _ => {
            tracing::info!("texture or surface object {object:#x} is not one this session made");
            Err(INVALID_HANDLE)
        }
    }
}

/// Destroys a texture or surface object the session created.
pub fn tex_object_destroy(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &tex_object_destroy::Request = message(req)?;
    let (object, surface) = (r.object.get(), r.surface != 0);
    known(s, object, surface)?;
    // SAFETY: a live object of this session.
    ok(unsafe {
        if surface {
            entry(s.driver.cuSurfObjectDestroy)?(object)
        } else {
            entry(s.driver.cuTexObjectDestroy)?(object)
        }
    })?;
    s.tables().tex_objects.remove(&object);
    Ok(Reply::default())
}

/// A descriptor of a texture or surface object: see the op's documentation.
pub fn tex_object_describe(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &tex_object_describe::Request = message(req)?;
    let (object, surface) = (r.object.get(), r.surface != 0);
    known(s, object, surface)?;
    let blob = match (r.what, surface) {
        (0, _) => {
            // SAFETY: all-zero bytes are a valid descriptor (integers, NULL handles).
            let mut d: CUDA_RESOURCE_DESC = unsafe { std::mem::zeroed() };
            // SAFETY: a live object of this session; `d` is a local.
            ok(unsafe {
                if surface {
                    entry(s.driver.cuSurfObjectGetResourceDesc)?(&mut d, object)
                } else {
                    entry(s.driver.cuTexObjectGetResourceDesc)?(&mut d, object)
                }
            })?;
            translate_out(s, &mut d, req.ctx)?;
            bytes_of(&d)
        }
        (1, false) => {
            // SAFETY: all-zero bytes are a valid descriptor (integers, floats).
            let mut d: CUDA_TEXTURE_DESC = unsafe { std::mem::zeroed() };
            // SAFETY: a live texture object of this session; `d` is a local.
            ok(unsafe { entry(s.driver.cuTexObjectGetTextureDesc)?(&mut d, object) })?;
            bytes_of(&d)
        }
        (2, false) => {
            // SAFETY: all-zero bytes are a valid descriptor (integers).
            let mut d: CUDA_RESOURCE_VIEW_DESC = unsafe { std::mem::zeroed() };
            // SAFETY: a live texture object of this session; `d` is a local.
            ok(unsafe { entry(s.driver.cuTexObjectGetResourceViewDesc)?(&mut d, object) })?;
            bytes_of(&d)
        }
        _ => return Err(INVALID_VALUE),
    };
    Ok(Reply {
        blob,
        ..Reply::default()
    })
}
