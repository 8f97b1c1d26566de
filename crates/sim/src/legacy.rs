//! Legacy launches (deprecated, still served by driver 580): a function's
//! parameter buffer (`cuParamSet*`), its block shape and shared memory size
//! (`cuFuncSetBlockShape`, `cuFuncSetSharedSize`, kept in [`crate::funcattr`])
//! and the launches that use them (`cuLaunch`, `cuLaunchGrid`,
//! `cuLaunchGridAsync`).

use std::ffi::c_void;

use crate::cu::CUresult;
use crate::error::{err, Res};
use crate::launch::{self, Launch, Options};
use crate::state::State;
use crate::{funcattr, module};

/// Bytes of a legacy parameter buffer (the kernel parameter space).
pub(crate) const MAX_PARAMS: usize = 4096;
/// `CU_PARAM_TR_DEFAULT`: the only texture unit `cuParamSetTexRef` takes.
const PARAM_TR_DEFAULT: i32 = -1;

/// The function's buffer, once it is known to be a live function.
fn buffer(st: &mut State, f: usize) -> Res<&mut Vec<u8>> {
    funcattr::of_function(st, f)?;
    Ok(st.ext.legacy_params.entry(f).or_default())
}

/// `cuParamSetSize`: the buffer's size in bytes.
pub(crate) fn set_size(st: &mut State, f: usize, size: u32) -> Res<()> {
    let size = size as usize;
    if size > MAX_PARAMS {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "parameter size above 4096 bytes",
        );
    }
    buffer(st, f)?.resize(size, 0);
    Ok(())
}

/// `cuParamSeti`, `cuParamSetf`, `cuParamSetv`: `bytes` at `offset`, which
/// must lie in the parameter space.
pub(crate) fn set(st: &mut State, f: usize, offset: i32, bytes: &[u8]) -> Res<()> {
    let start = usize::try_from(offset).ok();
    let Some((start, end)) = start.and_then(|s| Some((s, s.checked_add(bytes.len())?))) else {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "negative offset");
    };
    if end > MAX_PARAMS {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "parameter past 4096 bytes",
        );
    }
    let buf = buffer(st, f)?;
    if buf.len() < end {
        buf.resize(end, 0);
    }
    buf[start..end].copy_from_slice(bytes);
    Ok(())
}

/// `cuParamSetTexRef`: only the default texture unit, and a texture
/// reference of a loaded module (the simulated kernels sample none).
pub(crate) fn set_tex_ref(st: &mut State, f: usize, unit: i32, texref: usize) -> Res<()> {
    funcattr::of_function(st, f)?;
    if unit != PARAM_TR_DEFAULT {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "texunit must be CU_PARAM_TR_DEFAULT",
        );
    }
    let known = st
        .modules
        .values()
        .any(|m| m.texrefs.values().any(|&t| t == texref));
    if !known {
        return err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            "not a texture reference",
        );
    }
    Ok(())
}

/// `cuLaunchGridAsync` (and, on the legacy stream, `cuLaunchGrid` and
/// `cuLaunch`): a `width` × `height` grid of the function's block shape,
/// with its shared memory size, its parameters read from its buffer.
pub(crate) fn launch_grid(
    st: &mut State,
    f: usize,
    width: i32,
    height: i32,
    stream: usize,
) -> Res<()> {
    let (_, s) = funcattr::for_launch(st, f)?;
    let dim = |v: i32| u32::try_from(v).ok().filter(|&v| v > 0);
    let (Some(w), Some(h)) = (dim(width), dim(height)) else {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "grid dimensions must be positive",
        );
    };
    let block = s.block_shape.map(dim);
    let [Some(bx), Some(by), Some(bz)] = block else {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "no block shape set (cuFuncSetBlockShape)",
        );
    };
    let mut buf = st.ext.legacy_params.get(&f).cloned().unwrap_or_default();
    buf.resize(MAX_PARAMS, 0);
    let mut params: Vec<*const c_void> = Vec::new();
    for i in 0.. {
        let Ok((offset, size)) = module::param_info(st, f, i) else {
            break;
        };
        if offset + size > MAX_PARAMS {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                "parameters past 4096 bytes",
            );
        }
        params.push(buf[offset..].as_ptr().cast());
    }
    let geometry = Launch {
        grid: [w, h, 1],
        block: [bx, by, bz],
        shared_bytes: s.shared_size,
    };
    // SAFETY: each pointer points into `buf`, which holds the parameter's
    // bytes (checked above) and outlives the launch, which copies them.
    unsafe {
        launch::launch(
            st,
            f,
            geometry,
            stream,
            params.as_ptr(),
            &Options::default(),
        )
    }
}
