//! Conditional nodes (`cuGraphAddNode` of `CU_GRAPH_NODE_TYPE_CONDITIONAL`). The node
//! owns its body graphs, made with it; each launch reads the handle's value and runs an
//! IF node's body when it is nonzero (a second body, when there is one, when it is
//! zero), a SWITCH node's body of that index (none when out of range), and a WHILE
//! node's body while it is nonzero. A handle serves one conditional node. Only a kernel calling `cudaGraphSetConditional`
//! changes a handle's value, which the simulator cannot run, so the value is always the
//! default given to `cuGraphConditionalHandleCreate`: a WHILE node of a nonzero default
//! would repeat forever, and its launch fails instead (`CUDA_ERROR_NOT_SUPPORTED`).

use super::{add_node_after, create, destroy, invalid, Work};
use crate::cu::CUresult;
use crate::error::{err, Res};
use crate::state::State;

/// `CU_GRAPH_COND_TYPE_IF`, `…_WHILE`, `…_SWITCH`.
const IF: u32 = 0;
const WHILE: u32 = 1;
const SWITCH: u32 = 2;

/// `cuGraphAddNode` of a conditional node of `handle`, `kind` and `size` bodies in
/// graph `key`, in context `ctx`: the node, with new, empty body graphs
/// ([`bodies_of`]).
pub(crate) fn add_conditional(
    st: &mut State,
    key: usize,
    deps: &[usize],
    handle: u64,
    kind: u32,
    size: u32,
    ctx: usize,
) -> Res<usize> {
    crate::context::live(st, ctx)?;
    if !st.ext.graphs.handles.contains_key(&handle) {
        return invalid(format!("{handle:#x} is not a conditional handle"));
    }
    // One conditional node per handle, as driver 580 answers a second one.
    let taken = st
        .ext
        .graphs
        .nodes
        .values()
        .any(|n| matches!(n.work, Work::Conditional { handle: h, .. } if h == handle));
    if taken {
        return invalid(format!(
            "conditional handle {handle:#x} belongs to another conditional node"
        ));
    }
    let fits = match kind {
        IF => size == 1 || size == 2,
        WHILE => size == 1,
        SWITCH => size >= 1,
        _ => false,
    };
    if !fits {
        return invalid(format!(
            "a conditional node of type {kind} cannot have {size} bodies"
        ));
    }
    let bodies: Vec<usize> = (0..size).map(|_| create(st)).collect();
    let work = Work::Conditional {
        handle,
        kind,
        bodies: bodies.clone(),
        work: Vec::new(),
    };
    match add_node_after(st, key, deps, work) {
        Ok(node) => Ok(node),
        Err(e) => {
            for b in bodies {
                let _ = destroy(st, b);
            }
            Err(e)
        }
    }
}

/// The body graphs of conditional node `node`, as the node keeps them: an array of
/// their keys (which are their handles) that stays where it is as long as the node.
pub(crate) fn bodies_of(st: &State, node: usize) -> Res<*const usize> {
    match st.ext.graphs.nodes.get(&node).map(|n| &n.work) {
        Some(Work::Conditional { bodies, .. }) => Ok(bodies.as_ptr()),
        _ => invalid(format!("{node:#x} is not a conditional node")),
    }
}

/// Which bodies (by index) a launch of a conditional node of `handle`, `kind` and
/// `count` bodies runs, in order.
pub(crate) fn chosen(st: &State, handle: u64, kind: u32, count: usize) -> Res<Vec<usize>> {
    let value = st.ext.graphs.handles.get(&handle).map_or(0, |h| h.1);
    Ok(match kind {
        IF if value != 0 => vec![0],
        IF if count == 2 => vec![1],
        SWITCH if (value as usize) < count => vec![value as usize],
        WHILE if value != 0 => {
            return err(
                CUresult::CUDA_ERROR_NOT_SUPPORTED,
                "a WHILE node whose handle stays nonzero would repeat forever: the simulator \
                 cannot run cudaGraphSetConditional",
            )
        }
        _ => Vec::new(),
    })
}
