//! Graphs built node by node, their queries and their DOT description: the model
//! functions of the generated node exports and the hand-written ones.

use std::ffi::c_uint;
use std::os::unix::ffi::OsStrExt;

use crate::cu::{CUevent, CUgraph, CUgraphNode, CUresult, CUDA_KERNEL_NODE_PARAMS};
use crate::error::{err, Res};
use crate::ffi::{handle, key, run, Out};
use crate::graph;
use crate::state;

/// The nodes of a dependency list the caller passes (`n` handles).
///
/// # Safety
/// `nodes` must be NULL or hold `n` readable handles.
pub(super) unsafe fn node_keys(nodes: *const CUgraphNode, n: usize) -> Res<Vec<usize>> {
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
    let work = graph::Work::EventRecord {
        event: key(event),
        captured: false,
    };
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
pub(super) unsafe fn query_into(
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

/// The work of a kernel node: the function (or the kernel's function in the current
/// context), its geometry, and its arguments' bytes.
///
/// # Safety
/// `p` must be valid kernel node parameters as the CUDA API defines them.
pub(super) unsafe fn kernel_work(
    st: &mut crate::state::State,
    p: &CUDA_KERNEL_NODE_PARAMS,
) -> Res<graph::Work> {
    if !p.extra.is_null() {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "the simulator takes arguments through kernelParams only, not extra",
        );
    }
    let target = if p.func.is_null() {
        key(p.kern)
    } else {
        key(p.func)
    };
    let func = crate::library::resolve(st, target)?;
    let kernel = crate::module::function(st, func)?.kernel;
    // SAFETY: the caller's parameters.
    let args = unsafe { kernel.arg_bytes(p.kernelParams.cast_const().cast()) }?;
    let geometry = crate::launch::Launch {
        grid: [p.gridDimX, p.gridDimY, p.gridDimZ],
        block: [p.blockDimX, p.blockDimY, p.blockDimZ],
        shared_bytes: p.sharedMemBytes,
    };
    Ok(graph::Work::Kernel {
        func,
        geometry,
        args,
    })
}

/// `cuGraphAddKernelNode_v2`.
///
/// # Safety
/// `ph` must be NULL or valid for a write, `deps` NULL or `n` handles, `p` NULL or
/// valid kernel node parameters.
#[no_mangle]
pub unsafe extern "C" fn cuGraphAddKernelNode_v2(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    p: *const CUDA_KERNEL_NODE_PARAMS,
) -> CUresult {
    run("cuGraphAddKernelNode_v2", || {
        if ph.is_null() || p.is_null() {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "a NULL pointer");
        }
        // SAFETY: forwarded from this function's contract.
        let deps = unsafe { node_keys(deps, n) }?;
        let mut st = state::sim()?.lock();
        // SAFETY: checked non-NULL; valid by the contract.
        let work = unsafe { kernel_work(&mut st, &*p) }?;
        let node = graph::add_node_after(&mut st, key(g), &deps, work)?;
        // SAFETY: checked non-NULL; valid for a write by the contract.
        unsafe { ph.write_unaligned(handle(node)) };
        Ok(())
    })
}

/// `cuGraphKernelNodeSetParams_v2`: a kernel node takes new parameters.
///
/// # Safety
/// `p` must be NULL or valid kernel node parameters.
#[no_mangle]
pub unsafe extern "C" fn cuGraphKernelNodeSetParams_v2(
    node: CUgraphNode,
    p: *const CUDA_KERNEL_NODE_PARAMS,
) -> CUresult {
    run("cuGraphKernelNodeSetParams_v2", || {
        if p.is_null() {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "nodeParams is NULL");
        }
        let mut st = state::sim()?.lock();
        // SAFETY: checked non-NULL; valid by the contract.
        let work = unsafe { kernel_work(&mut st, &*p) }?;
        graph::set_kernel(&mut st, key(node), work)
    })
}

/// `cuGraphKernelNodeGetParams_v2`: the arguments point into the node, valid until its
/// parameters change.
///
/// # Safety
/// `p` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuGraphKernelNodeGetParams_v2(
    node: CUgraphNode,
    p: *mut CUDA_KERNEL_NODE_PARAMS,
) -> CUresult {
    run("cuGraphKernelNodeGetParams_v2", || {
        if p.is_null() {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "nodeParams is NULL");
        }
        let (func, geometry, args) = graph::kernel_params(&mut state::sim()?.lock(), key(node))?;
        let out = CUDA_KERNEL_NODE_PARAMS {
            func: handle(func),
            gridDimX: geometry.grid[0],
            gridDimY: geometry.grid[1],
            gridDimZ: geometry.grid[2],
            blockDimX: geometry.block[0],
            blockDimY: geometry.block[1],
            blockDimZ: geometry.block[2],
            sharedMemBytes: geometry.shared_bytes,
            kernelParams: std::ptr::with_exposed_provenance_mut(args),
            extra: std::ptr::null_mut(),
            kern: handle(0),
            ctx: handle(0),
        };
        // SAFETY: checked non-NULL; valid for a write by the contract.
        unsafe { p.write_unaligned(out) };
        Ok(())
    })
}
