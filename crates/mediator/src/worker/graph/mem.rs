//! Graph memory: the device's graph memory attributes, and memory
//! allocation nodes.

use std::ffi::c_void;

use vgpu_abi::types::{
    CUgraphMem_attribute, CUgraphNode, CUmemAccessDesc, CUmemAccess_flags,
    CUmemAllocationHandleType, CUmemAllocationType, CUmemLocation, CUmemLocationType,
    CUDA_MEM_ALLOC_NODE_PARAMS,
};
use vgpu_abi::HandleKind;
use vgpu_proto::{
    device_graph_mem_attribute, graph_mem_alloc_node, graph_mem_alloc_node_params, Request,
};
use zerocopy::little_endian::{I32, U32, U64};

use super::super::calls::{as_ptr, message, ok, Reply};
use super::super::exec::Lane;
use super::super::status::INVALID_VALUE;
use super::super::Session;
use crate::driver::{entry, Status};

/// `CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH`, the last attribute: the driver
/// reads or writes a `cuuint64_t` for each, so no other reaches it.
const LAST_ATTRIBUTE: u32 = 3;

/// `cuDeviceGetGraphMemAttribute` or `cuDeviceSetGraphMemAttribute`.
pub fn device_graph_mem_attribute(
    _: &mut Lane,
    s: &Session,
    req: &Request,
) -> Result<Reply, Status> {
    let r: &device_graph_mem_attribute::Request = message(req)?;
    if r.attr.get() > LAST_ATTRIBUTE {
        return Err(INVALID_VALUE);
    }
    let attr = CUgraphMem_attribute(r.attr.get());
    let mut value: u64 = r.value.get();
    let at = (&raw mut value).cast::<c_void>();
    // SAFETY: `value` is a live `cuuint64_t`, every attribute's type.
    ok(unsafe {
        match r.set {
            0 => entry(s.driver.cuDeviceGetGraphMemAttribute)?(r.dev.get(), attr, at),
            _ => entry(s.driver.cuDeviceSetGraphMemAttribute)?(r.dev.get(), attr, at),
        }
    })?;
    Ok(Reply::new(
        &device_graph_mem_attribute::Reply {
            value: U64::new(value),
        },
        Vec::new(),
    ))
}

/// One access descriptor on the wire: location type, location id, flags.
const ACCESS: usize = 12;

/// The access descriptors of a GraphMemAllocNode blob's tail.
fn access_descs(tail: &[u8], count: u32) -> Result<Vec<CUmemAccessDesc>, Status> {
    if tail.len() != count as usize * ACCESS {
        return Err(INVALID_VALUE);
    }
    let word = |c: &[u8], i: usize| u32::from_le_bytes([c[i], c[i + 1], c[i + 2], c[i + 3]]);
    let descs = tail.chunks_exact(ACCESS).map(|c| CUmemAccessDesc {
        location: CUmemLocation {
            type_: CUmemLocationType(word(c, 0)),
            id: word(c, 4).cast_signed(),
        },
        flags: CUmemAccess_flags(word(c, 8)),
    });
    Ok(descs.collect())
}

/// `cuGraphAddMemAllocNode`; the allocation's range joins the session's
/// live allocations, so copies, memsets and kernels may use it.
pub fn graph_mem_alloc_node(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &graph_mem_alloc_node::Request = message(req)?;
    let split = (r.deps.get() as usize)
        .checked_mul(8)
        .filter(|&n| n <= req.blob.len())
        .ok_or(INVALID_VALUE)?;
    let (ids, tail) = req.blob.split_at(split);
    let (deps, _) = super::dependencies(s, ids, r.deps.get(), false)?;
    let access = access_descs(tail, r.access.get())?;
    let graph = s.tables().handle(HandleKind::Graph, r.graph.get())?;
    // SAFETY: all-zero bytes are a valid `CUDA_MEM_ALLOC_NODE_PARAMS`.
    let mut p: CUDA_MEM_ALLOC_NODE_PARAMS = unsafe { std::mem::zeroed() };
    p.poolProps.allocType = CUmemAllocationType(r.alloc_type.get());
    p.poolProps.handleTypes = CUmemAllocationHandleType(r.handle_types.get());
    p.poolProps.location = CUmemLocation {
        type_: CUmemLocationType(r.loc_type.get()),
        id: r.loc_id.get(),
    };
    p.accessDescs = super::list(&access);
    p.accessDescCount = access.len();
    p.bytesize = usize::try_from(r.bytes.get()).map_err(|_| INVALID_VALUE)?;
    let mut node: CUgraphNode = std::ptr::null_mut();
    // SAFETY: live locals; the descriptors outlive the call; handles of this session.
    ok(unsafe {
        entry(s.driver.cuGraphAddMemAllocNode)?(
            &mut node,
            as_ptr(graph),
            super::list(&deps),
            deps.len(),
            &mut p,
        )
    })?;
    let mut t = s.tables();
    t.insert_graph_alloc(p.dptr, r.bytes.get(), req.ctx);
    let id = t.id_of(HandleKind::GraphNode, node as usize, req.ctx);
    drop(t);
    Ok(Reply::new(
        &graph_mem_alloc_node::Reply {
            node: U64::new(id),
            dptr: U64::new(p.dptr),
        },
        Vec::new(),
    ))
}

/// `cuGraphMemAllocNodeGetParams`.
pub fn graph_mem_alloc_node_params(
    _: &mut Lane,
    s: &Session,
    req: &Request,
) -> Result<Reply, Status> {
    let r: &graph_mem_alloc_node_params::Request = message(req)?;
    let node = s.tables().handle(HandleKind::GraphNode, r.node.get())?;
    // SAFETY: all-zero bytes are a valid `CUDA_MEM_ALLOC_NODE_PARAMS`.
    let mut p: CUDA_MEM_ALLOC_NODE_PARAMS = unsafe { std::mem::zeroed() };
    // SAFETY: a live out-pointer; the node is this session's.
    ok(unsafe { entry(s.driver.cuGraphMemAllocNodeGetParams)?(as_ptr(node), &mut p) })?;
    let mut blob = Vec::with_capacity(p.accessDescCount * ACCESS);
    if !p.accessDescs.is_null() {
        // SAFETY: the driver's array of `accessDescCount` descriptors, owned by the node.
        let descs = unsafe { std::slice::from_raw_parts(p.accessDescs, p.accessDescCount) };
        for d in descs {
            blob.extend_from_slice(&d.location.type_.0.to_le_bytes());
            blob.extend_from_slice(&d.location.id.to_le_bytes());
            blob.extend_from_slice(&d.flags.0.to_le_bytes());
        }
    }
    let loc = p.poolProps.location;
    Ok(Reply::new(
        &graph_mem_alloc_node_params::Reply {
            alloc_type: U32::new(p.poolProps.allocType.0),
            handle_types: U32::new(p.poolProps.handleTypes.0),
            loc_type: U32::new(loc.type_.0),
            loc_id: I32::new(loc.id),
            bytes: U64::new(p.bytesize as u64),
            dptr: U64::new(p.dptr),
            access: U32::new(u32::try_from(blob.len() / ACCESS).map_err(|_| INVALID_VALUE)?),
        },
        blob,
    ))
}
