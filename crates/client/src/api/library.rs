//! Libraries and kernels (the CUDA 12 loading API that cudart uses), and
//! function and kernel attributes.
//!
//! A kernel id is launchable like a function id: CUDA lets a `CUkernel`
//! stand where a `CUfunction` is expected, and cudart relies on it.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use vgpu_abi::types::{
    CUdevice, CUfunction, CUfunction_attribute, CUjit_option, CUkernel, CUlibrary, CUlibraryOption,
    CUmodule,
};
use vgpu_proto::{
    func_get_attribute as func_get, func_set_attribute as func_set,
    kernel_get_attribute as kernel_get, kernel_get_function as kernel_function,
    kernel_set_attribute as kernel_set, library_get_kernel, library_get_module, library_load_data,
    library_unified_function, library_unload,
};
use zerocopy::little_endian::{I32, U32, U64};

use super::module::{decode_layout, function};
use super::options;
use crate::edge::{non_null, wire, write_out, CuError, CuResult};
use crate::objects::FunctionInfo;
use crate::runtime::{runtime, Kind, Session};

fn id<T>(h: *mut T) -> u64 {
    h as usize as u64
}

/// # Safety
/// `lib` must be NULL or valid for a write; `jit_keys`/`jit_vals` must hold
/// `njit` options and `lib_keys`/`lib_vals` `nlib` options as the CUDA API
/// defines them (log buffers writable for the sizes given with them).
/// `code` must be NULL or point to what the CUDA API says the caller passes there.
#[allow(clippy::too_many_arguments)] // the C signature
pub unsafe fn load_data(
    lib: *mut CUlibrary,
    code: *const c_void,
    jit_keys: *mut CUjit_option,
    jit_vals: *mut *mut c_void,
    njit: c_uint,
    lib_keys: *mut CUlibraryOption,
    lib_vals: *mut *mut c_void,
    nlib: c_uint,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(lib)?;
    let (njit, nlib) = (njit as usize, nlib as usize);
    // SAFETY: the application passes `njit` and `nlib` options and values.
    let (jk, jv) = unsafe { options::slices(jit_keys, jit_vals, njit)? };
    // SAFETY: as above.
    let (lk, lv) = unsafe { options::slices(lib_keys, lib_vals, nlib)? };
    // SAFETY: the application passes a valid image.
    let image = unsafe { crate::image::bytes(code) }.inspect_err(|e| {
        crate::log::line(format_args!("cuLibraryLoadData: image not accepted: {e:?}"));
    })?;
    let jit: Vec<u32> = jk.iter().map(|k| k.0).collect();
    let (stage, inline) = super::module::stage_image(s, image)?;
    let mut blob = Vec::with_capacity((njit + nlib) * 16 + inline.len());
    options::encode(&mut blob, jit.iter().copied(), jv.as_deref());
    options::encode(&mut blob, lk.iter().map(|k| k.0), lv.as_deref());
    blob.extend_from_slice(inline);
    let lid = runtime().mint(Kind::Library);
    let r = library_load_data::Request {
        library: U64::new(lid),
        jit_options: U32::new(super::call_len(njit)?),
        library_options: U32::new(super::call_len(nlib)?),
        stage: U64::new(stage),
    };
    let (_, reply) = s.request(&r, &blob)?;
    // SAFETY: the JIT option arrays are the application's, valid for `njit` entries.
    unsafe { options::write_back(&jit, jv, &reply) };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(lib, wire::handle(lid)) }
}

pub fn unload(lib: CUlibrary) -> CuResult<()> {
    let s = runtime().session()?;
    s.request(
        &library_unload::Request {
            library: U64::new(id(lib)),
        },
        &[],
    )?;
    s.objects().forget_module(id(lib));
    Ok(())
}

/// Looks up (or fetches and caches) a library's kernel by name.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string.
unsafe fn launchable(owner: u64, name: *const c_char) -> CuResult<u64> {
    let s = runtime().session()?;
    non_null(name)?;
    // SAFETY: checked non-NULL; the application passes a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(name) }.to_bytes().to_vec();
    if let Some(&fid) = s.objects().function_names.get(&(owner, name.clone())) {
        return Ok(fid);
    }
    let fid = runtime().mint(Kind::Function);
    let r = library_get_kernel::Request {
        library: U64::new(owner),
        kernel: U64::new(fid),
    };
    let (rep, layout) = s.request(&r, &name)?;
    let params = decode_layout(rep.params.get(), &layout)?;
    let mut o = s.objects();
    o.functions.insert(
        fid,
        FunctionInfo {
            module: owner,
            params,
            kernel: None,
        },
    );
    o.function_names.insert((owner, name), fid);
    Ok(fid)
}

/// # Safety
/// `k` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
/// `name` must be NULL or a NUL-terminated string.
pub unsafe fn get_kernel(k: *mut CUkernel, lib: CUlibrary, name: *const c_char) -> CuResult<()> {
    non_null(k)?;
    // SAFETY: the application passes a NUL-terminated name.
    let kid = unsafe { launchable(id(lib), name)? };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(k, wire::handle(kid)) }
}

/// # Safety
/// `m` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
pub unsafe fn get_module(m: *mut CUmodule, lib: CUlibrary) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(m)?;
    let mid = runtime().mint(Kind::Module);
    let r = library_get_module::Request {
        library: U64::new(id(lib)),
        module: U64::new(mid),
    };
    s.request(&r, &[])?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(m, wire::handle(mid)) }
}

/// # Safety
/// `f` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
pub unsafe fn kernel_get_function(f: *mut CUfunction, k: CUkernel) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(f)?;
    let kernel = function(k.cast())?;
    let key = (id(k), crate::context::current());
    if let Some(&fid) = s.objects().kernel_functions.get(&key) {
        // SAFETY: checked non-NULL; the application's out-pointer.
        return unsafe { write_out(f, wire::handle(fid)) };
    }
    let fid = runtime().mint(Kind::Function);
    let r = kernel_function::Request {
        kernel: U64::new(key.0),
        function: U64::new(fid),
    };
    let (rep, layout) = s.request(&r, &[])?;
    let params = decode_layout(rep.params.get(), &layout)?;
    {
        let mut o = s.objects();
        o.functions.insert(
            fid,
            FunctionInfo {
                module: kernel.module,
                params,
                kernel: Some(key.0),
            },
        );
        o.kernel_functions.insert(key, fid);
    }
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(f, wire::handle(fid)) }
}

/// `cuFuncGetAttribute`, answered from the session's answers when the
/// worker gave it before.
///
/// # Safety
/// `pi` must be NULL or valid for a write.
pub unsafe fn func_get_attribute(
    pi: *mut c_int,
    attr: CUfunction_attribute,
    f: CUfunction,
) -> CuResult<()> {
    function(f)?;
    // SAFETY: the application's out-pointer.
    unsafe {
        attribute(pi, (id(f), attr.0, -1), |s| {
            let r = func_get::Request {
                attrib: U32::new(attr.0),
                hfunc: U64::new(id(f)),
            };
            Ok(s.request(&r, &[])?.0.pi.get())
        })
    }
}

/// `cuFuncSetAttribute`.
pub fn func_set_attribute(f: CUfunction, attr: CUfunction_attribute, v: c_int) -> CuResult<()> {
    function(f)?;
    set_attribute((id(f), attr.0, -1), v, |s| {
        let r = func_set::Request {
            hfunc: U64::new(id(f)),
            attrib: U32::new(attr.0),
            value: I32::new(v),
        };
        s.request(&r, &[]).map(drop)
    })
}

/// `cuKernelGetAttribute`, answered as `cuFuncGetAttribute` is.
///
/// # Safety
/// `pi` must be NULL or valid for a write.
pub unsafe fn kernel_get_attribute(
    pi: *mut c_int,
    attr: CUfunction_attribute,
    k: CUkernel,
    dev: CUdevice,
) -> CuResult<()> {
    function(k.cast())?;
    // SAFETY: the application's out-pointer.
    unsafe {
        attribute(pi, (id(k), attr.0, i64::from(dev)), |s| {
            let r = kernel_get::Request {
                attrib: U32::new(attr.0),
                kernel: U64::new(id(k)),
                dev: I32::new(dev),
            };
            Ok(s.request(&r, &[])?.0.pi.get())
        })
    }
}

/// `cuKernelSetAttribute`.
pub fn kernel_set_attribute(
    attr: CUfunction_attribute,
    v: c_int,
    k: CUkernel,
    dev: CUdevice,
) -> CuResult<()> {
    function(k.cast())?;
    set_attribute((id(k), attr.0, i64::from(dev)), v, |s| {
        let r = kernel_set::Request {
            attrib: U32::new(attr.0),
            val: I32::new(v),
            kernel: U64::new(id(k)),
            dev: I32::new(dev),
        };
        s.request(&r, &[]).map(drop)
    })
}

/// An attribute of a function or kernel, keyed by (handle, attribute,
/// device or -1): from the session's answers when the worker gave it
/// before, else asked with `ask` and kept.
///
/// # Safety
/// `pi` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
unsafe fn attribute(
    pi: *mut c_int,
    key: (u64, u32, i64),
    ask: impl FnOnce(&Session) -> CuResult<c_int>,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(pi)?;
    let known = s.objects().answers.attributes.get(&key).copied();
    let value = match known {
        Some(v) => v,
        None => {
            let v = ask(s)?;
            s.objects().answers.keep_attribute(key, v);
            v
        }
    };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(pi, value) }
}

/// Sets an attribute with `set`, unless the session knows it already has
/// the value `v` (setting it again would change nothing); then drops what
/// the set may have changed for the handle's family.
fn set_attribute(
    key: (u64, u32, i64),
    v: c_int,
    set: impl FnOnce(&Session) -> CuResult<()>,
) -> CuResult<()> {
    let s = runtime().session()?;
    if s.objects().answers.attributes.get(&key) == Some(&v) {
        return Ok(());
    }
    let result = set(s);
    let mut o = s.objects();
    let family = o.attribute_family(key.0);
    o.answers.attributes_changed(&family);
    // These read back as set: keep the value, so that setting it again
    // before each launch (as cuDNN and PyTorch do) costs no round trip and
    // leaves the other answers standing.
    if result.is_ok() && READ_BACK.iter().any(|a| a.0 == key.1) {
        o.answers.keep_attribute(key, v);
    }
    result
}

/// Attributes whose value a get returns as the last set gave it: the
/// dynamic shared memory a launch may use, the preferred shared-memory
/// carveout, and whether a non-portable cluster size is allowed.
const READ_BACK: [CUfunction_attribute; 3] = [
    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
    CUfunction_attribute::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
    CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
];

/// Answered from the cached layout: no round trip.
///
/// # Safety
/// `off`, `size` must each be NULL or valid for a write of its pointee, as the CUDA API defines them.
pub unsafe fn kernel_param_info(
    k: CUkernel,
    i: usize,
    off: *mut usize,
    size: *mut usize,
) -> CuResult<()> {
    // SAFETY: same contract as `cuFuncGetParamInfo`.
    unsafe { super::module::param_info(k.cast(), i, off, size) }
}

/// `cuLibraryLoadFromFile`: the file is read here and loaded like an image
/// in memory.
///
/// # Safety
/// `lib` must be NULL or valid for a write; `jit_keys`/`jit_vals` must hold
/// `njit` options and `lib_keys`/`lib_vals` `nlib` options as the CUDA API
/// defines them (log buffers writable for the sizes given with them).
/// `name` must be NULL or a NUL-terminated string.
#[allow(clippy::too_many_arguments)] // the C signature
pub unsafe fn library_load_from_file(
    lib: *mut CUlibrary,
    name: *const c_char,
    jit_keys: *mut CUjit_option,
    jit_vals: *mut *mut c_void,
    njit: c_uint,
    lib_keys: *mut CUlibraryOption,
    lib_vals: *mut *mut c_void,
    nlib: c_uint,
) -> CuResult<()> {
    // SAFETY: the application's path.
    let image = unsafe { super::module::read_file(name)? };
    // SAFETY: `image` lives for the call; the option arrays are the application's.
    unsafe {
        load_data(
            lib,
            image.as_ptr().cast(),
            jit_keys,
            jit_vals,
            njit,
            lib_keys,
            lib_vals,
            nlib,
        )
    }
}

/// `cuLibraryGetGlobal`: as a module's global (`module::get_global`).
///
/// # Safety
/// As for `module::get_global`.
pub unsafe fn get_global(
    dptr: *mut vgpu_abi::types::CUdeviceptr,
    bytes: *mut usize,
    lib: CUlibrary,
    name: *const c_char,
) -> CuResult<()> {
    // SAFETY: the caller's promise.
    unsafe { super::module::get_global(dptr, bytes, super::module::Owner::Library(id(lib)), name) }
}

/// `cuLibraryGetUnifiedFunction`: the worker's driver looks the symbol up.
/// A unified function's pointer is an address in the worker's process: the
/// application gets that value, usable where the device uses it (a kernel
/// argument), not callable in the application's own process.
///
/// # Safety
/// `fptr` must be NULL or valid for a write; `symbol` NULL or NUL-terminated.
pub unsafe fn get_unified_function(
    fptr: *mut *mut c_void,
    lib: CUlibrary,
    symbol: *const c_char,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(fptr)?;
    non_null(symbol)?;
    // SAFETY: checked non-NULL; the application passes a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(symbol) };
    let r = library_unified_function::Request {
        library: U64::new(id(lib)),
    };
    let (rep, _) = s.request(&r, name.to_bytes())?;
    let addr = usize::try_from(rep.fptr.get()).map_err(|_| CuError::UNKNOWN)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(fptr, addr as *mut c_void) }
}
