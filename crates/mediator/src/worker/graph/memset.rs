//! Memset nodes: the rows a node sets must lie in one of the session's
//! allocations, as a memset's must.

use std::ptr;

use vgpu_abi::types::{CUgraphNode, CUDA_MEMSET_NODE_PARAMS};
use vgpu_abi::HandleKind;
use vgpu_proto::{graph_memset_node, graph_memset_node_params, Request};
use zerocopy::little_endian::{U32, U64};

use super::super::calls::{as_ptr, message, ok, Reply};
use super::super::exec::Lane;
use super::super::status::INVALID_VALUE;
use super::super::Session;
use super::{dependencies, list};
use crate::driver::{entry, Status};

/// `cuGraphAddMemsetNode` (`what` 0), `cuGraphMemsetNodeSetParams` (1),
/// `cuGraphExecMemsetNodeSetParams` (2).
pub fn graph_memset_node(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &graph_memset_node::Request = message(req)?;
    let (deps, _) = dependencies(s, &req.blob, r.deps.get(), false)?;
    let row = r
        .width
        .get()
        .checked_mul(u64::from(r.element.get()))
        .ok_or(INVALID_VALUE)?;
    let span =
        vgpu_proto::span::pitched(r.pitch.get(), row, r.height.get()).ok_or(INVALID_VALUE)?;
    s.tables().check(r.dst.get(), span)?;
    let p = CUDA_MEMSET_NODE_PARAMS {
        dst: r.dst.get(),
        pitch: usize::try_from(r.pitch.get()).map_err(|_| INVALID_VALUE)?,
        value: r.value.get(),
        elementSize: r.element.get(),
        width: usize::try_from(r.width.get()).map_err(|_| INVALID_VALUE)?,
        height: usize::try_from(r.height.get()).map_err(|_| INVALID_VALUE)?,
    };
    let handle = |kind, id: &U64| s.tables().handle(kind, id.get());
    let mut node: CUgraphNode = ptr::null_mut();
    match r.what {
        0 => {
            let g = handle(HandleKind::Graph, &r.graph)?;
            let ctx = handle(HandleKind::Context, &r.ctx)?;
            // SAFETY: live locals, the rows checked; handles of this session.
            ok(unsafe {
                entry(s.driver.cuGraphAddMemsetNode)?(
                    &mut node,
                    as_ptr(g),
                    list(&deps),
                    deps.len(),
                    &p,
                    as_ptr(ctx),
                )
            })?;
        }
        1 => {
            let n = handle(HandleKind::GraphNode, &r.node)?;
            // SAFETY: live locals, the rows checked; handles of this session.
            ok(unsafe { entry(s.driver.cuGraphMemsetNodeSetParams)?(as_ptr(n), &p) })?;
        }
        2 => {
            let e = handle(HandleKind::GraphExec, &r.exec)?;
            let n = handle(HandleKind::GraphNode, &r.node)?;
            let ctx = handle(HandleKind::Context, &r.ctx)?;
            let f = entry(s.driver.cuGraphExecMemsetNodeSetParams)?;
            // SAFETY: live locals, the rows checked; handles of this session.
            ok(unsafe { f(as_ptr(e), as_ptr(n), &p, as_ptr(ctx)) })?;
        }
        _ => return Err(INVALID_VALUE),
    }
    // A set call leaves `node` NULL, whose id is 0.
    let id = s
        .tables()
        .id_of(HandleKind::GraphNode, node as usize, req.ctx);
    Ok(Reply::new(
        &graph_memset_node::Reply { node: U64::new(id) },
        Vec::new(),
    ))
}

/// `cuGraphMemsetNodeGetParams`.
pub fn graph_memset_node_params(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &graph_memset_node_params::Request = message(req)?;
    let n = s.tables().handle(HandleKind::GraphNode, r.node.get())?;
    let mut p = CUDA_MEMSET_NODE_PARAMS {
        dst: 0,
        pitch: 0,
        value: 0,
        elementSize: 0,
        width: 0,
        height: 0,
    };
    // SAFETY: the out-pointer is a live local; the node is this session's.
    ok(unsafe { entry(s.driver.cuGraphMemsetNodeGetParams)?(as_ptr(n), &mut p) })?;
    let u = |v: usize| U64::new(v as u64);
    let rep = graph_memset_node_params::Reply {
        dst: U64::new(p.dst),
        pitch: u(p.pitch),
        value: U32::new(p.value),
        element: U32::new(p.elementSize),
        width: u(p.width),
        height: u(p.height),
    };
    Ok(Reply::new(&rep, Vec::new()))
}
