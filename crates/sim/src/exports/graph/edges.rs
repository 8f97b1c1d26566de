//! The `_v2` edge calls, whose edges carry `CUgraphEdgeData`. The simulator runs a
//! graph's nodes in the order they were added, so it keeps default edges only (the
//! ones the first forms make): edge data that is not all zero (programmatic ports
//! and types, which only kernel nodes take) is refused with `CUDA_ERROR_INVALID_VALUE`,
//! and every edge reads back as default.

use super::nodes::{graph_add_dependencies, graph_remove_dependencies, query_into};
use crate::cu::{CUgraph, CUgraphEdgeData, CUgraphNode, CUresult};
use crate::error::{err, Res};
use crate::ffi::{key, run};
use crate::graph;

/// Refuses edge data other than the default.
///
/// # Safety
/// `data` must be NULL or hold `n` readable entries.
unsafe fn default_edges(data: *const CUgraphEdgeData, n: usize) -> Res<()> {
    if data.is_null() {
        return Ok(());
    }
    for i in 0..n {
        // SAFETY: `n` readable entries by the contract.
        let e = unsafe { data.add(i).read_unaligned() };
        if e.from_port != 0 || e.to_port != 0 || e.type_ != 0 {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                "the simulator keeps default edges only",
            );
        }
    }
    Ok(())
}

/// `cuGraphAddDependencies_v2` (`add`) or `cuGraphRemoveDependencies_v2`.
///
/// # Safety
/// `from`, `to` and `data` must be NULL or hold `n` readable entries.
unsafe fn change(
    name: &str,
    g: CUgraph,
    from: *const CUgraphNode,
    to: *const CUgraphNode,
    data: *const CUgraphEdgeData,
    n: usize,
    add: bool,
) -> CUresult {
    run(name, || {
        // SAFETY: forwarded from this function's contract.
        unsafe {
            default_edges(data, n)?;
            match add {
                true => graph_add_dependencies(g, from, to, n),
                false => graph_remove_dependencies(g, from, to, n),
            }
        }
    })
}

/// `cuGraphAddDependencies_v2`.
///
/// # Safety
/// `from`, `to` and `data` must be NULL or hold `n` readable entries.
#[no_mangle]
pub unsafe extern "C" fn cuGraphAddDependencies_v2(
    g: CUgraph,
    from: *const CUgraphNode,
    to: *const CUgraphNode,
    data: *const CUgraphEdgeData,
    n: usize,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe { change("cuGraphAddDependencies_v2", g, from, to, data, n, true) }
}

/// `cuGraphRemoveDependencies_v2`.
///
/// # Safety
/// As for [`cuGraphAddDependencies_v2`].
#[no_mangle]
pub unsafe extern "C" fn cuGraphRemoveDependencies_v2(
    g: CUgraph,
    from: *const CUgraphNode,
    to: *const CUgraphNode,
    data: *const CUgraphEdgeData,
    n: usize,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe { change("cuGraphRemoveDependencies_v2", g, from, to, data, n, false) }
}

/// A `_v2` query: as the first form, with default edge data for each entry written.
///
/// # Safety
/// As `query_into` requires; `data` NULL or valid for `*n` writes.
unsafe fn query_v2(
    name: &str,
    q: graph::Query,
    k: usize,
    a: *mut CUgraphNode,
    b: *mut CUgraphNode,
    data: *mut CUgraphEdgeData,
    n: *mut usize,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    let r = unsafe { query_into(name, q, k, a, b, n) };
    if r == CUresult::CUDA_SUCCESS && !a.is_null() && !data.is_null() {
        let none = CUgraphEdgeData {
            from_port: 0,
            to_port: 0,
            type_: 0,
            reserved: [0; 5],
        };
        // SAFETY: `*n` was checked readable by `query_into`; `data` holds as many
        // entries as the node arrays by the contract.
        unsafe {
            for i in 0..n.read_unaligned() {
                data.add(i).write_unaligned(none);
            }
        }
    }
    r
}

/// `cuGraphGetEdges_v2`.
///
/// # Safety
/// As `query_v2` requires.
#[no_mangle]
pub unsafe extern "C" fn cuGraphGetEdges_v2(
    g: CUgraph,
    from: *mut CUgraphNode,
    to: *mut CUgraphNode,
    data: *mut CUgraphEdgeData,
    n: *mut usize,
) -> CUresult {
    let q = graph::Query::Edges;
    // SAFETY: forwarded from this function's contract.
    unsafe { query_v2("cuGraphGetEdges_v2", q, key(g), from, to, data, n) }
}

/// `cuGraphNodeGetDependencies_v2`.
///
/// # Safety
/// As `query_v2` requires.
#[no_mangle]
pub unsafe extern "C" fn cuGraphNodeGetDependencies_v2(
    node: CUgraphNode,
    deps: *mut CUgraphNode,
    data: *mut CUgraphEdgeData,
    n: *mut usize,
) -> CUresult {
    let (q, b) = (graph::Query::Dependencies, std::ptr::null_mut());
    // SAFETY: forwarded from this function's contract.
    unsafe {
        query_v2(
            "cuGraphNodeGetDependencies_v2",
            q,
            key(node),
            deps,
            b,
            data,
            n,
        )
    }
}

/// `cuGraphNodeGetDependentNodes_v2`.
///
/// # Safety
/// As `query_v2` requires.
#[no_mangle]
pub unsafe extern "C" fn cuGraphNodeGetDependentNodes_v2(
    node: CUgraphNode,
    deps: *mut CUgraphNode,
    data: *mut CUgraphEdgeData,
    n: *mut usize,
) -> CUresult {
    let (q, b) = (graph::Query::DependentNodes, std::ptr::null_mut());
    // SAFETY: forwarded from this function's contract.
    unsafe {
        query_v2(
            "cuGraphNodeGetDependentNodes_v2",
            q,
            key(node),
            deps,
            b,
            data,
            n,
        )
    }
}
