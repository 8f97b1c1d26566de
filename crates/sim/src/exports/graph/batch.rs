//! Batch memory-operation nodes: `cuGraphAddBatchMemOpNode` and its parameters. The
//! operations are checked as for `cuStreamBatchMemOp` and run in order at each launch.

use super::nodes::node_keys;
use crate::cu::{
    CUgraph, CUgraphExec, CUgraphNode, CUresult, CUstreamBatchMemOpParams,
    CUDA_BATCH_MEM_OP_NODE_PARAMS,
};
use crate::error::{err, Res};
use crate::exports::memop::batch;
use crate::ffi::{handle, key, run, Out};
use crate::graph::{self, BatchParams, RawOp};
use crate::memop::MemOp;
use crate::state;

/// The caller's parameters, checked: the operations to run and the record kept.
///
/// # Safety
/// `p` must be NULL or valid for a read, its array holding `count` operations.
unsafe fn params(p: *const CUDA_BATCH_MEM_OP_NODE_PARAMS) -> Res<(Vec<MemOp>, BatchParams)> {
    if p.is_null() {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "the parameters are NULL",
        );
    }
    // SAFETY: checked non-NULL; valid by the contract.
    let c = unsafe { p.read_unaligned() };
    // SAFETY: `count` operations by the contract.
    let ops = unsafe { batch(c.paramArray, c.count, c.flags) }?;
    let raw = (0..c.count as usize)
        // SAFETY: `count` readable operations, checked by `batch`.
        .map(|i| unsafe { c.paramArray.add(i).cast::<RawOp>().read_unaligned() })
        .collect();
    let record = BatchParams {
        ctx: key(c.ctx),
        flags: c.flags,
        ops: raw,
    };
    Ok((ops, record))
}

/// `cuGraphAddBatchMemOpNode`.
///
/// # Safety
/// `ph` must be NULL or valid for a write, `deps` NULL or `n` handles, `p` NULL or
/// valid for a read.
#[no_mangle]
pub unsafe extern "C" fn cuGraphAddBatchMemOpNode(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    p: *const CUDA_BATCH_MEM_OP_NODE_PARAMS,
) -> CUresult {
    run("cuGraphAddBatchMemOpNode", || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let out = unsafe { Out::new(ph, "phGraphNode") }?;
        // SAFETY: forwarded from this function's contract.
        let (ops, record) = unsafe { params(p) }?;
        // SAFETY: forwarded from this function's contract.
        let deps = unsafe { node_keys(deps, n) }?;
        let mut st = state::sim()?.lock();
        out.write(handle(graph::add_batch(
            &mut st,
            key(g),
            &deps,
            ops,
            record,
        )?));
        Ok(())
    })
}

/// `cuGraphBatchMemOpNodeGetParams`: the operations stay valid while the node keeps
/// these parameters.
///
/// # Safety
/// `p` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuGraphBatchMemOpNodeGetParams(
    node: CUgraphNode,
    p: *mut CUDA_BATCH_MEM_OP_NODE_PARAMS,
) -> CUresult {
    run("cuGraphBatchMemOpNodeGetParams", || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let out = unsafe { Out::new(p, "nodeParams_out") }?;
        let st = state::sim()?.lock();
        let record = graph::batch_of(&st, key(node))?;
        let array = st
            .ext
            .graphs
            .batches
            .get(&key(node))
            .map_or(std::ptr::null_mut(), |b| {
                b.ops.as_ptr().cast::<CUstreamBatchMemOpParams>().cast_mut()
            });
        out.write(CUDA_BATCH_MEM_OP_NODE_PARAMS {
            ctx: handle(record.ctx),
            count: u32::try_from(record.ops.len()).unwrap_or(u32::MAX),
            paramArray: array,
            flags: record.flags,
        });
        Ok(())
    })
}

/// `cuGraphBatchMemOpNodeSetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a read.
#[no_mangle]
pub unsafe extern "C" fn cuGraphBatchMemOpNodeSetParams(
    node: CUgraphNode,
    p: *const CUDA_BATCH_MEM_OP_NODE_PARAMS,
) -> CUresult {
    run("cuGraphBatchMemOpNodeSetParams", || {
        // SAFETY: forwarded from this function's contract.
        let (ops, record) = unsafe { params(p) }?;
        graph::set_batch(&mut state::sim()?.lock(), key(node), ops, record)
    })
}

/// `cuGraphExecBatchMemOpNodeSetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a read.
#[no_mangle]
pub unsafe extern "C" fn cuGraphExecBatchMemOpNodeSetParams(
    e: CUgraphExec,
    node: CUgraphNode,
    p: *const CUDA_BATCH_MEM_OP_NODE_PARAMS,
) -> CUresult {
    run("cuGraphExecBatchMemOpNodeSetParams", || {
        // SAFETY: forwarded from this function's contract.
        let (ops, record) = unsafe { params(p) }?;
        graph::exec_set_batch(
            &mut state::sim()?.lock(),
            key(e),
            key(node),
            ops,
            record.ctx,
        )
    })
}
const _: () =
    assert!(core::mem::size_of::<CUstreamBatchMemOpParams>() == core::mem::size_of::<RawOp>());
