//! Capture state through pointers: `cuStreamGetCaptureInfo_v2`/`_v3`,
//! `cuStreamUpdateCaptureDependencies` and `cuStreamBeginCaptureToGraph` (and their
//! `_ptsz` forms), exported by hand (their lists of nodes are hand-written operations).

use std::ffi::c_uint;

use super::super::stream::ptsz;
use crate::cu::{
    cuuint64_t, CUgraph, CUgraphEdgeData, CUgraphNode, CUresult, CUstream, CUstreamCaptureMode,
    CUstreamCaptureStatus,
};
use crate::error::{err, Res};
use crate::ffi::{handle, key, run};
use crate::graph;
use crate::state;

/// The outputs of `cuStreamGetCaptureInfo_v2` / `_v3`, each NULL or valid for a write.
struct InfoOuts {
    status: *mut CUstreamCaptureStatus,
    id: *mut cuuint64_t,
    graph: *mut CUgraph,
    deps: *mut *const CUgraphNode,
    edges: *mut *const CUgraphEdgeData,
    count: *mut usize,
}

/// `cuStreamGetCaptureInfo_v2` / `_v3`: the lists point into the capture and stay valid
/// until the next call on the stream.
///
/// # Safety
/// Every pointer of `o` must be NULL or valid for a write of its type.
unsafe fn capture_info(name: &str, stream_key: usize, o: InfoOuts) -> CUresult {
    run(name, || {
        let st = state::sim()?.lock();
        if o.status.is_null() {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                "captureStatus_out is NULL",
            );
        }
        let (s, capture) = graph::info(&st, stream_key)?;
        // SAFETY: each write is to a non-NULL pointer the caller made valid.
        unsafe {
            o.status.write_unaligned(CUstreamCaptureStatus(s));
            let Some(graph::CaptureView {
                id,
                graph: g,
                deps,
                edges,
            }) = capture
            else {
                return Ok(());
            };
            if !o.id.is_null() {
                o.id.write_unaligned(id);
            }
            if !o.graph.is_null() {
                o.graph.write_unaligned(handle(g));
            }
            if !o.deps.is_null() {
                o.deps.write_unaligned(if deps.is_empty() {
                    std::ptr::null()
                } else {
                    deps.as_ptr().cast()
                });
            }
            if !o.edges.is_null() {
                o.edges.write_unaligned(if edges.is_empty() {
                    std::ptr::null()
                } else {
                    edges.as_ptr()
                });
            }
            if !o.count.is_null() {
                o.count.write_unaligned(deps.len());
            }
        }
        Ok(())
    })
}

/// `cuStreamGetCaptureInfo_v2`.
///
/// # Safety
/// Every pointer must be NULL or valid for a write of its type.
#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v2(
    h: CUstream,
    status: *mut CUstreamCaptureStatus,
    id: *mut cuuint64_t,
    graph_out: *mut CUgraph,
    deps: *mut *const CUgraphNode,
    count: *mut usize,
) -> CUresult {
    let edges = std::ptr::null_mut();
    let o = InfoOuts {
        status,
        id,
        graph: graph_out,
        deps,
        edges,
        count,
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { capture_info("cuStreamGetCaptureInfo_v2", key(h), o) }
}

/// `cuStreamGetCaptureInfo_v2_ptsz`.
///
/// # Safety
/// As for [`cuStreamGetCaptureInfo_v2`].
#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v2_ptsz(
    h: CUstream,
    status: *mut CUstreamCaptureStatus,
    id: *mut cuuint64_t,
    graph_out: *mut CUgraph,
    deps: *mut *const CUgraphNode,
    count: *mut usize,
) -> CUresult {
    let edges = std::ptr::null_mut();
    let o = InfoOuts {
        status,
        id,
        graph: graph_out,
        deps,
        edges,
        count,
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { capture_info("cuStreamGetCaptureInfo_v2_ptsz", ptsz(h), o) }
}

/// `cuStreamGetCaptureInfo_v3`: as `_v2`, with the edge data.
///
/// # Safety
/// As for [`cuStreamGetCaptureInfo_v2`].
#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v3(
    h: CUstream,
    status: *mut CUstreamCaptureStatus,
    id: *mut cuuint64_t,
    graph_out: *mut CUgraph,
    deps: *mut *const CUgraphNode,
    edges: *mut *const CUgraphEdgeData,
    count: *mut usize,
) -> CUresult {
    let o = InfoOuts {
        status,
        id,
        graph: graph_out,
        deps,
        edges,
        count,
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { capture_info("cuStreamGetCaptureInfo_v3", key(h), o) }
}

/// `cuStreamGetCaptureInfo_v3_ptsz`.
///
/// # Safety
/// As for [`cuStreamGetCaptureInfo_v2`].
#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v3_ptsz(
    h: CUstream,
    status: *mut CUstreamCaptureStatus,
    id: *mut cuuint64_t,
    graph_out: *mut CUgraph,
    deps: *mut *const CUgraphNode,
    edges: *mut *const CUgraphEdgeData,
    count: *mut usize,
) -> CUresult {
    let o = InfoOuts {
        status,
        id,
        graph: graph_out,
        deps,
        edges,
        count,
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { capture_info("cuStreamGetCaptureInfo_v3_ptsz", ptsz(h), o) }
}

/// A dependency list from the caller: `n` node handles and, when given, their edges.
///
/// # Safety
/// `nodes` and `edges` must be NULL or hold `n` readable elements.
unsafe fn read_list(
    nodes: *const CUgraphNode,
    edges: *const CUgraphEdgeData,
    n: usize,
) -> Res<(Vec<usize>, Vec<CUgraphEdgeData>)> {
    if n > 0 && nodes.is_null() {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "dependencies is NULL");
    }
    let mut keys = Vec::with_capacity(n);
    let mut data = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: `n` readable elements by the contract.
        keys.push(key(unsafe { nodes.add(i).read_unaligned() }));
        data.push(if edges.is_null() {
            CUgraphEdgeData {
                from_port: 0,
                to_port: 0,
                type_: 0,
                reserved: [0; 5],
            }
        } else {
            // SAFETY: `n` readable elements by the contract.
            unsafe { edges.add(i).read_unaligned() }
        });
    }
    Ok((keys, data))
}

/// # Safety
/// `nodes` and `edges` must be NULL or hold `n` readable elements.
unsafe fn update(
    name: &str,
    stream_key: usize,
    nodes: *const CUgraphNode,
    edges: *const CUgraphEdgeData,
    n: usize,
    flags: c_uint,
) -> CUresult {
    run(name, || {
        let mut st = state::sim()?.lock();
        // SAFETY: forwarded from this function's contract.
        let (keys, data) = unsafe { read_list(nodes, edges, n) }?;
        graph::update_deps(&mut st, stream_key, keys, data, flags)
    })
}

/// `cuStreamUpdateCaptureDependencies`.
///
/// # Safety
/// `nodes` must be NULL or hold `n` readable handles.
#[no_mangle]
pub unsafe extern "C" fn cuStreamUpdateCaptureDependencies(
    h: CUstream,
    nodes: *mut CUgraphNode,
    n: usize,
    flags: c_uint,
) -> CUresult {
    let (name, e) = ("cuStreamUpdateCaptureDependencies", std::ptr::null());
    // SAFETY: forwarded from this function's contract.
    unsafe { update(name, key(h), nodes, e, n, flags) }
}

/// `cuStreamUpdateCaptureDependencies_ptsz`.
///
/// # Safety
/// As for [`cuStreamUpdateCaptureDependencies`].
#[no_mangle]
pub unsafe extern "C" fn cuStreamUpdateCaptureDependencies_ptsz(
    h: CUstream,
    nodes: *mut CUgraphNode,
    n: usize,
    flags: c_uint,
) -> CUresult {
    let (name, e) = ("cuStreamUpdateCaptureDependencies_ptsz", std::ptr::null());
    // SAFETY: forwarded from this function's contract.
    unsafe { update(name, ptsz(h), nodes, e, n, flags) }
}

/// `cuStreamUpdateCaptureDependencies_v2`: with edge data.
///
/// # Safety
/// `nodes` and `edges` must be NULL or hold `n` readable elements.
#[no_mangle]
pub unsafe extern "C" fn cuStreamUpdateCaptureDependencies_v2(
    h: CUstream,
    nodes: *mut CUgraphNode,
    edges: *const CUgraphEdgeData,
    n: usize,
    flags: c_uint,
) -> CUresult {
    let name = "cuStreamUpdateCaptureDependencies_v2";
    // SAFETY: forwarded from this function's contract.
    unsafe { update(name, key(h), nodes, edges, n, flags) }
}

/// `cuStreamUpdateCaptureDependencies_v2_ptsz`.
///
/// # Safety
/// As for [`cuStreamUpdateCaptureDependencies_v2`].
#[no_mangle]
pub unsafe extern "C" fn cuStreamUpdateCaptureDependencies_v2_ptsz(
    h: CUstream,
    nodes: *mut CUgraphNode,
    edges: *const CUgraphEdgeData,
    n: usize,
    flags: c_uint,
) -> CUresult {
    let name = "cuStreamUpdateCaptureDependencies_v2_ptsz";
    // SAFETY: forwarded from this function's contract.
    unsafe { update(name, ptsz(h), nodes, edges, n, flags) }
}

/// # Safety
/// `nodes` and `edges` must be NULL or hold `n` readable elements.
unsafe fn begin_to_graph(
    name: &str,
    stream_key: usize,
    g: CUgraph,
    nodes: *const CUgraphNode,
    edges: *const CUgraphEdgeData,
    n: usize,
    mode: CUstreamCaptureMode,
) -> CUresult {
    run(name, || {
        let mut st = state::sim()?.lock();
        // SAFETY: forwarded from this function's contract.
        let (keys, _) = unsafe { read_list(nodes, edges, n) }?;
        graph::begin_into(&mut st, stream_key, mode.0, Some(key(g)), keys)
    })
}

/// `cuStreamBeginCaptureToGraph`.
///
/// # Safety
/// `nodes` and `edges` must be NULL or hold `n` readable elements.
#[no_mangle]
pub unsafe extern "C" fn cuStreamBeginCaptureToGraph(
    h: CUstream,
    g: CUgraph,
    nodes: *const CUgraphNode,
    edges: *const CUgraphEdgeData,
    n: usize,
    mode: CUstreamCaptureMode,
) -> CUresult {
    let name = "cuStreamBeginCaptureToGraph";
    // SAFETY: forwarded from this function's contract.
    unsafe { begin_to_graph(name, key(h), g, nodes, edges, n, mode) }
}

/// `cuStreamBeginCaptureToGraph_ptsz`.
///
/// # Safety
/// As for [`cuStreamBeginCaptureToGraph`].
#[no_mangle]
pub unsafe extern "C" fn cuStreamBeginCaptureToGraph_ptsz(
    h: CUstream,
    g: CUgraph,
    nodes: *const CUgraphNode,
    edges: *const CUgraphEdgeData,
    n: usize,
    mode: CUstreamCaptureMode,
) -> CUresult {
    let name = "cuStreamBeginCaptureToGraph_ptsz";
    // SAFETY: forwarded from this function's contract.
    unsafe { begin_to_graph(name, ptsz(h), g, nodes, edges, n, mode) }
}
