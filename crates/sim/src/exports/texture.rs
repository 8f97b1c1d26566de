//! Texture and surface objects (`crate::texture` keeps them).

use crate::cu::{
    CUresult, CUsurfObject, CUtexObject, CUDA_RESOURCE_DESC, CUDA_RESOURCE_VIEW_DESC,
    CUDA_TEXTURE_DESC,
};
use crate::error::{err, Res};
use crate::ffi::{run, Out};
use crate::state;
use crate::texture;

/// # Safety
/// `p` must be NULL or readable.
unsafe fn read<T>(p: *const T, what: &str) -> Res<T> {
    if p.is_null() {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{what} is NULL"),
        );
    }
    // SAFETY: non-NULL and readable by the contract.
    Ok(unsafe { p.read_unaligned() })
}

/// `cuTexObjectCreate`.
///
/// # Safety
/// Every pointer must be NULL or valid as the CUDA API requires.
#[no_mangle]
pub unsafe extern "C" fn cuTexObjectCreate(
    p_tex_object: *mut CUtexObject,
    p_res_desc: *const CUDA_RESOURCE_DESC,
    p_tex_desc: *const CUDA_TEXTURE_DESC,
    p_res_view_desc: *const CUDA_RESOURCE_VIEW_DESC,
) -> CUresult {
    run("cuTexObjectCreate", || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let out = unsafe { Out::new(p_tex_object, "pTexObject") }?;
        // SAFETY: forwarded from this function's contract.
        let res = unsafe { read(p_res_desc, "pResDesc") }?;
        // SAFETY: forwarded from this function's contract.
        let tex = unsafe { read(p_tex_desc, "pTexDesc") }?;
        let view = if p_res_view_desc.is_null() {
            None
        } else {
            // SAFETY: forwarded from this function's contract.
            Some(unsafe { read(p_res_view_desc, "pResViewDesc") }?)
        };
        let sim = state::sim()?;
        let v = texture::create(&mut sim.lock(), res, Some(tex), view)?;
        out.write(v);
        Ok(())
    })
}

/// `cuSurfObjectCreate`.
///
/// # Safety
/// Every pointer must be NULL or valid as the CUDA API requires.
#[no_mangle]
pub unsafe extern "C" fn cuSurfObjectCreate(
    p_surf_object: *mut CUsurfObject,
    p_res_desc: *const CUDA_RESOURCE_DESC,
) -> CUresult {
    run("cuSurfObjectCreate", || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let out = unsafe { Out::new(p_surf_object, "pSurfObject") }?;
        // SAFETY: forwarded from this function's contract.
        let res = unsafe { read(p_res_desc, "pResDesc") }?;
        let sim = state::sim()?;
        let v = texture::create(&mut sim.lock(), res, None, None)?;
        out.write(v);
        Ok(())
    })
}

/// `cuTexObjectDestroy`.
#[no_mangle]
pub extern "C" fn cuTexObjectDestroy(t: CUtexObject) -> CUresult {
    run("cuTexObjectDestroy", || {
        texture::destroy(&mut state::sim()?.lock(), t, false)
    })
}

/// `cuSurfObjectDestroy`.
#[no_mangle]
pub extern "C" fn cuSurfObjectDestroy(t: CUsurfObject) -> CUresult {
    run("cuSurfObjectDestroy", || {
        texture::destroy(&mut state::sim()?.lock(), t, true)
    })
}

/// `cuTexObjectGetResourceDesc`.
///
/// # Safety
/// `p` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuTexObjectGetResourceDesc(
    p: *mut CUDA_RESOURCE_DESC,
    t: CUtexObject,
) -> CUresult {
    run("cuTexObjectGetResourceDesc", || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let out = unsafe { Out::new(p, "pResDesc") }?;
        let sim = state::sim()?;
        out.write(texture::get(&sim.lock(), t, false)?.resource);
        Ok(())
    })
}

/// `cuSurfObjectGetResourceDesc`.
///
/// # Safety
/// `p` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuSurfObjectGetResourceDesc(
    p: *mut CUDA_RESOURCE_DESC,
    t: CUsurfObject,
) -> CUresult {
    run("cuSurfObjectGetResourceDesc", || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let out = unsafe { Out::new(p, "pResDesc") }?;
        let sim = state::sim()?;
        out.write(texture::get(&sim.lock(), t, true)?.resource);
        Ok(())
    })
}

/// `cuTexObjectGetTextureDesc`.
///
/// # Safety
/// `p` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuTexObjectGetTextureDesc(
    p: *mut CUDA_TEXTURE_DESC,
    t: CUtexObject,
) -> CUresult {
    run("cuTexObjectGetTextureDesc", || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let out = unsafe { Out::new(p, "pTexDesc") }?;
        let sim = state::sim()?;
        let st = sim.lock();
        match texture::get(&st, t, false)?.texture {
            Some(d) => out.write(d),
            None => return err(CUresult::CUDA_ERROR_INVALID_HANDLE, "not a texture object"),
        }
        Ok(())
    })
}

/// `cuTexObjectGetResourceViewDesc`: an object created without a view gets a
/// zeroed view, and the call succeeds, as on driver 580.
///
/// # Safety
/// `p` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuTexObjectGetResourceViewDesc(
    p: *mut CUDA_RESOURCE_VIEW_DESC,
    t: CUtexObject,
) -> CUresult {
    run("cuTexObjectGetResourceViewDesc", || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let out = unsafe { Out::new(p, "pResViewDesc") }?;
        let sim = state::sim()?;
        let st = sim.lock();
        let view = texture::get(&st, t, false)?.view;
        // SAFETY: the descriptor is a C struct of integers and enums whose
        // zero values are valid.
        out.write(view.unwrap_or_else(|| unsafe { std::mem::zeroed() }));
        Ok(())
    })
}
