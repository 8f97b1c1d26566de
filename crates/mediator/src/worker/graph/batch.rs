//! Batch memory-operation nodes: every wait's and write's address must lie
//! in one of the session's allocations, as for `cuStreamBatchMemOp`.

use std::ptr;

use vgpu_abi::types::{CUgraphNode, CUstreamBatchMemOpParams, CUDA_BATCH_MEM_OP_NODE_PARAMS};
use vgpu_abi::HandleKind;
use vgpu_proto::{graph_batch_mem_op_node, graph_batch_mem_op_node_params, Request};
use zerocopy::little_endian::{U32, U64};

use super::super::calls::{as_ptr, message, ok, Reply};
use super::super::exec::Lane;
use super::super::memop::operations;
use super::super::status::INVALID_VALUE;
use super::super::Session;
use super::dependencies;
use crate::driver::{entry, Status};

/// Bytes of one operation.
const OP: usize = core::mem::size_of::<CUstreamBatchMemOpParams>();

/// `cuGraphAddBatchMemOpNode` (`what` 0), `cuGraphBatchMemOpNodeSetParams`
/// (1), `cuGraphExecBatchMemOpNodeSetParams` (2).
pub fn graph_batch_mem_op_node(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &graph_batch_mem_op_node::Request = message(req)?;
    let split = (r.deps.get() as usize)
        .checked_mul(8)
        .filter(|&n| n <= req.blob.len())
        .ok_or(INVALID_VALUE)?;
    let (ids, tail) = req.blob.split_at(split);
    let (deps, _) = dependencies(s, ids, r.deps.get(), false)?;
    let (mut ops, ranges) = operations(tail, r.count.get())?;
    {
        let t = s.tables();
        for &(p, len) in &ranges {
            t.check(p, len)?;
        }
    }
    let handle = |kind, id: &U64| s.tables().handle(kind, id.get());
    let p = CUDA_BATCH_MEM_OP_NODE_PARAMS {
        ctx: as_ptr(handle(HandleKind::Context, &r.ctx)?),
        count: r.count.get(),
        paramArray: if ops.is_empty() {
            ptr::null_mut()
        } else {
            ops.as_mut_ptr()
        },
        flags: r.flags.get(),
    };
    let mut node: CUgraphNode = ptr::null_mut();
    match r.what {
        0 => {
            let g = handle(HandleKind::Graph, &r.graph)?;
            let f = entry(s.driver.cuGraphAddBatchMemOpNode)?;
            // SAFETY: live locals, the addresses checked; handles of this session.
            ok(unsafe { f(&mut node, as_ptr(g), super::list(&deps), deps.len(), &p) })?;
        }
        1 => {
            let n = handle(HandleKind::GraphNode, &r.node)?;
            let f = entry(s.driver.cuGraphBatchMemOpNodeSetParams)?;
            // SAFETY: live locals, the addresses checked; handles of this session.
            ok(unsafe { f(as_ptr(n), &p) })?;
        }
        2 => {
            let e = handle(HandleKind::GraphExec, &r.exec)?;
            let n = handle(HandleKind::GraphNode, &r.node)?;
            let f = entry(s.driver.cuGraphExecBatchMemOpNodeSetParams)?;
            // SAFETY: live locals, the addresses checked; handles of this session.
            ok(unsafe { f(as_ptr(e), as_ptr(n), &p) })?;
        }
        _ => return Err(INVALID_VALUE),
    }
    // A set call leaves `node` NULL, whose id is 0.
    let id = s
        .tables()
        .id_of(HandleKind::GraphNode, node as usize, req.ctx);
    Ok(Reply::new(
        &graph_batch_mem_op_node::Reply { node: U64::new(id) },
        Vec::new(),
    ))
}

/// `cuGraphBatchMemOpNodeGetParams`: the node's operations travel as the
/// driver gives them.
pub fn graph_batch_mem_op_node_params(
    _: &mut Lane,
    s: &Session,
    req: &Request,
) -> Result<Reply, Status> {
    let r: &graph_batch_mem_op_node_params::Request = message(req)?;
    let node = s.tables().handle(HandleKind::GraphNode, r.node.get())?;
    // SAFETY: all-zero bytes are a valid `CUDA_BATCH_MEM_OP_NODE_PARAMS`.
    let mut p: CUDA_BATCH_MEM_OP_NODE_PARAMS = unsafe { std::mem::zeroed() };
    // SAFETY: a live out-pointer; the node is this session's.
    ok(unsafe { entry(s.driver.cuGraphBatchMemOpNodeGetParams)?(as_ptr(node), &mut p) })?;
    let mut blob = Vec::with_capacity(p.count as usize * OP);
    if !p.paramArray.is_null() {
        // SAFETY: the driver's array of `count` operations, owned by the node.
        let ops = unsafe { std::slice::from_raw_parts(p.paramArray, p.count as usize) };
        for op in ops {
            // SAFETY: the union is plain data of `OP` bytes.
            blob.extend_from_slice(&unsafe {
                core::mem::transmute::<CUstreamBatchMemOpParams, [u8; OP]>(*op)
            });
        }
    }
    let ctx = s
        .tables()
        .id_of(HandleKind::Context, p.ctx as usize, req.ctx);
    Ok(Reply::new(
        &graph_batch_mem_op_node_params::Reply {
            ctx: U64::new(ctx),
            count: U32::new(u32::try_from(blob.len() / OP).map_err(|_| INVALID_VALUE)?),
            flags: U32::new(p.flags),
        },
        blob,
    ))
}
