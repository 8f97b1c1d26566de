//! The JIT linker (`cuLink*`): a link state of the driver per client id,
//! with the JIT options given at its creation.
//!
//! The driver keeps pointers to those options' values and log buffers and
//! writes them during later calls on the link, so the worker keeps its copy
//! of them (with log buffers of its own, as for module loads) until the link
//! is destroyed, and sends them back after every call that can write them:
//! failed inputs too, whose error log the application reads.

use std::ffi::{c_char, c_void};
use std::ptr;
use std::sync::{Arc, Mutex, MutexGuard};

use vgpu_proto::{link_add_data, link_complete, link_create, link_destroy, Request};
use zerocopy::little_endian::{U32, U64};

use super::calls::{aligned, message, ok, size, split, string, Reply};
use super::exec::Lane;
use super::options::Options;
use super::status::{INVALID_HANDLE, INVALID_VALUE};
use super::Session;
use crate::driver::{entry, Status};

/// A live link: the driver's state and the options it writes into.
#[derive(Debug)]
pub struct Link {
    real: usize,
    options: Options,
}

// SAFETY: the raw pointers in `options` point into the link's own heap
// buffers (its values and log buffers), which move with it; the link is
// only reached through its mutex, so one thread at a time touches them.
unsafe impl Send for Link {}

/// Links by the client's id. Each sits behind its own lock, so a long
/// compile holds neither the session's tables nor other links.
pub type Links = std::collections::HashMap<u64, Arc<Mutex<Link>>>;

fn lock(link: &Mutex<Link>) -> MutexGuard<'_, Link> {
    link.lock().unwrap_or_else(|e| e.into_inner())
}

fn find(s: &Session, id: u64) -> Result<Arc<Mutex<Link>>, Status> {
    s.tables().links.get(&id).cloned().ok_or(INVALID_HANDLE)
}

/// `cuLinkCreate_v2` under the client's id.
pub fn link_create(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &link_create::Request = message(req)?;
    let id = r.link.get();
    if id == 0 || s.tables().links.contains_key(&id) {
        return Err(INVALID_VALUE);
    }
    let n = size(u64::from(r.options.get()))?;
    if req.blob.len() != n.checked_mul(16).ok_or(INVALID_VALUE)? {
        return Err(INVALID_VALUE);
    }
    let mut options = Options::parse(&req.blob)?.with_jit_logs();
    let mut real = ptr::null_mut();
    let count = options.count()?;
    // SAFETY: the option arrays hold `count` entries and, with the log
    // buffers, live in the link until it is destroyed (after the driver's).
    ok(unsafe {
        entry(s.driver.cuLinkCreate_v2)?(
            count,
            options.keys.as_mut_ptr().cast(),
            options.values_ptr(),
            &mut real,
        )
    })?;
    let link = Link {
        real: real as usize,
        options,
    };
    s.tables().links.insert(id, Arc::new(Mutex::new(link)));
    Ok(Reply::default())
}

/// `cuLinkAddData_v2`: the driver's status travels in the reply, after
/// which come the link's options and this call's.
pub fn link_add_data(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &link_add_data::Request = message(req)?;
    let link = find(s, r.link.get())?;
    let n = size(u64::from(r.options.get()))?;
    let (opts, rest) = split(&req.blob, n.checked_mul(16).ok_or(INVALID_VALUE)?)?;
    let (name, inline) = split(rest, size(u64::from(r.name_len.get()))?)?;
    let name = (r.has_name != 0).then(|| string(name)).transpose()?;
    let mut own = Options::parse(opts)?.with_jit_logs();
    let data = match r.stage.get() {
        0 => inline.to_vec(),
        stage if inline.is_empty() => s.tables().staged.remove(&stage).ok_or(INVALID_VALUE)?,
        _ => return Err(INVALID_VALUE),
    };
    let len = data.len();
    let data = aligned(&data);
    let count = own.count()?;
    let link = lock(&link);
    let name_ptr = name.as_ref().map_or(ptr::null(), |c| c.as_ptr());
    // SAFETY: a live link of this session; `data` holds `len` bytes; the
    // name is NULL or NUL-terminated; this call's option arrays hold
    // `count` entries and live across the call.
    let status = unsafe {
        entry(s.driver.cuLinkAddData_v2)?(
            link.real as *mut c_void as _,
            vgpu_abi::types::CUjitInputType(r.kind.get()),
            data.as_ptr().cast_mut().cast(),
            len,
            name_ptr.cast::<c_char>(),
            count,
            own.keys.as_mut_ptr().cast(),
            own.values_ptr(),
        )
    };
    let mut blob = link.options.reply();
    let link_options = u32::try_from(blob.len()).map_err(|_| INVALID_VALUE)?;
    blob.extend_from_slice(&own.reply());
    Ok(Reply::new(
        &link_add_data::Reply {
            status: U32::new(status.0),
            link_options: U32::new(link_options),
        },
        blob,
    ))
}

/// `cuLinkComplete`: the linked image is copied into the reply (the
/// driver's copy lives until the link is destroyed).
pub fn link_complete(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &link_complete::Request = message(req)?;
    let link = find(s, r.link.get())?;
    let link = lock(&link);
    let (mut cubin, mut len) = (ptr::null_mut(), 0usize);
    // SAFETY: a live link of this session; both out-pointers are locals.
    let status = unsafe {
        entry(s.driver.cuLinkComplete)?(link.real as *mut c_void as _, &mut cubin, &mut len)
    };
    let mut blob = link.options.reply();
    let link_options = u32::try_from(blob.len()).map_err(|_| INVALID_VALUE)?;
    let mut bytes = 0;
    if status.0 == 0 && !cubin.is_null() {
        if len > vgpu_proto::MAX_BLOB - blob.len() {
            return Err(INVALID_VALUE);
        }
        // SAFETY: the driver's image of `len` bytes, live until the link is destroyed.
        blob.extend_from_slice(unsafe { std::slice::from_raw_parts(cubin.cast::<u8>(), len) });
        bytes = len as u64;
    }
    Ok(Reply::new(
        &link_complete::Reply {
            status: U32::new(status.0),
            link_options: U32::new(link_options),
            cubin: U64::new(bytes),
        },
        blob,
    ))
}

/// `cuLinkDestroy`; the link's options go with it.
pub fn link_destroy(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &link_destroy::Request = message(req)?;
    let id = r.link.get();
    let link = find(s, id)?;
    let real = lock(&link).real;
    // SAFETY: a live link of this session.
    ok(unsafe { entry(s.driver.cuLinkDestroy)?(real as *mut c_void as _) })?;
    s.tables().links.remove(&id);
    Ok(Reply::default())
}
