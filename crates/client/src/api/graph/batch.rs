//! Batch memory-operation nodes: the operations travel as the application
//! gave them, and the worker checks their addresses.

use std::collections::BTreeMap;
use std::sync::Mutex;

use vgpu_abi::types::{
    CUgraph, CUgraphExec, CUgraphNode, CUstreamBatchMemOpParams, CUDA_BATCH_MEM_OP_NODE_PARAMS,
};
use vgpu_proto::{graph_batch_mem_op_node, graph_batch_mem_op_node_params};
use zerocopy::little_endian::{U32, U64};

use super::dependency_blob;
use crate::edge::{non_null, wire, write_out, CuError, CuResult};
use crate::runtime::runtime;

/// Bytes of one `CUstreamBatchMemOpParams`.
const OP: usize = core::mem::size_of::<CUstreamBatchMemOpParams>();

/// The operations `cuGraphBatchMemOpNodeGetParams` handed out, by node: the
/// application's parameters point into them, so they are kept until the
/// next such call on the node.
static GIVEN: Mutex<BTreeMap<usize, Box<[CUstreamBatchMemOpParams]>>> = Mutex::new(BTreeMap::new());

/// `cuGraphAddBatchMemOpNode` (`what` 0, in `graph` after `n` `deps`, the
/// node written to `ph`), `cuGraphBatchMemOpNodeSetParams` (1, of `node`) or
/// `cuGraphExecBatchMemOpNodeSetParams` (2, of `node` in `exec`).
///
/// # Safety
/// `ph` must be NULL or valid for a write; `deps` NULL or `n` handles; `p`
/// NULL or valid for a read, its array holding `count` operations.
#[allow(clippy::too_many_arguments)]
pub unsafe fn batch_mem_op_node(
    what: u8,
    ph: *mut CUgraphNode,
    graph: CUgraph,
    exec: CUgraphExec,
    node: CUgraphNode,
    deps: *const CUgraphNode,
    n: usize,
    p: *const CUDA_BATCH_MEM_OP_NODE_PARAMS,
) -> CuResult<()> {
    let s = runtime().session()?;
    if what == 0 {
        non_null(ph)?;
    }
    non_null(p)?;
    // SAFETY: checked non-NULL; the application's parameters.
    let c = unsafe { p.read() };
    // SAFETY: forwarded from this function's contract.
    let (count, mut blob) = unsafe { dependency_blob(deps, None, n) }?;
    if c.count > 0 {
        non_null(c.paramArray)?;
    }
    // SAFETY: `count` readable operations by the contract.
    unsafe { crate::api::memop::append_ops(&mut blob, c.paramArray, c.count as usize) };
    let r = graph_batch_mem_op_node::Request {
        what,
        graph: U64::new(graph as usize as u64),
        node: U64::new(node as usize as u64),
        exec: U64::new(exec as usize as u64),
        ctx: U64::new(c.ctx as usize as u64),
        count: U32::new(c.count),
        flags: U32::new(c.flags),
        deps: U32::new(count),
    };
    let (rep, _) = s.request(&r, &blob)?;
    if what != 0 {
        return Ok(());
    }
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(ph, wire::handle(rep.node.get())) }
}

/// `cuGraphBatchMemOpNodeGetParams`: the operations stay valid until the
/// next such call on the same node.
///
/// # Safety
/// `p` must be NULL or valid for a write.
pub unsafe fn batch_mem_op_node_params(
    node: CUgraphNode,
    p: *mut CUDA_BATCH_MEM_OP_NODE_PARAMS,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(p)?;
    let r = graph_batch_mem_op_node_params::Request {
        node: U64::new(node as usize as u64),
    };
    let (rep, blob) = s.request(&r, &[])?;
    if blob.len() != rep.count.get() as usize * OP {
        return Err(CuError::UNKNOWN);
    }
    let mut ops: Box<[CUstreamBatchMemOpParams]> = blob
        .chunks_exact(OP)
        .map(|c| {
            let mut bytes = [0u8; OP];
            bytes.copy_from_slice(c);
            // SAFETY: the union is plain data, valid for any bytes.
            unsafe { core::mem::transmute::<[u8; OP], CUstreamBatchMemOpParams>(bytes) }
        })
        .collect();
    let out = CUDA_BATCH_MEM_OP_NODE_PARAMS {
        ctx: wire::handle(rep.ctx.get()),
        count: rep.count.get(),
        paramArray: if ops.is_empty() {
            std::ptr::null_mut()
        } else {
            ops.as_mut_ptr()
        },
        flags: rep.flags.get(),
    };
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    given.insert(node as usize, ops);
    drop(given);
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(p, out) }
}
