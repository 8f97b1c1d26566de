//! Events the client creates under its own ids; recording, waiting and
//! timing are table calls (`generated/mod.rs`).

use std::ptr;

use vgpu_proto::{event_create, event_destroy, Request};

use super::calls::{message, ok, Reply};
use super::exec::Lane;
use super::tables::{as_handle, Owned, Tables};
use super::Session;
use crate::driver::{entry, Status};

/// `cuEventCreate` under the client's id.
pub fn event_create(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &event_create::Request = message(req)?;
    let id = r.event.get();
    Tables::fresh(&s.tables().events, id)?;
    let mut ev = ptr::null_mut();
    // SAFETY: the out-pointer is a live local.
    ok(unsafe { entry(s.driver.cuEventCreate)?(&mut ev, r.flags.get()) })?;
    let owned = Owned {
        real: ev as usize,
        ctx: req.ctx,
    };
    s.tables().events.insert(id, owned);
    Ok(Reply::default())
}

/// `cuEventDestroy_v2`.
pub fn event_destroy(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &event_destroy::Request = message(req)?;
    let id = r.event.get();
    let real = s.tables().event(id)?;
    // SAFETY: `real` is a live event of this session.
    ok(unsafe { entry(s.driver.cuEventDestroy_v2)?(as_handle(real).cast()) })?;
    s.tables().events.remove(&id);
    Ok(Reply::default())
}
