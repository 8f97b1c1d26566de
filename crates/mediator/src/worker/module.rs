//! Modules: loading (whole or staged in pieces), unloading, functions and
//! globals by name, and the kernel walk. What libraries share with modules
//! (images, registering a function with its parameter layout, globals) is
//! here too.
//!
//! Functions and kernels share one table: CUDA lets a `CUkernel` stand where
//! a `CUfunction` is expected (launches, attributes), so each id maps to the
//! real handle of either kind, with its parameter layout.

use std::ptr;

use vgpu_abi::HandleKind;
use vgpu_proto::{
    enumerate_functions, function_name, module_get_function, module_global, module_kernel_names,
    module_load_data, module_unload, stage_blob, Request,
};
use zerocopy::little_endian::{U32, U64};

use super::calls::{aligned, message, ok, size, split, string, Reply};
use super::exec::Lane;
use super::options::Options;
use super::status::{INVALID_VALUE, SUCCESS};
use super::tables::{as_handle, Function, Owned, Range, RangeOwner, Tables};
use super::Session;
use crate::driver::{entry, Handle, Status};

/// Most kernel parameters the worker asks the driver about.
const MAX_KERNEL_PARAMS: usize = 4096;
/// Largest image the worker stages from pieces.
const MAX_STAGED: u64 = 2 << 30;

/// Builds up a large image piece by piece; the load that names the stage id
/// consumes it.
pub fn stage_blob(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &stage_blob::Request = message(req)?;
    let (id, offset, total) = (r.stage.get(), r.offset.get(), r.total.get());
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
pub(super) fn image(s: &Session, stage: u64, inline: &[u8]) -> Result<Vec<u64>, Status> {
    if stage == 0 {
        return Ok(aligned(inline));
    }
    let staged = s.tables().staged.remove(&stage).ok_or(INVALID_VALUE)?;
    if !inline.is_empty() {
        return Err(INVALID_VALUE);
    }
    Ok(aligned(&staged))
}

/// `cuModuleLoadDataEx` under the client's id, with the JIT options of the
/// blob; the reply carries their final values and the logs.
pub fn module_load_data(lane: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &module_load_data::Request = message(req)?;
    let (id, nopts) = (r.module.get(), size(u64::from(r.options.get()))?);
    Tables::fresh(&s.tables().modules, id)?;
    let (opts, image) = split(&req.blob, nopts.checked_mul(16).ok_or(INVALID_VALUE)?)?;
    let mut opts = Options::parse(opts)?.with_jit_logs();
    let image = self::image(s, r.stage.get(), image)?;
    let mut m = ptr::null_mut();
    let n = opts.count()?;
    // SAFETY: `image` is an aligned copy of the client's image; the option
    // arrays hold `n` entries; log buffers live as long as `opts`.
    ok(unsafe {
        entry(s.driver.cuModuleLoadDataEx)?(
            &mut m,
            image.as_ptr().cast(),
            n,
            opts.keys.as_mut_ptr().cast(),
            opts.values_ptr(),
        )
    })?;
    let owned = Owned {
        real: m as usize,
        ctx: lane.context(),
    };
    s.tables().modules.insert(id, owned);
    Ok(Reply {
        blob: opts.reply(),
        ..Reply::default()
    })
}

/// `cuModuleUnload`; its functions and globals leave the tables.
pub fn module_unload(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &module_unload::Request = message(req)?;
    let id = r.module.get();
    let real = s.tables().module(id)?;
    // SAFETY: `real` is a live module of this session.
    ok(unsafe { entry(s.driver.cuModuleUnload)?(as_handle(real).cast()) })?;
    s.tables().forget_module(id);
    Ok(Reply::default())
}

/// Asks the driver for each parameter's offset and size.
fn param_layout(s: &Session, f: Handle, kernel: bool) -> Result<Vec<(u32, u32)>, Status> {
    let mut params = Vec::new();
    for i in 0..MAX_KERNEL_PARAMS {
        let (mut off, mut sz) = (0usize, 0usize);
        // SAFETY: live function or kernel; both out-pointers are live locals.
        let st = unsafe {
            if kernel {
                entry(s.driver.cuKernelGetParamInfo)?(f.cast(), i, &mut off, &mut sz)
            } else {
                entry(s.driver.cuFuncGetParamInfo)?(f.cast(), i, &mut off, &mut sz)
            }
        };
        if st != SUCCESS {
            break;
        }
        let off = u32::try_from(off).map_err(|_| INVALID_VALUE)?;
        let sz = u32::try_from(sz).map_err(|_| INVALID_VALUE)?;
        params.push((off, sz));
    }
    Ok(params)
}

/// Registers a function or kernel under the client's id; returns its
/// parameter count and the reply's blob: each parameter's (offset u32,
/// size u32).
pub(super) fn register(
    s: &Session,
    id: u64,
    real: Handle,
    owner: u64,
    kernel: bool,
) -> Result<(U32, Vec<u8>), Status> {
    let params = param_layout(s, real, kernel)?;
    let mut blob = Vec::with_capacity(params.len() * 8);
    for (off, sz) in &params {
        blob.extend_from_slice(&off.to_le_bytes());
        blob.extend_from_slice(&sz.to_le_bytes());
    }
    let count = u32::try_from(params.len()).map_err(|_| INVALID_VALUE)?;
    s.tables().insert_function(
        id,
        Function {
            real: real as usize,
            module: owner,
            params: params.into(),
        },
    );
    Ok((U32::new(count), blob))
}

/// `cuModuleGetFunction` by name under the client's id.
pub fn module_get_function(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &module_get_function::Request = message(req)?;
    let (module, id) = (r.module.get(), r.function.get());
    let real_mod = s.tables().module(module)?;
    s.tables().fresh_function(id)?;
    let fname = string(&req.blob)?;
    let mut f = ptr::null_mut();
    // SAFETY: live module; NUL-terminated name; live out-pointer.
    ok(unsafe {
        entry(s.driver.cuModuleGetFunction)?(&mut f, as_handle(real_mod).cast(), fname.as_ptr())
    })?;
    let (params, blob) = register(s, id, f.cast(), module, false)?;
    Ok(Reply::new(&module_get_function::Reply { params }, blob))
}

/// A global's range becomes valid for copies, owned by `owner` (a module or
/// library id).
pub(super) fn register_global(s: &Session, owner: u64, p: u64, bytes: usize) {
    let range = Range {
        size: bytes as u64,
        owner: RangeOwner::Global { module: owner },
        device: None,
    };
    s.tables().ranges.insert(p, range);
}

/// `cuModuleGetGlobal_v2` by name.
pub fn module_global(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &module_global::Request = message(req)?;
    let owner = r.module.get();
    let real = s.tables().module(owner)?;
    let gname = string(&req.blob)?;
    let (mut p, mut bytes) = (0, 0);
    // SAFETY: live module; NUL-terminated name; live out-pointers.
    ok(unsafe {
        entry(s.driver.cuModuleGetGlobal_v2)?(
            &mut p,
            &mut bytes,
            as_handle(real).cast(),
            gname.as_ptr(),
        )
    })?;
    register_global(s, owner, p, bytes);
    let reply = module_global::Reply {
        dptr: U64::new(p),
        bytes: U64::new(bytes as u64),
    };
    Ok(Reply::new(&reply, Vec::new()))
}

/// The module's kernel names, each NUL-terminated, in the driver's order;
/// the walk loads every function of the module.
pub fn module_kernel_names(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &module_kernel_names::Request = message(req)?;
    let real = s.tables().module(r.module.get())?;
    // SAFETY: `real` is a live module of this session.
    let kernels = unsafe { s.driver.module_kernels(as_handle(real))? };
    let mut blob = Vec::new();
    for (_, name) in kernels {
        blob.extend_from_slice(name.as_bytes());
        blob.push(0);
    }
    Ok(Reply {
        blob,
        ..Reply::default()
    })
}

/// `cuFuncGetName` or `cuKernelGetName`: the name as the reply's blob.
pub fn function_name(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &function_name::Request = message(req)?;
    let real = s.tables().function(r.function.get())?.real;
    let mut name: *const std::ffi::c_char = ptr::null();
    // SAFETY: a live function or kernel of this session; a live out-pointer.
    ok(unsafe {
        if r.kernel != 0 {
            entry(s.driver.cuKernelGetName)?(&mut name, as_handle(real).cast())
        } else {
            entry(s.driver.cuFuncGetName)?(&mut name, as_handle(real).cast())
        }
    })?;
    if name.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: the driver's NUL-terminated name, valid while the module lives.
    let bytes = unsafe { std::ffi::CStr::from_ptr(name) }
        .to_bytes()
        .to_vec();
    Ok(Reply {
        blob: bytes,
        ..Reply::default()
    })
}

/// Most handles one enumeration returns.
const MAX_ENUMERATED: u32 = 1 << 16;

/// `cuModuleEnumerateFunctions` or `cuLibraryEnumerateKernels`: every
/// handle the driver gives joins the function table (under the id it
/// already has, or one minted here) with its parameter layout.
pub fn enumerate_functions(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &enumerate_functions::Request = message(req)?;
    let (owner, count, library) = (r.owner.get(), r.count.get(), r.library != 0);
    if count > MAX_ENUMERATED {
        return Err(INVALID_VALUE);
    }
    let real_owner = if library {
        s.tables().library(owner)?
    } else {
        s.tables().module(owner)?
    };
    let mut found: Vec<Handle> = vec![ptr::null_mut(); count as usize];
    // SAFETY: a live module or library; `found` holds `count` handles.
    ok(unsafe {
        if library {
            entry(s.driver.cuLibraryEnumerateKernels)?(
                found.as_mut_ptr().cast(),
                count,
                as_handle(real_owner).cast(),
            )
        } else {
            entry(s.driver.cuModuleEnumerateFunctions)?(
                found.as_mut_ptr().cast(),
                count,
                as_handle(real_owner).cast(),
            )
        }
    })?;
    let kind = if library {
        HandleKind::Kernel
    } else {
        HandleKind::Function
    };
    let mut blob = Vec::new();
    for real in &found {
        if real.is_null() {
            blob.extend_from_slice(&0u64.to_le_bytes());
            blob.extend_from_slice(&0u32.to_le_bytes());
            continue;
        }
        let known = s.tables().function_id(*real as usize);
        let id = match known {
            Some(id) => id,
            None => {
                let id = s.tables().mint(kind);
                register(s, id, *real, owner, library)?;
                id
            }
        };
        let params = s.tables().function(id)?.params.clone();
        blob.extend_from_slice(&id.to_le_bytes());
        blob.extend_from_slice(
            &u32::try_from(params.len())
                .map_err(|_| INVALID_VALUE)?
                .to_le_bytes(),
        );
        for (off, sz) in params.iter() {
            blob.extend_from_slice(&off.to_le_bytes());
            blob.extend_from_slice(&sz.to_le_bytes());
        }
    }
    let reply = enumerate_functions::Reply {
        found: U32::new(count),
    };
    Ok(Reply::new(&reply, blob))
}
