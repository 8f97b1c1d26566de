//! Batch memory-operation nodes (`cuGraphAddBatchMemOpNode` and its parameters).
//!
//! A node runs its waits and writes in order at each launch (`Work::MemOps`); the
//! parameters as the application gave them (context, operations, flags) are kept
//! for `cuGraphBatchMemOpNodeGetParams`. A captured batch has no such record.

use super::node::exec_index;
use super::{add_node_after, invalid, Work};
use crate::error::Res;
use crate::memop::MemOp;
use crate::state::State;

/// One `CUstreamBatchMemOpParams` as six 64-bit words (its size and alignment), so
/// that a kept array can be handed out as the union's.
pub(crate) type RawOp = [u64; 6];

/// A batch node's parameters as given.
#[derive(Debug, Clone)]
pub(crate) struct BatchParams {
    pub ctx: usize,
    pub flags: u32,
    /// Each operation's bytes.
    pub ops: Vec<RawOp>,
}

/// `cuGraphAddBatchMemOpNode`: a node of `ops` (parsed from `p.ops`) in graph `key`.
pub(crate) fn add_batch(
    st: &mut State,
    key: usize,
    deps: &[usize],
    ops: Vec<MemOp>,
    p: BatchParams,
) -> Res<usize> {
    crate::context::live(st, p.ctx)?;
    let node = add_node_after(st, key, deps, Work::MemOps(ops))?;
    st.ext.graphs.batches.insert(node, p);
    Ok(node)
}

/// `cuGraphBatchMemOpNodeGetParams`.
pub(crate) fn batch_of(st: &State, node: usize) -> Res<BatchParams> {
    match st.ext.graphs.batches.get(&node) {
        Some(p) => Ok(p.clone()),
        None => invalid(format!(
            "node {node:#x} is not a batch memory-operation node"
        )),
    }
}

/// `cuGraphBatchMemOpNodeSetParams`.
pub(crate) fn set_batch(st: &mut State, node: usize, ops: Vec<MemOp>, p: BatchParams) -> Res<()> {
    batch_of(st, node)?;
    crate::context::live(st, p.ctx)?;
    if let Some(n) = st.ext.graphs.nodes.get_mut(&node) {
        n.work = Work::MemOps(ops);
    }
    st.ext.graphs.batches.insert(node, p);
    Ok(())
}

/// `cuGraphExecBatchMemOpNodeSetParams`: the executable graph's copy of the node
/// changes; the graph's node keeps its parameters.
pub(crate) fn exec_set_batch(
    st: &mut State,
    exec_key: usize,
    node: usize,
    ops: Vec<MemOp>,
    ctx: usize,
) -> Res<()> {
    crate::context::live(st, ctx)?;
    let i = exec_index(st, exec_key, node)?;
    let e = st.ext.graphs.execs.get_mut(&exec_key);
    match e.and_then(|e| e.work.get_mut(i)) {
        Some(w @ Work::MemOps(_)) => {
            *w = Work::MemOps(ops);
            Ok(())
        }
        _ => invalid(format!(
            "node {node:#x} is not a batch memory-operation node"
        )),
    }
}
