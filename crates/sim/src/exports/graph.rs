//! Stream capture and graphs: the model functions of the generated exports
//! (`generated/mod.rs`) and `cuThreadExchangeStreamCaptureMode`. The model is
//! `crate::graph`.

use std::ffi::{c_char, c_uint, c_ulonglong};

use super::stream::ptsz;
use crate::cu::{
    cuuint64_t, CUgraph, CUgraphEdgeData, CUgraphExec, CUgraphInstantiateResult, CUgraphNode,
    CUgraphNodeType, CUresult, CUstream, CUstreamCaptureMode, CUstreamCaptureStatus,
    CUDA_GRAPH_INSTANTIATE_PARAMS,
};
use crate::error::{err, Res};
use crate::ffi::{handle, key, run, Out};
use crate::graph;
use crate::state;

/// `cuThreadExchangeStreamCaptureMode`.
///
/// # Safety
/// `mode` must be NULL or valid for a read and a write.
#[no_mangle]
pub unsafe extern "C" fn cuThreadExchangeStreamCaptureMode(
    mode: *mut CUstreamCaptureMode,
) -> CUresult {
    run("cuThreadExchangeStreamCaptureMode", || {
        state::sim()?;
        if mode.is_null() {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "mode is NULL");
        }
        // SAFETY: checked non-NULL; valid for a read by the contract.
        let want = unsafe { mode.read_unaligned() };
        let old = graph::exchange_mode(want.0)?;
        // SAFETY: checked non-NULL; valid for a write by the contract.
        unsafe { mode.write_unaligned(CUstreamCaptureMode(old)) };
        Ok(())
    })
}

/// `cuStreamBeginCapture`: global mode.
pub(crate) fn stream_begin_capture(h: CUstream) -> Res<()> {
    graph::begin(&mut state::sim()?.lock(), key(h), graph::MODE_GLOBAL)
}

/// `cuStreamBeginCapture_v2`.
pub(crate) fn stream_begin_capture_v2(h: CUstream, mode: CUstreamCaptureMode) -> Res<()> {
    graph::begin(&mut state::sim()?.lock(), key(h), mode.0)
}

/// `cuStreamBeginCapture_v2_ptsz`.
pub(crate) fn stream_begin_capture_v2_ptsz(h: CUstream, mode: CUstreamCaptureMode) -> Res<()> {
    graph::begin(&mut state::sim()?.lock(), ptsz(h), mode.0)
}

/// `cuStreamEndCapture`: an invalidated capture writes NULL.
pub(crate) fn stream_end_capture(h: CUstream, out: Out<CUgraph>) -> Res<()> {
    end_capture(key(h), out)
}

/// `cuStreamEndCapture_ptsz`.
pub(crate) fn stream_end_capture_ptsz(h: CUstream, out: Out<CUgraph>) -> Res<()> {
    end_capture(ptsz(h), out)
}

fn end_capture(stream_key: usize, out: Out<CUgraph>) -> Res<()> {
    let r = graph::end(&mut state::sim()?.lock(), stream_key);
    match r {
        Ok(g) => {
            out.write(handle(g));
            Ok(())
        }
        Err(e) if e.code == CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED => {
            out.write(handle(0));
            Err(e)
        }
        Err(e) => Err(e),
    }
}

/// `cuGraphCreate`: no flags are defined.
pub(crate) fn graph_create(out: Out<CUgraph>, flags: c_uint) -> Res<()> {
    if flags != 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("graph flags {flags:#x} are not valid"),
        );
    }
    let mut st = state::sim()?.lock();
    crate::context::current(&st)?;
    out.write(handle(graph::create(&mut st)));
    Ok(())
}

/// `cuGraphDestroy`.
pub(crate) fn graph_destroy(h: CUgraph) -> Res<()> {
    graph::destroy(&mut state::sim()?.lock(), key(h))
}

/// `cuGraphClone`.
pub(crate) fn graph_clone(out: Out<CUgraph>, h: CUgraph) -> Res<()> {
    let g = graph::clone(&mut state::sim()?.lock(), key(h))?;
    out.write(handle(g));
    Ok(())
}

/// `cuGraphDestroyNode`.
pub(crate) fn graph_destroy_node(h: CUgraphNode) -> Res<()> {
    graph::destroy_node(&mut state::sim()?.lock(), key(h))
}

/// `cuGraphNodeGetType`.
pub(crate) fn graph_node_get_type(h: CUgraphNode, out: Out<CUgraphNodeType>) -> Res<()> {
    let t = graph::node_type(&state::sim()?.lock(), key(h))?;
    out.write(CUgraphNodeType(t));
    Ok(())
}

/// `cuGraphInstantiateWithFlags`.
pub(crate) fn graph_instantiate_with_flags(
    out: Out<CUgraphExec>,
    h: CUgraph,
    flags: c_ulonglong,
) -> Res<()> {
    let e = graph::instantiate(&mut state::sim()?.lock(), key(h), flags)?;
    out.write(handle(e));
    Ok(())
}

/// `cuGraphInstantiate_v2`: as with flags 0; the log is empty.
///
/// # Safety
/// `log` must be NULL or valid for `size` bytes of writes.
pub(crate) unsafe fn graph_instantiate_v2(
    out: Out<CUgraphExec>,
    h: CUgraph,
    _error_node: Option<Out<CUgraphNode>>,
    log: *mut c_char,
    size: usize,
) -> Res<()> {
    let e = graph::instantiate(&mut state::sim()?.lock(), key(h), 0)?;
    if !log.is_null() && size > 0 {
        // SAFETY: valid for `size` (> 0) bytes by the contract.
        unsafe { log.write(0) };
    }
    out.write(handle(e));
    Ok(())
}

/// `cuGraphExecDestroy`.
pub(crate) fn graph_exec_destroy(h: CUgraphExec) -> Res<()> {
    graph::exec_destroy(&mut state::sim()?.lock(), key(h))
}

/// `cuGraphExecGetFlags`.
pub(crate) fn graph_exec_get_flags(h: CUgraphExec, out: Out<cuuint64_t>) -> Res<()> {
    out.write(graph::exec_flags(&state::sim()?.lock(), key(h))?);
    Ok(())
}

/// `cuGraphLaunch`: the graph's work runs now, in order, on the stream.
pub(crate) fn graph_launch(h: CUgraphExec, s: CUstream) -> Res<()> {
    graph::launch(&mut state::sim()?.lock(), key(h), key(s))
}

/// `cuGraphLaunch_ptsz`.
pub(crate) fn graph_launch_ptsz(h: CUgraphExec, s: CUstream) -> Res<()> {
    graph::launch(&mut state::sim()?.lock(), key(h), ptsz(s))
}

/// `cuGraphUpload`.
pub(crate) fn graph_upload(h: CUgraphExec, s: CUstream) -> Res<()> {
    graph::upload(&state::sim()?.lock(), key(h), key(s))
}

/// `cuGraphUpload_ptsz`.
pub(crate) fn graph_upload_ptsz(h: CUgraphExec, s: CUstream) -> Res<()> {
    graph::upload(&state::sim()?.lock(), key(h), ptsz(s))
}

/// `cuGraphInstantiate`, the first form: as `cuGraphInstantiate_v2`.
///
/// # Safety
/// As for [`graph_instantiate_v2`].
pub(crate) unsafe fn graph_instantiate(
    out: Out<CUgraphExec>,
    h: CUgraph,
    error_node: Option<Out<CUgraphNode>>,
    log: *mut c_char,
    size: usize,
) -> Res<()> {
    // SAFETY: forwarded from this function's contract.
    unsafe { graph_instantiate_v2(out, h, error_node, log, size) }
}

/// `cuStreamBeginCapture_ptsz`.
pub(crate) fn stream_begin_capture_ptsz(h: CUstream) -> Res<()> {
    graph::begin(&mut state::sim()?.lock(), ptsz(h), graph::MODE_GLOBAL)
}

/// `cuStreamGetCaptureInfo`, the first form: status and (while capturing) id.
pub(crate) fn stream_get_capture_info(
    h: CUstream,
    status: Out<CUstreamCaptureStatus>,
    id: Option<Out<cuuint64_t>>,
) -> Res<()> {
    capture_status_and_id(key(h), status, id)
}

/// `cuStreamGetCaptureInfo_ptsz`.
pub(crate) fn stream_get_capture_info_ptsz(
    h: CUstream,
    status: Out<CUstreamCaptureStatus>,
    id: Option<Out<cuuint64_t>>,
) -> Res<()> {
    capture_status_and_id(ptsz(h), status, id)
}

fn capture_status_and_id(
    stream_key: usize,
    status: Out<CUstreamCaptureStatus>,
    id: Option<Out<cuuint64_t>>,
) -> Res<()> {
    let st = state::sim()?.lock();
    let (s, capture) = graph::info(&st, stream_key)?;
    status.write(CUstreamCaptureStatus(s));
    if let (Some((cid, ..)), Some(out)) = (capture, id) {
        out.write(cid);
    }
    Ok(())
}

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
            let Some((id, g, deps, edges)) = capture else {
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

/// # Safety
/// `ph` and `params` must be NULL or valid as `cuGraphInstantiateWithParams` requires.
unsafe fn instantiate_params(
    name: &str,
    per_thread: bool,
    ph: *mut CUgraphExec,
    g: CUgraph,
    params: *mut CUDA_GRAPH_INSTANTIATE_PARAMS,
) -> CUresult {
    run(name, || {
        if ph.is_null() || params.is_null() {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "a NULL pointer");
        }
        // SAFETY: checked non-NULL; valid by the contract.
        let p = unsafe { params.read_unaligned() };
        let mut st = state::sim()?.lock();
        let e = graph::instantiate(&mut st, key(g), p.flags)?;
        // CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD: checks the stream as an upload does.
        if p.flags & 2 != 0 {
            let s = if per_thread {
                ptsz(p.hUploadStream)
            } else {
                key(p.hUploadStream)
            };
            if let Err(e2) = graph::upload(&st, e, s) {
                graph::exec_destroy(&mut st, e)?;
                return Err(e2);
            }
        }
        // SAFETY: checked non-NULL; valid for writes by the contract.
        unsafe {
            let mut out = p;
            out.hErrNode_out = handle(0);
            out.result_out = CUgraphInstantiateResult(0);
            params.write_unaligned(out);
            ph.write_unaligned(handle(e));
        }
        Ok(())
    })
}

/// `cuGraphInstantiateWithParams`.
///
/// # Safety
/// `ph` and `params` must be NULL or valid for their reads and writes.
#[no_mangle]
pub unsafe extern "C" fn cuGraphInstantiateWithParams(
    ph: *mut CUgraphExec,
    g: CUgraph,
    params: *mut CUDA_GRAPH_INSTANTIATE_PARAMS,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe { instantiate_params("cuGraphInstantiateWithParams", false, ph, g, params) }
}

/// `cuGraphInstantiateWithParams_ptsz`.
///
/// # Safety
/// As for [`cuGraphInstantiateWithParams`].
#[no_mangle]
pub unsafe extern "C" fn cuGraphInstantiateWithParams_ptsz(
    ph: *mut CUgraphExec,
    g: CUgraph,
    params: *mut CUDA_GRAPH_INSTANTIATE_PARAMS,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe { instantiate_params("cuGraphInstantiateWithParams_ptsz", true, ph, g, params) }
}
