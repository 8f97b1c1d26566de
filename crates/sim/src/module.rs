//! Modules (images in the format of [`crate::image`]) loaded into contexts, their functions,
//! globals, and texture and surface references.

use std::collections::HashMap;

use crate::context;
use crate::cu::{CUdeviceptr, CUmoduleLoadingMode, CUresult};
use crate::error::{err, Res};
use crate::image::Image;
use crate::kernels::Kernel;
use crate::memory;
use crate::state::module::{Function, Module};
use crate::state::State;

/// How many of the declared `kernels` the simulator can run: the ones a real image would
/// contain (any other name behaves as a kernel missing from the image).
pub(crate) fn runnable(kernels: &[String]) -> u32 {
    let n = kernels
        .iter()
        .filter(|k| Kernel::by_name(k).is_some())
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// `cuModuleLoadData`: loads a parsed image into the current context.
pub(crate) fn load(st: &mut State, budget: u64, image: &Image) -> Res<usize> {
    let ctx = context::current_usable(st)?;
    let mut globals = HashMap::new();
    for (name, size) in &image.globals {
        match memory::alloc(st, budget, ctx, *size) {
            Ok(p) => {
                globals.insert(name.clone(), (p, *size));
            }
            Err(e) => {
                for (p, _) in globals.values() {
                    let _ = memory::free(st, *p);
                }
                return Err(e);
            }
        }
    }
    let mut refs = |names: &[String]| -> HashMap<String, usize> {
        names.iter().map(|n| (n.clone(), st.mint())).collect()
    };
    let (texrefs, surfrefs) = (refs(&image.texrefs), refs(&image.surfrefs));
    let key = st.mint();
    st.modules.insert(
        key,
        Module {
            ctx,
            kernels: image.kernels.clone(),
            globals,
            functions: HashMap::new(),
            texrefs,
            surfrefs,
        },
    );
    Ok(key)
}

/// Looks up a module (`CUDA_ERROR_INVALID_HANDLE` if unknown).
pub(crate) fn module(st: &State, key: usize) -> Res<&Module> {
    match st.modules.get(&key) {
        Some(m) => Ok(m),
        None => err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            format!("module {key:#x} does not exist"),
        ),
    }
}

/// `cuModuleUnload`: frees the module's globals and invalidates its functions.
pub(crate) fn unload(st: &mut State, key: usize) -> Res<()> {
    module(st, key)?;
    if let Some(m) = st.modules.remove(&key) {
        for (p, _) in m.globals.values() {
            let _ = memory::free(st, *p);
        }
        st.functions.retain(|_, f| f.module != key);
    }
    Ok(())
}

/// `cuModuleGetFunction`: the same handle for the same name.
pub(crate) fn get_function(st: &mut State, key: usize, name: &str) -> Res<usize> {
    let m = module(st, key)?;
    if let Some(&f) = m.functions.get(name) {
        return Ok(f);
    }
    if !m.kernels.iter().any(|k| k == name) {
        return err(
            CUresult::CUDA_ERROR_NOT_FOUND,
            format!("module has no kernel {name:?}"),
        );
    }
    let Some(kernel) = Kernel::by_name(name) else {
        return err(
            CUresult::CUDA_ERROR_NOT_FOUND,
            format!("kernel {name:?} is not a built-in of the simulator"),
        );
    };
    let f = st.mint();
    let loaded = crate::loading::mode() == CUmoduleLoadingMode::CU_MODULE_EAGER_LOADING;
    st.functions.insert(
        f,
        Function {
            module: key,
            kernel,
            loaded,
        },
    );
    if let Some(m) = st.modules.get_mut(&key) {
        m.functions.insert(name.to_string(), f);
    }
    Ok(f)
}

/// `cuModuleGetGlobal_v2`: (address, size).
pub(crate) fn get_global(st: &State, key: usize, name: &str) -> Res<(CUdeviceptr, usize)> {
    match module(st, key)?.globals.get(name) {
        Some(&g) => Ok(g),
        None => err(
            CUresult::CUDA_ERROR_NOT_FOUND,
            format!("module has no global {name:?}"),
        ),
    }
}

/// `cuModuleGetFunctionCount`: the module's kernels that the simulator can run.
pub(crate) fn function_count(st: &State, key: usize) -> Res<u32> {
    Ok(runnable(&module(st, key)?.kernels))
}

/// `cuModuleGetTexRef` / `cuModuleGetSurfRef`: the handle of a reference the image
/// declared with `texref`/`surfref` (`surface` selects which); the same handle every
/// time, invalid once the module is unloaded.
pub(crate) fn get_ref(st: &State, key: usize, name: &str, surface: bool) -> Res<usize> {
    let m = module(st, key)?;
    let (refs, kind) = if surface {
        (&m.surfrefs, "surface")
    } else {
        (&m.texrefs, "texture")
    };
    match refs.get(name) {
        Some(&h) => Ok(h),
        None => err(
            CUresult::CUDA_ERROR_NOT_FOUND,
            format!("module has no {kind} reference {name:?}"),
        ),
    }
}

/// `cuFuncGetModule`: the module a function belongs to.
pub(crate) fn module_of(st: &State, func: usize) -> Res<usize> {
    Ok(function(st, func)?.module)
}

/// `cuFuncLoad`: loads the function (a no-op once loaded).
pub(crate) fn load_function(st: &mut State, func: usize) -> Res<()> {
    function(st, func)?;
    if let Some(f) = st.functions.get_mut(&func) {
        f.loaded = true;
    }
    Ok(())
}

/// Looks up a function handle.
pub(crate) fn function(st: &State, key: usize) -> Res<&Function> {
    match st.functions.get(&key) {
        Some(f) => Ok(f),
        None => err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            format!("function {key:#x} does not exist"),
        ),
    }
}

/// `cuFuncGetParamInfo`.
pub(crate) fn param_info(st: &State, key: usize, index: usize) -> Res<(usize, usize)> {
    let k = match st.ext.libraries.kernel(key) {
        Some(k) => k.kernel,
        None => function(st, key)?.kernel,
    };
    match k.param_info(index) {
        Some(info) => Ok(info),
        None => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{} has no parameter {index}", k.name()),
        ),
    }
}
