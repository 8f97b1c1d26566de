//! Libraries and kernels (the CUDA 12 loading API that cudart uses), function
//! and kernel attributes, occupancy queries, and `cuLaunchKernelEx`.
//!
//! A kernel id is launchable like a function id: CUDA lets a `CUkernel`
//! stand where a `CUfunction` is expected, and cudart relies on it.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use vgpu_abi::types::{
    CUdevice, CUfunction, CUfunction_attribute, CUjit_option, CUkernel, CUlaunchAttribute,
    CUlaunchAttributeID, CUlaunchConfig, CUlibrary, CUlibraryOption, CUmodule, CUmoduleLoadingMode,
    CUstreamCaptureStatus,
};
use vgpu_proto::Op;

use super::module::{decode_layout, function, pack, packed_extra};
use super::{options, stream};
use crate::edge::{non_null, wire, write_out, CuError, CuResult};
use crate::objects::{FunctionInfo, LaunchConfig};
use crate::runtime::{runtime, Kind};

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
    let (_, reply) = s.call(
        Op::LibraryLoadData,
        &[lid, njit as u64, nlib as u64, stage],
        &blob,
        None,
    )?;
    // SAFETY: the JIT option arrays are the application's, valid for `njit` entries.
    unsafe { options::write_back(&jit, jv, &reply) };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(lib, wire::handle(lid)) }
}

pub fn unload(lib: CUlibrary) -> CuResult<()> {
    let s = runtime().session()?;
    s.call(Op::LibraryUnload, &[id(lib)], &[], None)?;
    s.objects().forget_module(id(lib));
    Ok(())
}

/// Looks up (or fetches and caches) a launchable by (owner, name).
unsafe fn launchable(owner: u64, name: *const c_char, op: Op) -> CuResult<u64> {
    let s = runtime().session()?;
    non_null(name)?;
    // SAFETY: checked non-NULL; the application passes a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(name) }.to_bytes().to_vec();
    if let Some(&fid) = s.objects().function_names.get(&(owner, name.clone())) {
        return Ok(fid);
    }
    let fid = runtime().mint(Kind::Function);
    let (outs, layout) = s.call(op, &[owner, fid], &name, None)?;
    let params = decode_layout(&outs, &layout)?;
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
    let kid = unsafe { launchable(id(lib), name, Op::LibraryGetKernel)? };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(k, wire::handle(kid)) }
}

pub unsafe fn get_module(m: *mut CUmodule, lib: CUlibrary) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(m)?;
    let mid = runtime().mint(Kind::Module);
    s.call(Op::LibraryGetModule, &[id(lib), mid], &[], None)?;
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
    let (outs, layout) = s.call(Op::KernelGetFunction, &[key.0, fid], &[], None)?;
    let params = decode_layout(&outs, &layout)?;
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

/// One scalar answer to an attribute or occupancy query.
unsafe fn answer<T>(out: *mut T, op: Op, args: &[u64], conv: fn(u64) -> T) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(out)?;
    let (outs, _) = s.call(op, args, &[], None)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(out, conv(outs[0])) }
}

pub unsafe fn func_get_attribute(
    pi: *mut c_int,
    attr: CUfunction_attribute,
    f: CUfunction,
) -> CuResult<()> {
    function(f)?;
    // SAFETY: the application's out-pointer.
    unsafe { attribute(pi, Op::FuncGetAttribute, id(f), attr, None) }
}

pub fn func_set_attribute(f: CUfunction, attr: CUfunction_attribute, v: c_int) -> CuResult<()> {
    function(f)?;
    let args = [id(f), u64::from(attr.0), v as i64 as u64];
    set_attribute(Op::FuncSetAttribute, &args, (id(f), attr.0, -1), v)
}

pub unsafe fn kernel_get_attribute(
    pi: *mut c_int,
    attr: CUfunction_attribute,
    k: CUkernel,
    dev: CUdevice,
) -> CuResult<()> {
    function(k.cast())?;
    // SAFETY: the application's out-pointer.
    unsafe { attribute(pi, Op::KernelGetAttribute, id(k), attr, Some(dev)) }
}

pub fn kernel_set_attribute(
    attr: CUfunction_attribute,
    v: c_int,
    k: CUkernel,
    dev: CUdevice,
) -> CuResult<()> {
    function(k.cast())?;
    let args = [id(k), u64::from(attr.0), v as i64 as u64, dev as i64 as u64];
    set_attribute(
        Op::KernelSetAttribute,
        &args,
        (id(k), attr.0, i64::from(dev)),
        v,
    )
}

/// A function's or kernel's attribute (`dev`: the kernel form's device),
/// from the session's answers when the worker gave it before.
unsafe fn attribute(
    pi: *mut c_int,
    op: Op,
    handle: u64,
    attr: CUfunction_attribute,
    dev: Option<CUdevice>,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(pi)?;
    let key = (handle, attr.0, dev.map_or(-1, i64::from));
    let known = s.objects().answers.attributes.get(&key).copied();
    let value = match known {
        Some(v) => v,
        None => {
            let mut args = vec![handle, u64::from(attr.0)];
            args.extend(dev.map(|d| d as i64 as u64));
            let (outs, _) = s.call(op, &args, &[], None)?;
            let v = wire::i32(outs[0]);
            s.objects().answers.keep_attribute(key, v);
            v
        }
    };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(pi, value) }
}

/// Sets an attribute, unless the session knows it already has the value
/// `v` (setting it again would change nothing); then drops what the set may
/// have changed for the handle's family.
fn set_attribute(op: Op, args: &[u64], key: (u64, u32, i64), v: c_int) -> CuResult<()> {
    let s = runtime().session()?;
    if s.objects().answers.attributes.get(&key) == Some(&v) {
        return Ok(());
    }
    let result = s.call(op, args, &[], None).map(drop);
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

pub unsafe fn occupancy_blocks(
    n: *mut c_int,
    f: CUfunction,
    block: c_int,
    smem: usize,
    flags: c_uint,
) -> CuResult<()> {
    function(f)?;
    let args = [id(f), block as i64 as u64, smem as u64, u64::from(flags)];
    // SAFETY: the application's out-pointer.
    unsafe { answer(n, Op::OccupancyMaxActiveBlocks, &args, wire::i32) }
}

pub unsafe fn occupancy_dynamic_smem(
    out: *mut usize,
    f: CUfunction,
    blocks: c_int,
    block: c_int,
) -> CuResult<()> {
    function(f)?;
    let args = [id(f), blocks as i64 as u64, block as i64 as u64];
    // SAFETY: the application's out-pointer.
    unsafe { answer(out, Op::OccupancyAvailableDynamicSMem, &args, wire::usize) }
}

/// The scalar part of a launch config and its attribute bytes.
///
/// # Safety
/// `config` must be NULL or a valid `CUlaunchConfig` whose `attrs` holds `numAttrs` entries.
unsafe fn config_args(
    f: CUfunction,
    config: *const CUlaunchConfig,
    stream_id: fn(*mut vgpu_abi::types::CUstream_st) -> u64,
) -> CuResult<([u64; 10], Vec<u8>)> {
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
    let mut args = [0u64; 10];
    args[0] = id(f);
    for (a, d) in args[1..8].iter_mut().zip(dims) {
        *a = u64::from(d);
    }
    args[8] = stream_id(c.hStream);
    args[9] = n as u64;
    Ok((args, attrs))
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
    let (args, attrs) = unsafe { config_args(f, config, stream::id)? };
    let (outs, _) = s.call(Op::OccupancyMaxActiveClusters, &args, &attrs, None)?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(n, wire::i32(outs[0])) }
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
    let (args, mut blob) = unsafe { config_args(f, config, stream_id)? };
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
    let dims: [c_uint; 6] = std::array::from_fn(|i| wire::u32(args[1 + i]));
    let checked =
        extra.is_null() && super::module::launch_postable(s, args[8], dims, wire::u32(args[7]));
    let config = (checked && args[9] != 0 && !names_events(&blob)).then(|| LaunchConfig {
        function: args[0],
        context: crate::context::current(),
        dims: std::array::from_fn(|i| args[1 + i]),
        attributes: blob.clone(),
    });
    let post = checked
        && match &config {
            None => args[9] == 0,
            Some(c) => s.objects().answers.launches.contains(c),
        };
    blob.extend_from_slice(&packed);
    let follows = crate::lane::Follows::Stream(args[8]);
    s.post_or_call(Op::LaunchKernelEx, &args, &blob, post, follows)?;
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

pub unsafe fn is_capturing(sid: u64, status: *mut CUstreamCaptureStatus) -> CuResult<()> {
    // SAFETY: the application's out-pointer.
    unsafe {
        answer(status, Op::StreamIsCapturing, &[sid], |v| {
            CUstreamCaptureStatus(wire::u32(v))
        })
    }
}

pub unsafe fn loading_mode(mode: *mut CUmoduleLoadingMode) -> CuResult<()> {
    // SAFETY: the application's out-pointer.
    unsafe {
        answer(mode, Op::ModuleGetLoadingMode, &[], |v| {
            CUmoduleLoadingMode(wire::u32(v))
        })
    }
}
