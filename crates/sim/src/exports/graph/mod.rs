//! Stream capture and graphs: the model functions of the generated exports
//! (`generated/mod.rs`) and `cuThreadExchangeStreamCaptureMode`. The model is
//! `crate::graph`.

use std::ffi::{c_char, c_uint, c_ulonglong};
use std::os::unix::ffi::OsStrExt;

use super::stream::ptsz;
use crate::cu::{
    cuuint64_t, CUevent, CUgraph, CUgraphExec, CUgraphInstantiateResult, CUgraphNode,
    CUgraphNodeType, CUresult, CUstream, CUstreamCaptureMode, CUstreamCaptureStatus,
    CUDA_GRAPH_INSTANTIATE_PARAMS,
};
use crate::error::{err, Res};
use crate::ffi::{handle, key, run, Out};
use crate::graph;
use crate::state;

mod capture;

pub use capture::*;

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
    if let (Some(c), Some(out)) = (capture, id) {
        out.write(c.id);
    }
    Ok(())
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

/// The nodes of a dependency list the caller passes (`n` handles).
///
/// # Safety
/// `nodes` must be NULL or hold `n` readable handles.
unsafe fn node_keys(nodes: *const CUgraphNode, n: usize) -> Res<Vec<usize>> {
    if n > 0 && nodes.is_null() {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "a node list is NULL");
    }
    // SAFETY: `n` readable handles by the contract.
    Ok((0..n)
        .map(|i| key(unsafe { nodes.add(i).read_unaligned() }))
        .collect())
}

/// A node doing `work` after `n` dependencies.
///
/// # Safety
/// `deps` must be NULL or hold `n` readable handles.
unsafe fn add_node(
    out: Out<CUgraphNode>,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    work: graph::Work,
) -> Res<()> {
    // SAFETY: forwarded from this function's contract.
    let deps = unsafe { node_keys(deps, n) }?;
    let mut st = state::sim()?.lock();
    let node = graph::add_node_after(&mut st, key(g), &deps, work)?;
    out.write(handle(node));
    Ok(())
}

/// `cuGraphAddEmptyNode`.
///
/// # Safety
/// `deps` must be NULL or hold `n` readable handles.
pub(crate) unsafe fn graph_add_empty_node(
    out: Out<CUgraphNode>,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
) -> Res<()> {
    // SAFETY: forwarded from this function's contract.
    unsafe { add_node(out, g, deps, n, graph::Work::Empty) }
}

/// `cuGraphAddEventRecordNode`: the event must exist.
///
/// # Safety
/// `deps` must be NULL or hold `n` readable handles.
pub(crate) unsafe fn graph_add_event_record_node(
    out: Out<CUgraphNode>,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    event: CUevent,
) -> Res<()> {
    crate::event::get(&state::sim()?.lock(), key(event))?;
    let work = graph::Work::EventRecord { event: key(event) };
    // SAFETY: forwarded from this function's contract.
    unsafe { add_node(out, g, deps, n, work) }
}

/// `cuGraphAddEventWaitNode`: the event must exist.
///
/// # Safety
/// `deps` must be NULL or hold `n` readable handles.
pub(crate) unsafe fn graph_add_event_wait_node(
    out: Out<CUgraphNode>,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    event: CUevent,
) -> Res<()> {
    crate::event::get(&state::sim()?.lock(), key(event))?;
    let work = graph::Work::EventWait { event: key(event) };
    // SAFETY: forwarded from this function's contract.
    unsafe { add_node(out, g, deps, n, work) }
}

/// `cuGraphAddDependencies`.
///
/// # Safety
/// `from` and `to` must be NULL or hold `n` readable handles.
pub(crate) unsafe fn graph_add_dependencies(
    g: CUgraph,
    from: *const CUgraphNode,
    to: *const CUgraphNode,
    n: usize,
) -> Res<()> {
    // SAFETY: forwarded from this function's contract.
    let (from, to) = unsafe { (node_keys(from, n)?, node_keys(to, n)?) };
    graph::edges(&mut state::sim()?.lock(), key(g), &from, &to, true)
}

/// `cuGraphRemoveDependencies`.
///
/// # Safety
/// As for [`graph_add_dependencies`].
pub(crate) unsafe fn graph_remove_dependencies(
    g: CUgraph,
    from: *const CUgraphNode,
    to: *const CUgraphNode,
    n: usize,
) -> Res<()> {
    // SAFETY: forwarded from this function's contract.
    let (from, to) = unsafe { (node_keys(from, n)?, node_keys(to, n)?) };
    graph::edges(&mut state::sim()?.lock(), key(g), &from, &to, false)
}

/// A graph query into the caller's arrays: without arrays the count; with them the
/// first `*n` entries (NULL past the end) and the number written.
///
/// # Safety
/// `n` must be NULL or valid for a read and a write; `a` and `b` NULL or valid for `*n`
/// writes.
unsafe fn query_into(
    name: &str,
    q: graph::Query,
    key: usize,
    a: *mut CUgraphNode,
    b: *mut CUgraphNode,
    n: *mut usize,
) -> CUresult {
    run(name, || {
        if n.is_null() || (q == graph::Query::Edges && a.is_null() != b.is_null()) {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "a NULL pointer");
        }
        let found = graph::query(&state::sim()?.lock(), q, key)?;
        // SAFETY: the caller's pointers, checked non-NULL where read.
        unsafe {
            if a.is_null() {
                n.write_unaligned(found.len());
                return Ok(());
            }
            let cap = n.read_unaligned();
            for i in 0..cap {
                let (x, y) = found.get(i).copied().unwrap_or((0, 0));
                a.add(i).write_unaligned(handle(x));
                if !b.is_null() {
                    b.add(i).write_unaligned(handle(y));
                }
            }
            n.write_unaligned(cap.min(found.len()));
        }
        Ok(())
    })
}

/// `cuGraphGetNodes`.
///
/// # Safety
/// As `query_into` requires.
#[no_mangle]
pub unsafe extern "C" fn cuGraphGetNodes(
    g: CUgraph,
    nodes: *mut CUgraphNode,
    n: *mut usize,
) -> CUresult {
    let (name, q, b) = ("cuGraphGetNodes", graph::Query::Nodes, std::ptr::null_mut());
    // SAFETY: forwarded from this function's contract.
    unsafe { query_into(name, q, key(g), nodes, b, n) }
}

/// `cuGraphGetRootNodes`: the nodes without dependencies.
///
/// # Safety
/// As `query_into` requires.
#[no_mangle]
pub unsafe extern "C" fn cuGraphGetRootNodes(
    g: CUgraph,
    nodes: *mut CUgraphNode,
    n: *mut usize,
) -> CUresult {
    let (name, q, b) = (
        "cuGraphGetRootNodes",
        graph::Query::RootNodes,
        std::ptr::null_mut(),
    );
    // SAFETY: forwarded from this function's contract.
    unsafe { query_into(name, q, key(g), nodes, b, n) }
}

/// `cuGraphNodeGetDependencies`.
///
/// # Safety
/// As `query_into` requires.
#[no_mangle]
pub unsafe extern "C" fn cuGraphNodeGetDependencies(
    node: CUgraphNode,
    deps: *mut CUgraphNode,
    n: *mut usize,
) -> CUresult {
    let q = graph::Query::Dependencies;
    let (name, b) = ("cuGraphNodeGetDependencies", std::ptr::null_mut());
    // SAFETY: forwarded from this function's contract.
    unsafe { query_into(name, q, key(node), deps, b, n) }
}

/// `cuGraphNodeGetDependentNodes`.
///
/// # Safety
/// As `query_into` requires.
#[no_mangle]
pub unsafe extern "C" fn cuGraphNodeGetDependentNodes(
    node: CUgraphNode,
    deps: *mut CUgraphNode,
    n: *mut usize,
) -> CUresult {
    let q = graph::Query::DependentNodes;
    let (name, b) = ("cuGraphNodeGetDependentNodes", std::ptr::null_mut());
    // SAFETY: forwarded from this function's contract.
    unsafe { query_into(name, q, key(node), deps, b, n) }
}

/// `cuGraphGetEdges`: (source, destination) pairs.
///
/// # Safety
/// As `query_into` requires.
#[no_mangle]
pub unsafe extern "C" fn cuGraphGetEdges(
    g: CUgraph,
    from: *mut CUgraphNode,
    to: *mut CUgraphNode,
    n: *mut usize,
) -> CUresult {
    let q = graph::Query::Edges;
    // SAFETY: forwarded from this function's contract.
    unsafe { query_into("cuGraphGetEdges", q, key(g), from, to, n) }
}

/// `cuGraphDebugDotPrint`: a DOT description of the graph's nodes (by type) and edges;
/// a file that cannot be written is `CUDA_ERROR_OPERATING_SYSTEM`.
///
/// # Safety
/// `path` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cuGraphDebugDotPrint(
    g: CUgraph,
    path: *const std::ffi::c_char,
    _flags: c_uint,
) -> CUresult {
    run("cuGraphDebugDotPrint", || {
        if path.is_null() {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "path is NULL");
        }
        // SAFETY: checked non-NULL; NUL-terminated by the contract.
        let path = unsafe { std::ffi::CStr::from_ptr(path) };
        let dot = graph::dot(&state::sim()?.lock(), key(g))?;
        let path = std::ffi::OsStr::from_bytes(path.to_bytes());
        std::fs::write(path, dot).or_else(|e| {
            err(
                CUresult::CUDA_ERROR_OPERATING_SYSTEM,
                format!("cannot write {}: {e}", path.to_string_lossy()),
            )
        })
    })
}
