//! A worker's side of its tenant: the quota checks around each request,
//! the tenant's view of `cuMemGetInfo`, and the tenant's devices.
//!
//! The lane calls [`before`] and [`after`] around every request it runs
//! (`worker::exec`): a request that takes device memory reserves its size
//! first ([`super::quota`]); past the limit it fails with
//! `CUDA_ERROR_OUT_OF_MEMORY` and never reaches the driver.
//!
//! What is charged, and when:
//! - `cuMemAlloc`, `cuMemAllocPitch` (the driver's `pitch * height`, its
//!   padding included: the reservation is `width * height`, so a pitched
//!   allocation may pass the limit by its padding), `cuMemAllocAsync` and
//!   `cuMemAllocFromPoolAsync` (the allocation's size, not the pool's
//!   growth: a pool's cached, freed memory is not charged), `cuMemCreate`
//!   (the handle's size, charged until `cuMemRelease`);
//! - CUDA arrays and mipmapped arrays, by their elements' bytes, until they
//!   are destroyed ([`super::arrays`]);
//! - module and library globals once looked up, until unloaded
//!   ([`super::globals`]);
//! - graph memory allocation nodes, until the node or its graph is
//!   destroyed ([`super::graphs`]);
//! - not charged: stream-ordered allocations captured into graphs, and the
//!   context's own memory. `docs/security.md` lists these.

use std::sync::OnceLock;

use vgpu_proto::{mem_alloc, mem_alloc_async, mem_alloc_pitch, mem_create, pool_alloc_async};
use vgpu_proto::{Message, Op, Request};
use zerocopy::little_endian::{U32, U64};

use super::file::DeviceRef;
use super::quota;
use crate::driver::Status;

/// The worker's tenant.
#[derive(Debug)]
struct Own {
    name: String,
    devices: Option<Vec<DeviceRef>>,
}

static OWN: OnceLock<Own> = OnceLock::new();

/// What the supervisor told the worker about its tenant.
#[derive(Debug, Default)]
pub struct TenantArgs {
    pub name: Option<String>,
    pub index: Option<usize>,
    pub quota_table: Option<i32>,
    pub memory_limit: Option<u64>,
    pub devices: Option<String>,
    pub weight: Option<u32>,
}

/// In a worker: takes its tenant, and maps the quota table inherited as
/// descriptor `quota_table` with its session slot `slot`. A table that
/// cannot be mapped ends the worker: a session of a tenant is never served
/// without its quota.
pub fn attach(args: TenantArgs, slot: Option<usize>) -> Result<(), String> {
    let Some(name) = args.name else {
        return Ok(());
    };
    if let (Some(fd), Some(index), Some(slot)) = (args.quota_table, args.index, slot) {
        if fd < 3 {
            return Err(format!("--quota-table {fd} is not an inherited descriptor"));
        }
        // SAFETY: the supervisor started this process with `fd` open for
        // exactly this purpose; nothing else in the process owns it.
        let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        let limit = args.memory_limit.unwrap_or(u64::MAX);
        quota::attach(fd, index, slot, limit, args.weight)
            .map_err(|e| format!("quota table: {e}"))?;
    } else {
        return Err(format!("tenant {name}: no quota table or session slot"));
    }
    let devices = args.devices.as_deref().map(super::devices::from_arg);
    tracing::info!(
        tenant = name,
        memory_limit = args.memory_limit,
        devices = args.devices,
        weight = args.weight,
        "session of a tenant"
    );
    let _ = OWN.set(Own { name, devices });
    Ok(())
}

/// The worker's tenant's name, if it serves one.
pub fn tenant() -> Option<&'static str> {
    OWN.get().map(|o| o.name.as_str())
}

/// The `CUDA_VISIBLE_DEVICES` the worker must apply for a tenant with a
/// `devices` list: that list composed with the client's value `client`;
/// `None` where the tenant sees every device (the client's value stands).
pub fn visible_devices(client: Option<&str>) -> Option<String> {
    let allowed = OWN.get()?.devices.as_deref()?;
    Some(super::devices::compose(allowed, client))
}

/// The device memory `req` asks for, if it is a request that takes some.
fn asks_for(req: &Request) -> Option<u64> {
    fn field<M: Message>(req: &Request, f: impl Fn(&M) -> u64) -> Option<u64> {
        req.message::<M>().ok().map(f)
    }
    match req.op {
        Op::MemAlloc => field(req, |r: &mem_alloc::Request| r.bytes.get()),
        Op::MemAllocPitch => field(req, |r: &mem_alloc_pitch::Request| {
            r.width.get().saturating_mul(r.height.get())
        }),
        Op::MemAllocAsync => field(req, |r: &mem_alloc_async::Request| r.bytes.get()),
        Op::PoolAllocAsync => field(req, |r: &pool_alloc_async::Request| r.bytes.get()),
        Op::MemCreate => field(req, |r: &mem_create::Request| r.size.get()),
        _ => super::arrays::asks_for(req).or_else(|| super::graphs::asks_for(req)),
    }
}

/// Before a request runs: reserves the memory it asks for. Returns the
/// bytes reserved, or `CUDA_ERROR_OUT_OF_MEMORY` past the tenant's limit.
pub fn before(req: &Request) -> Result<u64, Status> {
    if !quota::attached() {
        return Ok(0);
    }
    if super::pacing::is_launch(req.op) {
        quota::pace_launch();
    }
    let Some(bytes) = asks_for(req) else {
        return Ok(0);
    };
    if quota::reserve(bytes) {
        Ok(bytes)
    } else {
        if let Some((limit, used)) = quota::view() {
            tracing::info!(
                op = req.op.name(),
                bytes,
                used,
                limit,
                "refused: the tenant's device-memory limit"
            );
        }
        Err(Status::CUDA_ERROR_OUT_OF_MEMORY)
    }
}

/// After a request ran (cheap for the requests that neither take nor give
/// back memory: no shared counter is touched): gives back its reservation (the session's held
/// memory, published by the tables, now counts what the driver gave) and
/// turns `cuMemGetInfo`'s answer into the tenant's view.
pub fn after(req: &Request, reserved: u64, reply: Option<&mut [u8]>) {
    if !quota::attached() {
        return;
    }
    match reply.as_deref() {
        // A live array keeps its reservation until it is destroyed.
        Some(r) if super::arrays::creates(req.op) && r.len() >= 8 => {
            let id = u64::from_le_bytes(r[..8].try_into().unwrap_or_default());
            super::arrays::created(id, reserved);
        }
        Some(r) => {
            let (charge, globals_back) = super::globals::settle(req, r);
            quota::keep(charge);
            let (node_kept, nodes_back) = super::graphs::settle(req, r, reserved);
            let reserved = if node_kept { 0 } else { reserved };
            let back = [globals_back, nodes_back, super::arrays::destroyed(req)];
            quota::release(back.into_iter().fold(reserved, u64::saturating_add));
        }
        None => quota::release(reserved),
    }
    if !matches!(req.op, Op::MemGetInfo_v2 | Op::MemGetInfo) {
        return;
    }
    let (Some((limit, used)), Some(reply)) = (quota::view(), reply) else {
        return;
    };
    let tenant_free = limit.saturating_sub(used);
    match req.op {
        Op::MemGetInfo_v2 => {
            if let Ok(r) = zerocopy::FromBytes::mut_from_bytes(reply) {
                let r: &mut vgpu_proto::mem_get_info_v2::Reply = r;
                r.free = U64::new(r.free.get().min(tenant_free));
                r.total = U64::new(r.total.get().min(limit));
            }
        }
        Op::MemGetInfo => {
            if let Ok(r) = zerocopy::FromBytes::mut_from_bytes(reply) {
                let r: &mut vgpu_proto::mem_get_info::Reply = r;
                let clamp = |v: u64| U32::new(u32::try_from(v).unwrap_or(u32::MAX));
                r.free = clamp(u64::from(r.free.get()).min(tenant_free));
                r.total = clamp(u64::from(r.total.get()).min(limit));
            }
        }
        _ => {}
    }
}
