//! Modules and functions.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::ptr;

use crate::context;
use crate::cu::{
    CUdeviceptr, CUdeviceptr_v1, CUfunc_cache, CUfunction, CUfunctionLoadingState, CUjit_option,
    CUmodule, CUresult, CUsharedconfig, CUsurfref, CUtexref,
};
use crate::error::{err, Error, Res};
use crate::ffi::{handle, key, read_c_str, run, write_c_str, Out};
use crate::funcattr;
use crate::image;
use crate::library;
use crate::module;
use crate::state;

/// Reads, parses and loads an image into the current context.
///
/// # Safety
/// As for [`image::read_image`], when `image` is non-NULL.
unsafe fn load(image: *const c_void) -> Res<usize> {
    let sim = state::sim()?;
    if image.is_null() {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "image is NULL");
    }
    // SAFETY: forwarded from this function's contract.
    let parsed = unsafe { image::read_image(image.cast()) }
        .and_then(|bytes| image::parse(&bytes))
        .map_err(|why| Error {
            code: CUresult::CUDA_ERROR_INVALID_IMAGE,
            why: why.into(),
        })?;
    module::load(&mut sim.lock(), sim.cfg.memory_bytes, &parsed)
}

/// `cuModuleLoadData`: accepts only the simulator's text format (see the crate docs).
///
/// # Safety
/// `module` must be NULL or valid for writes; `image` must be NULL or a readable,
/// NUL-terminated image.
#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadData(module: *mut CUmodule, image: *const c_void) -> CUresult {
    run("cuModuleLoadData", || {
        state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(module, "module") }?;
        // SAFETY: forwarded from this function's contract.
        out.write(handle(unsafe { load(image) }?));
        Ok(())
    })
}

/// Where `cuModuleLoadDataEx` was asked to put its logs.
#[derive(Default)]
pub(super) struct JitLogs {
    pub(super) info: (Option<*mut c_char>, Option<*mut *mut c_void>),
    pub(super) error: (Option<*mut c_char>, Option<*mut *mut c_void>),
}

/// Collects the log options; every other JIT option is accepted and ignored.
///
/// # Safety
/// `options` and `values` must be NULL or hold `n` readable entries.
pub(super) unsafe fn jit_logs(
    n: c_uint,
    options: *mut CUjit_option,
    values: *mut *mut c_void,
) -> Res<JitLogs> {
    let mut logs = JitLogs::default();
    if n == 0 {
        return Ok(logs);
    }
    if options.is_null() || values.is_null() {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "numOptions > 0 with NULL options or optionValues",
        );
    }
    for i in 0..n as usize {
        // SAFETY: `i < n` entries are readable by the contract.
        let (opt, slot) = unsafe { (options.add(i).read_unaligned(), values.add(i)) };
        // SAFETY: as above.
        let value = unsafe { slot.read_unaligned() };
        match opt {
            CUjit_option::CU_JIT_INFO_LOG_BUFFER => logs.info.0 = Some(value.cast()),
            CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES => logs.info.1 = Some(slot),
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER => logs.error.0 = Some(value.cast()),
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES => logs.error.1 = Some(slot),
            _ => {}
        }
    }
    Ok(logs)
}

/// Writes `msg` into a JIT log buffer and stores the bytes filled in its size slot.
///
/// # Safety
/// The buffer must be valid for the size its slot holds; the slot must be writable.
pub(super) unsafe fn write_log(log: (Option<*mut c_char>, Option<*mut *mut c_void>), msg: &str) {
    let (Some(buf), Some(slot)) = log else { return };
    // SAFETY: the slot is readable and writable by the contract.
    let size = unsafe { slot.read_unaligned() }.addr();
    let len = i32::try_from(size).unwrap_or(i32::MAX);
    // SAFETY: `buf` holds `size >= len` bytes by the contract.
    if unsafe { write_c_str(buf, len, msg) }.is_ok() {
        let filled = msg.len().min(size - 1) + 1;
        // SAFETY: the slot is writable by the contract.
        unsafe { slot.write_unaligned(ptr::without_provenance_mut(filled)) };
    }
}

/// `cuModuleLoadDataEx`: as `cuModuleLoadData`; fills the JIT info/error log buffers.
///
/// # Safety
/// As for `cuModuleLoadData`; `options` and `option_values` must be NULL or hold
/// `num_options` entries, and log buffers must be as large as their size options say.
#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadDataEx(
    module: *mut CUmodule,
    image: *const c_void,
    num_options: c_uint,
    options: *mut CUjit_option,
    option_values: *mut *mut c_void,
) -> CUresult {
    run("cuModuleLoadDataEx", || {
        state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(module, "module") }?;
        // SAFETY: forwarded from this function's contract.
        let logs = unsafe { jit_logs(num_options, options, option_values) }?;
        // SAFETY: forwarded from this function's contract.
        match unsafe { load(image) } {
            Ok(k) => {
                // SAFETY: forwarded from this function's contract.
                unsafe { write_log(logs.info, "vgpu-sim: simulated module loaded (no JIT)") };
                out.write(handle(k));
                Ok(())
            }
            Err(e) => {
                // SAFETY: forwarded from this function's contract.
                unsafe { write_log(logs.error, &format!("vgpu-sim: {}", e.why)) };
                Err(e)
            }
        }
    })
}

/// `cuModuleGetFunction`: only built-in kernels named by the module resolve.
///
/// # Safety
/// `hfunc` must be NULL or valid for writes; `name` must be NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cuModuleGetFunction(
    hfunc: *mut CUfunction,
    hmod: CUmodule,
    name: *const c_char,
) -> CUresult {
    run("cuModuleGetFunction", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(hfunc, "hfunc") }?;
        // SAFETY: forwarded from this function's contract.
        let name = unsafe { read_c_str(name, "name") }?.to_string_lossy();
        let f = module::get_function(&mut sim.lock(), key(hmod), &name)?;
        out.write(handle(f));
        Ok(())
    })
}

/// `cuModuleGetGlobal_v2`: either out-pointer may be NULL.
///
/// # Safety
/// `dptr` and `bytes` must each be NULL or valid for writes; `name` must be NULL or
/// NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cuModuleGetGlobal_v2(
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
    hmod: CUmodule,
    name: *const c_char,
) -> CUresult {
    run("cuModuleGetGlobal_v2", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let name = unsafe { read_c_str(name, "name") }?.to_string_lossy();
        let (p, size) = module::get_global(&sim.lock(), key(hmod), &name)?;
        // SAFETY: forwarded from this function's contract.
        let (d_out, b_out) = unsafe { (Out::optional(dptr), Out::optional(bytes)) };
        if let Some(o) = d_out {
            o.write(p);
        }
        if let Some(o) = b_out {
            o.write(size);
        }
        Ok(())
    })
}

/// `cuModuleUnload`: frees the module's globals; its functions become invalid.
#[no_mangle]
pub extern "C" fn cuModuleUnload(hmod: CUmodule) -> CUresult {
    run("cuModuleUnload", || {
        let mut st = state::sim()?.lock();
        crate::printf::flush(&mut st);
        module::unload(&mut st, key(hmod))
    })
}

/// `cuFuncGetParamInfo`: offset and size of parameter `index`, natural C alignment.
///
/// # Safety
/// `offset` and `size` must each be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuFuncGetParamInfo(
    func: CUfunction,
    index: usize,
    offset: *mut usize,
    size: *mut usize,
) -> CUresult {
    run("cuFuncGetParamInfo", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let o_out = unsafe { Out::new(offset, "paramOffset") }?;
        // SAFETY: forwarded from this function's contract.
        let s_out = unsafe { Out::optional(size) };
        let (o, s) = module::param_info(&sim.lock(), key(func), index)?;
        o_out.write(o);
        if let Some(out) = s_out {
            out.write(s);
        }
        Ok(())
    })
}

/// `cuModuleGetLoadingMode`: from `CUDA_MODULE_LOADING` (`LAZY` unless it says `EAGER`).
pub(crate) fn module_get_loading_mode(mode: Out<crate::cu::CUmoduleLoadingMode>) -> Res<()> {
    state::sim()?;
    mode.write(crate::loading::mode());
    Ok(())
}

/// `cuModuleGetFunctionCount`: the module's kernels that the simulator can run (a
/// declared name that is not a built-in is missing from the image, as for
/// `cuModuleGetFunction`).
pub(crate) fn module_get_function_count(count: Out<c_uint>, hmod: CUmodule) -> Res<()> {
    count.write(module::function_count(&state::sim()?.lock(), key(hmod))?);
    Ok(())
}

/// `cuModuleGetGlobal`: the 32-bit (`CUdeviceptr_v1`) form of `cuModuleGetGlobal_v2`.
/// Simulated device memory lives at 64-bit host addresses, so a global whose address
/// does not fit 32 bits gives `CUDA_ERROR_INVALID_VALUE` and nothing is written.
pub(crate) fn module_get_global(
    dptr: Option<Out<CUdeviceptr_v1>>,
    bytes: Option<Out<c_uint>>,
    hmod: CUmodule,
    name: &CStr,
) -> Res<()> {
    let sim = state::sim()?;
    let (p, size) = module::get_global(&sim.lock(), key(hmod), &name.to_string_lossy())?;
    let (Ok(p), Ok(size)) = (CUdeviceptr_v1::try_from(p), c_uint::try_from(size)) else {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("global {name:?} at {p:#x} does not fit a 32-bit CUdeviceptr_v1"),
        );
    };
    if let Some(o) = dptr {
        o.write(p);
    }
    if let Some(o) = bytes {
        o.write(size);
    }
    Ok(())
}

/// `cuModuleGetTexRef`: a reference the image declared with `texref NAME`.
pub(crate) fn module_get_tex_ref(p_tex_ref: Out<CUtexref>, hmod: CUmodule, name: &CStr) -> Res<()> {
    let st = state::sim()?.lock();
    let h = module::get_ref(&st, key(hmod), &name.to_string_lossy(), false)?;
    p_tex_ref.write(handle(h));
    Ok(())
}

/// `cuModuleGetSurfRef`: a reference the image declared with `surfref NAME`.
pub(crate) fn module_get_surf_ref(
    p_surf_ref: Out<CUsurfref>,
    hmod: CUmodule,
    name: &CStr,
) -> Res<()> {
    let st = state::sim()?.lock();
    let h = module::get_ref(&st, key(hmod), &name.to_string_lossy(), true)?;
    p_surf_ref.write(handle(h));
    Ok(())
}

/// `cuFuncGetModule`: a kernel handle means its function in the current context.
pub(crate) fn func_get_module(hmod: Out<CUmodule>, hfunc: CUfunction) -> Res<()> {
    let mut st = state::sim()?.lock();
    let f = library::resolve(&mut st, key(hfunc))?;
    hmod.write(handle(module::module_of(&st, f)?));
    Ok(())
}

/// `cuFuncIsLoaded`: loaded at creation under eager loading (`CUDA_MODULE_LOADING`),
/// otherwise once `cuFuncLoad` or a launch loaded it.
pub(crate) fn func_is_loaded(out: Out<CUfunctionLoadingState>, hfunc: CUfunction) -> Res<()> {
    let mut st = state::sim()?.lock();
    let f = library::resolve(&mut st, key(hfunc))?;
    let loaded = module::function(&st, f)?.loaded;
    out.write(if loaded {
        CUfunctionLoadingState::CU_FUNCTION_LOADING_STATE_LOADED
    } else {
        CUfunctionLoadingState::CU_FUNCTION_LOADING_STATE_UNLOADED
    });
    Ok(())
}

/// `cuFuncLoad`: loads the function now.
pub(crate) fn func_load(hfunc: CUfunction) -> Res<()> {
    let mut st = state::sim()?.lock();
    let f = library::resolve(&mut st, key(hfunc))?;
    module::load_function(&mut st, f)
}

/// `cuFuncSetBlockShape` (deprecated): kept per function for legacy launches.
pub(crate) fn func_set_block_shape(hfunc: CUfunction, x: c_int, y: c_int, z: c_int) -> Res<()> {
    let mut st = state::sim()?.lock();
    let r = funcattr::of_function(&st, key(hfunc))?;
    funcattr::set_block_shape(&mut st, &r, [x, y, z])
}

/// `cuFuncSetCacheConfig`: kept per function (shared with its kernel on the device when
/// the function comes from a library).
pub(crate) fn func_set_cache_config(hfunc: CUfunction, config: CUfunc_cache) -> Res<()> {
    let mut st = state::sim()?.lock();
    let r = funcattr::of_function(&st, key(hfunc))?;
    context::check_cache_config(config.0)?;
    funcattr::update(&mut st, &r, |s| s.cache_config = config.0);
    Ok(())
}

/// `cuFuncSetSharedMemConfig` (deprecated): checks its arguments; compute capability 9.0
/// has fixed 4-byte banks, so, as the driver documents, it changes nothing.
pub(crate) fn func_set_shared_mem_config(hfunc: CUfunction, config: CUsharedconfig) -> Res<()> {
    let st = state::sim()?.lock();
    funcattr::of_function(&st, key(hfunc))?;
    context::check_shared_config(config.0)
}

/// `cuFuncSetSharedSize` (deprecated): kept per function for legacy launches (which the
/// simulator does not export); any size is accepted here.
pub(crate) fn func_set_shared_size(hfunc: CUfunction, bytes: c_uint) -> Res<()> {
    let mut st = state::sim()?.lock();
    let r = funcattr::of_function(&st, key(hfunc))?;
    funcattr::update(&mut st, &r, |s| s.shared_size = bytes);
    Ok(())
}
