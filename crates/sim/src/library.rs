//! Libraries (`cuLibraryLoadData`) and kernels (`CUkernel`): context-independent
//! containers in the simulator's module format.
//!
//! A library keeps its parsed image. The first call that needs it in a context
//! (`cuLibraryGetModule`, `cuKernelGetFunction`, `cuLibraryGetGlobal`, or a launch of one of
//! its kernels) loads it there as an ordinary module, which owns that context's copy of the
//! globals and its functions. A kernel handle names (library, kernel); wherever a
//! `CUfunction` is expected, a kernel handle stands for its function in the current context,
//! as CUDA allows.

use std::collections::HashMap;

use crate::context;
use crate::cu::{CUdeviceptr, CUresult};
use crate::error::{err, Res};
use crate::image::Image;
use crate::kernels::Kernel;
use crate::module;
use crate::state::library::{KernelRef, Library};
use crate::state::{self, State};

fn library(st: &State, key: usize) -> Res<&Library> {
    match st.ext.libraries.libs.get(&key) {
        Some(l) => Ok(l),
        None => err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            format!("library {key:#x} does not exist"),
        ),
    }
}

/// `cuLibraryLoadData`: keeps a parsed image; nothing is loaded into a context yet.
pub(crate) fn load(st: &mut State, image: Image) -> usize {
    let key = st.mint();
    st.ext.libraries.libs.insert(
        key,
        Library {
            image,
            modules: HashMap::new(),
            kernels: HashMap::new(),
        },
    );
    key
}

/// `cuLibraryUnload`: unloads the library from every context and invalidates its kernels
/// and the functions and globals of its modules.
pub(crate) fn unload(st: &mut State, key: usize) -> Res<()> {
    library(st, key)?;
    let Some(lib) = st.ext.libraries.libs.remove(&key) else {
        return Ok(());
    };
    for m in lib.modules.values() {
        st.ext.libraries.owners.remove(m);
        if st.modules.contains_key(m) {
            module::unload(st, *m)?;
        }
    }
    st.ext.libraries.kernels.retain(|_, k| k.library != key);
    st.ext.attrs.forget_library(key);
    let functions = &st.functions;
    st.ext
        .attrs
        .retain_functions(|f| functions.contains_key(&f));
    Ok(())
}

/// `cuLibraryGetModule`: the library's module in the current context, loaded on first use.
pub(crate) fn module_in_current(st: &mut State, key: usize) -> Res<usize> {
    let lib = library(st, key)?;
    let ctx = context::current_usable(st)?;
    if let Some(&m) = lib.modules.get(&ctx) {
        if st.modules.contains_key(&m) {
            return Ok(m);
        }
    }
    let image = lib.image.clone();
    let budget = state::sim()?.cfg.memory_bytes;
    let m = module::load(st, budget, &image)?;
    if let Some(lib) = st.ext.libraries.libs.get_mut(&key) {
        lib.modules.insert(ctx, m);
    }
    st.ext.libraries.owners.insert(m, key);
    Ok(m)
}

/// `cuLibraryGetKernel`: the same handle for the same name. Kernels the image does not
/// declare, or that are not built into the simulator, give `CUDA_ERROR_NOT_FOUND`.
pub(crate) fn get_kernel(st: &mut State, key: usize, name: &str) -> Res<usize> {
    let lib = library(st, key)?;
    if let Some(&k) = lib.kernels.get(name) {
        return Ok(k);
    }
    if !lib.image.kernels.iter().any(|k| k == name) {
        return err(
            CUresult::CUDA_ERROR_NOT_FOUND,
            format!("library has no kernel {name:?}"),
        );
    }
    let Some(kernel) = Kernel::by_name(name) else {
        return err(
            CUresult::CUDA_ERROR_NOT_FOUND,
            format!("kernel {name:?} is not a built-in of the simulator"),
        );
    };
    let k = st.mint();
    st.ext.libraries.kernels.insert(
        k,
        KernelRef {
            library: key,
            name: name.to_string(),
            kernel,
        },
    );
    if let Some(lib) = st.ext.libraries.libs.get_mut(&key) {
        lib.kernels.insert(name.to_string(), k);
    }
    Ok(k)
}

/// `cuLibraryGetKernelCount`: the library's kernels that the simulator can run.
pub(crate) fn kernel_count(st: &State, key: usize) -> Res<u32> {
    Ok(module::runnable(&library(st, key)?.image.kernels))
}

/// `cuLibraryGetManaged`: the module format has no `__managed__` variables (the simulator
/// has no managed memory), so after the handle check every name gives
/// `CUDA_ERROR_NOT_FOUND`, as the driver answers for a name that is not a managed
/// variable of the library, a plain `global` included.
pub(crate) fn get_managed(st: &State, key: usize, name: &str) -> Res<(CUdeviceptr, usize)> {
    library(st, key)?;
    err(
        CUresult::CUDA_ERROR_NOT_FOUND,
        format!("library has no managed variable {name:?}"),
    )
}

/// `cuLibraryGetUnifiedFunction`: the module format declares no unified
/// functions, so no symbol names one.
pub(crate) fn get_unified_function(st: &State, key: usize, name: &str) -> Res<()> {
    library(st, key)?;
    err(
        CUresult::CUDA_ERROR_NOT_FOUND,
        format!("library has no unified function {name:?}"),
    )
}

/// Looks up a kernel handle (`CUDA_ERROR_INVALID_HANDLE` otherwise).
pub(crate) fn kernel(st: &State, key: usize) -> Res<&KernelRef> {
    match st.ext.libraries.kernel(key) {
        Some(k) => Ok(k),
        None => err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            format!("kernel {key:#x} does not exist"),
        ),
    }
}

/// `cuKernelGetFunction`: the kernel's function in the current context.
pub(crate) fn get_function(st: &mut State, key: usize) -> Res<usize> {
    let k = kernel(st, key)?.clone();
    let m = module_in_current(st, k.library)?;
    module::get_function(st, m, &k.name)
}

/// `cuLibraryGetGlobal`: the global's address and size in the current context.
pub(crate) fn get_global(st: &mut State, key: usize, name: &str) -> Res<(CUdeviceptr, usize)> {
    let m = module_in_current(st, key)?;
    module::get_global(st, m, name)
}

/// A handle given where a `CUfunction` is expected: a function stays itself, a kernel
/// becomes its function in the current context.
pub(crate) fn resolve(st: &mut State, handle: usize) -> Res<usize> {
    if st.functions.contains_key(&handle) || st.ext.libraries.kernel(handle).is_none() {
        return Ok(handle);
    }
    get_function(st, handle)
}
