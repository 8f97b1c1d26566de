//! Graph queries and nodes built by hand: the node and edge queries, kernel
//! and memset nodes, executable-graph updates and the DOT dump.

use super::*;

/// `cuGraphGetNodes` (`what` 0), `cuGraphGetRootNodes` (1),
/// `cuGraphNodeGetDependencies` (2), `cuGraphNodeGetDependentNodes` (3),
/// `cuGraphGetEdges` (4, sources in `a` and destinations in `b`) of graph or
/// node id `handle`; with `v2` their `_v2` forms, whose edge data goes to
/// `e` (NULL: none asked). With arrays, `*n` is their capacity and the
/// driver fills them; without, it gives the count.
///
/// # Safety
/// `n` must be NULL or valid for a read and a write; `a`, `b` and `e` NULL
/// or valid for `*n` writes.
pub unsafe fn query(
    what: u8,
    handle: u64,
    a: *mut CUgraphNode,
    b: *mut CUgraphNode,
    e: *mut CUgraphEdgeData,
    v2: bool,
    n: *mut usize,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(n)?;
    let edges = what == 4;
    if edges && a.is_null() != b.is_null() {
        return Err(CuError::INVALID_VALUE);
    }
    let want = !a.is_null();
    // SAFETY: checked non-NULL; the application's count.
    let capacity = if want { unsafe { n.read() } } else { 0 };
    let with_data = v2 && !e.is_null();
    let r = graph_query::Request {
        what,
        handle: U64::new(handle),
        capacity: U64::new(capacity as u64),
        want: u8::from(want),
        v2: u8::from(v2),
        edges: u8::from(with_data),
    };
    let (rep, back) = s.request(&r, &[])?;
    let lists = if edges { 2 } else { 1 };
    let data_len = if with_data && want { capacity * 8 } else { 0 };
    if want && back.len() != capacity * 8 * lists + data_len {
        return Err(CuError::UNKNOWN);
    };
    let (id_bytes, data) = back.split_at(back.len() - data_len);
    let ids: Vec<u64> = id_bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect();
    // SAFETY: the application's arrays of `capacity` entries and its count.
    unsafe {
        for (i, &id) in ids.iter().enumerate() {
            let (dst, at) = if i < capacity {
                (a, i)
            } else {
                (b, i - capacity)
            };
            dst.add(at).write(wire::handle(id));
        }
        for (i, d) in data.chunks_exact(8).enumerate() {
            let edge = CUgraphEdgeData {
                from_port: d[0],
                to_port: d[1],
                type_: d[2],
                reserved: [0; 5],
            };
            e.add(i).write(edge);
        }
        write_out(n, usize::try_from(rep.count.get()).unwrap_or(usize::MAX))
    }
}

/// `cuGraphAddDependencies_v2` (`add`) / `cuGraphRemoveDependencies_v2` of
/// `n` edges; NULL edge data is default data.
///
/// # Safety
/// `from`, `to` and `data` must be NULL or hold `n` entries.
pub unsafe fn edges_v2(
    add: bool,
    graph: CUgraph,
    from: *const CUgraphNode,
    to: *const CUgraphNode,
    data: *const CUgraphEdgeData,
    n: usize,
) -> CuResult<()> {
    let s = runtime().session()?;
    // SAFETY: forwarded from this function's contract.
    let (count, mut blob) = unsafe { dependency_blob(from, None, n) }?;
    // SAFETY: as above; the destinations, then the edge data (zeros when NULL).
    let (_, rest) = unsafe { dependency_blob(to, Some(data), n) }?;
    blob.extend_from_slice(&rest);
    let r = vgpu_proto::graph_edges::Request {
        add: u8::from(add),
        graph: U64::new(graph as usize as u64),
        count: U32::new(count),
    };
    s.request(&r, &blob).map(drop)
}

/// `cuGraphDebugDotPrint`: the file is written here, where the application
/// runs, with the bytes the driver wrote in the worker; a file that cannot
/// be written is `CUDA_ERROR_OPERATING_SYSTEM`.
///
/// # Safety
/// `path` must be NULL or a NUL-terminated string.
pub unsafe fn debug_dot_print(graph: CUgraph, path: *const c_char, flags: c_uint) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(path)?;
    // SAFETY: checked non-NULL; the application's NUL-terminated path.
    let path = unsafe { CStr::from_ptr(path) };
    let r = graph_debug_dot_print::Request {
        graph: U64::new(graph as usize as u64),
        flags: U32::new(flags),
    };
    let (_, dot) = s.request(&r, &[])?;
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(path.to_bytes()));
    std::fs::write(path, dot).map_err(|e| {
        crate::log::line(format_args!(
            "cuGraphDebugDotPrint: {}: {e}",
            path.display()
        ));
        CuError::OPERATING_SYSTEM
    })
}

/// `cuGraphAddKernelNode_v2` (with `ph`: a node in `graph` after `n`
/// dependencies) and `cuGraphKernelNodeSetParams_v2` (without: `node`'s
/// parameters). The arguments travel packed by the function's (or kernel's)
/// parameter layout, as a launch's do.
///
/// # Safety
/// `ph` must be NULL or valid for a write; `deps` NULL or `n` handles;
/// `p` NULL or valid parameters as the CUDA API defines them.
pub unsafe fn kernel_node(
    ph: *mut CUgraphNode,
    graph: CUgraph,
    exec: CUgraphExec,
    node: CUgraphNode,
    deps: *const CUgraphNode,
    n: usize,
    p: *const CUDA_KERNEL_NODE_PARAMS,
) -> CuResult<()> {
    let s = runtime().session()?;
    let set = ph.is_null();
    if !set {
        non_null(ph)?;
    }
    non_null(p)?;
    // SAFETY: checked non-NULL; the application's parameters.
    let p = unsafe { p.read() };
    let target = if p.func.is_null() {
        p.kern as usize as u64
    } else {
        p.func as usize as u64
    };
    let layout = s
        .objects()
        .functions
        .get(&target)
        .map(|f| f.params.clone())
        .ok_or(CuError::INVALID_VALUE)?;
    if !p.kernelParams.is_null() && !p.extra.is_null() {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: forwarded from this function's contract.
    let (count, mut blob) = unsafe { dependency_blob(deps, None, n) }?;
    let mut packed = Vec::new();
    if p.extra.is_null() {
        // SAFETY: the application's parameter array.
        unsafe { crate::api::launch::pack_into(&mut packed, &layout, p.kernelParams) }?;
    } else {
        // SAFETY: the application's `extra` list.
        packed = unsafe { crate::api::launch::packed_extra(p.extra) }?;
    }
    blob.extend_from_slice(&packed);
    let r = graph_kernel_node::Request {
        graph: U64::new(graph as usize as u64),
        node: U64::new(node as usize as u64),
        exec: U64::new(exec as usize as u64),
        function: U64::new(p.func as usize as u64),
        kernel: U64::new(p.kern as usize as u64),
        ctx: U64::new(p.ctx as usize as u64),
        grid_x: U32::new(p.gridDimX),
        grid_y: U32::new(p.gridDimY),
        grid_z: U32::new(p.gridDimZ),
        block_x: U32::new(p.blockDimX),
        block_y: U32::new(p.blockDimY),
        block_z: U32::new(p.blockDimZ),
        shared: U32::new(p.sharedMemBytes),
        deps: U32::new(count),
        set: u8::from(set),
    };
    let (rep, _) = s.request(&r, &blob)?;
    if set {
        return Ok(());
    }
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(ph, wire::handle(rep.node.get())) }
}

/// `cuGraphExecUpdate_v2`: the result information is written whether the
/// update succeeded or not, as the driver writes it.
///
/// # Safety
/// `info` must be NULL or valid for a write.
pub unsafe fn exec_update(
    exec: CUgraphExec,
    graph: CUgraph,
    info: *mut CUgraphExecUpdateResultInfo,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(info)?;
    let r = graph_exec_update::Request {
        exec: U64::new(exec as usize as u64),
        graph: U64::new(graph as usize as u64),
    };
    let (rep, _) = s.request(&r, &[])?;
    let out = CUgraphExecUpdateResultInfo {
        result: CUgraphExecUpdateResult(rep.result.get()),
        errorNode: wire::handle(rep.error_node.get()),
        errorFromNode: wire::handle(rep.error_from_node.get()),
    };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(info, out) }?;
    crate::edge::check(rep.status.get())
}

/// `cuGraphExecUpdate`, the first form: as `cuGraphExecUpdate_v2`, the node
/// the driver blames and the result written to two out-pointers.
///
/// # Safety
/// `error_node` and `result` must be NULL or valid for writes.
pub unsafe fn exec_update_v1(
    exec: CUgraphExec,
    graph: CUgraph,
    error_node: *mut CUgraphNode,
    result: *mut CUgraphExecUpdateResult,
) -> CuResult<()> {
    non_null(error_node)?;
    non_null(result)?;
    let mut info = CUgraphExecUpdateResultInfo {
        result: CUgraphExecUpdateResult(0),
        errorNode: ptr::null_mut(),
        errorFromNode: ptr::null_mut(),
    };
    // SAFETY: `info` is a live local.
    let updated = unsafe { exec_update(exec, graph, &mut info) };
    // SAFETY: checked non-NULL; the application's out-pointers.
    unsafe {
        write_out(error_node, info.errorNode)?;
        write_out(result, info.result)?;
    }
    updated
}

/// `cuGraphAddMemsetNode` (`what` 0, in `graph` after `n` `deps`, the node
/// written to `ph`), `cuGraphMemsetNodeSetParams` (1, of `node`) or
/// `cuGraphExecMemsetNodeSetParams` (2, of `node` in `exec`).
///
/// # Safety
/// `ph` must be NULL or valid for a write; `deps` NULL or `n` handles; `p`
/// NULL or valid for a read.
#[allow(clippy::too_many_arguments)]
pub unsafe fn memset_node(
    what: u8,
    ph: *mut CUgraphNode,
    graph: CUgraph,
    exec: CUgraphExec,
    node: CUgraphNode,
    deps: *const CUgraphNode,
    n: usize,
    p: *const CUDA_MEMSET_NODE_PARAMS,
    ctx: CUcontext,
) -> CuResult<()> {
    let s = runtime().session()?;
    if what == 0 {
        non_null(ph)?;
    }
    non_null(p)?;
    // SAFETY: checked non-NULL; the application's parameters.
    let p = unsafe { p.read() };
    // SAFETY: forwarded from this function's contract.
    let (count, blob) = unsafe { dependency_blob(deps, None, n) }?;
    let r = graph_memset_node::Request {
        what,
        graph: U64::new(graph as usize as u64),
        node: U64::new(node as usize as u64),
        exec: U64::new(exec as usize as u64),
        ctx: U64::new(ctx as usize as u64),
        dst: U64::new(p.dst),
        pitch: U64::new(p.pitch as u64),
        value: U32::new(p.value),
        element: U32::new(p.elementSize),
        width: U64::new(p.width as u64),
        height: U64::new(p.height as u64),
        deps: U32::new(count),
    };
    let (rep, _) = s.request(&r, &blob)?;
    if what != 0 {
        return Ok(());
    }
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(ph, wire::handle(rep.node.get())) }
}

/// `cuGraphMemsetNodeGetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a write.
pub unsafe fn memset_node_params(
    node: CUgraphNode,
    p: *mut CUDA_MEMSET_NODE_PARAMS,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(p)?;
    let r = vgpu_proto::graph_memset_node_params::Request {
        node: U64::new(node as usize as u64),
    };
    let (rep, _) = s.request(&r, &[])?;
    let z = |v: &U64| usize::try_from(v.get()).unwrap_or(usize::MAX);
    let out = CUDA_MEMSET_NODE_PARAMS {
        dst: rep.dst.get(),
        pitch: z(&rep.pitch),
        value: rep.value.get(),
        elementSize: rep.element.get(),
        width: z(&rep.width),
        height: z(&rep.height),
    };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(p, out) }
}

/// `cuGraphKernelNodeGetParams_v2`: the arguments live in the session until
/// the next such call on the same node.
///
/// # Safety
/// `p` must be NULL or valid for a write.
pub unsafe fn kernel_node_params(
    node: CUgraphNode,
    p: *mut CUDA_KERNEL_NODE_PARAMS,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(p)?;
    let r = vgpu_proto::graph_kernel_node_params::Request {
        node: U64::new(node as usize as u64),
    };
    let (rep, packed) = s.request(&r, &[])?;
    let target = match rep.function.get() {
        0 => rep.kernel.get(),
        f => f,
    };
    let kernel_params = {
        let mut o = s.objects();
        let layout = o
            .functions
            .get(&target)
            .map(|f| f.params.clone())
            .ok_or(CuError::UNKNOWN)?;
        let mut args = KernelArgs {
            words: vec![0; packed.len().div_ceil(8)],
            ptrs: Vec::new(),
        };
        // SAFETY: `words` holds at least `packed.len()` bytes.
        unsafe {
            ptr::copy_nonoverlapping(
                packed.as_ptr(),
                args.words.as_mut_ptr().cast(),
                packed.len(),
            )
        };
        let base = args.words.as_ptr() as usize;
        args.ptrs = layout.iter().map(|&(off, _)| base + off as usize).collect();
        let kept = o.kernel_node_args.entry(node as usize as u64).or_default();
        *kept = args;
        if kept.ptrs.is_empty() {
            ptr::null_mut()
        } else {
            kept.ptrs.as_mut_ptr().cast::<*mut c_void>()
        }
    };
    let out = CUDA_KERNEL_NODE_PARAMS {
        func: wire::handle(rep.function.get()),
        gridDimX: rep.grid_x.get(),
        gridDimY: rep.grid_y.get(),
        gridDimZ: rep.grid_z.get(),
        blockDimX: rep.block_x.get(),
        blockDimY: rep.block_y.get(),
        blockDimZ: rep.block_z.get(),
        sharedMemBytes: rep.shared.get(),
        kernelParams: kernel_params,
        extra: ptr::null_mut(),
        kern: wire::handle(rep.kernel.get()),
        ctx: wire::handle(rep.ctx.get()),
    };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(p, out) }
}

/// The ids of graph `graph`'s nodes (`cuGraphGetNodes`, for the client's
/// own bookkeeping).
pub(super) fn graph_nodes(s: &Session, graph: u64) -> CuResult<Vec<u64>> {
    let ask = |capacity: u64| {
        let r = graph_query::Request {
            what: 0,
            handle: U64::new(graph),
            capacity: U64::new(capacity),
            want: u8::from(capacity > 0),
            v2: 0,
            edges: 0,
        };
        s.request(&r, &[])
    };
    let count = ask(0)?.0.count.get();
    if count == 0 {
        return Ok(Vec::new());
    }
    let (_, back) = ask(count)?;
    Ok(back
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect())
}
