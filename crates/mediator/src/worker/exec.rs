//! Runs one request on the driver: makes the calling thread's context
//! current on the lane, then dispatches by operation (`generated/mod.rs`):
//! table calls are generated, hand-written operations live in their area's
//! module (`context`, `memory`, `stream`, `event`, `module`, `library`,
//! `launch`, `copy`, `host`, `pointer`, `pool`).
//!
//! Each lane keeps the driver's current context in step with the calling
//! client thread's, for every request: the request carries that thread's
//! context id, and the lane calls `cuCtxSetCurrent` only when it changes.
//! A thread that makes a context current with `cuCtxSetCurrent` alone costs
//! no round trip, so its lane learns the context from its next request,
//! whatever that request is.

use std::sync::atomic::Ordering;

use vgpu_proto::Request;

use super::calls::{ok, Reply};
use super::status::{CONTEXT_IS_DESTROYED, INVALID_VALUE};
use super::tables::as_handle;
use super::{launch, Session};
use crate::driver::{entry, Handle, Status};

/// One lane's view of the driver's per-thread state.
#[derive(Debug, Default)]
pub struct Lane {
    /// The client context id current on this lane's thread, if known.
    pub(super) current: Option<u64>,
    /// The session's context generation when `current` was last found live.
    checked_at: u64,
    /// Function and stream ids this lane launched with, translated.
    pub(super) launches: launch::Translations,
    /// The descriptor that followed the request being run, for an
    /// operation that takes one (`Op::takes_fd`); `None` if none came.
    pub(super) fd_in: Option<std::os::fd::OwnedFd>,
    /// A sent reply's bytes, kept for the next device-to-host copy to write
    /// into ([`Lane::out_buffer`]).
    spare_out: Vec<u8>,
}

impl Lane {
    /// A buffer of `len` bytes for a reply's blob, to be overwritten: the
    /// last sent reply's, when there is one. Pieces of a large copy are
    /// alike in size, so each reuses the last one's pages as they are,
    /// neither freed, faulted in again nor cleared.
    pub(super) fn out_buffer(&mut self, len: usize) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.spare_out);
        if out.len() < len {
            out.resize(len, 0);
        } else {
            out.truncate(len);
        }
        out
    }

    /// Takes back a sent reply's blob for [`Lane::out_buffer`].
    pub fn recycle(&mut self, blob: Vec<u8>) {
        if blob.capacity() > self.spare_out.capacity() {
            self.spare_out = blob;
        }
    }

    /// Runs `req`, returning its results or the failing `CUresult`.
    pub fn execute(&mut self, s: &Session, req: &Request) -> Result<Reply, Status> {
        if req.op.needs_context() {
            self.bind(s, req.ctx)?;
        } else {
            self.follow(s, req.ctx);
        }
        // The tenant's quota: reserved before, settled after (`tenants::worker`).
        let reserved = crate::tenants::worker::before(req)?;
        let mut result = super::generated::dispatch(self, s, req);
        let reply = result.as_mut().ok().map(|r| r.fixed.as_mut_slice());
        crate::tenants::worker::after(req, reserved, reply);
        if result.is_ok() && super::held::changes_contexts(req.op) {
            super::held::publish_contexts(s, s.device_count);
        }
        result
    }

    /// Binds the client thread's context for a call that needs none: such a
    /// call still runs under it, as on the driver, where some answers
    /// depend on it (`cuPointerGetAttribute` of a device pointer fails with
    /// no context current). If the context is gone, the call runs with none.
    fn follow(&mut self, s: &Session, ctx: u64) {
        if self.bind(s, ctx).is_err() && self.bind(s, 0).is_err() {
            tracing::debug!(ctx, "context-free call: no context bound");
        }
    }

    /// Makes the client thread's context current on this lane.
    fn bind(&mut self, s: &Session, ctx: u64) -> Result<(), Status> {
        // No context created or destroyed since `ctx` was found live and
        // made current here: nothing to look up.
        let generation = s.contexts_changed.load(Ordering::SeqCst);
        if self.current == Some(ctx) && self.checked_at == generation {
            return Ok(());
        }
        let real = if ctx == 0 {
            0
        } else {
            s.tables().ctx(ctx).ok_or(CONTEXT_IS_DESTROYED)?
        };
        if self.current != Some(ctx) {
            // SAFETY: `real` is a live context of this session, or NULL.
            ok(unsafe { entry(s.driver.cuCtxSetCurrent)?(as_handle(real).cast()) })?;
            self.current = Some(ctx);
        }
        self.checked_at = generation;
        Ok(())
    }

    /// The context id current on this lane (0: none).
    pub(super) fn context(&self) -> u64 {
        self.current.unwrap_or(0)
    }

    /// Forgets the current context if it is `ctx` (destroyed).
    pub(super) fn forget_context(&mut self, ctx: u64) {
        if self.current == Some(ctx) {
            self.current = None;
        }
    }

    /// Records that `ctx` was made current by a call (a creation).
    pub(super) fn made_current(&mut self, ctx: u64) {
        self.current = Some(ctx);
    }
}

/// Checks device ranges against the session's live allocations and
/// resolves the stream id.
pub(super) fn checked(s: &Session, ranges: &[(u64, u64)], stream: u64) -> Result<Handle, Status> {
    let t = s.tables();
    for &(p, len) in ranges {
        if let Err(why) = t.check_range(p, len) {
            tracing::warn!("memory operation refused: {why}");
            return Err(INVALID_VALUE);
        }
    }
    Ok(as_handle(t.stream(stream)?))
}
