//! Memcpy nodes: `cuGraphAddMemcpyNode` and its parameters. The copy runs when a launch
//! reaches the node, checked then as `cuMemcpy3D` checks it.

use super::nodes::node_keys;
use crate::context;
use crate::cu::{CUcontext, CUgraph, CUgraphExec, CUgraphNode, CUresult, CUDA_MEMCPY3D};
use crate::error::{err, Res};
use crate::ffi::{handle, key, run, Out};
use crate::graph::{self, Copy3D};
use crate::state;

/// The caller's copy parameters, and a live context (`ctx`).
///
/// # Safety
/// `p` must be NULL or valid for a read.
unsafe fn params(p: *const CUDA_MEMCPY3D, ctx: Option<CUcontext>) -> Res<CUDA_MEMCPY3D> {
    if p.is_null() {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "the copy parameters are NULL",
        );
    }
    if let Some(c) = ctx {
        context::live(&state::sim()?.lock(), key(c))?;
    }
    // SAFETY: non-NULL, and readable by this function's contract.
    let c = unsafe { p.read_unaligned() };
    for t in [c.srcMemoryType.0, c.dstMemoryType.0] {
        if !(1..=4).contains(&t) {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("{t} is not a CUmemorytype"),
            );
        }
    }
    Ok(c)
}

/// `cuGraphAddMemcpyNode`.
///
/// # Safety
/// `ph` must be NULL or valid for a write, `deps` NULL or `n` readable handles, `p` NULL
/// or valid for a read; host sides must stay valid while the graph may run.
#[no_mangle]
pub unsafe extern "C" fn cuGraphAddMemcpyNode(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    p: *const CUDA_MEMCPY3D,
    ctx: CUcontext,
) -> CUresult {
    run("cuGraphAddMemcpyNode", || {
        // SAFETY: the caller's pointers, valid as the CUDA API requires.
        let out = unsafe { Out::new(ph, "phGraphNode") }?;
        // SAFETY: as above.
        let (c, deps) = unsafe { (params(p, Some(ctx))?, node_keys(deps, n)?) };
        let mut st = state::sim()?.lock();
        let node = graph::add_node_after(&mut st, key(g), &deps, graph::Work::Copy3D(Copy3D(c)))?;
        out.write(handle(node));
        Ok(())
    })
}

/// `cuGraphMemcpyNodeGetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuGraphMemcpyNodeGetParams(
    node: CUgraphNode,
    p: *mut CUDA_MEMCPY3D,
) -> CUresult {
    run("cuGraphMemcpyNodeGetParams", || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let out = unsafe { Out::new(p, "nodeParams") }?;
        out.write(graph::copy_of(&state::sim()?.lock(), key(node))?);
        Ok(())
    })
}

/// `cuGraphMemcpyNodeSetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a read.
#[no_mangle]
pub unsafe extern "C" fn cuGraphMemcpyNodeSetParams(
    node: CUgraphNode,
    p: *const CUDA_MEMCPY3D,
) -> CUresult {
    run("cuGraphMemcpyNodeSetParams", || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let c = unsafe { params(p, None) }?;
        graph::set_copy(&mut state::sim()?.lock(), key(node), c)
    })
}

/// `cuGraphExecMemcpyNodeSetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a read.
#[no_mangle]
pub unsafe extern "C" fn cuGraphExecMemcpyNodeSetParams(
    e: CUgraphExec,
    node: CUgraphNode,
    p: *const CUDA_MEMCPY3D,
    ctx: CUcontext,
) -> CUresult {
    run("cuGraphExecMemcpyNodeSetParams", || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let c = unsafe { params(p, Some(ctx)) }?;
        graph::exec_set_copy(&mut state::sim()?.lock(), key(e), key(node), c)
    })
}
