//! Memset nodes: `cuGraphAddMemsetNode` and its parameters. Elements are of 1, 2 or 4
//! bytes, the value's low bytes the pattern; the rows must lie inside one allocation.

use super::nodes::node_keys;
use crate::cu::{CUcontext, CUgraph, CUgraphExec, CUgraphNode, CUresult, CUDA_MEMSET_NODE_PARAMS};
use crate::error::{err, Res};
use crate::ffi::{handle, key, run, Out};
use crate::graph;
use crate::state::{self, State};

/// The work of the caller's memset parameters, checked.
///
/// # Safety
/// `p` must be NULL or valid for a read.
unsafe fn memset_work(st: &State, p: *const CUDA_MEMSET_NODE_PARAMS) -> Res<graph::Work> {
    if p.is_null() {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "the memset parameters are NULL",
        );
    }
    // SAFETY: checked non-NULL; valid by the contract.
    let p = unsafe { p.read_unaligned() };
    let pattern = match p.elementSize {
        1 => vec![p.value.to_ne_bytes()[0]],
        2 => p.value.to_ne_bytes()[..2].to_vec(),
        4 => p.value.to_ne_bytes().to_vec(),
        other => {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("element size {other} is not 1, 2 or 4"),
            )
        }
    };
    let row = p.width.checked_mul(pattern.len());
    let span = row.and_then(|w| {
        let rows = p.height.checked_sub(1)?;
        p.pitch.checked_mul(rows)?.checked_add(w)
    });
    if p.height > 0 && span.is_none_or(|n| crate::memory::try_range(st, p.dst, n).is_none()) {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "the memset node's rows are not inside one allocation",
        );
    }
    Ok(graph::Work::Memset2D {
        dst: p.dst,
        pitch: p.pitch,
        pattern,
        width: p.width,
        height: p.height,
    })
}

/// `cuGraphAddMemsetNode`.
///
/// # Safety
/// `ph` must be NULL or valid for a write, `deps` NULL or `n` handles, `p` NULL or
/// valid for a read.
#[no_mangle]
pub unsafe extern "C" fn cuGraphAddMemsetNode(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    p: *const CUDA_MEMSET_NODE_PARAMS,
    _ctx: CUcontext,
) -> CUresult {
    run("cuGraphAddMemsetNode", || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let out = unsafe { Out::new(ph, "phGraphNode") }?;
        let mut st = state::sim()?.lock();
        // SAFETY: as above.
        let work = unsafe { memset_work(&st, p) }?;
        // SAFETY: forwarded from this function's contract.
        let deps = unsafe { node_keys(deps, n) }?;
        let node = graph::add_node_after(&mut st, key(g), &deps, work)?;
        out.write(handle(node));
        Ok(())
    })
}

/// `cuGraphMemsetNodeGetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuGraphMemsetNodeGetParams(
    node: CUgraphNode,
    p: *mut CUDA_MEMSET_NODE_PARAMS,
) -> CUresult {
    run("cuGraphMemsetNodeGetParams", || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let out = unsafe { Out::new(p, "nodeParams") }?;
        out.write(graph::memset_of(&state::sim()?.lock(), key(node))?);
        Ok(())
    })
}

/// `cuGraphMemsetNodeSetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a read.
#[no_mangle]
pub unsafe extern "C" fn cuGraphMemsetNodeSetParams(
    node: CUgraphNode,
    p: *const CUDA_MEMSET_NODE_PARAMS,
) -> CUresult {
    run("cuGraphMemsetNodeSetParams", || {
        let mut st = state::sim()?.lock();
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let work = unsafe { memset_work(&st, p) }?;
        graph::set_memset(&mut st, None, key(node), work)
    })
}

/// `cuGraphExecMemsetNodeSetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a read.
#[no_mangle]
pub unsafe extern "C" fn cuGraphExecMemsetNodeSetParams(
    e: CUgraphExec,
    node: CUgraphNode,
    p: *const CUDA_MEMSET_NODE_PARAMS,
    _ctx: CUcontext,
) -> CUresult {
    run("cuGraphExecMemsetNodeSetParams", || {
        let mut st = state::sim()?.lock();
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let work = unsafe { memset_work(&st, p) }?;
        graph::set_memset(&mut st, Some(key(e)), key(node), work)
    })
}
