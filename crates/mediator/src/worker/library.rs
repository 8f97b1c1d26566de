//! Modules, libraries, kernels and functions: loading, look-ups, attributes,
//! occupancy and launches.
//!
//! Functions and kernels share one table: CUDA lets a `CUkernel` stand where
//! a `CUfunction` is expected (launches, attributes), so each id maps to the
//! real handle of either kind, with its parameter layout.

use std::ffi::c_int;
use std::ptr;

use vgpu_proto::Request;

use super::exec::{aligned, int, name, ok, size, uint, Reply};
use super::options::Options;
use super::status::{INVALID_VALUE, SUCCESS};
use super::tables::{as_handle, Function, Owned, Range, RangeOwner, Tables};
use super::Session;
use crate::driver::{entry, DevPtr, Handle, Status};

/// Most kernel parameters the worker asks the driver about.
const MAX_KERNEL_PARAMS: usize = 4096;
/// `CUlibraryOption` 0: a host pointer table, meaningless in another process.
const LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE: c_int = 0;

pub(super) fn split(blob: &[u8], at: usize) -> Result<(&[u8], &[u8]), Status> {
    if at > blob.len() {
        return Err(INVALID_VALUE);
    }
    Ok(blob.split_at(at))
}

/// Largest image the worker stages from pieces.
const MAX_STAGED: u64 = 2 << 30;

/// `StageBlob`: (stage id, offset, total) + a piece of an image.
pub fn stage(s: &Session, req: &Request) -> Result<Reply, Status> {
    let (id, offset, total) = (req.args[0], req.args[1], req.args[2]);
    let end = offset
        .checked_add(req.blob.len() as u64)
        .ok_or(INVALID_VALUE)?;
    if id == 0 || total > MAX_STAGED || end > total {
        return Err(INVALID_VALUE);
    }
    let mut t = s.tables();
    let buf = t.staged.entry(id).or_default();
    if buf.is_empty() {
        buf.resize(size(total)?, 0);
    }
    if buf.len() as u64 != total {
        return Err(INVALID_VALUE);
    }
    buf[size(offset)?..size(end)?].copy_from_slice(&req.blob);
    Ok(Reply::default())
}

/// The image of a load: staged under `stage` if non-zero, else `inline`.
fn image(s: &Session, stage: u64, inline: &[u8]) -> Result<Vec<u64>, Status> {
    if stage == 0 {
        return Ok(aligned(inline));
    }
    let staged = s.tables().staged.remove(&stage).ok_or(INVALID_VALUE)?;
    if !inline.is_empty() {
        return Err(INVALID_VALUE);
    }
    Ok(aligned(&staged))
}

/// `ModuleLoadData`: (module_id, option count, stage) + options + image.
pub fn module_load(s: &Session, req: &Request, ctx: u64) -> Result<Reply, Status> {
    let (id, nopts) = (req.args[0], size(req.args[1])?);
    Tables::fresh(&s.tables().modules, id)?;
    let (opts, image) = split(&req.blob, nopts.checked_mul(16).ok_or(INVALID_VALUE)?)?;
    let mut opts = Options::parse(opts)?.with_jit_logs();
    let image = self::image(s, req.args[2], image)?;
    let mut m: Handle = ptr::null_mut();
    let n = opts.count()?;
    // SAFETY: `image` is an aligned copy of the client's image; the option
    // arrays hold `n` entries; log buffers live as long as `opts`.
    ok(unsafe {
        entry(s.driver.module_load_data_ex)?(
            &mut m,
            image.as_ptr().cast(),
            n,
            opts.keys.as_mut_ptr(),
            opts.values_ptr(),
        )
    })?;
    s.tables().modules.insert(
        id,
        Owned {
            real: m as usize,
            ctx,
        },
    );
    Ok(Reply {
        blob: opts.reply(),
        ..Reply::default()
    })
}

/// `LibraryLoadData`: (library_id, JIT option count, library option count).
pub fn library_load(s: &Session, req: &Request, ctx: u64) -> Result<Reply, Status> {
    let (id, njit, nlib) = (req.args[0], size(req.args[1])?, size(req.args[2])?);
    Tables::fresh(&s.tables().libraries, id)?;
    let (jit, rest) = split(&req.blob, njit.checked_mul(16).ok_or(INVALID_VALUE)?)?;
    let (lib, image) = split(rest, nlib.checked_mul(16).ok_or(INVALID_VALUE)?)?;
    let mut jit = Options::parse(jit)?.with_jit_logs();
    let mut lib = Options::parse(lib)?;
    let image = self::image(s, req.args[3], image)?;
    if let Some(i) = lib
        .keys
        .iter()
        .position(|&k| k == LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE)
    {
        tracing::debug!(
            "cuLibraryLoadData: host function table option dropped (a client-side pointer)"
        );
        lib.keys.remove(i);
        lib.values.remove(i);
    }
    let mut l: Handle = ptr::null_mut();
    let (nj, nl) = (jit.count()?, lib.count()?);
    let image_len = image.len() * 8;
    // SAFETY: as for `module_load`; both option arrays hold their counts.
    let st = unsafe {
        entry(s.driver.library_load_data)?(
            &mut l,
            image.as_ptr().cast(),
            jit.keys.as_mut_ptr(),
            jit.values_ptr(),
            nj,
            lib.keys.as_mut_ptr(),
            lib.values_ptr(),
            nl,
        )
    };
    if let Err(st) = ok(st) {
        tracing::warn!(
            status = st,
            image_bytes = image_len,
            jit = ?jit.keys,
            library = ?lib.keys.iter().zip(&lib.values).collect::<Vec<_>>(),
            "cuLibraryLoadData failed"
        );
        return Err(st);
    }
    s.tables().libraries.insert(
        id,
        Owned {
            real: l as usize,
            ctx,
        },
    );
    Ok(Reply {
        blob: jit.reply(),
        ..Reply::default()
    })
}

pub fn library_unload(s: &Session, id: u64) -> Result<Reply, Status> {
    let real = s.tables().library(id)?;
    // SAFETY: `real` is a live library of this session.
    ok(unsafe { entry(s.driver.library_unload)?(as_handle(real)) })?;
    s.tables().forget_library(id);
    Ok(Reply::default())
}

pub fn module_unload(s: &Session, id: u64) -> Result<Reply, Status> {
    let real = s.tables().module(id)?;
    // SAFETY: `real` is a live module of this session.
    ok(unsafe { entry(s.driver.module_unload)?(as_handle(real)) })?;
    s.tables().forget_module(id);
    Ok(Reply::default())
}

/// Registers a function or kernel and replies with its parameter layout.
fn register(s: &Session, id: u64, real: Handle, owner: u64, kernel: bool) -> Result<Reply, Status> {
    let params = param_layout(s, real, kernel)?;
    let mut blob = Vec::with_capacity(params.len() * 8);
    for (off, sz) in &params {
        blob.extend_from_slice(&off.to_le_bytes());
        blob.extend_from_slice(&sz.to_le_bytes());
    }
    let count = params.len() as u64;
    s.tables().insert_function(
        id,
        Function {
            real: real as usize,
            module: owner,
            params: params.into(),
        },
    );
    Ok(Reply {
        outs: vec![count],
        blob,
        fd: None,
    })
}

pub fn module_get_function(s: &Session, req: &Request) -> Result<Reply, Status> {
    let (module, id) = (req.args[0], req.args[1]);
    let real_mod = s.tables().module(module)?;
    s.tables().fresh_function(id)?;
    let fname = name(&req.blob)?;
    let mut f: Handle = ptr::null_mut();
    // SAFETY: live module; NUL-terminated name; live out-pointer.
    ok(unsafe {
        entry(s.driver.module_get_function)?(&mut f, as_handle(real_mod), fname.as_ptr())
    })?;
    register(s, id, f, module, false)
}

pub fn library_get_kernel(s: &Session, req: &Request) -> Result<Reply, Status> {
    let (library, id) = (req.args[0], req.args[1]);
    let real_lib = s.tables().library(library)?;
    s.tables().fresh_function(id)?;
    let kname = name(&req.blob)?;
    let mut k: Handle = ptr::null_mut();
    // SAFETY: live library; NUL-terminated name; live out-pointer.
    ok(unsafe {
        entry(s.driver.library_get_kernel)?(&mut k, as_handle(real_lib), kname.as_ptr())
    })?;
    register(s, id, k, library, true)
}

pub fn kernel_get_function(s: &Session, req: &Request) -> Result<Reply, Status> {
    let (kernel, id) = (req.args[0], req.args[1]);
    let k = s.tables().function(kernel)?.clone();
    s.tables().fresh_function(id)?;
    let mut f: Handle = ptr::null_mut();
    // SAFETY: live kernel; live out-pointer.
    ok(unsafe { entry(s.driver.kernel_get_function)?(&mut f, as_handle(k.real)) })?;
    register(s, id, f, k.module, false)
}

pub fn library_get_module(s: &Session, req: &Request, ctx: u64) -> Result<Reply, Status> {
    let (library, id) = (req.args[0], req.args[1]);
    let real_lib = s.tables().library(library)?;
    Tables::fresh(&s.tables().modules, id)?;
    let mut m: Handle = ptr::null_mut();
    // SAFETY: live library; live out-pointer.
    ok(unsafe { entry(s.driver.library_get_module)?(&mut m, as_handle(real_lib)) })?;
    s.tables().modules.insert(
        id,
        Owned {
            real: m as usize,
            ctx,
        },
    );
    Ok(Reply::default())
}

/// `ModuleGetGlobal` and `LibraryGetGlobal`: the range becomes valid for copies.
pub fn get_global(s: &Session, req: &Request, library: bool) -> Result<Reply, Status> {
    let owner = req.args[0];
    let real = if library {
        s.tables().library(owner)?
    } else {
        s.tables().module(owner)?
    };
    let gname = name(&req.blob)?;
    let (mut p, mut bytes): (DevPtr, usize) = (0, 0);
    // SAFETY: live module or library; NUL-terminated name; live out-pointers.
    ok(unsafe {
        if library {
            entry(s.driver.library_get_global)?(&mut p, &mut bytes, as_handle(real), gname.as_ptr())
        } else {
            entry(s.driver.module_get_global)?(&mut p, &mut bytes, as_handle(real), gname.as_ptr())
        }
    })?;
    let range = Range {
        size: bytes as u64,
        owner: RangeOwner::Global { module: owner },
    };
    s.tables().ranges.insert(p, range);
    Ok(Reply::outs(&[p, bytes as u64]))
}

pub fn func_get_attribute(s: &Session, a: &[u64]) -> Result<Reply, Status> {
    let f = s.tables().function(a[0])?.real;
    let mut v: c_int = 0;
    // SAFETY: live function or kernel; live out-pointer.
    ok(unsafe { entry(s.driver.func_get_attribute)?(&mut v, int(a[1])?, as_handle(f)) })?;
    Ok(Reply::outs(&[v as i64 as u64]))
}

pub fn func_set_attribute(s: &Session, a: &[u64]) -> Result<Reply, Status> {
    let f = s.tables().function(a[0])?.real;
    // SAFETY: live function or kernel; scalar arguments.
    ok(unsafe { entry(s.driver.func_set_attribute)?(as_handle(f), int(a[1])?, int(a[2])?) })?;
    Ok(Reply::default())
}

pub fn kernel_get_attribute(s: &Session, a: &[u64]) -> Result<Reply, Status> {
    let k = s.tables().function(a[0])?.real;
    let mut v: c_int = 0;
    // SAFETY: live kernel; live out-pointer.
    ok(unsafe {
        entry(s.driver.kernel_get_attribute)?(&mut v, int(a[1])?, as_handle(k), int(a[2])?)
    })?;
    Ok(Reply::outs(&[v as i64 as u64]))
}

pub fn kernel_set_attribute(s: &Session, a: &[u64]) -> Result<Reply, Status> {
    let k = s.tables().function(a[0])?.real;
    // SAFETY: live kernel; scalar arguments.
    ok(unsafe {
        entry(s.driver.kernel_set_attribute)?(int(a[1])?, int(a[2])?, as_handle(k), int(a[3])?)
    })?;
    Ok(Reply::default())
}

pub fn occupancy_max_active_blocks(s: &Session, a: &[u64]) -> Result<Reply, Status> {
    let f = s.tables().function(a[0])?.real;
    let mut n: c_int = 0;
    // SAFETY: live function; live out-pointer; scalar arguments.
    ok(unsafe {
        entry(s.driver.occupancy_max_active_blocks)?(
            &mut n,
            as_handle(f),
            int(a[1])?,
            size(a[2])?,
            uint(a[3])?,
        )
    })?;
    Ok(Reply::outs(&[n as i64 as u64]))
}

pub fn occupancy_available_dynamic_smem(s: &Session, a: &[u64]) -> Result<Reply, Status> {
    let f = s.tables().function(a[0])?.real;
    let mut bytes: usize = 0;
    // SAFETY: live function; live out-pointer; scalar arguments.
    ok(unsafe {
        entry(s.driver.occupancy_available_dynamic_smem)?(
            &mut bytes,
            as_handle(f),
            int(a[1])?,
            int(a[2])?,
        )
    })?;
    Ok(Reply::outs(&[bytes as u64]))
}

/// Asks the driver for each parameter's offset and size.
fn param_layout(s: &Session, f: Handle, kernel: bool) -> Result<Vec<(u32, u32)>, Status> {
    let get = if kernel {
        entry(s.driver.kernel_get_param_info)?
    } else {
        entry(s.driver.func_get_param_info)?
    };
    let mut params = Vec::new();
    for i in 0..MAX_KERNEL_PARAMS {
        let (mut off, mut sz) = (0usize, 0usize);
        // SAFETY: live function or kernel; both out-pointers are live locals.
        if unsafe { get(f, i, &mut off, &mut sz) } != SUCCESS {
            break;
        }
        let off = u32::try_from(off).map_err(|_| INVALID_VALUE)?;
        let sz = u32::try_from(sz).map_err(|_| INVALID_VALUE)?;
        params.push((off, sz));
    }
    Ok(params)
}
