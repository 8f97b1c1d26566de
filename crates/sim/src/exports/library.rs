//! Libraries and kernels (the CUDA 12 loading API), function and kernel attributes, and
//! the module loading mode.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use super::module::{jit_logs, write_log};
use crate::context;
use crate::cu::{
    CUdevice, CUdeviceptr, CUfunc_cache, CUfunction, CUfunction_attribute, CUjit_option, CUkernel,
    CUlibrary, CUlibraryOption, CUmodule, CUresult,
};
use crate::error::{err, Error, Res};
use crate::ffi::{handle, key, read_c_str, run, Out};
use crate::funcattr;
use crate::image;
use crate::library;
use crate::state;

/// `CU_LIBRARY_NUM_OPTIONS`: library options at or above it are invalid.
const LIBRARY_NUM_OPTIONS: u32 = 2;

/// Checks the library options; both known ones (a host function table, "binary is
/// preserved") need nothing from a simulator.
///
/// # Safety
/// `keys` must be NULL or hold `n` readable entries.
unsafe fn check_library_options(
    n: c_uint,
    keys: *const CUlibraryOption,
    values: *const *mut c_void,
) -> Res<()> {
    if n == 0 {
        return Ok(());
    }
    if keys.is_null() || values.is_null() {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "numLibraryOptions > 0 with NULL libraryOptions or libraryOptionValues",
        );
    }
    for i in 0..n as usize {
        // SAFETY: `i < n` entries are readable by the contract.
        let k = unsafe { keys.add(i).read_unaligned() };
        if k.0 >= LIBRARY_NUM_OPTIONS {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("{} is not a CUlibraryOption", k.0),
            );
        }
    }
    Ok(())
}

/// `cuLibraryLoadData`: accepts only the simulator's module format; nothing is loaded into
/// a context until the library is first used there.
///
/// # Safety
/// `library` must be NULL or valid for writes; `code` must be NULL or a readable,
/// NUL-terminated image; each option array must be NULL or hold its count of entries, and
/// JIT log buffers must be as large as their size options say.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // the driver's signature
pub unsafe extern "C" fn cuLibraryLoadData(
    library: *mut CUlibrary,
    code: *const c_void,
    jit_options: *mut CUjit_option,
    jit_option_values: *mut *mut c_void,
    num_jit_options: c_uint,
    library_options: *mut CUlibraryOption,
    library_option_values: *mut *mut c_void,
    num_library_options: c_uint,
) -> CUresult {
    run("cuLibraryLoadData", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(library, "library") }?;
        // SAFETY: forwarded from this function's contract.
        let logs = unsafe { jit_logs(num_jit_options, jit_options, jit_option_values) }?;
        // SAFETY: forwarded from this function's contract.
        unsafe {
            check_library_options(num_library_options, library_options, library_option_values)
        }?;
        if code.is_null() {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "code is NULL");
        }
        // SAFETY: non-NULL and NUL-terminated by the contract.
        let parsed = unsafe { image::read_image(code.cast()) }.and_then(|b| image::parse(&b));
        match parsed {
            Ok(image) => {
                // SAFETY: forwarded from this function's contract.
                unsafe { write_log(logs.info, "vgpu-sim: simulated library loaded (no JIT)") };
                out.write(handle(library::load(&mut sim.lock(), image)));
                Ok(())
            }
            Err(why) => {
                // SAFETY: forwarded from this function's contract.
                unsafe { write_log(logs.error, &format!("vgpu-sim: {why}")) };
                Err(Error {
                    code: CUresult::CUDA_ERROR_INVALID_IMAGE,
                    why: why.into(),
                })
            }
        }
    })
}

/// `cuLibraryUnload`: unloads the library from every context; its kernels, functions and
/// globals become invalid.
#[no_mangle]
pub extern "C" fn cuLibraryUnload(library: CUlibrary) -> CUresult {
    run("cuLibraryUnload", || {
        library::unload(&mut state::sim()?.lock(), key(library))
    })
}

/// `cuLibraryGetKernel`: only built-in kernels named by the library resolve.
///
/// # Safety
/// `kernel` must be NULL or valid for writes; `name` must be NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetKernel(
    kernel: *mut CUkernel,
    library: CUlibrary,
    name: *const c_char,
) -> CUresult {
    run("cuLibraryGetKernel", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(kernel, "pKernel") }?;
        // SAFETY: forwarded from this function's contract.
        let name = unsafe { read_c_str(name, "name") }?.to_string_lossy();
        out.write(handle(library::get_kernel(
            &mut sim.lock(),
            key(library),
            &name,
        )?));
        Ok(())
    })
}

/// `cuLibraryGetModule`: the library's module in the current context.
///
/// # Safety
/// `module` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetModule(module: *mut CUmodule, library: CUlibrary) -> CUresult {
    run("cuLibraryGetModule", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(module, "pMod") }?;
        out.write(handle(library::module_in_current(
            &mut sim.lock(),
            key(library),
        )?));
        Ok(())
    })
}

/// `cuLibraryGetGlobal`: the global in the current context; either out-pointer may be
/// NULL.
///
/// # Safety
/// `dptr` and `bytes` must each be NULL or valid for writes; `name` must be NULL or
/// NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetGlobal(
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
    library: CUlibrary,
    name: *const c_char,
) -> CUresult {
    run("cuLibraryGetGlobal", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let name = unsafe { read_c_str(name, "name") }?.to_string_lossy();
        let (p, size) = library::get_global(&mut sim.lock(), key(library), &name)?;
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

/// `cuLibraryGetUnifiedFunction`: the simulator's module format has no
/// unified functions, so a live library answers `CUDA_ERROR_NOT_FOUND` for
/// every symbol, as the driver does for a name that is not one.
///
/// # Safety
/// `fptr` must be NULL or valid for writes; `symbol` must be NULL or
/// NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetUnifiedFunction(
    fptr: *mut *mut c_void,
    library: CUlibrary,
    symbol: *const c_char,
) -> CUresult {
    run("cuLibraryGetUnifiedFunction", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        unsafe { Out::new(fptr, "fptr") }?;
        // SAFETY: forwarded from this function's contract.
        let name = unsafe { read_c_str(symbol, "symbol") }?.to_string_lossy();
        library::get_unified_function(&sim.lock(), key(library), &name)
    })
}

/// `cuKernelGetFunction`: the kernel's function in the current context.
///
/// # Safety
/// `func` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuKernelGetFunction(func: *mut CUfunction, kernel: CUkernel) -> CUresult {
    run("cuKernelGetFunction", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(func, "pFunc") }?;
        out.write(handle(library::get_function(&mut sim.lock(), key(kernel))?));
        Ok(())
    })
}

/// `cuKernelGetParamInfo`: as `cuFuncGetParamInfo`, without a context.
///
/// # Safety
/// `offset` and `size` must each be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuKernelGetParamInfo(
    kernel: CUkernel,
    index: usize,
    offset: *mut usize,
    size: *mut usize,
) -> CUresult {
    run("cuKernelGetParamInfo", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let o_out = unsafe { Out::new(offset, "paramOffset") }?;
        // SAFETY: forwarded from this function's contract.
        let s_out = unsafe { Out::optional(size) };
        let st = sim.lock();
        let k = library::kernel(&st, key(kernel))?.kernel;
        let Some((o, s)) = k.param_info(index) else {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("{} has no parameter {index}", k.name()),
            );
        };
        o_out.write(o);
        if let Some(out) = s_out {
            out.write(s);
        }
        Ok(())
    })
}

/// A `CUfunction_attribute` as the attribute table's index (out-of-range stays invalid).
fn attribute(a: CUfunction_attribute) -> i32 {
    i32::try_from(a.0).unwrap_or(i32::MAX)
}

/// `cuFuncGetAttribute`: a kernel handle means the kernel on the current device.
pub(crate) fn func_get_attribute(
    pi: Out<c_int>,
    attrib: CUfunction_attribute,
    hfunc: CUfunction,
) -> Res<()> {
    let sim = state::sim()?;
    let out = pi;
    let st = sim.lock();
    let r = funcattr::of_function(&st, key(hfunc))?;
    out.write(funcattr::get(&st, &r, attribute(attrib))?);
    Ok(())
}

/// `cuFuncSetAttribute`: sets a settable attribute (dynamic shared memory, carveout,
/// cluster attributes); the others give `CUDA_ERROR_INVALID_VALUE`.
pub(crate) fn func_set_attribute(
    hfunc: CUfunction,
    attrib: CUfunction_attribute,
    value: c_int,
) -> Res<()> {
    let sim = state::sim()?;
    let mut st = sim.lock();
    let r = funcattr::of_function(&st, key(hfunc))?;
    funcattr::set(&mut st, &r, attribute(attrib), value)
}

/// `cuKernelGetAttribute`: the kernel's attribute on device `dev`.
pub(crate) fn kernel_get_attribute(
    pi: Out<c_int>,
    attrib: CUfunction_attribute,
    kernel: CUkernel,
    dev: CUdevice,
) -> Res<()> {
    let sim = state::sim()?;
    let out = pi;
    let dev = sim.check_device(dev)?;
    let st = sim.lock();
    let r = funcattr::of_kernel(&st, key(kernel), dev)?;
    out.write(funcattr::get(&st, &r, attribute(attrib))?);
    Ok(())
}

/// `cuKernelSetAttribute`: sets a settable attribute of the kernel on device `dev`.
pub(crate) fn kernel_set_attribute(
    attrib: CUfunction_attribute,
    val: c_int,
    kernel: CUkernel,
    dev: CUdevice,
) -> Res<()> {
    let sim = state::sim()?;
    let dev = sim.check_device(dev)?;
    let mut st = sim.lock();
    let r = funcattr::of_kernel(&st, key(kernel), dev)?;
    funcattr::set(&mut st, &r, attribute(attrib), val)
}

/// `cuKernelGetLibrary`: the library a kernel handle came from.
pub(crate) fn kernel_get_library(p_lib: Out<CUlibrary>, kernel: CUkernel) -> Res<()> {
    let st = state::sim()?.lock();
    p_lib.write(handle(library::kernel(&st, key(kernel))?.library));
    Ok(())
}

/// `cuKernelSetCacheConfig`: kept per kernel and device (shared with the kernel's
/// function in a context on that device).
pub(crate) fn kernel_set_cache_config(
    kernel: CUkernel,
    config: CUfunc_cache,
    dev: CUdevice,
) -> Res<()> {
    let sim = state::sim()?;
    let dev = sim.check_device(dev)?;
    let mut st = sim.lock();
    let r = funcattr::of_kernel(&st, key(kernel), dev)?;
    context::check_cache_config(config.0)?;
    funcattr::update(&mut st, &r, |s| s.cache_config = config.0);
    Ok(())
}

/// `cuLibraryGetKernelCount`: the library's kernels that the simulator can run.
pub(crate) fn library_get_kernel_count(count: Out<c_uint>, lib: CUlibrary) -> Res<()> {
    count.write(library::kernel_count(&state::sim()?.lock(), key(lib))?);
    Ok(())
}

/// `cuLibraryGetManaged`: the simulator has no managed memory and its module format no
/// `__managed__` variables, so a valid library answers `CUDA_ERROR_NOT_FOUND` for every
/// name, as the driver does for a name that is not a managed variable.
pub(crate) fn library_get_managed(
    dptr: Option<Out<CUdeviceptr>>,
    bytes: Option<Out<usize>>,
    lib: CUlibrary,
    name: &CStr,
) -> Res<()> {
    let st = state::sim()?.lock();
    let (p, size) = library::get_managed(&st, key(lib), &name.to_string_lossy())?;
    if let Some(o) = dptr {
        o.write(p);
    }
    if let Some(o) = bytes {
        o.write(size);
    }
    Ok(())
}
