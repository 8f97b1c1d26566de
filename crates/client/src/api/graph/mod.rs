//! Stream capture and graphs.
//!
//! The driver keeps every capture's state; the client only counts the
//! captures it began and has not ended ([`Session::captures`]). While one is
//! open nothing is posted: during capture the driver refuses at once what
//! breaks the capture's rules (a synchronizing call under global mode, work
//! on the legacy stream that would join a capturing stream, a call on an
//! invalidated capture), and only a call that waits for its reply returns
//! that answer where the application expects it. Each call runs on the
//! calling thread's lane, whose worker thread keeps the thread's capture
//! mode, so thread-local, global and relaxed captures behave as natively.
//! Graph creation, instantiation, launch and destruction are table calls.

use std::ffi::{c_char, c_uint, c_void, CStr};
use std::os::unix::ffi::OsStrExt;
use std::ptr;
use std::sync::atomic::Ordering;

use vgpu_abi::types::{
    CUcontext, CUgraph, CUgraphEdgeData, CUgraphExec, CUgraphExecUpdateResult,
    CUgraphExecUpdateResultInfo, CUgraphInstantiateResult, CUgraphNode, CUstream,
    CUstreamCaptureMode, CUstreamCaptureStatus, CUDA_GRAPH_INSTANTIATE_PARAMS,
    CUDA_KERNEL_NODE_PARAMS, CUDA_MEMSET_NODE_PARAMS,
};
use vgpu_proto::{
    exchange_capture_mode, graph_debug_dot_print, graph_exec_update, graph_kernel_node,
    graph_memset_node, graph_query, stream_begin_capture, stream_begin_capture_ptsz,
    stream_begin_capture_v2, stream_begin_capture_v2_ptsz, stream_capture_info, stream_end_capture,
    stream_end_capture_ptsz, stream_is_capturing, update_capture_dependencies, RequestMessage,
};
use zerocopy::little_endian::{U32, U64};

use super::stream::{id, id_ptsz};
use crate::edge::{non_null, wire, write_out, CuError, CuResult};
use crate::objects::{CaptureList, KernelArgs};
use crate::runtime::{runtime, Session};

mod batch;
mod extsem;
mod generic;
mod host;
mod kernel_v1;
mod mem;
mod memcpy;
mod nodes;
mod staged;

pub use batch::{batch_mem_op_node, batch_mem_op_node_params};
pub use extsem::{ext_sem_node, ext_sem_node_params, ExtSemNodeCall};
pub use generic::{node_params, NodeCall};
pub use host::{host_node, host_node_params, user_object_create, HostNodeCall};
pub use kernel_v1::{kernel_node_params_v1, kernel_node_v1};
pub use mem::{graph_mem_attribute, mem_alloc_node, mem_alloc_node_params};
pub use memcpy::{memcpy_node, memcpy_node_params, MemcpyNodeCall};
pub use nodes::{
    debug_dot_print, edges_v2, exec_update, exec_update_v1, kernel_node, kernel_node_params,
    memset_node, memset_node_params, query,
};
pub(crate) use staged::capture_copy;
pub use staged::{graph_destroy, graph_destroy_node, graph_node_get_type};

/// Notes a capture begun on stream `sid`.
fn opened(s: &Session, sid: u64) {
    *s.objects().capturing.entry(sid).or_default() += 1;
    s.captures.fetch_add(1, Ordering::SeqCst);
}

/// Notes the end of a capture on stream `sid`: `cuStreamEndCapture` ends it
/// whatever it returns (an invalidated or unjoined capture included),
/// except on a thread that may not end it.
fn closed(s: &Session, sid: u64, result: &CuResult<()>) {
    if matches!(result, Err(e) if *e == CuError::STREAM_CAPTURE_WRONG_THREAD) {
        return;
    }
    let mut o = s.objects();
    if let Some(n) = o.capturing.get_mut(&sid) {
        *n -= 1;
        if *n == 0 {
            o.capturing.remove(&sid);
        }
        s.captures.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Whether stream `sid` is capturing; costs a round trip only while a
/// capture is open.
pub(crate) fn capturing(s: &Session, sid: u64) -> CuResult<bool> {
    if s.captures.load(Ordering::SeqCst) == 0 {
        return Ok(false);
    }
    let r = stream_is_capturing::Request {
        hstream: U64::new(sid),
    };
    let (rep, _) = s.request(&r, &[])?;
    Ok(rep.capture_status.get() != 0)
}

/// The refusal of an asynchronous 2D copy between device memory and
/// pageable host memory with gaps between its rows, on a capturing stream:
/// such a copy goes through a buffer of the worker that lives only for the
/// call, which a captured node would name at every launch (gapless copies
/// are captured through staging memory instead, [`staged::capture_copy`]).
pub(crate) fn refuse_pageable_capture() -> CuError {
    crate::log::line(format_args!(
        "an asynchronous 2D copy with gaps between its rows, to or from pageable host memory \
         on a capturing stream, is not supported by vgpu: use pinned memory (cuMemHostAlloc)"
    ));
    CuError::STREAM_CAPTURE_UNSUPPORTED
}

/// `cuStreamBeginCapture_v2`.
pub fn stream_begin_capture_v2(st: CUstream, mode: CUstreamCaptureMode) -> CuResult<()> {
    let s = runtime().session()?;
    let r = stream_begin_capture_v2::Request {
        hstream: U64::new(id(st)),
        mode: U32::new(mode.0),
    };
    s.request(&r, &[])?;
    opened(s, id(st));
    Ok(())
}

/// `cuStreamBeginCapture_v2_ptsz`: the NULL stream is the thread's own.
pub fn stream_begin_capture_v2_ptsz(st: CUstream, mode: CUstreamCaptureMode) -> CuResult<()> {
    let s = runtime().session()?;
    let r = stream_begin_capture_v2_ptsz::Request {
        hstream: U64::new(id(st)),
        mode: U32::new(mode.0),
    };
    s.request(&r, &[])?;
    opened(s, id_ptsz(st));
    Ok(())
}

/// `cuStreamBeginCapture`, the first form: global mode.
pub fn stream_begin_capture(st: CUstream) -> CuResult<()> {
    let s = runtime().session()?;
    let r = stream_begin_capture::Request {
        hstream: U64::new(id(st)),
    };
    s.request(&r, &[])?;
    opened(s, id(st));
    Ok(())
}

/// `cuStreamBeginCapture_ptsz`, the first form: global mode.
pub fn stream_begin_capture_ptsz(st: CUstream) -> CuResult<()> {
    let s = runtime().session()?;
    let r = stream_begin_capture_ptsz::Request {
        hstream: U64::new(id(st)),
    };
    s.request(&r, &[])?;
    opened(s, id_ptsz(st));
    Ok(())
}

/// `cuStreamEndCapture`.
///
/// # Safety
/// `ph` must be NULL or valid for a write.
pub unsafe fn stream_end_capture(st: CUstream, ph: *mut CUgraph) -> CuResult<()> {
    let r = stream_end_capture::Request {
        hstream: U64::new(id(st)),
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { end_capture(&r, id(st), ph, |rep| rep.ph_graph.get()) }
}

/// `cuStreamEndCapture_ptsz`.
///
/// # Safety
/// As for [`stream_end_capture`].
pub unsafe fn stream_end_capture_ptsz(st: CUstream, ph: *mut CUgraph) -> CuResult<()> {
    let r = stream_end_capture_ptsz::Request {
        hstream: U64::new(id(st)),
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { end_capture(&r, id_ptsz(st), ph, |rep| rep.ph_graph.get()) }
}

/// Ends the capture on stream `sid` with request `r`; the graph's id is
/// `graph(reply)`. An invalidated capture writes NULL, as the driver does.
///
/// # Safety
/// `ph` must be NULL or valid for a write.
unsafe fn end_capture<M: RequestMessage>(
    r: &M,
    sid: u64,
    ph: *mut CUgraph,
    graph: impl FnOnce(&M::Reply) -> u64,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(ph)?;
    let result = s.request(r, &[]);
    closed(s, sid, &result.as_ref().map(drop).map_err(|e| *e));
    let id = match result {
        Ok((rep, _)) => graph(&rep),
        Err(e) if e == CuError::STREAM_CAPTURE_INVALIDATED => {
            // SAFETY: checked non-NULL; the application's out-pointer.
            unsafe { write_out(ph, std::ptr::null_mut()) }?;
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(ph, wire::handle(id)) }
}

/// `cuThreadExchangeStreamCaptureMode`: the thread's lane keeps the mode,
/// as the driver keeps it per thread.
///
/// # Safety
/// `mode` must be NULL or valid for a read and a write.
pub unsafe fn exchange_capture_mode(mode: *mut CUstreamCaptureMode) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(mode)?;
    // SAFETY: checked non-NULL; the application's pointer, valid for a read.
    let want = unsafe { mode.read() };
    let r = exchange_capture_mode::Request {
        mode: U32::new(want.0),
    };
    let (rep, _) = s.request(&r, &[])?;
    // SAFETY: checked non-NULL; the application's pointer.
    unsafe { write_out(mode, CUstreamCaptureMode(rep.mode.get())) }
}

/// Bytes of one `CUgraphEdgeData` on the wire.
const EDGE: usize = core::mem::size_of::<CUgraphEdgeData>();

/// `cuStreamGetCaptureInfo_v2` / `_v3` and their `_ptsz` forms. `outs` are
/// the status, id, graph, dependency list, edge list and count pointers (the
/// edge list NULL for `_v2`); the status is required, the rest optional and
/// written only while the stream is capturing. The lists stay valid until
/// the next such call on the same stream.
///
/// # Safety
/// Each pointer of `outs` must be NULL or valid for a write of its type.
pub unsafe fn capture_info(
    st: CUstream,
    per_thread: bool,
    edges: bool,
    outs: [*mut c_void; 6],
) -> CuResult<()> {
    let s = runtime().session()?;
    let [status_out, id_out, graph_out, deps_out, edges_out, n_out] = outs;
    non_null(status_out)?;
    let r = stream_capture_info::Request {
        stream: U64::new(id(st)),
        per_thread: u8::from(per_thread),
        edges: u8::from(edges),
    };
    let (rep, back) = s.request(&r, &[])?;
    let status = rep.status.get();
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(status_out.cast(), CUstreamCaptureStatus(status)) }?;
    if status == 0 {
        return Ok(());
    }
    let n = rep.count.get() as usize;
    let want = n * (8 + if edges { EDGE } else { 0 });
    if back.len() != want {
        return Err(CuError::UNKNOWN);
    }
    let (ids, rest) = back.split_at(n * 8);
    let list = CaptureList {
        nodes: ids
            .chunks_exact(8)
            .map(|c| usize::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect(),
        edges: rest
            .chunks_exact(EDGE)
            .map(|c| CUgraphEdgeData {
                from_port: c[0],
                to_port: c[1],
                type_: c[2],
                reserved: [0; 5],
            })
            .collect(),
    };
    let sid = if per_thread { id_ptsz(st) } else { id(st) };
    let (nodes, edge_list) = {
        let mut o = s.objects();
        let kept = o.capture_lists.entry(sid).or_default();
        *kept = list;
        let at = |empty: bool, p: *const c_void| if empty { ptr::null() } else { p };
        (
            at(kept.nodes.is_empty(), kept.nodes.as_ptr().cast()),
            at(kept.edges.is_empty(), kept.edges.as_ptr().cast()),
        )
    };
    // SAFETY: each pointer NULL or the application's out-pointer of its
    // type; the lists live in the session until the next call on `sid`.
    unsafe {
        if !id_out.is_null() {
            write_out(id_out.cast::<u64>(), rep.id.get())?;
        }
        if !graph_out.is_null() {
            write_out(graph_out.cast::<CUgraph>(), wire::handle(rep.graph.get()))?;
        }
        if !deps_out.is_null() {
            write_out(deps_out.cast::<*const c_void>(), nodes)?;
        }
        if !edges_out.is_null() {
            write_out(edges_out.cast::<*const c_void>(), edge_list)?;
        }
        if !n_out.is_null() {
            write_out(n_out.cast::<usize>(), n)?;
        }
    }
    Ok(())
}

/// A dependency list for the wire: node ids, then (with `edges`) the edge
/// data, 8 bytes each.
///
/// # Safety
/// `nodes` and `edges` must be NULL or hold `n` elements.
unsafe fn dependency_blob(
    nodes: *const CUgraphNode,
    edges: Option<*const CUgraphEdgeData>,
    n: usize,
) -> CuResult<(u32, Vec<u8>)> {
    let count = super::call_len(n)?;
    if n > 0 && nodes.is_null() {
        return Err(CuError::INVALID_VALUE);
    }
    let mut blob = Vec::with_capacity(n * (8 + EDGE));
    for i in 0..n {
        // SAFETY: `n` readable elements by the contract.
        let node = unsafe { nodes.add(i).read() };
        blob.extend_from_slice(&(node as usize as u64).to_le_bytes());
    }
    if let Some(e) = edges {
        for i in 0..n {
            let bytes = if e.is_null() {
                [0; EDGE]
            } else {
                // SAFETY: `n` readable elements by the contract.
                unsafe { e.add(i).cast::<[u8; EDGE]>().read_unaligned() }
            };
            blob.extend_from_slice(&bytes);
        }
    }
    Ok((count, blob))
}

/// `cuStreamUpdateCaptureDependencies` (`_v2` with edge data; `_ptsz`).
///
/// # Safety
/// `nodes` and `edges` must be NULL or hold `n` elements.
pub unsafe fn update_dependencies(
    st: CUstream,
    per_thread: bool,
    nodes: *mut CUgraphNode,
    edges: Option<*const CUgraphEdgeData>,
    n: usize,
    flags: c_uint,
) -> CuResult<()> {
    let s = runtime().session()?;
    // SAFETY: forwarded from this function's contract.
    let (count, blob) = unsafe { dependency_blob(nodes, edges, n) }?;
    let r = update_capture_dependencies::Request {
        stream: U64::new(id(st)),
        per_thread: u8::from(per_thread),
        edges: u8::from(edges.is_some()),
        flags: U32::new(flags),
        count: U32::new(count),
    };
    s.request(&r, &blob).map(drop)
}

/// `cuStreamBeginCaptureToGraph` (`_ptsz`): captures into an existing graph
/// after the given dependencies.
///
/// # Safety
/// `nodes` and `edges` must be NULL or hold `n` elements.
pub unsafe fn begin_capture_to_graph(
    st: CUstream,
    per_thread: bool,
    graph: CUgraph,
    nodes: *const CUgraphNode,
    edges: *const CUgraphEdgeData,
    n: usize,
    mode: CUstreamCaptureMode,
) -> CuResult<()> {
    let s = runtime().session()?;
    let edge_list = (!edges.is_null()).then_some(edges);
    // SAFETY: forwarded from this function's contract.
    let (count, blob) = unsafe { dependency_blob(nodes, edge_list, n) }?;
    let r = vgpu_proto::begin_capture_to_graph::Request {
        stream: U64::new(id(st)),
        per_thread: u8::from(per_thread),
        graph: U64::new(graph as usize as u64),
        mode: U32::new(mode.0),
        count: U32::new(count),
        edges: u8::from(edge_list.is_some()),
    };
    s.request(&r, &blob)?;
    opened(s, if per_thread { id_ptsz(st) } else { id(st) });
    Ok(())
}

/// `cuGraphInstantiateWithParams` (`_ptsz`): the parameters' upload stream
/// goes as its id; the blamed node and the result come back into them. A
/// failure returns the driver's code without them.
///
/// # Safety
/// `ph` must be NULL or valid for a write; `params` NULL or valid for a
/// read and a write.
pub unsafe fn instantiate_with_params(
    ph: *mut CUgraphExec,
    graph: CUgraph,
    params: *mut CUDA_GRAPH_INSTANTIATE_PARAMS,
    per_thread: bool,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(ph)?;
    non_null(params)?;
    // SAFETY: checked non-NULL; the application's parameters.
    let p = unsafe { params.read() };
    let r = vgpu_proto::instantiate_with_params::Request {
        graph: U64::new(graph as usize as u64),
        flags: U64::new(p.flags),
        upload_stream: U64::new(id(p.hUploadStream)),
        per_thread: u8::from(per_thread),
    };
    let (rep, _) = s.request(&r, &[])?;
    let exec = rep.exec.get();
    s.objects()
        .graph_execs
        .insert(exec, crate::context::current());
    // SAFETY: checked non-NULL; the application's pointers.
    unsafe {
        write_out(
            ptr::addr_of_mut!((*params).hErrNode_out),
            wire::handle(rep.error_node.get()),
        )?;
        write_out(
            ptr::addr_of_mut!((*params).result_out),
            CUgraphInstantiateResult(rep.result.get()),
        )?;
        write_out(ph, wire::handle(exec))
    }
}
