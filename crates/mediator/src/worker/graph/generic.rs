//! The generic node calls for the types the client sends as they are
//! (GraphNodeGeneric) and conditional nodes (GraphConditionalNode). The
//! other types go through their own operations.

use std::ptr;

use vgpu_abi::types::{
    CUgraph, CUgraphChildGraphNodeOwnership, CUgraphConditionalNodeType, CUgraphEdgeData,
    CUgraphNode, CUgraphNodeParams, CUgraphNodeType,
};
use vgpu_abi::HandleKind;
use vgpu_proto::{graph_conditional_node, graph_node_generic, Request};
use zerocopy::little_endian::{U32, U64};

use super::super::calls::{as_ptr, message, ok, Reply};
use super::super::exec::Lane;
use super::super::status::INVALID_VALUE;
use super::super::Session;
use super::{child::holds, dependencies, list};
use crate::driver::{entry, Status};

/// `CU_GRAPH_NODE_TYPE_GRAPH`, `…_WAIT_EVENT`, `…_EVENT_RECORD`, `…_MEM_FREE`.
const GRAPH: u32 = 4;
const EVENT_WAIT: u32 = 6;
const EVENT_RECORD: u32 = 7;
const MEM_FREE: u32 = 11;
/// Most body graphs a conditional node may have.
const MAX_BODIES: u32 = 1 << 16;

/// Zeroed parameters of type `ty`.
fn zeroed(ty: u32) -> CUgraphNodeParams {
    // SAFETY: all-zero bytes are valid `CUgraphNodeParams` (plain data and
    // NULL pointers).
    let mut p: CUgraphNodeParams = unsafe { std::mem::zeroed() };
    p.type_ = CUgraphNodeType(ty);
    p
}

/// Adds a node of parameters `p` in graph `g` after `deps` (with `edges`
/// data, `_v2`).
fn add(
    s: &Session,
    g: CUgraph,
    deps: &[CUgraphNode],
    edges: Option<&[CUgraphEdgeData]>,
    p: &mut CUgraphNodeParams,
) -> Result<CUgraphNode, Status> {
    let mut node: CUgraphNode = ptr::null_mut();
    match edges {
        Some(e) => {
            let f = entry(s.driver.cuGraphAddNode_v2)?;
            // SAFETY: live locals; `deps` and `e` hold as many elements as
            // passed; handles of this session.
            ok(unsafe { f(&mut node, g, list(deps), list(e), deps.len(), p) })?;
        }
        None => {
            let f = entry(s.driver.cuGraphAddNode)?;
            // SAFETY: as above.
            ok(unsafe { f(&mut node, g, list(deps), deps.len(), p) })?;
        }
    }
    Ok(node)
}

/// `cuGraphAddNode` (`_v2`), `cuGraphNodeSetParams` or
/// `cuGraphExecNodeSetParams` of a node whose parameters hold at most one
/// handle or address, translated by type.
pub fn graph_node_generic(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &graph_node_generic::Request = message(req)?;
    let ty = r.ty.get();
    let mut p = zeroed(ty);
    let value = r.value.get();
    let handle = |kind, id: u64| s.tables().handle(kind, id);
    let mut child: CUgraph = ptr::null_mut();
    match ty {
        GRAPH => {
            child = as_ptr(handle(HandleKind::Graph, value)?);
            p.__bindgen_anon_1.graph.graph = child;
            p.__bindgen_anon_1.graph.ownership = CUgraphChildGraphNodeOwnership(r.ownership.get());
        }
        EVENT_WAIT => {
            p.__bindgen_anon_1.eventWait.event = as_ptr(handle(HandleKind::Event, value)?);
        }
        EVENT_RECORD => {
            p.__bindgen_anon_1.eventRecord.event = as_ptr(handle(HandleKind::Event, value)?);
        }
        MEM_FREE => p.__bindgen_anon_1.free.dptr = value,
        _ => {}
    }
    let mut node: CUgraphNode = ptr::null_mut();
    match r.what {
        0 => {
            let g: CUgraph = as_ptr(handle(HandleKind::Graph, r.graph.get())?);
            let (deps, edges) = dependencies(s, &req.blob, r.deps.get(), r.edges != 0)?;
            // The driver crashes on a graph made a child of itself.
            if !g.is_null() && !child.is_null() && holds(s, child, g)? {
                return Err(INVALID_VALUE);
            }
            let edges = (r.edges != 0).then_some(edges.as_slice());
            node = add(s, g, &deps, edges, &mut p)?;
        }
        1 => {
            let n = handle(HandleKind::GraphNode, r.node.get())?;
            // SAFETY: live parameters; a node of this session.
            ok(unsafe { entry(s.driver.cuGraphNodeSetParams)?(as_ptr(n), &mut p) })?;
        }
        2 => {
            let e = handle(HandleKind::GraphExec, r.exec.get())?;
            let n = handle(HandleKind::GraphNode, r.node.get())?;
            let f = entry(s.driver.cuGraphExecNodeSetParams)?;
            // SAFETY: live parameters; handles of this session.
            ok(unsafe { f(as_ptr(e), as_ptr(n), &mut p) })?;
        }
        _ => return Err(INVALID_VALUE),
    }
    let id = s
        .tables()
        .id_of(HandleKind::GraphNode, node as usize, req.ctx);
    Ok(Reply::new(
        &graph_node_generic::Reply { node: U64::new(id) },
        Vec::new(),
    ))
}

/// `cuGraphAddNode` (`_v2`) of a conditional node: the body graphs the
/// driver made go back as new graph ids.
pub fn graph_conditional_node(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &graph_conditional_node::Request = message(req)?;
    let size = r.size.get();
    if size > MAX_BODIES {
        return Err(INVALID_VALUE);
    }
    let (g, ctx) = {
        let t = s.tables();
        (
            t.handle(HandleKind::Graph, r.graph.get())?,
            t.handle(HandleKind::Context, r.ctx.get())?,
        )
    };
    let (deps, edges) = dependencies(s, &req.blob, r.deps.get(), r.edges != 0)?;
    let mut p = zeroed(13);
    p.__bindgen_anon_1.conditional = vgpu_abi::types::CUDA_CONDITIONAL_NODE_PARAMS {
        handle: r.handle.get(),
        type_: CUgraphConditionalNodeType(r.kind.get()),
        size,
        phGraph_out: ptr::null_mut(),
        ctx: as_ptr(ctx),
    };
    let edges = (r.edges != 0).then_some(edges.as_slice());
    let node = add(s, as_ptr(g), &deps, edges, &mut p)?;
    // The driver sets `phGraph_out` to an array of its own, valid as long
    // as the node, holding `size` body graphs.
    // SAFETY: the conditional member was written above and by the driver.
    let out = unsafe { p.__bindgen_anon_1.conditional.phGraph_out };
    if out.is_null() && size != 0 {
        tracing::warn!("the driver gave a conditional node no body graphs");
        return Err(INVALID_VALUE);
    }
    let bodies: Vec<CUgraph> = (0..size as usize)
        // SAFETY: the driver's array holds `size` graphs.
        .map(|i| unsafe { out.add(i).read() })
        .collect();
    let mut t = s.tables();
    let mut blob = Vec::with_capacity(bodies.len() * 8);
    for b in &bodies {
        blob.extend_from_slice(
            &t.id_of(HandleKind::Graph, *b as usize, req.ctx)
                .to_le_bytes(),
        );
    }
    let id = t.id_of(HandleKind::GraphNode, node as usize, req.ctx);
    Ok(Reply::new(
        &graph_conditional_node::Reply {
            node: U64::new(id),
            count: U32::new(size),
        },
        blob,
    ))
}
