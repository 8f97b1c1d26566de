//! Streams the client creates under its own ids; the queries and waits on
//! streams are table calls (`generated/mod.rs`).

use std::ptr;

use vgpu_proto::{stream_create, stream_destroy, Request};

use super::calls::{message, ok, Reply};
use super::exec::Lane;
use super::status::INVALID_HANDLE;
use super::tables::{as_handle, Owned};
use super::Session;
use crate::driver::{entry, Status};

/// `cuStreamCreateWithPriority` under the client's id.
pub fn stream_create(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &stream_create::Request = message(req)?;
    let id = r.stream.get();
    s.tables().fresh_stream(id)?;
    let mut st = ptr::null_mut();
    // SAFETY: the out-pointer is a live local.
    ok(unsafe {
        entry(s.driver.cuStreamCreateWithPriority)?(&mut st, r.flags.get(), r.priority.get())
    })?;
    let owned = Owned {
        real: st as usize,
        ctx: req.ctx,
    };
    s.tables().insert_stream(id, owned);
    Ok(Reply::default())
}

/// `cuStreamDestroy_v2`; the sentinels cannot be destroyed.
pub fn stream_destroy(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &stream_destroy::Request = message(req)?;
    let id = r.stream.get();
    if id < 3 {
        return Err(INVALID_HANDLE);
    }
    let real = s.tables().stream(id)?;
    // SAFETY: `real` is a live stream of this session.
    ok(unsafe { entry(s.driver.cuStreamDestroy_v2)?(as_handle(real).cast()) })?;
    s.tables().forget_stream(id);
    Ok(Reply::default())
}
