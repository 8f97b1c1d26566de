//! Inter-process handles (`cuIpc*`) between sessions.
//!
//! The handles are the driver's own: on a GPU host the workers are ordinary
//! processes, so the driver's IPC works between them. What vgpu adds is
//! who may open what: each export is recorded in the host's registry
//! ([`super::registry`]), and an open is refused with
//! `CUDA_ERROR_INVALID_VALUE` before the driver sees the handle unless a
//! live session of the same uid exported it (a handle no live session
//! exported gets the driver's answer for a handle it cannot open). A TCP
//! session's uid is only what its client states, and the handle names
//! memory of this host that the client cannot reach, so its opens are
//! refused as handles the driver cannot open.
//!
//! Opened memory joins the session's live ranges (copies and memsets may
//! reach it) until its last `cuIpcCloseMemHandle`; the driver counts the
//! opens of one handle in one context and returns the same address, and
//! so does the worker's table.

use std::collections::HashMap;

use vgpu_abi::types::{CUipcEventHandle, CUipcMemHandle};
use vgpu_proto::{
    ipc_close_mem_handle, ipc_get_event_handle, ipc_get_mem_handle, ipc_open_event_handle,
    ipc_open_mem_handle, Request,
};
use zerocopy::little_endian::{U32, U64};

use super::calls::{message, ok, Reply};
use super::exec::Lane;
use super::registry::{Exporter, Handle, Refusal};
use super::status::{INVALID_VALUE, MAP_FAILED};
use super::tables::{as_handle, Owned, Range, RangeOwner, Tables};
use super::Session;
use crate::driver::{entry, DevPtr, Status};

/// The session's exports and opened mappings.
#[derive(Debug, Default)]
pub struct Ipc {
    /// Handles this session exported: memory by base address, events by id.
    exported: Vec<(Export, Handle)>,
    /// Opened mappings by address: their size and how many opens are
    /// outstanding.
    opened: HashMap<DevPtr, (u64, u32)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Export {
    Memory(DevPtr),
    Event(u64),
    /// A shareable descriptor's file (`vmm::share`): recorded for the life
    /// of the session.
    File,
}

impl Ipc {
    /// Notes a file exported as a shareable descriptor, to forget it when
    /// the session ends.
    pub fn exported_file(&mut self, key: Handle) {
        if !self.exported.contains(&(Export::File, key)) {
            self.exported.push((Export::File, key));
        }
    }
}

/// Who this session is, for the registry.
fn exporter(s: &Session) -> Option<Exporter> {
    Some(Exporter {
        uid: s.peer.uid?,
        worker: std::process::id(),
        session: s.peer.label.clone(),
    })
}

/// Records an export of this session.
fn record(s: &Session, what: Export, handle: &Handle) {
    let Some(who) = exporter(s) else {
        tracing::info!(
            session = %s.peer.label,
            "IPC handle exported by a TCP session: no session of this host may open it"
        );
        return;
    };
    s.registry.record(handle, &who);
    let mut t = s.tables();
    if !t.ipc.exported.contains(&(what, *handle)) {
        t.ipc.exported.push((what, *handle));
    }
}

/// Refuses `handle` unless a live session of this session's uid exported it:
/// another tenant's handle is `CUDA_ERROR_INVALID_VALUE`; one that no live
/// session exported is `unknown`, the driver's answer for a handle it
/// cannot open (`CUDA_ERROR_INVALID_VALUE` for memory, `CUDA_ERROR_MAP_FAILED`
/// for events, on driver 580).
fn admit(s: &Session, handle: &Handle, what: &str, unknown: Status) -> Result<(), Status> {
    let Some(uid) = s.peer.uid else {
        tracing::warn!(
            session = %s.peer.label,
            "{what} refused: a TCP session cannot reach inter-process handles of the mediator's \
             host (its uid is unverified, and the memory is not on its machine)"
        );
        return Err(unknown);
    };
    match s.registry.admit(handle, uid) {
        Ok(_) => Ok(()),
        Err(Refusal::Unknown) => {
            tracing::warn!(
                session = %s.peer.label,
                "{what} refused: no live session of this host exported this handle"
            );
            Err(unknown)
        }
        Err(Refusal::OtherUid(who)) => {
            tracing::warn!(
                session = %s.peer.label,
                uid,
                exporter = %who.session,
                exporter_uid = who.uid,
                "{what} refused: the handle belongs to another tenant's session"
            );
            Err(INVALID_VALUE)
        }
    }
}

/// `cuIpcGetMemHandle` of this session's memory.
pub fn ipc_get_mem_handle(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &ipc_get_mem_handle::Request = message(req)?;
    let dptr = r.dptr.get();
    let base = {
        let t = s.tables();
        t.check(dptr, 1)?;
        t.ranges
            .range(..=dptr)
            .next_back()
            .map_or(dptr, |(&b, _)| b)
    };
    let mut h = CUipcMemHandle { reserved: [0; 64] };
    // SAFETY: the out-pointer is a live local; `dptr` is in a live range.
    ok(unsafe { entry(s.driver.cuIpcGetMemHandle)?(&mut h, dptr) })?;
    let handle = h.reserved.map(|c| c as u8);
    record(s, Export::Memory(base), &handle);
    Ok(Reply::new(
        &ipc_get_mem_handle::Reply { handle },
        Vec::new(),
    ))
}

/// `cuIpcOpenMemHandle_v2` of a handle a session of the same uid exported.
pub fn ipc_open_mem_handle(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &ipc_open_mem_handle::Request = message(req)?;
    admit(s, &r.handle, "cuIpcOpenMemHandle", INVALID_VALUE)?;
    let h = CUipcMemHandle {
        reserved: r.handle.map(|b| b as std::ffi::c_char),
    };
    let mut p: DevPtr = 0;
    // SAFETY: the out-pointer is a live local; the handle is plain bytes.
    ok(unsafe { entry(s.driver.cuIpcOpenMemHandle_v2)?(&mut p, h, r.flags.get()) })?;
    let (mut base, mut size) = (0, 0);
    // SAFETY: live out-pointers; `p` was just mapped by the driver.
    let st = unsafe { entry(s.driver.cuMemGetAddressRange_v2)?(&mut base, &mut size, p) };
    if ok(st).is_err() || base != p {
        // SAFETY: `p` was opened above and is closed once.
        unsafe { entry(s.driver.cuIpcCloseMemHandle)?(p) };
        return Err(INVALID_VALUE);
    }
    let size = size as u64;
    let mut t = s.tables();
    t.ipc.opened.entry(p).or_insert((size, 0)).1 += 1;
    let owner = RangeOwner::Ipc { ctx: req.ctx };
    t.ranges.insert(
        p,
        Range {
            size,
            owner,
            device: None,
        },
    );
    let reply = ipc_open_mem_handle::Reply {
        dptr: U64::new(p),
        size: U64::new(size),
    };
    Ok(Reply::new(&reply, Vec::new()))
}

/// `cuIpcCloseMemHandle` of an address this session opened.
pub fn ipc_close_mem_handle(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &ipc_close_mem_handle::Request = message(req)?;
    let p = r.dptr.get();
    if !s.tables().ipc.opened.contains_key(&p) {
        tracing::info!("cuIpcCloseMemHandle({p:#x}): this session did not open it");
        return Err(INVALID_VALUE);
    }
    // SAFETY: `p` is an address the driver opened for this session.
    ok(unsafe { entry(s.driver.cuIpcCloseMemHandle)?(p) })?;
    let mut t = s.tables();
    let left = match t.ipc.opened.get_mut(&p) {
        Some((_, n)) if *n > 1 => {
            *n -= 1;
            *n
        }
        _ => {
            t.ipc.opened.remove(&p);
            t.ranges.remove(&p);
            0
        }
    };
    let reply = ipc_close_mem_handle::Reply {
        left: U32::new(left),
    };
    Ok(Reply::new(&reply, Vec::new()))
}

/// `cuIpcGetEventHandle` of an interprocess event of this session.
pub fn ipc_get_event_handle(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &ipc_get_event_handle::Request = message(req)?;
    let id = r.event.get();
    let ev = s.tables().event(id)?;
    let mut h = CUipcEventHandle { reserved: [0; 64] };
    // SAFETY: the out-pointer is a live local; `ev` is a live event.
    ok(unsafe { entry(s.driver.cuIpcGetEventHandle)?(&mut h, as_handle(ev).cast()) })?;
    let handle = h.reserved.map(|c| c as u8);
    record(s, Export::Event(id), &handle);
    Ok(Reply::new(
        &ipc_get_event_handle::Reply { handle },
        Vec::new(),
    ))
}

/// `cuIpcOpenEventHandle` under the client's new id.
pub fn ipc_open_event_handle(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &ipc_open_event_handle::Request = message(req)?;
    let id = r.event.get();
    Tables::fresh(&s.tables().events, id)?;
    admit(s, &r.handle, "cuIpcOpenEventHandle", MAP_FAILED)?;
    let h = CUipcEventHandle {
        reserved: r.handle.map(|b| b as std::ffi::c_char),
    };
    let mut ev = std::ptr::null_mut();
    // SAFETY: the out-pointer is a live local; the handle is plain bytes.
    ok(unsafe { entry(s.driver.cuIpcOpenEventHandle)?(&mut ev, h) })?;
    let owned = Owned {
        real: ev as usize,
        ctx: req.ctx,
    };
    s.tables().events.insert(id, owned);
    Ok(Reply::default())
}

/// Memory at `base` was freed: its handles name nothing any more.
pub fn freed(s: &Session, base: DevPtr) {
    let gone: Vec<Handle> = {
        let mut t = s.tables();
        let (gone, kept) = std::mem::take(&mut t.ipc.exported)
            .into_iter()
            .partition(|(what, _)| *what == Export::Memory(base));
        t.ipc.exported = kept;
        gone.into_iter().map(|(_, h)| h).collect()
    };
    for h in &gone {
        s.registry.forget(h);
    }
}

/// The session ends: its exports leave the registry (importers keep what
/// they opened; the driver holds it for them).
pub fn session_ends(s: &Session) {
    let gone = std::mem::take(&mut s.tables().ipc.exported);
    for (_, h) in &gone {
        s.registry.forget(h);
    }
}
