//! Green contexts in the worker: what the generated calls cannot say. A
//! green context's destruction also ends its context, whose id (minted when
//! the client asked `cuCtxFromGreenCtx`) and resources are forgotten as for
//! `cuCtxDestroy`; splitting an SM resource writes a caller-sized array.

use std::sync::atomic::Ordering;

use vgpu_abi::types::{CUcontext, CUdevResource};
use vgpu_abi::HandleKind;
use vgpu_proto::{green_ctx_destroy, sm_resource_split, Request};

use super::calls::{as_ptr, message, ok, record, Reply};
use super::exec::Lane;
use super::status::INVALID_VALUE;
use super::Session;
use crate::driver::{entry, Status};

/// The most groups one split may ask for (the driver's own limit is the
/// device's SM count).
const MAX_GROUPS: u32 = 1024;

/// `cuGreenCtxDestroy` of a green context of this session.
pub fn green_ctx_destroy(lane: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &green_ctx_destroy::Request = message(req)?;
    let id = r.green.get();
    let real = s.tables().handle(HandleKind::GreenCtx, id)?;
    let mut ctx: CUcontext = std::ptr::null_mut();
    if real != 0 {
        // SAFETY: a live green context of this session; `ctx` is a local.
        ok(unsafe { entry(s.driver.cuCtxFromGreenCtx)?(&mut ctx, as_ptr(real)) })?;
    }
    // SAFETY: a live green context of this session (or NULL, which the driver refuses).
    ok(unsafe { entry(s.driver.cuGreenCtxDestroy)?(as_ptr(real)) })?;
    let ended: Vec<u64> = {
        let mut t = s.tables();
        t.forget_other(HandleKind::GreenCtx, id);
        let ended: Vec<u64> = t
            .ctxs
            .iter()
            .filter(|(_, &c)| c != 0 && c == ctx as usize)
            .map(|(&i, _)| i)
            .collect();
        for i in &ended {
            t.ctxs.remove(i);
            t.forget_context_resources(*i);
        }
        ended
    };
    if !ended.is_empty() {
        s.contexts_changed.fetch_add(1, Ordering::SeqCst);
        for i in ended {
            lane.forget_context(i);
        }
    }
    Ok(Reply::default())
}

/// `cuDevSmResourceSplitByCount`.
pub fn sm_resource_split(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &sm_resource_split::Request = message(req)?;
    let mut groups = r.groups.get();
    if r.want_result != 0 && groups > MAX_GROUPS {
        return Err(INVALID_VALUE);
    }
    // SAFETY: a C struct of integers and bytes: valid for any bytes.
    let input: CUdevResource = unsafe { record(&r.input) };
    // SAFETY: all-zero bytes are a valid resource (integers and bytes).
    let zero: CUdevResource = unsafe { std::mem::zeroed() };
    let mut result = vec![
        zero;
        if r.want_result != 0 {
            groups as usize
        } else {
            0
        }
    ];
    let mut remaining = zero;
    let result_ptr = if r.want_result != 0 {
        result.as_mut_ptr()
    } else {
        std::ptr::null_mut()
    };
    let remaining_ptr = if r.want_remaining != 0 {
        &raw mut remaining
    } else {
        std::ptr::null_mut()
    };
    // SAFETY: `result` holds `groups` resources (or is NULL), the others are locals.
    ok(unsafe {
        entry(s.driver.cuDevSmResourceSplitByCount)?(
            result_ptr,
            &mut groups,
            &input,
            remaining_ptr,
            r.use_flags.get(),
            r.min_count.get(),
        )
    })?;
    result.truncate(groups as usize);
    let blob: Vec<u8> = result.iter().flat_map(resource_bytes).collect();
    let mut rep = sm_resource_split::Reply {
        groups: groups.into(),
        remaining: [0; 144],
    };
    rep.remaining.copy_from_slice(&resource_bytes(&remaining));
    Ok(Reply::new(&rep, blob))
}

/// The bytes of a resource, as the wire carries it.
fn resource_bytes(r: &CUdevResource) -> [u8; 144] {
    const { assert!(size_of::<CUdevResource>() == 144) };
    let mut out = [0u8; 144];
    // SAFETY: `r` is a live resource of exactly 144 bytes, all of them
    // initialised (it was zeroed before the driver wrote it).
    unsafe {
        std::ptr::copy_nonoverlapping(std::ptr::from_ref(r).cast::<u8>(), out.as_mut_ptr(), 144);
    }
    out
}
