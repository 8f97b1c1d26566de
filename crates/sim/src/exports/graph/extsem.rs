//! External-semaphore signal and wait nodes (`crate::graph::add_ext_sem`): the
//! semaphores must be live; each launch signals or waits for them in turn.

use super::nodes::node_keys;
use crate::cu::{
    CUexternalSemaphore, CUgraph, CUgraphExec, CUgraphNode, CUresult,
    CUDA_EXT_SEM_SIGNAL_NODE_PARAMS, CUDA_EXT_SEM_WAIT_NODE_PARAMS,
};
use crate::error::{err, Res};
use crate::ffi::{handle, key, run, Out};
use crate::graph::{self, RawSemParams};
use crate::state;

const _: () = assert!(
    core::mem::size_of::<crate::cu::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS>()
        == core::mem::size_of::<RawSemParams>()
);
const _: () = assert!(
    core::mem::size_of::<CUDA_EXT_SEM_SIGNAL_NODE_PARAMS>()
        == core::mem::size_of::<CUDA_EXT_SEM_WAIT_NODE_PARAMS>()
);

/// The semaphores and parameter structs of `p` (a signal node's parameters, or a wait
/// node's: the same layout).
///
/// # Safety
/// `p` must be NULL or valid for a read, its arrays NULL or holding `numExtSems`
/// elements.
unsafe fn operands(
    p: *const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS,
) -> Res<(Vec<usize>, Vec<RawSemParams>)> {
    if p.is_null() {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "the parameters are NULL",
        );
    }
    // SAFETY: checked non-NULL; valid by the contract.
    let c = unsafe { p.read_unaligned() };
    let n = c.numExtSems as usize;
    if n > 0 && (c.extSemArray.is_null() || c.paramsArray.is_null()) {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "a NULL array");
    }
    // SAFETY: `numExtSems` readable elements of each array by the contract.
    let sems = (0..n)
        .map(|i| key(unsafe { c.extSemArray.add(i).read_unaligned() }))
        .collect();
    // SAFETY: as above; each struct is `RawSemParams`' size.
    let params = (0..n)
        .map(|i| unsafe { c.paramsArray.add(i).cast::<RawSemParams>().read_unaligned() })
        .collect();
    Ok((sems, params))
}

/// An add: the node in `g` after `n` `deps`.
///
/// # Safety
/// As for the exports.
unsafe fn add(
    name: &str,
    wait: bool,
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    p: *const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS,
) -> CUresult {
    run(name, || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let out = unsafe { Out::new(ph, "phGraphNode") }?;
        // SAFETY: forwarded from the caller's contract.
        let (sems, params) = unsafe { operands(p) }?;
        // SAFETY: forwarded from the caller's contract.
        let deps = unsafe { node_keys(deps, n) }?;
        let mut st = state::sim()?.lock();
        let node = graph::add_ext_sem(&mut st, key(g), &deps, wait, sems, params)?;
        out.write(handle(node));
        Ok(())
    })
}

/// A get: pointers to the node's own arrays.
///
/// # Safety
/// `p` must be NULL or valid for a write.
unsafe fn get(
    name: &str,
    wait: bool,
    node: CUgraphNode,
    p: *mut CUDA_EXT_SEM_SIGNAL_NODE_PARAMS,
) -> CUresult {
    run(name, || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let out = unsafe { Out::new(p, "params_out") }?;
        let st = state::sim()?.lock();
        let (sems, params) = graph::ext_sem_of(&st, key(node), wait)?;
        let empty = sems.is_empty();
        out.write(CUDA_EXT_SEM_SIGNAL_NODE_PARAMS {
            extSemArray: match empty {
                true => std::ptr::null_mut(),
                false => sems.as_ptr().cast::<CUexternalSemaphore>().cast_mut(),
            },
            paramsArray: match empty {
                true => std::ptr::null(),
                false => params.as_ptr().cast(),
            },
            numExtSems: u32::try_from(sems.len()).unwrap_or(u32::MAX),
        });
        Ok(())
    })
}

/// A set of the node (with `e`, of its copy in that executable graph).
///
/// # Safety
/// As for [`operands`].
unsafe fn set(
    name: &str,
    wait: bool,
    e: Option<CUgraphExec>,
    node: CUgraphNode,
    p: *const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS,
) -> CUresult {
    run(name, || {
        // SAFETY: forwarded from the caller's contract.
        let (sems, params) = unsafe { operands(p) }?;
        let mut st = state::sim()?.lock();
        match e {
            Some(e) => graph::exec_set_ext_sem(&mut st, key(e), key(node), wait, sems, params),
            None => graph::set_ext_sem(&mut st, key(node), wait, sems, params),
        }
    })
}

/// `cuGraphAddExternalSemaphoresSignalNode`.
///
/// # Safety
/// Every pointer is NULL or valid as the CUDA API requires of its caller.
#[no_mangle]
pub unsafe extern "C" fn cuGraphAddExternalSemaphoresSignalNode(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    p: *const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS,
) -> CUresult {
    let name = "cuGraphAddExternalSemaphoresSignalNode";
    // SAFETY: forwarded from this function's contract.
    unsafe { add(name, false, ph, g, deps, n, p) }
}

/// `cuGraphAddExternalSemaphoresWaitNode`.
///
/// # Safety
/// Every pointer is NULL or valid as the CUDA API requires of its caller.
#[no_mangle]
pub unsafe extern "C" fn cuGraphAddExternalSemaphoresWaitNode(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    p: *const CUDA_EXT_SEM_WAIT_NODE_PARAMS,
) -> CUresult {
    let name = "cuGraphAddExternalSemaphoresWaitNode";
    // SAFETY: forwarded from this function's contract; the same layout.
    unsafe { add(name, true, ph, g, deps, n, p.cast()) }
}

/// `cuGraphExternalSemaphoresSignalNodeGetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuGraphExternalSemaphoresSignalNodeGetParams(
    node: CUgraphNode,
    p: *mut CUDA_EXT_SEM_SIGNAL_NODE_PARAMS,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        get(
            "cuGraphExternalSemaphoresSignalNodeGetParams",
            false,
            node,
            p,
        )
    }
}

/// `cuGraphExternalSemaphoresWaitNodeGetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuGraphExternalSemaphoresWaitNodeGetParams(
    node: CUgraphNode,
    p: *mut CUDA_EXT_SEM_WAIT_NODE_PARAMS,
) -> CUresult {
    // SAFETY: forwarded from this function's contract; the same layout.
    unsafe {
        get(
            "cuGraphExternalSemaphoresWaitNodeGetParams",
            true,
            node,
            p.cast(),
        )
    }
}

/// `cuGraphExternalSemaphoresSignalNodeSetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a read, its arrays as the CUDA API requires.
#[no_mangle]
pub unsafe extern "C" fn cuGraphExternalSemaphoresSignalNodeSetParams(
    node: CUgraphNode,
    p: *const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        set(
            "cuGraphExternalSemaphoresSignalNodeSetParams",
            false,
            None,
            node,
            p,
        )
    }
}

/// `cuGraphExternalSemaphoresWaitNodeSetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a read, its arrays as the CUDA API requires.
#[no_mangle]
pub unsafe extern "C" fn cuGraphExternalSemaphoresWaitNodeSetParams(
    node: CUgraphNode,
    p: *const CUDA_EXT_SEM_WAIT_NODE_PARAMS,
) -> CUresult {
    let name = "cuGraphExternalSemaphoresWaitNodeSetParams";
    // SAFETY: forwarded from this function's contract; the same layout.
    unsafe { set(name, true, None, node, p.cast()) }
}

/// `cuGraphExecExternalSemaphoresSignalNodeSetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a read, its arrays as the CUDA API requires.
#[no_mangle]
pub unsafe extern "C" fn cuGraphExecExternalSemaphoresSignalNodeSetParams(
    e: CUgraphExec,
    node: CUgraphNode,
    p: *const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS,
) -> CUresult {
    let name = "cuGraphExecExternalSemaphoresSignalNodeSetParams";
    // SAFETY: forwarded from this function's contract.
    unsafe { set(name, false, Some(e), node, p) }
}

/// `cuGraphExecExternalSemaphoresWaitNodeSetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a read, its arrays as the CUDA API requires.
#[no_mangle]
pub unsafe extern "C" fn cuGraphExecExternalSemaphoresWaitNodeSetParams(
    e: CUgraphExec,
    node: CUgraphNode,
    p: *const CUDA_EXT_SEM_WAIT_NODE_PARAMS,
) -> CUresult {
    let name = "cuGraphExecExternalSemaphoresWaitNodeSetParams";
    // SAFETY: forwarded from this function's contract; the same layout.
    unsafe { set(name, true, Some(e), node, p.cast()) }
}
