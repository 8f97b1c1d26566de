//! Host nodes: `cuGraphAddHostNode` and its parameters. The function runs when a launch
//! reaches the node, on the launching thread (the simulated device runs work when it is
//! enqueued), without the device's lock held.

use std::ffi::c_void;

use super::nodes::node_keys;
use crate::cu::{CUgraph, CUgraphExec, CUgraphNode, CUresult, CUDA_HOST_NODE_PARAMS};
use crate::error::{err, Res};
use crate::ffi::{handle, key, run, Out};
use crate::graph::{self, HostFn};
use crate::state;

/// The function and argument of the caller's parameters; a NULL function is refused.
///
/// # Safety
/// `p` must be NULL or valid for a read.
unsafe fn params(p: *const CUDA_HOST_NODE_PARAMS) -> Res<(HostFn, usize)> {
    if p.is_null() {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "the parameters are NULL",
        );
    }
    // SAFETY: non-NULL, and readable by this function's contract.
    let p = unsafe { p.read_unaligned() };
    match p.fn_ {
        Some(f) => Ok((f, p.userData as usize)),
        None => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "the host function is NULL",
        ),
    }
}

/// `cuGraphAddHostNode`.
///
/// # Safety
/// `ph` must be NULL or valid for a write, `deps` NULL or `n` readable handles, `p` NULL
/// or valid for a read.
#[no_mangle]
pub unsafe extern "C" fn cuGraphAddHostNode(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    p: *const CUDA_HOST_NODE_PARAMS,
) -> CUresult {
    run("cuGraphAddHostNode", || {
        // SAFETY: the caller's pointers, valid as the CUDA API requires.
        let out = unsafe { Out::new(ph, "phGraphNode") }?;
        // SAFETY: as above.
        let ((f, data), deps) = unsafe { (params(p)?, node_keys(deps, n)?) };
        let mut st = state::sim()?.lock();
        let node = graph::add_node_after(&mut st, key(g), &deps, graph::Work::Host { f, data })?;
        out.write(handle(node));
        Ok(())
    })
}

/// `cuGraphHostNodeGetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuGraphHostNodeGetParams(
    node: CUgraphNode,
    p: *mut CUDA_HOST_NODE_PARAMS,
) -> CUresult {
    run("cuGraphHostNodeGetParams", || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let out = unsafe { Out::new(p, "nodeParams") }?;
        let (f, data) = graph::host_of(&state::sim()?.lock(), key(node))?;
        out.write(CUDA_HOST_NODE_PARAMS {
            fn_: Some(f),
            userData: data as *mut c_void,
        });
        Ok(())
    })
}

/// `cuGraphHostNodeSetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a read.
#[no_mangle]
pub unsafe extern "C" fn cuGraphHostNodeSetParams(
    node: CUgraphNode,
    p: *const CUDA_HOST_NODE_PARAMS,
) -> CUresult {
    run("cuGraphHostNodeSetParams", || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let (f, data) = unsafe { params(p) }?;
        graph::set_host(&mut state::sim()?.lock(), key(node), f, data)
    })
}

/// `cuGraphExecHostNodeSetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a read.
#[no_mangle]
pub unsafe extern "C" fn cuGraphExecHostNodeSetParams(
    e: CUgraphExec,
    node: CUgraphNode,
    p: *const CUDA_HOST_NODE_PARAMS,
) -> CUresult {
    run("cuGraphExecHostNodeSetParams", || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let (f, data) = unsafe { params(p) }?;
        graph::exec_set_host(&mut state::sim()?.lock(), key(e), key(node), f, data)
    })
}
