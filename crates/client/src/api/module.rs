//! Modules, functions and kernel launches.
//!
//! The worker tells each function's parameter layout once (from
//! `cuFuncGetParamInfo`); the client caches it, answers `cuFuncGetParamInfo`
//! itself and packs `kernelParams` into one buffer by that layout.

use std::ffi::{c_char, c_uint, c_void, CStr};
use std::sync::Arc;

use vgpu_abi::types::{CUdeviceptr, CUfunction, CUjit_option, CUmodule};
use vgpu_proto::{
    launch_kernel, library_global, module_get_function, module_global, module_load_data,
    module_unload, stage_blob,
};
use zerocopy::little_endian::{U32, U64};

use super::options;
use crate::edge::{non_null, wire, write_out, CuError, CuResult};
use crate::lane::Follows;
use crate::objects::FunctionInfo;
use crate::runtime::{runtime, Kind};

const LAUNCH_PARAM_END: usize = 0x00;
const LAUNCH_PARAM_BUFFER_POINTER: usize = 0x01;
const LAUNCH_PARAM_BUFFER_SIZE: usize = 0x02;

pub(super) fn module_id(m: CUmodule) -> u64 {
    m as usize as u64
}

/// `cuModuleLoadData` and `cuModuleLoadDataEx`: scalar options travel as they
/// are; log buffers are filled from the worker's logs.
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
        o.functions.insert(id, FunctionInfo { module, params });
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

/// Packs `kernelParams` (one pointer per parameter) by the cached layout.
///
/// # Safety
/// `params` must hold one valid pointer per kernel parameter.
pub(super) unsafe fn pack(layout: &[(u32, u32)], params: *mut *mut c_void) -> CuResult<Vec<u8>> {
    let mut buf = Vec::new();
    // SAFETY: the caller's promise.
    unsafe { pack_into(&mut buf, layout, params)? };
    Ok(buf)
}

/// [`pack`] into `buf`, replacing its contents.
///
/// # Safety
/// As for [`pack`].
unsafe fn pack_into(
    buf: &mut Vec<u8>,
    layout: &[(u32, u32)],
    params: *mut *mut c_void,
) -> CuResult<()> {
    let total = layout
        .iter()
        .map(|&(o, s)| o as usize + s as usize)
        .max()
        .unwrap_or(0);
    buf.clear();
    buf.resize(total, 0);
    if layout.is_empty() {
        return Ok(());
    }
    non_null(params)?;
    for (i, &(off, size)) in layout.iter().enumerate() {
        // SAFETY: the application passes one pointer per parameter.
        let arg = unsafe { *params.add(i) };
        non_null(arg)?;
        // SAFETY: `arg` points at a value of `size` bytes; `buf` holds
        // `off + size` bytes by construction.
        unsafe {
            std::ptr::copy_nonoverlapping(
                arg.cast::<u8>(),
                buf.as_mut_ptr().add(off as usize),
                size as usize,
            )
        };
    }
    Ok(())
}

/// Reads the packed buffer of the `extra` launch form.
///
/// # Safety
/// `extra` must be a `CU_LAUNCH_PARAM_END`-terminated list of (key, value) pairs.
pub(super) unsafe fn packed_extra(extra: *mut *mut c_void) -> CuResult<Vec<u8>> {
    let (mut buf, mut size) = (std::ptr::null::<u8>(), None::<usize>);
    for i in (0..64).step_by(2) {
        // SAFETY: the list is END-terminated; we stop at END or after 32 pairs.
        let key = unsafe { *extra.add(i) } as usize;
        if key == LAUNCH_PARAM_END {
            break;
        }
        // SAFETY: every non-END key is followed by its value.
        let value = unsafe { *extra.add(i + 1) };
        match key {
            LAUNCH_PARAM_BUFFER_POINTER => buf = value.cast(),
            // SAFETY: the size value points at a size_t.
            LAUNCH_PARAM_BUFFER_SIZE if !value.is_null() => {
                // SAFETY: the size value points at a size_t.
                size = Some(unsafe { *value.cast::<usize>() })
            }
            _ => return Err(CuError::INVALID_VALUE),
        }
    }
    match size {
        Some(n) if !buf.is_null() && n <= vgpu_proto::MAX_BLOB => {
            // SAFETY: the application's buffer holds `n` bytes.
            Ok(unsafe { std::slice::from_raw_parts(buf, n) }.to_vec())
        }
        _ => Err(CuError::INVALID_VALUE),
    }
}

pub unsafe fn launch(
    f: CUfunction,
    dims: [c_uint; 6],
    shmem: c_uint,
    sid: u64,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CuResult<()> {
    let s = runtime().session()?;
    let ctx = crate::context::current();
    // One look at the objects: the function's layout, and the device of a
    // live context whose stream this is.
    let (layout, device) = {
        let o = s.objects();
        let info = o
            .functions
            .get(&(f as usize as u64))
            .ok_or(CuError::INVALID_HANDLE)?;
        (info.params.clone(), launch_device(&o, ctx, sid))
    };
    if !params.is_null() && !extra.is_null() {
        return Err(CuError::INVALID_VALUE);
    }
    let r = launch_kernel::Request {
        function: U64::new(f as usize as u64),
        grid_x: U32::new(dims[0]),
        grid_y: U32::new(dims[1]),
        grid_z: U32::new(dims[2]),
        block_x: U32::new(dims[3]),
        block_y: U32::new(dims[4]),
        block_z: U32::new(dims[5]),
        shared: U32::new(shmem),
        stream: U64::new(sid),
    };
    let post = extra.is_null() && device.is_some_and(|d| geometry_ok(s, d, dims, shmem));
    if !extra.is_null() {
        // SAFETY: the application's `extra` list.
        let blob = unsafe { packed_extra(extra)? };
        return s.post_or_request(&r, &blob, post, Follows::Stream(sid));
    }
    with_scratch(|blob| {
        // SAFETY: the application's parameter array.
        unsafe { pack_into(blob, &layout, params)? };
        s.post_or_request(&r, blob, post, Follows::Stream(sid))
    })
}

/// Runs `f` with this thread's reusable buffer, taken out for the call and
/// put back after it (a nested call, or one while the thread's locals are
/// torn down, gets a fresh one): a launch packs its parameters without
/// allocating.
fn with_scratch<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    thread_local! {
        static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    }
    let mut buf = SCRATCH.try_with(std::cell::Cell::take).unwrap_or_default();
    let r = f(&mut buf);
    let _ = SCRATCH.try_with(|c| c.set(buf));
    r
}

/// `CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK`; the block and grid limits
/// follow (x, y, z each), then `MAX_SHARED_MEMORY_PER_BLOCK`.
const ATTR_MAX_THREADS_PER_BLOCK: usize = 1;
const ATTR_MAX_BLOCK_DIM_X: usize = 2;
const ATTR_MAX_GRID_DIM_X: usize = 5;
const ATTR_MAX_SHARED_MEMORY_PER_BLOCK: usize = 8;

/// Whether a launch may be posted: the client has checked here what the
/// driver refuses at once (a live current context, a stream usable in it,
/// the geometry within the device's limits, dynamic shared memory within
/// the default per-block limit). A launch that fails any check, or that the
/// client cannot check, waits for the driver's answer.
pub(super) fn launch_postable(
    s: &crate::runtime::Session,
    sid: u64,
    dims: [c_uint; 6],
    shmem: c_uint,
) -> bool {
    let ctx = crate::context::current();
    let device = launch_device(&s.objects(), ctx, sid);
    device.is_some_and(|d| geometry_ok(s, d, dims, shmem))
}

/// The device of context `ctx` when it is live and `sid` is a stream
/// usable in it: what a posted launch needs besides its geometry.
fn launch_device(o: &crate::objects::Objects, ctx: u64, sid: u64) -> Option<i32> {
    if !o.stream_ok(ctx, sid) {
        return None;
    }
    o.contexts.get(&ctx).map(|c| c.device)
}

/// Whether a launch's geometry and dynamic shared memory are within
/// `device`'s limits.
fn geometry_ok(s: &crate::runtime::Session, device: i32, dims: [c_uint; 6], shmem: c_uint) -> bool {
    let Ok(snap) = s.device(device) else {
        return false;
    };
    let limit = |id: usize| {
        snap.attr(id)
            .and_then(|v| u64::try_from(v).ok())
            .unwrap_or(0)
    };
    let (grid, block) = (&dims[..3], &dims[3..]);
    let within = |dims: &[c_uint], first: usize| {
        dims.iter()
            .enumerate()
            .all(|(i, &d)| d >= 1 && u64::from(d) <= limit(first + i))
    };
    let threads: u64 = block.iter().map(|&d| u64::from(d)).product();
    within(grid, ATTR_MAX_GRID_DIM_X)
        && within(block, ATTR_MAX_BLOCK_DIM_X)
        && threads <= limit(ATTR_MAX_THREADS_PER_BLOCK)
        && u64::from(shmem) <= limit(ATTR_MAX_SHARED_MEMORY_PER_BLOCK)
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
