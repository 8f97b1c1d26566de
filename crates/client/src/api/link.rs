//! The JIT linker (`cuLink*`).
//!
//! The link lives in the worker, whose driver compiles and links. The JIT
//! options given to `cuLinkCreate` stay the application's: the driver may
//! write their log buffers and out-values during any later call on the
//! link, so after each such call (failed ones too) the client copies the
//! worker's copies of them back into the application's arrays and buffers,
//! which the application keeps valid until `cuLinkDestroy`. The linked
//! image `cuLinkComplete` returns is copied here and kept until then too.

use std::ffi::{c_char, c_uint, c_void, CStr};

use vgpu_abi::types::{CUjitInputType, CUjit_option, CUlinkState};
use vgpu_proto::{link_add_data, link_complete, link_create, link_destroy};
use zerocopy::little_endian::{U32, U64};

use super::{module, options};
use crate::edge::{check, non_null, wire, write_out, CuError, CuResult};
use crate::objects::LinkInfo;
use crate::runtime::{runtime, Kind};

/// `CU_JIT_INPUT_PTX`: PTX read from a file gets the NUL PTX text ends with.
const INPUT_PTX: u32 = 1;

fn link_id(state: CUlinkState) -> u64 {
    state as usize as u64
}

/// `cuLinkCreate` and `cuLinkCreate_v2`.
///
/// # Safety
/// `state` must be NULL or valid for a write; `opts`/`vals` must hold `n`
/// JIT options as the CUDA API defines them, valid until `cuLinkDestroy`.
pub unsafe fn create(
    n: c_uint,
    opts: *mut CUjit_option,
    vals: *mut *mut c_void,
    state: *mut CUlinkState,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(state)?;
    let count = n as usize;
    // SAFETY: the application passes `n` options and values.
    let (keys, values) = unsafe { options::slices(opts, vals, count)? };
    let keys: Vec<u32> = keys.iter().map(|o| o.0).collect();
    let mut blob = Vec::with_capacity(count * 16);
    options::encode(&mut blob, keys.iter().copied(), values.as_deref());
    let id = runtime().mint(Kind::Link);
    let r = link_create::Request {
        link: U64::new(id),
        options: U32::new(n),
    };
    s.request(&r, &blob)?;
    let info = LinkInfo {
        keys,
        values: if values.is_some() { vals as usize } else { 0 },
        cubin: None,
    };
    s.objects().links.insert(id, info);
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(state, wire::handle(id)) }
}

/// Copies the link's options from the worker (the head of a reply's blob)
/// into the application's `cuLinkCreate` arrays and buffers.
fn write_back_link(id: u64, reply: &[u8]) -> CuResult<()> {
    let s = runtime().session()?;
    let (keys, values) = {
        let o = s.objects();
        let info = o.links.get(&id).ok_or(CuError::INVALID_HANDLE)?;
        (info.keys.clone(), info.values)
    };
    if values == 0 {
        return Ok(());
    }
    let vals = values as *mut *mut c_void;
    // SAFETY: the application's `cuLinkCreate` values array of `keys.len()`
    // entries, which it keeps valid until `cuLinkDestroy`.
    let vals = unsafe { std::slice::from_raw_parts_mut(vals, keys.len()) };
    // SAFETY: its log buffers are as large as their size options say.
    unsafe { options::write_back(&keys, Some(vals), reply) };
    Ok(())
}

/// Splits a reply's blob after the link's options (`link_options` bytes).
fn split_reply(blob: &[u8], link_options: u32) -> CuResult<(&[u8], &[u8])> {
    let at = link_options as usize;
    if at > blob.len() {
        return Err(CuError::UNKNOWN);
    }
    Ok(blob.split_at(at))
}

/// `cuLinkAddData` and `cuLinkAddData_v2`.
///
/// # Safety
/// `data` must be NULL or hold `size` bytes; `name` NULL or NUL-terminated;
/// `opts`/`vals` as for [`create`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn add_data(
    state: CUlinkState,
    kind: CUjitInputType,
    data: *mut c_void,
    size: usize,
    name: *const c_char,
    n: c_uint,
    opts: *mut CUjit_option,
    vals: *mut *mut c_void,
) -> CuResult<()> {
    if data.is_null() || size == 0 {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: the application's input of `size` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) };
    // SAFETY: forwarded from this function's contract.
    let name = (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) }.to_bytes());
    // SAFETY: forwarded from this function's contract.
    unsafe { send_input(state, kind, bytes, name, n, opts, vals) }
}

/// `cuLinkAddFile` and `cuLinkAddFile_v2`: the file is the application's,
/// so it is read here and its bytes sent, under its path as the input's
/// name. A file that cannot be read there is `CUDA_ERROR_FILE_NOT_FOUND`,
/// as driver 580 answers.
///
/// # Safety
/// `path` must be NULL or NUL-terminated; `opts`/`vals` as for [`create`].
pub unsafe fn add_file(
    state: CUlinkState,
    kind: CUjitInputType,
    path: *const c_char,
    n: c_uint,
    opts: *mut CUjit_option,
    vals: *mut *mut c_void,
) -> CuResult<()> {
    runtime().session()?;
    // SAFETY: the application's NUL-terminated path (checked non-NULL there).
    let mut bytes = unsafe { module::read_file(path)? };
    if kind.0 != INPUT_PTX {
        bytes.pop();
    }
    // SAFETY: `read_file` checked `path` non-NULL and NUL-terminated.
    let name = unsafe { CStr::from_ptr(path) }.to_bytes();
    // SAFETY: forwarded from this function's contract.
    unsafe { send_input(state, kind, &bytes, Some(name), n, opts, vals) }
}

/// Sends one input; copies the link's options and this call's back.
///
/// # Safety
/// `opts`/`vals` as for [`create`] (this call's only for its duration).
unsafe fn send_input(
    state: CUlinkState,
    kind: CUjitInputType,
    bytes: &[u8],
    name: Option<&[u8]>,
    n: c_uint,
    opts: *mut CUjit_option,
    vals: *mut *mut c_void,
) -> CuResult<()> {
    let s = runtime().session()?;
    let id = link_id(state);
    if !s.objects().links.contains_key(&id) {
        return Err(CuError::INVALID_HANDLE);
    }
    let count = n as usize;
    // SAFETY: the application passes `n` options and values.
    let (keys, values) = unsafe { options::slices(opts, vals, count)? };
    let keys: Vec<u32> = keys.iter().map(|o| o.0).collect();
    let (stage, inline) = module::stage_image(s, bytes)?;
    let name_bytes = name.unwrap_or_default();
    let mut blob = Vec::with_capacity(count * 16 + name_bytes.len() + inline.len());
    options::encode(&mut blob, keys.iter().copied(), values.as_deref());
    blob.extend_from_slice(name_bytes);
    blob.extend_from_slice(inline);
    let r = link_add_data::Request {
        link: U64::new(id),
        kind: U32::new(kind.0),
        options: U32::new(n),
        stage: U64::new(stage),
        has_name: u8::from(name.is_some()),
        name_len: U32::new(super::call_len(name_bytes.len())?),
    };
    let (rep, reply) = s.request(&r, &blob)?;
    let (link_part, own) = split_reply(&reply, rep.link_options.get())?;
    write_back_link(id, link_part)?;
    // SAFETY: the option arrays are the application's, valid for `n` entries.
    unsafe { options::write_back(&keys, values, own) };
    check(rep.status.get())
}

/// `cuLinkComplete`: the linked image, kept here until `cuLinkDestroy`.
///
/// # Safety
/// `cubin` and `size` must be NULL or valid for writes.
pub unsafe fn complete(
    state: CUlinkState,
    cubin: *mut *mut c_void,
    size: *mut usize,
) -> CuResult<()> {
    let s = runtime().session()?;
    let id = link_id(state);
    if !s.objects().links.contains_key(&id) {
        return Err(CuError::INVALID_HANDLE);
    }
    non_null(cubin)?;
    non_null(size)?;
    let r = link_complete::Request { link: U64::new(id) };
    let (rep, reply) = s.request(&r, &[])?;
    let (link_part, image) = split_reply(&reply, rep.link_options.get())?;
    write_back_link(id, link_part)?;
    check(rep.status.get())?;
    if image.len() as u64 != rep.cubin.get() {
        return Err(s.fail("LinkComplete", "an image of another size than announced"));
    }
    let image: Box<[u8]> = image.into();
    let (p, len) = (image.as_ptr().cast_mut(), image.len());
    {
        let mut o = s.objects();
        let info = o.links.get_mut(&id).ok_or(CuError::INVALID_HANDLE)?;
        // The previous image (of an earlier cuLinkComplete) is dropped here.
        info.cubin = Some(image);
    }
    // SAFETY: checked non-NULL; the application's out-pointers.
    unsafe {
        write_out(cubin, p.cast())?;
        write_out(size, len)
    }
}

/// `cuLinkDestroy`: the worker forgets the link; its image is freed here.
pub fn destroy(state: CUlinkState) -> CuResult<()> {
    let s = runtime().session()?;
    let id = link_id(state);
    if !s.objects().links.contains_key(&id) {
        return Err(CuError::INVALID_HANDLE);
    }
    s.request(&link_destroy::Request { link: U64::new(id) }, &[])?;
    s.objects().links.remove(&id);
    Ok(())
}
