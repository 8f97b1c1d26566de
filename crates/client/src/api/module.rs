//! Modules and functions.
//!
//! The worker tells each function's parameter layout once (from
//! `cuFuncGetParamInfo`); the client caches it, answers `cuFuncGetParamInfo`
//! itself, and launches pack `kernelParams` by it (`api::launch`).

use std::ffi::{c_char, c_uint, c_void, CStr};
use std::sync::Arc;

use vgpu_abi::types::{CUdeviceptr, CUfunction, CUjit_option, CUmodule};
use vgpu_proto::{
    library_global, module_get_function, module_global, module_load_data, module_unload, stage_blob,
};
use zerocopy::little_endian::{U32, U64};

use super::options;
use crate::edge::{non_null, wire, write_out, CuError, CuResult};
use crate::objects::FunctionInfo;
use crate::runtime::{runtime, Kind};

pub(super) fn module_id(m: CUmodule) -> u64 {
    m as usize as u64
}

/// `cuModuleLoadData` and `cuModuleLoadDataEx`: scalar options travel as they
/// are; log buffers are filled from the worker's logs.
///
/// # Safety
/// `m` must be NULL or valid for a write; `opts`/`vals` must hold `n` JIT
/// options as the CUDA API defines them (log buffers writable for the sizes
/// given with them).
/// `image` must be NULL or point to what the CUDA API says the caller passes there.
pub unsafe fn load_data(
    m: *mut CUmodule,
    image: *const c_void,
    n: c_uint,
    opts: *mut CUjit_option,
    vals: *mut *mut c_void,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(m)?;
    let n = n as usize;
    // SAFETY: the application passes `n` options and values.
    let (opts, vals) = unsafe { options::slices(opts, vals, n)? };
    // SAFETY: the application passes a valid module image.
    let image = unsafe { crate::image::bytes(image)? };
    let keys: Vec<u32> = opts.iter().map(|o| o.0).collect();
    let (stage, inline) = stage_image(s, image)?;
    let mut blob = Vec::with_capacity(n * 16 + inline.len());
    options::encode(&mut blob, keys.iter().copied(), vals.as_deref());
    blob.extend_from_slice(inline);
    let id = runtime().mint(Kind::Module);
    let r = module_load_data::Request {
        module: U64::new(id),
        options: U32::new(super::call_len(n)?),
        stage: U64::new(stage),
    };
    let (_, reply) = s.request(&r, &blob)?;
    // SAFETY: the option arrays are the application's, valid for `n` entries.
    unsafe { options::write_back(&keys, vals, &reply) };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(m, wire::handle(id)) }
}

pub fn unload(m: CUmodule) -> CuResult<()> {
    let s = runtime().session()?;
    let id = module_id(m);
    s.request(
        &module_unload::Request {
            module: U64::new(id),
        },
        &[],
    )?;
    s.objects().forget_module(id);
    Ok(())
}

/// # Safety
/// `f` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
/// `name` must be NULL or a NUL-terminated string.
pub unsafe fn get_function(f: *mut CUfunction, m: CUmodule, name: *const c_char) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(f)?;
    non_null(name)?;
    // SAFETY: checked non-NULL; the application passes a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(name) }.to_bytes().to_vec();
    let module = module_id(m);
    let cached = s
        .objects()
        .function_names
        .get(&(module, name.clone()))
        .copied();
    if let Some(id) = cached {
        // SAFETY: checked non-NULL; the application's out-pointer.
        return unsafe { write_out(f, wire::handle(id)) };
    }
    let id = runtime().mint(Kind::Function);
    let r = module_get_function::Request {
        module: U64::new(module),
        function: U64::new(id),
    };
    let (rep, layout) = s.request(&r, &name)?;
    let params = decode_layout(rep.params.get(), &layout)?;
    {
        let mut o = s.objects();
        let info = FunctionInfo {
            module,
            params,
            kernel: None,
        };
        o.functions.insert(id, info);
        o.function_names.insert((module, name), id);
    }
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(f, wire::handle(id)) }
}

/// Images up to this size travel inside the load request; larger ones are
/// staged in the worker first, piece by piece.
const INLINE_IMAGE: usize = 16 << 20;

/// Stages a large image in the worker: returns (stage id, bytes to send inline).
pub(super) fn stage_image<'a>(
    s: &crate::runtime::Session,
    image: &'a [u8],
) -> CuResult<(u64, &'a [u8])> {
    if image.len() <= INLINE_IMAGE {
        return Ok((0, image));
    }
    let stage = runtime().mint(Kind::Module);
    let total = image.len() as u64;
    for (i, piece) in image.chunks(INLINE_IMAGE).enumerate() {
        let offset = (i * INLINE_IMAGE) as u64;
        let r = stage_blob::Request {
            stage: U64::new(stage),
            offset: U64::new(offset),
            total: U64::new(total),
        };
        s.request(&r, piece)?;
    }
    Ok((stage, &[]))
}

/// A parameter layout reply: `count` (offset u32, size u32) pairs.
pub(super) fn decode_layout(count: u32, layout: &[u8]) -> CuResult<Arc<[(u32, u32)]>> {
    if layout.len() as u64 != u64::from(count) * 8 {
        return Err(CuError::UNKNOWN);
    }
    Ok(layout
        .chunks_exact(8)
        .map(|c| {
            let off = u32::from_le_bytes(c[..4].try_into().expect("4 bytes"));
            let size = u32::from_le_bytes(c[4..].try_into().expect("4 bytes"));
            (off, size)
        })
        .collect())
}

/// What a global belongs to.
#[derive(Clone, Copy, Debug)]
pub enum Owner {
    Module(u64),
    Library(u64),
}

/// `cuModuleGetGlobal_v2` and `cuLibraryGetGlobal`.
///
/// # Safety
/// `name` must be NULL or NUL-terminated; `dptr` and `bytes` NULL or valid
/// for writes.
pub unsafe fn get_global(
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
    owner: Owner,
    name: *const c_char,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(name)?;
    // SAFETY: checked non-NULL; the application passes a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(name) }.to_bytes();
    let (p, n) = match owner {
        Owner::Module(id) => {
            let r = module_global::Request {
                module: U64::new(id),
            };
            let (rep, _) = s.request(&r, name)?;
            (rep.dptr.get(), rep.bytes.get())
        }
        Owner::Library(id) => {
            let r = library_global::Request {
                library: U64::new(id),
            };
            let (rep, _) = s.request(&r, name)?;
            (rep.dptr.get(), rep.bytes.get())
        }
    };
    s.objects().device_ranges.insert(p, n);
    // SAFETY: each pointer is written only when non-NULL, as the driver does.
    unsafe {
        if !dptr.is_null() {
            write_out(dptr, p)?;
        }
        if !bytes.is_null() {
            write_out(bytes, wire::usize(n))?;
        }
    }
    Ok(())
}

pub(super) fn function(f: CUfunction) -> CuResult<FunctionInfo> {
    let s = runtime().session()?;
    let info = s.objects().functions.get(&(f as usize as u64)).cloned();
    info.ok_or(CuError::INVALID_HANDLE)
}

/// Answered from the cached layout: no round trip.
///
/// # Safety
/// `off`, `size` must each be NULL or valid for a write of its pointee, as the CUDA API defines them.
pub unsafe fn param_info(
    f: CUfunction,
    i: usize,
    off: *mut usize,
    size: *mut usize,
) -> CuResult<()> {
    let info = function(f)?;
    let &(o, sz) = info.params.get(i).ok_or(CuError::INVALID_VALUE)?;
    // SAFETY: each pointer is written only when non-NULL.
    unsafe {
        if !off.is_null() {
            write_out(off, o as usize)?;
        }
        if !size.is_null() {
            write_out(size, sz as usize)?;
        }
    }
    Ok(())
}

/// `cuFuncGetName` (`kernel` false) and `cuKernelGetName`: the name, asked
/// of the worker once and kept while the function lives, so the pointer
/// stays valid as the driver's does.
///
/// # Safety
/// `name` must be NULL or valid for a write.
pub unsafe fn function_name(name: *mut *const c_char, id: u64, kernel: bool) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(name)?;
    let known = s.objects().kernel_names.get(&id).map(|n| n.as_ptr());
    let p = match known {
        Some(p) => p,
        None => {
            let r = vgpu_proto::function_name::Request {
                function: U64::new(id),
                kernel: u8::from(kernel),
            };
            let (_, bytes) = s.request(&r, &[])?;
            let text = std::ffi::CString::new(bytes).map_err(|_| CuError::UNKNOWN)?;
            let mut o = s.objects();
            o.kernel_names.entry(id).or_insert(text).as_ptr()
        }
    };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(name, p) }
}

/// `cuModuleEnumerateFunctions` (`library` false) and
/// `cuLibraryEnumerateKernels`: the worker asks the driver and registers
/// every handle with its parameter layout; the client learns them all, so
/// each is launchable here.
///
/// # Safety
/// `out` must be NULL or valid for `count` writes.
pub unsafe fn enumerate(
    out: *mut *mut c_void,
    count: c_uint,
    owner: u64,
    library: bool,
) -> CuResult<()> {
    let s = runtime().session()?;
    if count > 0 {
        non_null(out)?;
    }
    let r = vgpu_proto::enumerate_functions::Request {
        owner: U64::new(owner),
        count: U32::new(count),
        library: u8::from(library),
    };
    let (rep, blob) = s.request(&r, &[])?;
    let mut rest = &blob[..];
    let mut take = |n: usize| -> CuResult<&[u8]> {
        if rest.len() < n {
            return Err(s.fail("EnumerateFunctions", "a reply shorter than its entries"));
        }
        let (head, tail) = rest.split_at(n);
        rest = tail;
        Ok(head)
    };
    let mut ids = Vec::new();
    for _ in 0..rep.found.get() {
        let id = u64::from_le_bytes(take(8)?.try_into().expect("8 bytes"));
        let n = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes"));
        let layout = decode_layout(n, take(n as usize * 8)?)?;
        if id != 0 {
            let info = FunctionInfo {
                module: owner,
                params: layout,
                kernel: None,
            };
            s.objects().functions.entry(id).or_insert(info);
        }
        ids.push(id);
    }
    if ids.len() > count as usize {
        return Err(s.fail("EnumerateFunctions", "more entries than asked for"));
    }
    for (i, id) in ids.into_iter().enumerate() {
        // SAFETY: the application's array of `count` entries; `i` < count.
        unsafe { out.add(i).write_unaligned(wire::handle(id)) };
    }
    Ok(())
}

/// The file's bytes, NUL-terminated so a PTX file is a valid image too.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated path.
pub(super) unsafe fn read_file(name: *const c_char) -> CuResult<Vec<u8>> {
    non_null(name)?;
    // SAFETY: checked non-NULL; the application's NUL-terminated path.
    let path = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    let mut bytes = std::fs::read(&path).map_err(|e| {
        crate::log::line(format_args!("cannot read module file {path}: {e}"));
        CuError::FILE_NOT_FOUND
    })?;
    bytes.push(0);
    Ok(bytes)
}

/// `cuModuleLoad`: the file is read here (it is the application's) and
/// loaded like an image in memory.
///
/// # Safety
/// `m` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
/// `name` must be NULL or a NUL-terminated string.
pub unsafe fn module_load(m: *mut CUmodule, name: *const c_char) -> CuResult<()> {
    // SAFETY: the application's path.
    let image = unsafe { read_file(name)? };
    // SAFETY: `image` is a complete image in memory for the call's duration.
    unsafe {
        load_data(
            m,
            image.as_ptr().cast(),
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    }
}

/// `cuModuleLoadFatBinary`.
///
/// # Safety
/// `m` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
/// `fat` must be NULL or point to what the CUDA API says the caller passes there.
pub unsafe fn module_load_fat_binary(m: *mut CUmodule, fat: *const c_void) -> CuResult<()> {
    // SAFETY: a fat binary is a module image the loader recognises.
    unsafe { load_data(m, fat, 0, std::ptr::null_mut(), std::ptr::null_mut()) }
}
