//! Texture and surface objects: bookkeeping only (nothing samples them).
//!
//! Creation checks what the driver checks at once: the resource (a live
//! array or mipmapped array, surface objects on arrays only;
//! linear and pitched ranges inside one live allocation), and hands out a
//! fresh nonzero value, as the driver's objects are. The getters return what
//! the object was created with.

use vgpu_abi::array::element_bytes;

use crate::array;
use crate::context;
use crate::cu::{
    CUresourcetype, CUresult, CUDA_RESOURCE_DESC, CUDA_RESOURCE_VIEW_DESC, CUDA_TEXTURE_DESC,
};
use crate::error::{err, Res};
use crate::memory;
use crate::state::array::TexObject;
use crate::state::State;

fn bad<T>(why: String) -> Res<T> {
    err(CUresult::CUDA_ERROR_INVALID_VALUE, why)
}

/// Checks a resource descriptor.
fn check_resource(st: &State, r: &CUDA_RESOURCE_DESC, surface: bool) -> Res<()> {
    match r.resType {
        CUresourcetype::CU_RESOURCE_TYPE_ARRAY => {
            // SAFETY: `resType` says the union holds `array`.
            let key = unsafe { r.res.array.hArray }.addr();
            // Driver 580 makes surface objects over arrays made without
            // `CUDA_ARRAY3D_SURFACE_LDST` too.
            array::get(st, key).map(drop)
        }
        _ if surface => bad("a surface object's resource must be an array".into()),
        CUresourcetype::CU_RESOURCE_TYPE_LINEAR => {
            // SAFETY: `resType` says the union holds `linear`.
            let l = unsafe { r.res.linear };
            if element_bytes(l.format.0, l.numChannels).is_none() || l.sizeInBytes == 0 {
                return bad("linear resource: format, channels or size not valid".into());
            }
            memory::range(st, l.devPtr, l.sizeInBytes).map(drop)
        }
        CUresourcetype::CU_RESOURCE_TYPE_PITCH2D => {
            // SAFETY: `resType` says the union holds `pitch2D`.
            let p = unsafe { r.res.pitch2D };
            let Some(element) = element_bytes(p.format.0, p.numChannels) else {
                return bad("pitch2D resource: format or channels not valid".into());
            };
            let row = (p.width as u64).checked_mul(element);
            let span = row
                .filter(|&row| row <= p.pitchInBytes as u64)
                .and_then(|row| {
                    (p.height as u64)
                        .checked_sub(1)?
                        .checked_mul(p.pitchInBytes as u64)?
                        .checked_add(row)
                });
            match span.and_then(|s| usize::try_from(s).ok()) {
                Some(len) if p.width > 0 => memory::range(st, p.devPtr, len).map(drop),
                _ => bad("pitch2D resource: extent not valid".into()),
            }
        }
        CUresourcetype::CU_RESOURCE_TYPE_MIPMAPPED_ARRAY => {
            // SAFETY: `resType` says the union holds `mipmap`.
            let key = unsafe { r.res.mipmap.hMipmappedArray }.addr();
            array::get_mipmapped(st, key).map(drop)
        }
        t => bad(format!("{} is not a CUresourcetype", t.0)),
    }
}

/// `cuTexObjectCreate` (`texture` Some) and `cuSurfObjectCreate`.
pub(crate) fn create(
    st: &mut State,
    resource: CUDA_RESOURCE_DESC,
    texture: Option<CUDA_TEXTURE_DESC>,
    view: Option<CUDA_RESOURCE_VIEW_DESC>,
) -> Res<u64> {
    let ctx = context::current_usable(st)?;
    let surface = texture.is_none();
    check_resource(st, &resource, surface)?;
    st.ext.last_tex_object += 1;
    let value = st.ext.last_tex_object;
    st.ext.tex_objects.insert(
        value,
        TexObject {
            ctx,
            surface,
            resource,
            texture,
            view,
        },
    );
    Ok(value)
}

/// A live object of this kind (`CUDA_ERROR_INVALID_HANDLE` otherwise).
pub(crate) fn get(st: &State, value: u64, surface: bool) -> Res<&TexObject> {
    match st.ext.tex_objects.get(&value) {
        Some(t) if t.surface == surface => Ok(t),
        _ => err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            format!("{value:#x} is not a live object of this kind"),
        ),
    }
}

/// `cuTexObjectDestroy` and `cuSurfObjectDestroy`.
pub(crate) fn destroy(st: &mut State, value: u64, surface: bool) -> Res<()> {
    context::current(st)?;
    get(st, value, surface)?;
    st.ext.tex_objects.remove(&value);
    Ok(())
}
