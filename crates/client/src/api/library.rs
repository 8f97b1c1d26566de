//! Libraries and kernels (the CUDA 12 loading API that cudart uses), function
//! and kernel attributes, occupancy queries, and `cuLaunchKernelEx`.
//!
//! A kernel id is launchable like a function id: CUDA lets a `CUkernel`
//! stand where a `CUfunction` is expected, and cudart relies on it.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use vgpu_abi::types::{
    CUdevice, CUfunction, CUfunction_attribute, CUjit_option, CUkernel, CUlaunchAttribute,
    CUlaunchAttributeID, CUlaunchConfig, CUlibrary, CUlibraryOption, CUmodule,
};
use vgpu_proto::{
    func_get_attribute as func_get, func_set_attribute as func_set,
    kernel_get_attribute as kernel_get, kernel_get_function as kernel_function,
    kernel_set_attribute as kernel_set, launch_kernel_ex as launch_op, library_get_kernel,
    library_get_module, library_load_data, library_unload,
    occupancy_max_active_clusters as clusters_op,
};
use zerocopy::little_endian::{I32, U32, U64};

use super::module::{decode_layout, function, pack, packed_extra};
use super::{options, stream};
use crate::edge::{non_null, wire, write_out, CuError, CuResult};
use crate::objects::{FunctionInfo, LaunchConfig};
use crate::runtime::{runtime, Kind, Session};

/// `CU_LAUNCH_ATTRIBUTE_COOPERATIVE`.
const LAUNCH_ATTRIBUTE_COOPERATIVE: u32 = 2;
const MAX_LAUNCH_ATTRS: usize = 32;
const _: () = assert!(std::mem::size_of::<CUlaunchAttribute>() == 72);

fn id<T>(h: *mut T) -> u64 {
    h as usize as u64
}

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
        },
    );
    o.function_names.insert((owner, name), fid);
    Ok(fid)
}

pub unsafe fn get_kernel(k: *mut CUkernel, lib: CUlibrary, name: *const c_char) -> CuResult<()> {
    non_null(k)?;
    // SAFETY: the application passes a NUL-terminated name.
    let kid = unsafe { launchable(id(lib), name)? };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(k, wire::handle(kid)) }
}

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
    result
}

/// Answered from the cached layout: no round trip.
pub unsafe fn kernel_param_info(
    k: CUkernel,
    i: usize,
    off: *mut usize,
    size: *mut usize,
) -> CuResult<()> {
    // SAFETY: same contract as `cuFuncGetParamInfo`.
    unsafe { super::module::param_info(k.cast(), i, off, size) }
}

/// The scalar part of a launch configuration, as the wire carries it.
#[derive(Clone, Copy, Debug)]
struct Config {
    function: u64,
    /// Grid, block, then dynamic shared memory.
    dims: [u32; 7],
    stream: u64,
    attributes: u32,
}

/// The scalar part of a launch config and its attribute bytes.
///
/// # Safety
/// `config` must be NULL or a valid `CUlaunchConfig` whose `attrs` holds `numAttrs` entries.
unsafe fn config_args(
    f: CUfunction,
    config: *const CUlaunchConfig,
    stream_id: fn(*mut vgpu_abi::types::CUstream_st) -> u64,
) -> CuResult<(Config, Vec<u8>)> {
    non_null(config)?;
    // SAFETY: checked non-NULL; the application's config.
    let c = unsafe { &*config };
    let n = c.numAttrs as usize;
    if n > MAX_LAUNCH_ATTRS || (n > 0 && c.attrs.is_null()) {
        return Err(CuError::INVALID_VALUE);
    }
    let bytes = n * std::mem::size_of::<CUlaunchAttribute>();
    let attrs = if n == 0 {
        Vec::new()
    } else {
        // SAFETY: `attrs` holds `n` plain-data records.
        unsafe { std::slice::from_raw_parts(c.attrs.cast::<u8>(), bytes) }.to_vec()
    };
    let dims = [
        c.gridDimX,
        c.gridDimY,
        c.gridDimZ,
        c.blockDimX,
        c.blockDimY,
        c.blockDimZ,
        c.sharedMemBytes,
    ];
    let config = Config {
        function: id(f),
        dims,
        stream: stream_id(c.hStream),
        attributes: c.numAttrs,
    };
    Ok((config, attrs))
}

pub unsafe fn occupancy_clusters(
    n: *mut c_int,
    f: CUfunction,
    config: *const CUlaunchConfig,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(n)?;
    function(f)?;
    // SAFETY: the application's config.
    let (c, attrs) = unsafe { config_args(f, config, stream::id)? };
    let r = clusters_op::Request {
        function: U64::new(c.function),
        grid_x: U32::new(c.dims[0]),
        grid_y: U32::new(c.dims[1]),
        grid_z: U32::new(c.dims[2]),
        block_x: U32::new(c.dims[3]),
        block_y: U32::new(c.dims[4]),
        block_z: U32::new(c.dims[5]),
        shared: U32::new(c.dims[6]),
        stream: U64::new(c.stream),
        attributes: U32::new(c.attributes),
    };
    let (rep, _) = s.request(&r, &attrs)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(n, rep.clusters.get()) }
}

/// `cuLaunchKernelEx` (and `_ptsz` through `stream_id`).
pub unsafe fn launch_ex(
    config: *const CUlaunchConfig,
    f: CUfunction,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    stream_id: fn(*mut vgpu_abi::types::CUstream_st) -> u64,
) -> CuResult<()> {
    let s = runtime().session()?;
    let info = function(f)?;
    // SAFETY: the application's config.
    let (c, mut blob) = unsafe { config_args(f, config, stream_id)? };
    let packed = match (params.is_null(), extra.is_null()) {
        (false, false) => return Err(CuError::INVALID_VALUE),
        // SAFETY: the application's `extra` list.
        (true, false) => unsafe { packed_extra(extra)? },
        // SAFETY: the application's parameter array.
        _ => unsafe { pack(&info.params, params)? },
    };
    // Launch attributes (clusters, cooperative, priorities…) are checked by
    // the driver: a launch with them is posted only in a configuration the
    // driver accepted before (the same function, dimensions, shared memory
    // and attributes), and never with attributes naming events.
    let dims: [c_uint; 6] = std::array::from_fn(|i| c.dims[i]);
    let checked = extra.is_null() && super::module::launch_postable(s, c.stream, dims, c.dims[6]);
    let config = (checked && c.attributes != 0 && !names_events(&blob)).then(|| LaunchConfig {
        function: c.function,
        context: crate::context::current(),
        dims: c.dims.map(u64::from),
        attributes: blob.clone(),
    });
    let post = checked
        && match &config {
            None => c.attributes == 0,
            Some(k) => s.objects().answers.launches.contains(k),
        };
    blob.extend_from_slice(&packed);
    let follows = crate::lane::Follows::Stream(c.stream);
    let r = launch_op::Request {
        function: U64::new(c.function),
        grid_x: U32::new(c.dims[0]),
        grid_y: U32::new(c.dims[1]),
        grid_z: U32::new(c.dims[2]),
        block_x: U32::new(c.dims[3]),
        block_y: U32::new(c.dims[4]),
        block_z: U32::new(c.dims[5]),
        shared: U32::new(c.dims[6]),
        stream: U64::new(c.stream),
        attributes: U32::new(c.attributes),
    };
    s.post_or_request(&r, &blob, post, follows)?;
    if let (Some(c), false) = (config, post) {
        s.objects().answers.keep_launch(c);
    }
    Ok(())
}

/// Launch attributes that carry an event handle, or write a result back.
const UNPOSTABLE_ATTRIBUTES: [CUlaunchAttributeID; 3] = [
    CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT,
    CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT,
    CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE,
];

/// Whether any of the attribute records in `attrs` carries an event or
/// writes a result back.
fn names_events(attrs: &[u8]) -> bool {
    attrs
        .chunks_exact(std::mem::size_of::<CUlaunchAttribute>())
        .any(|a| {
            let id = u32::from_le_bytes([a[0], a[1], a[2], a[3]]);
            UNPOSTABLE_ATTRIBUTES.iter().any(|u| u.0 == id)
        })
}

/// `cuLaunchCooperativeKernel`: a `cuLaunchKernelEx` with the cooperative attribute.
pub unsafe fn launch_cooperative(
    f: CUfunction,
    dims: [c_uint; 6],
    shmem: c_uint,
    st: vgpu_abi::types::CUstream,
    params: *mut *mut c_void,
    stream_id: fn(*mut vgpu_abi::types::CUstream_st) -> u64,
) -> CuResult<()> {
    // SAFETY: CUlaunchAttribute is plain data; all-zero is a valid value.
    let mut attr: CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id.0 = LAUNCH_ATTRIBUTE_COOPERATIVE;
    attr.value.cooperative = 1;
    let config = CUlaunchConfig {
        gridDimX: dims[0],
        gridDimY: dims[1],
        gridDimZ: dims[2],
        blockDimX: dims[3],
        blockDimY: dims[4],
        blockDimZ: dims[5],
        sharedMemBytes: shmem,
        hStream: st,
        attrs: &mut attr,
        numAttrs: 1,
    };
    // SAFETY: a valid config built above; the application's parameters.
    unsafe { launch_ex(&config, f, params, std::ptr::null_mut(), stream_id) }
}
