//! Stream capture and graphs. The table calls (`generated/mod.rs`) carry
//! capture, instantiation, launch and destruction; graph, node and
//! executable graph handles are worker-minted ids ([`super::tables`]), and a
//! destroyed one is forgotten, so using it again never reaches the driver.
//! Each call runs on the calling client thread's lane, whose thread keeps
//! that thread's capture mode.

use std::ptr;

use vgpu_abi::types::{
    cuuint64_t, CUgraph, CUgraphEdgeData, CUgraphExec, CUgraphExecUpdateResult,
    CUgraphExecUpdateResultInfo, CUgraphInstantiateResult, CUgraphNode, CUstream,
    CUstreamCaptureMode, CUstreamCaptureStatus, CUDA_GRAPH_INSTANTIATE_PARAMS,
    CUDA_KERNEL_NODE_PARAMS,
};
use vgpu_abi::HandleKind;
use vgpu_proto::{
    begin_capture_to_graph, exchange_capture_mode, graph_edges, graph_exec_update,
    graph_kernel_node, graph_kernel_node_params, graph_query, instantiate_with_params,
    stream_capture_info, update_capture_dependencies, Request,
};
use zerocopy::little_endian::{U32, U64};

use super::calls::{as_ptr, message, ok, Reply};
use super::exec::Lane;
use super::status::INVALID_VALUE;
use super::Session;
use crate::driver::{entry, Handle, Status};

mod batch;
mod child;
mod dot;
mod extsem;
mod generic;
mod host;
mod mem;
mod memcpy;
mod memset;
pub use batch::{graph_batch_mem_op_node, graph_batch_mem_op_node_params};
pub use child::check_graph_add_child_graph_node;
pub use dot::graph_debug_dot_print;
pub use extsem::{graph_ext_sem_node, graph_ext_sem_node_params};
pub use generic::{graph_conditional_node, graph_node_generic};
pub use host::{graph_host_node, graph_host_node_params, user_object_create};
pub use mem::{device_graph_mem_attribute, graph_mem_alloc_node, graph_mem_alloc_node_params};
pub use memcpy::{graph_memcpy_node, graph_memcpy_node_params};
pub use memset::{graph_memset_node, graph_memset_node_params};

/// `cuThreadExchangeStreamCaptureMode` on the lane's thread, which stands
/// for the client's thread.
pub fn exchange_capture_mode(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &exchange_capture_mode::Request = message(req)?;
    let mut mode = CUstreamCaptureMode(r.mode.get());
    // SAFETY: the out-pointer is a live local.
    ok(unsafe { entry(s.driver.cuThreadExchangeStreamCaptureMode)?(&mut mode) })?;
    Ok(Reply::new(
        &exchange_capture_mode::Reply {
            mode: U32::new(mode.0),
        },
        Vec::new(),
    ))
}

/// Bytes of one `CUgraphEdgeData` on the wire.
const EDGE: usize = core::mem::size_of::<CUgraphEdgeData>();

/// `cuStreamGetCaptureInfo_v2` / `_v3` (and their `_ptsz` forms). The
/// driver's dependency array goes back as node ids, minted here for nodes
/// the session has not seen.
pub fn stream_capture_info(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &stream_capture_info::Request = message(req)?;
    let st: CUstream = as_ptr(s.tables().stream(r.stream.get())?);
    let mut status = CUstreamCaptureStatus(0);
    let mut id: cuuint64_t = 0;
    let mut graph: CUgraph = ptr::null_mut();
    let mut deps: *const CUgraphNode = ptr::null();
    let mut edges: *const CUgraphEdgeData = ptr::null();
    let mut n: usize = 0;
    let (per_thread, with_edges) = (r.per_thread != 0, r.edges != 0);
    // SAFETY: every out-pointer is a live local; the stream is this
    // session's own (or a sentinel the driver judges).
    ok(unsafe {
        match (with_edges, per_thread) {
            (true, false) => entry(s.driver.cuStreamGetCaptureInfo_v3)?(
                st,
                &mut status,
                &mut id,
                &mut graph,
                &mut deps,
                &mut edges,
                &mut n,
            ),
            (true, true) => entry(s.driver.cuStreamGetCaptureInfo_v3_ptsz)?(
                st,
                &mut status,
                &mut id,
                &mut graph,
                &mut deps,
                &mut edges,
                &mut n,
            ),
            (false, false) => entry(s.driver.cuStreamGetCaptureInfo_v2)?(
                st,
                &mut status,
                &mut id,
                &mut graph,
                &mut deps,
                &mut n,
            ),
            (false, true) => entry(s.driver.cuStreamGetCaptureInfo_v2_ptsz)?(
                st,
                &mut status,
                &mut id,
                &mut graph,
                &mut deps,
                &mut n,
            ),
        }
    })?;
    let mut blob = Vec::new();
    let mut t = s.tables();
    let graph_id = t.id_of(HandleKind::Graph, graph as usize, req.ctx);
    if deps.is_null() {
        n = 0;
    }
    let count = u32::try_from(n).map_err(|_| INVALID_VALUE)?;
    for i in 0..n {
        // SAFETY: the driver returned `n` nodes at `deps`, valid until the
        // next call on the stream; this lane makes none before reading them.
        let node = unsafe { deps.add(i).read() };
        blob.extend_from_slice(
            &t.id_of(HandleKind::GraphNode, node as usize, req.ctx)
                .to_le_bytes(),
        );
    }
    drop(t);
    if with_edges {
        for i in 0..n {
            // NULL means every edge is the default one.
            let e = if edges.is_null() {
                [0; EDGE]
            } else {
                // SAFETY: the driver returned `n` edges at `edges`, valid as
                // `deps` is.
                unsafe { edges.add(i).cast::<[u8; EDGE]>().read_unaligned() }
            };
            blob.extend_from_slice(&e);
        }
    }
    Ok(Reply::new(
        &stream_capture_info::Reply {
            status: U32::new(status.0),
            id: U64::new(id),
            graph: U64::new(graph_id),
            count: U32::new(count),
        },
        blob,
    ))
}

/// The node handles and edge data of a dependency list on the wire:
/// `count` node ids (u64 each), then with `edges` 8 bytes per edge.
fn dependencies(
    s: &Session,
    blob: &[u8],
    count: u32,
    edges: bool,
) -> Result<(Vec<CUgraphNode>, Vec<CUgraphEdgeData>), Status> {
    let n = count as usize;
    let want = n * (8 + if edges { EDGE } else { 0 });
    if blob.len() != want {
        return Err(INVALID_VALUE);
    }
    let (ids, rest) = blob.split_at(n * 8);
    let t = s.tables();
    let nodes = ids
        .chunks_exact(8)
        .map(|c| {
            let id = u64::from_le_bytes(c.try_into().map_err(|_| INVALID_VALUE)?);
            t.handle(HandleKind::GraphNode, id).map(as_ptr)
        })
        .collect::<Result<Vec<CUgraphNode>, Status>>()?;
    let data = rest
        .chunks_exact(EDGE)
        .map(|c| CUgraphEdgeData {
            from_port: c[0],
            to_port: c[1],
            type_: c[2],
            reserved: [0; 5],
        })
        .collect();
    Ok((nodes, data))
}

/// A list's pointer for the driver: NULL when empty.
fn list<T>(v: &[T]) -> *const T {
    if v.is_empty() {
        ptr::null()
    } else {
        v.as_ptr()
    }
}

/// `cuStreamUpdateCaptureDependencies` (`_v2` with edges; `_ptsz`).
pub fn update_capture_dependencies(
    _: &mut Lane,
    s: &Session,
    req: &Request,
) -> Result<Reply, Status> {
    let r: &update_capture_dependencies::Request = message(req)?;
    let st: CUstream = as_ptr(s.tables().stream(r.stream.get())?);
    let (mut nodes, data) = dependencies(s, &req.blob, r.count.get(), r.edges != 0)?;
    let (n, flags) = (nodes.len(), r.flags.get());
    let deps = if nodes.is_empty() {
        ptr::null_mut()
    } else {
        nodes.as_mut_ptr()
    };
    // SAFETY: `deps` and the edge data hold `n` elements each (or are NULL
    // for none); the stream and nodes are this session's own.
    ok(unsafe {
        match (r.edges != 0, r.per_thread != 0) {
            (true, false) => entry(s.driver.cuStreamUpdateCaptureDependencies_v2)?(
                st,
                deps,
                list(&data),
                n,
                flags,
            ),
            (true, true) => entry(s.driver.cuStreamUpdateCaptureDependencies_v2_ptsz)?(
                st,
                deps,
                list(&data),
                n,
                flags,
            ),
            (false, false) => {
                entry(s.driver.cuStreamUpdateCaptureDependencies)?(st, deps, n, flags)
            }
            (false, true) => {
                entry(s.driver.cuStreamUpdateCaptureDependencies_ptsz)?(st, deps, n, flags)
            }
        }
    })?;
    Ok(Reply::default())
}

/// `cuStreamBeginCaptureToGraph` (`_ptsz`).
pub fn begin_capture_to_graph(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &begin_capture_to_graph::Request = message(req)?;
    let (st, graph): (CUstream, CUgraph) = {
        let t = s.tables();
        (
            as_ptr(t.stream(r.stream.get())?),
            as_ptr(t.handle(HandleKind::Graph, r.graph.get())?),
        )
    };
    let (nodes, data) = dependencies(s, &req.blob, r.count.get(), r.edges != 0)?;
    let mode = CUstreamCaptureMode(r.mode.get());
    let edge_data = if r.edges != 0 {
        list(&data)
    } else {
        ptr::null()
    };
    // SAFETY: the node and edge lists hold `nodes.len()` elements each (or
    // are NULL); the stream and graph are this session's own.
    ok(unsafe {
        if r.per_thread != 0 {
            entry(s.driver.cuStreamBeginCaptureToGraph_ptsz)?(
                st,
                graph,
                list(&nodes),
                edge_data,
                nodes.len(),
                mode,
            )
        } else {
            entry(s.driver.cuStreamBeginCaptureToGraph)?(
                st,
                graph,
                list(&nodes),
                edge_data,
                nodes.len(),
                mode,
            )
        }
    })?;
    Ok(Reply::default())
}

/// `cuGraphInstantiateWithParams` (`_ptsz`).
pub fn instantiate_with_params(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &instantiate_with_params::Request = message(req)?;
    let (graph, upload): (CUgraph, CUstream) = {
        let t = s.tables();
        (
            as_ptr(t.handle(HandleKind::Graph, r.graph.get())?),
            as_ptr(t.stream(r.upload_stream.get())?),
        )
    };
    let mut params = CUDA_GRAPH_INSTANTIATE_PARAMS {
        flags: r.flags.get(),
        hUploadStream: upload,
        hErrNode_out: ptr::null_mut(),
        result_out: CUgraphInstantiateResult(0),
    };
    let mut exec: CUgraphExec = ptr::null_mut();
    // SAFETY: the out-pointers are live locals; the graph and stream are
    // this session's own.
    ok(unsafe {
        if r.per_thread != 0 {
            entry(s.driver.cuGraphInstantiateWithParams_ptsz)?(&mut exec, graph, &mut params)
        } else {
            entry(s.driver.cuGraphInstantiateWithParams)?(&mut exec, graph, &mut params)
        }
    })?;
    let mut t = s.tables();
    let exec_id = t.id_of(HandleKind::GraphExec, exec as usize, req.ctx);
    let node_id = t.id_of(HandleKind::GraphNode, params.hErrNode_out as usize, req.ctx);
    drop(t);
    Ok(Reply::new(
        &instantiate_with_params::Reply {
            exec: U64::new(exec_id),
            error_node: U64::new(node_id),
            result: U32::new(params.result_out.0),
        },
        Vec::new(),
    ))
}

/// Most entries a graph query returns (16 MiB of ids).
const MAX_QUERY: usize = 1 << 21;

/// `cuGraphGetNodes`, `…GetRootNodes`, `…NodeGetDependencies`,
/// `…NodeGetDependentNodes`, `…GetEdges`: the driver fills arrays of the
/// client's capacity; their nodes go back as ids.
pub fn graph_query(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &graph_query::Request = message(req)?;
    let kind = match r.what {
        2 | 3 => HandleKind::GraphNode,
        _ => HandleKind::Graph,
    };
    let h: Handle = as_ptr(s.tables().handle(kind, r.handle.get())?);
    let want = r.want != 0;
    let capacity = usize::try_from(r.capacity.get()).map_err(|_| INVALID_VALUE)?;
    if capacity > MAX_QUERY {
        return Err(INVALID_VALUE);
    }
    let len = if want { capacity } else { 0 };
    let mut a: Vec<CUgraphNode> = vec![ptr::null_mut(); len];
    let mut b: Vec<CUgraphNode> = vec![ptr::null_mut(); if r.what == 4 { len } else { 0 }];
    let none = CUgraphEdgeData {
        from_port: 0,
        to_port: 0,
        type_: 0,
        reserved: [0; 5],
    };
    let mut e = vec![none; if r.edges != 0 { len } else { 0 }];
    let (pa, pb, pe) = match want {
        true => (a.as_mut_ptr(), b.as_mut_ptr(), e.as_mut_ptr()),
        false => (ptr::null_mut(), ptr::null_mut(), ptr::null_mut()),
    };
    let pe = if r.edges != 0 { pe } else { ptr::null_mut() };
    let mut n = len;
    let d = &s.driver;
    // SAFETY: the arrays hold `n` entries (or are NULL without `want`); the
    // graph or node is this session's own.
    ok(unsafe {
        match (r.what, r.v2 != 0) {
            (0, _) => entry(d.cuGraphGetNodes)?(h.cast(), pa, &mut n),
            (1, _) => entry(d.cuGraphGetRootNodes)?(h.cast(), pa, &mut n),
            (2, false) => entry(d.cuGraphNodeGetDependencies)?(h.cast(), pa, &mut n),
            (3, false) => entry(d.cuGraphNodeGetDependentNodes)?(h.cast(), pa, &mut n),
            (4, false) => entry(d.cuGraphGetEdges)?(h.cast(), pa, pb, &mut n),
            (2, true) => entry(d.cuGraphNodeGetDependencies_v2)?(h.cast(), pa, pe, &mut n),
            (3, true) => entry(d.cuGraphNodeGetDependentNodes_v2)?(h.cast(), pa, pe, &mut n),
            (4, true) => entry(d.cuGraphGetEdges_v2)?(h.cast(), pa, pb, pe, &mut n),
            _ => return Err(INVALID_VALUE),
        }
    })?;
    let mut t = s.tables();
    let mut blob: Vec<u8> = a
        .iter()
        .chain(&b)
        .flat_map(|&node| {
            t.id_of(HandleKind::GraphNode, node as usize, req.ctx)
                .to_le_bytes()
        })
        .collect();
    drop(t);
    blob.extend(
        e.iter()
            .flat_map(|x| [x.from_port, x.to_port, x.type_, 0, 0, 0, 0, 0]),
    );
    Ok(Reply::new(
        &graph_query::Reply {
            count: U64::new(n as u64),
        },
        blob,
    ))
}

/// `cuGraphAddDependencies_v2` / `cuGraphRemoveDependencies_v2`.
pub fn graph_edges(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &graph_edges::Request = message(req)?;
    let n = r.count.get() as usize;
    let (from, rest) = req.blob.split_at_checked(n * 8).ok_or(INVALID_VALUE)?;
    let (from, _) = dependencies(s, from, r.count.get(), false)?;
    let (to, data) = dependencies(s, rest, r.count.get(), true)?;
    let g: CUgraph = as_ptr(s.tables().handle(HandleKind::Graph, r.graph.get())?);
    let f = match r.add != 0 {
        true => entry(s.driver.cuGraphAddDependencies_v2)?,
        false => entry(s.driver.cuGraphRemoveDependencies_v2)?,
    };
    // SAFETY: three arrays of `n` entries, live locals; the graph and nodes
    // are this session's own.
    ok(unsafe { f(g, list(&from), list(&to), list(&data), n) })?;
    Ok(Reply::default())
}

/// `cuGraphAddKernelNode_v2` / `cuGraphKernelNodeSetParams_v2`: the
/// function, kernel and context become real handles; the packed arguments
/// become `kernelParams` by the function's parameter layout, as for a launch.
pub fn graph_kernel_node(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &graph_kernel_node::Request = message(req)?;
    let deps_len = usize::try_from(r.deps.get()).map_err(|_| INVALID_VALUE)? * 8;
    if req.blob.len() < deps_len {
        return Err(INVALID_VALUE);
    }
    let (dep_ids, packed) = req.blob.split_at(deps_len);
    let (deps, _) = dependencies(s, dep_ids, r.deps.get(), false)?;
    let (graph, node, exec, func, kern, ctx, layout) = {
        let t = s.tables();
        let target = if r.function.get() != 0 {
            r.function.get()
        } else {
            r.kernel.get()
        };
        (
            t.handle(HandleKind::Graph, r.graph.get())?,
            t.handle(HandleKind::GraphNode, r.node.get())?,
            t.handle(HandleKind::GraphExec, r.exec.get())?,
            t.handle(HandleKind::Function, r.function.get())?,
            t.handle(HandleKind::Kernel, r.kernel.get())?,
            t.handle(HandleKind::Context, r.ctx.get())?,
            t.function(target)?.params.clone(),
        )
    };
    let mut made: CUgraphNode = ptr::null_mut();
    super::launch::with_params(&layout, packed, |kernel_params| {
        let p = CUDA_KERNEL_NODE_PARAMS {
            func: as_ptr(func),
            gridDimX: r.grid_x.get(),
            gridDimY: r.grid_y.get(),
            gridDimZ: r.grid_z.get(),
            blockDimX: r.block_x.get(),
            blockDimY: r.block_y.get(),
            blockDimZ: r.block_z.get(),
            sharedMemBytes: r.shared.get(),
            kernelParams: kernel_params,
            extra: ptr::null_mut(),
            kern: as_ptr(kern),
            ctx: as_ptr(ctx),
        };
        let mut call = || -> Result<Status, Status> {
            // SAFETY: the parameters point at live locals and the packed
            // arguments; every handle is this session's own.
            Ok(unsafe {
                if r.set != 0 && exec != 0 {
                    let f = entry(s.driver.cuGraphExecKernelNodeSetParams_v2)?;
                    f(as_ptr(exec), as_ptr(node), &p)
                } else if r.set != 0 {
                    entry(s.driver.cuGraphKernelNodeSetParams_v2)?(as_ptr(node), &p)
                } else {
                    entry(s.driver.cuGraphAddKernelNode_v2)?(
                        &mut made,
                        as_ptr(graph),
                        list(&deps),
                        deps.len(),
                        &p,
                    )
                }
            })
        };
        call().unwrap_or_else(|e| e)
    })?;
    let id = s
        .tables()
        .id_of(HandleKind::GraphNode, made as usize, req.ctx);
    Ok(Reply::new(
        &graph_kernel_node::Reply { node: U64::new(id) },
        Vec::new(),
    ))
}

/// `cuGraphExecUpdate_v2`: the driver's status travels in the reply with the
/// result information it wrote.
pub fn graph_exec_update(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &graph_exec_update::Request = message(req)?;
    let (exec, graph) = {
        let t = s.tables();
        (
            t.handle(HandleKind::GraphExec, r.exec.get())?,
            t.handle(HandleKind::Graph, r.graph.get())?,
        )
    };
    let mut info = CUgraphExecUpdateResultInfo {
        result: CUgraphExecUpdateResult(0),
        errorNode: ptr::null_mut(),
        errorFromNode: ptr::null_mut(),
    };
    // SAFETY: the out-pointer is a live local; the handles are this session's own.
    let status =
        unsafe { entry(s.driver.cuGraphExecUpdate_v2)?(as_ptr(exec), as_ptr(graph), &mut info) };
    let mut t = s.tables();
    let node = t.id_of(HandleKind::GraphNode, info.errorNode as usize, req.ctx);
    let from = t.id_of(HandleKind::GraphNode, info.errorFromNode as usize, req.ctx);
    drop(t);
    Ok(Reply::new(
        &graph_exec_update::Reply {
            status: U32::new(status.0),
            result: U32::new(info.result.0),
            error_node: U64::new(node),
            error_from_node: U64::new(from),
        },
        Vec::new(),
    ))
}

/// `cuGraphKernelNodeGetParams_v2`: the handles become the session's ids and
/// the arguments are packed by the function's parameter layout.
pub fn graph_kernel_node_params(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &graph_kernel_node_params::Request = message(req)?;
    let node: CUgraphNode = as_ptr(s.tables().handle(HandleKind::GraphNode, r.node.get())?);
    // SAFETY: the C struct is valid when all zero.
    let mut p: CUDA_KERNEL_NODE_PARAMS = unsafe { core::mem::zeroed() };
    // SAFETY: the out-pointer is a live local; the node is this session's own.
    ok(unsafe { entry(s.driver.cuGraphKernelNodeGetParams_v2)?(node, &mut p) })?;
    let mut t = s.tables();
    let function = t.function_id(p.func as usize).unwrap_or(0);
    let kernel = t.function_id(p.kern as usize).unwrap_or(0);
    let ctx = t.id_of(HandleKind::Context, p.ctx as usize, req.ctx);
    let target = if function != 0 { function } else { kernel };
    let layout = t.function(target)?.params.clone();
    drop(t);
    let total = layout
        .iter()
        .map(|&(o, n)| o as usize + n as usize)
        .max()
        .unwrap_or(0);
    let mut packed = vec![0u8; total];
    if !p.kernelParams.is_null() {
        for (i, &(off, size)) in layout.iter().enumerate() {
            // SAFETY: the driver returned one pointer per parameter, each to
            // a value of the parameter's size; `packed` holds `off + size`.
            unsafe {
                let arg = p.kernelParams.add(i).read();
                if !arg.is_null() {
                    ptr::copy_nonoverlapping(
                        arg.cast::<u8>(),
                        packed.as_mut_ptr().add(off as usize),
                        size as usize,
                    );
                }
            }
        }
    }
    Ok(Reply::new(
        &graph_kernel_node_params::Reply {
            function: U64::new(function),
            kernel: U64::new(kernel),
            ctx: U64::new(ctx),
            grid_x: U32::new(p.gridDimX),
            grid_y: U32::new(p.gridDimY),
            grid_z: U32::new(p.gridDimZ),
            block_x: U32::new(p.blockDimX),
            block_y: U32::new(p.blockDimY),
            block_z: U32::new(p.blockDimZ),
            shared: U32::new(p.sharedMemBytes),
        },
        packed,
    ))
}
