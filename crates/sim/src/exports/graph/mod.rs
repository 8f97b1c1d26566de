//! Stream capture and graphs: the model functions of the generated exports
//! (`generated/mod.rs`) and `cuThreadExchangeStreamCaptureMode`. The model is
//! `crate::graph`.

use std::ffi::{c_char, c_uint, c_ulonglong};

use super::stream::ptsz;
use crate::cu::{
    cuuint64_t, CUgraph, CUgraphExec, CUgraphExecUpdateResult, CUgraphExecUpdateResultInfo,
    CUgraphInstantiateResult, CUgraphNode, CUgraphNodeType, CUresult, CUstream,
    CUstreamCaptureMode, CUstreamCaptureStatus, CUDA_GRAPH_INSTANTIATE_PARAMS,
};
use crate::error::{err, Res};
use crate::ffi::{handle, key, run, Out};
use crate::graph;
use crate::state;

mod batch;
mod capture;
mod edges;
mod extsem;
mod generic;
mod host;
mod mem;
mod memcpy;
mod memset;
mod nodes;
mod params;

pub use batch::*;
pub use capture::*;
pub use edges::*;
pub use extsem::*;
pub use generic::*;
pub use host::*;
pub use mem::*;
pub use memcpy::*;
pub use memset::*;
pub use nodes::*;
pub use params::*;

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
    graph::destroy(&mut state::sim()?.lock(), key(h))?;
    params::after_destroy()
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
    graph::exec_destroy(&mut state::sim()?.lock(), key(h))?;
    params::after_destroy()
}

/// `cuGraphExecGetFlags`.
pub(crate) fn graph_exec_get_flags(h: CUgraphExec, out: Out<cuuint64_t>) -> Res<()> {
    out.write(graph::exec_flags(&state::sim()?.lock(), key(h))?);
    Ok(())
}

/// `cuGraphLaunch`: the graph's work runs now, in order, on the stream.
pub(crate) fn graph_launch(h: CUgraphExec, s: CUstream) -> Res<()> {
    graph::launch(state::sim()?, key(h), key(s))
}

/// `cuGraphLaunch_ptsz`.
pub(crate) fn graph_launch_ptsz(h: CUgraphExec, s: CUstream) -> Res<()> {
    graph::launch(state::sim()?, key(h), ptsz(s))
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

/// `cuGraphExecUpdate_v2`: the result information is written whether the update
/// succeeded or not.
///
/// # Safety
/// `info` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuGraphExecUpdate_v2(
    e: CUgraphExec,
    g: CUgraph,
    info: *mut CUgraphExecUpdateResultInfo,
) -> CUresult {
    run("cuGraphExecUpdate_v2", || {
        if info.is_null() {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "resultInfo is NULL");
        }
        let (result, node) = graph::exec_update(&mut state::sim()?.lock(), key(e), key(g))?;
        let out = CUgraphExecUpdateResultInfo {
            result: CUgraphExecUpdateResult(result),
            errorNode: handle(node),
            errorFromNode: handle(0),
        };
        // SAFETY: checked non-NULL; valid for a write by the contract.
        unsafe { info.write_unaligned(out) };
        if result != 0 {
            return err(
                CUresult::CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
                "the graph's nodes differ from the executable graph's",
            );
        }
        Ok(())
    })
}
