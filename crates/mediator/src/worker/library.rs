//! Libraries and kernels (the CUDA 12 loading API that cudart uses): loading,
//! kernels, globals, the library's module and a kernel's function, under
//! the client's ids. Function and kernel attributes and occupancy are table
//! calls (`generated/mod.rs`).

use std::ffi::c_int;
use std::ptr;

use vgpu_proto::{
    kernel_get_function, library_get_kernel, library_get_module, library_global, library_load_data,
    library_unified_function, library_unload, Request,
};

use super::calls::{message, ok, size, split, string, Reply};
use super::exec::Lane;
use super::module::{image, register, register_global};
use super::options::Options;
use super::status::INVALID_VALUE;
use super::tables::{as_handle, Owned, Tables};
use super::Session;
use crate::driver::{entry, Status};

/// `CUlibraryOption` 0: a host pointer table, meaningless in another process.
const LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE: c_int = 0;

/// `cuLibraryLoadData` under the client's id, with the JIT and library
/// options of the blob; the reply as for a module load.
pub fn library_load_data(lane: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &library_load_data::Request = message(req)?;
    let id = r.library.get();
    let njit = size(u64::from(r.jit_options.get()))?;
    let nlib = size(u64::from(r.library_options.get()))?;
    Tables::fresh(&s.tables().libraries, id)?;
    let (jit, rest) = split(&req.blob, njit.checked_mul(16).ok_or(INVALID_VALUE)?)?;
    let (lib, image) = split(rest, nlib.checked_mul(16).ok_or(INVALID_VALUE)?)?;
    let mut jit = Options::parse(jit)?.with_jit_logs();
    let mut lib = Options::parse(lib)?;
    let image = self::image(s, r.stage.get(), image)?;
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
    let mut l = ptr::null_mut();
    let (nj, nl) = (jit.count()?, lib.count()?);
    let image_len = image.len() * 8;
    // SAFETY: as for a module load; both option arrays hold their counts.
    let st = unsafe {
        entry(s.driver.cuLibraryLoadData)?(
            &mut l,
            image.as_ptr().cast(),
            jit.keys.as_mut_ptr().cast(),
            jit.values_ptr(),
            nj,
            lib.keys.as_mut_ptr().cast(),
            lib.values_ptr(),
            nl,
        )
    };
    if let Err(st) = ok(st) {
        tracing::warn!(
            status = st.0,
            image_bytes = image_len,
            jit = ?jit.keys,
            library = ?lib.keys.iter().zip(&lib.values).collect::<Vec<_>>(),
            "cuLibraryLoadData failed"
        );
        return Err(st);
    }
    let owned = Owned {
        real: l as usize,
        ctx: lane.context(),
    };
    s.tables().libraries.insert(id, owned);
    Ok(Reply {
        blob: jit.reply(),
        ..Reply::default()
    })
}

/// `cuLibraryUnload`.
pub fn library_unload(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &library_unload::Request = message(req)?;
    let id = r.library.get();
    let real = s.tables().library(id)?;
    // SAFETY: `real` is a live library of this session.
    ok(unsafe { entry(s.driver.cuLibraryUnload)?(as_handle(real).cast()) })?;
    s.tables().forget_library(id);
    Ok(Reply::default())
}

/// `cuLibraryGetKernel` by name under the client's id.
pub fn library_get_kernel(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &library_get_kernel::Request = message(req)?;
    let (library, id) = (r.library.get(), r.kernel.get());
    let real_lib = s.tables().library(library)?;
    s.tables().fresh_function(id)?;
    let kname = string(&req.blob)?;
    let mut k = ptr::null_mut();
    // SAFETY: live library; NUL-terminated name; live out-pointer.
    ok(unsafe {
        entry(s.driver.cuLibraryGetKernel)?(&mut k, as_handle(real_lib).cast(), kname.as_ptr())
    })?;
    let (params, blob) = register(s, id, k.cast(), library, true)?;
    Ok(Reply::new(&library_get_kernel::Reply { params }, blob))
}

/// `cuKernelGetFunction` under the client's id.
pub fn kernel_get_function(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &kernel_get_function::Request = message(req)?;
    let (kernel, id) = (r.kernel.get(), r.function.get());
    let k = s.tables().function(kernel)?.clone();
    s.tables().fresh_function(id)?;
    let mut f = ptr::null_mut();
    // SAFETY: live kernel; live out-pointer.
    ok(unsafe { entry(s.driver.cuKernelGetFunction)?(&mut f, as_handle(k.real).cast()) })?;
    let (params, blob) = register(s, id, f.cast(), k.module, false)?;
    Ok(Reply::new(&kernel_get_function::Reply { params }, blob))
}

/// `cuLibraryGetModule` under the client's id.
pub fn library_get_module(lane: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &library_get_module::Request = message(req)?;
    let (library, id) = (r.library.get(), r.module.get());
    let real_lib = s.tables().library(library)?;
    Tables::fresh(&s.tables().modules, id)?;
    let mut m = ptr::null_mut();
    // SAFETY: live library; live out-pointer.
    ok(unsafe { entry(s.driver.cuLibraryGetModule)?(&mut m, as_handle(real_lib).cast()) })?;
    let owned = Owned {
        real: m as usize,
        ctx: lane.context(),
    };
    s.tables().modules.insert(id, owned);
    Ok(Reply::default())
}

/// `cuLibraryGetGlobal` by name.
pub fn library_global(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &library_global::Request = message(req)?;
    let owner = r.library.get();
    let real = s.tables().library(owner)?;
    let gname = string(&req.blob)?;
    let (mut p, mut bytes) = (0, 0);
    // SAFETY: live library; NUL-terminated name; live out-pointers.
    ok(unsafe {
        entry(s.driver.cuLibraryGetGlobal)?(
            &mut p,
            &mut bytes,
            as_handle(real).cast(),
            gname.as_ptr(),
        )
    })?;
    register_global(s, owner, p, bytes);
    let reply = library_global::Reply {
        dptr: (p).into(),
        bytes: (bytes as u64).into(),
    };
    Ok(Reply::new(&reply, Vec::new()))
}

/// `cuLibraryGetUnifiedFunction`: the driver's pointer, an address in this
/// process, travels back as a number.
pub fn library_unified_function(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &library_unified_function::Request = message(req)?;
    let real = s.tables().library(r.library.get())?;
    let symbol = string(&req.blob)?;
    let mut p = ptr::null_mut();
    // SAFETY: live library; NUL-terminated name; live out-pointer.
    ok(unsafe {
        entry(s.driver.cuLibraryGetUnifiedFunction)?(
            &mut p,
            as_handle(real).cast(),
            symbol.as_ptr(),
        )
    })?;
    let reply = library_unified_function::Reply {
        fptr: (p as u64).into(),
    };
    Ok(Reply::new(&reply, Vec::new()))
}
