//! Typed node parameters (event nodes, child graph nodes), their setters in executable
//! graphs, enabling and disabling nodes of an executable graph, and finding a node's
//! copy in a clone. A node of another type than the call's gives
//! `CUDA_ERROR_INVALID_VALUE`, as the driver does.

use super::{add_node_after, clone, exec, invalid, Copy3D, CopyEnd, Node, Work};
use crate::cu::{CUmemorytype, CUDA_MEMCPY3D, CUDA_MEMSET_NODE_PARAMS};
use crate::error::Res;
use crate::state::State;

fn node(st: &State, key: usize) -> Res<&Node> {
    match st.ext.graphs.nodes.get(&key) {
        Some(n) => Ok(n),
        None => invalid(format!("node {key:#x} does not exist")),
    }
}

/// The event of an event record node (`record`) or event wait node.
pub(crate) fn event_of(st: &State, key: usize, record: bool) -> Res<usize> {
    match (&node(st, key)?.work, record) {
        (Work::EventRecord { event, .. }, true) | (Work::EventWait { event }, false) => Ok(*event),
        _ => invalid(format!("node {key:#x} is not an event node of that kind")),
    }
}

/// `work` with its event set to `event`, if it is an event node of the kind `record`
/// names.
fn with_event(work: &mut Work, record: bool, event: usize) -> bool {
    match (work, record) {
        (Work::EventRecord { event: e, captured }, true) => {
            *e = event;
            *captured = false;
            true
        }
        (Work::EventWait { event: e }, false) => {
            *e = event;
            true
        }
        _ => false,
    }
}

/// `cuGraphEventRecordNodeSetEvent` (`record`) / `cuGraphEventWaitNodeSetEvent`.
pub(crate) fn set_event(st: &mut State, key: usize, record: bool, event: usize) -> Res<()> {
    crate::event::get(st, event)?;
    node(st, key)?;
    let set = st
        .ext
        .graphs
        .nodes
        .get_mut(&key)
        .is_some_and(|n| with_event(&mut n.work, record, event));
    match set {
        true => Ok(()),
        false => invalid(format!("node {key:#x} is not an event node of that kind")),
    }
}

/// The index in executable graph `exec_key` of graph node `key`.
pub(super) fn exec_index(st: &State, exec_key: usize, key: usize) -> Res<usize> {
    match exec(st, exec_key)?.nodes.iter().position(|&n| n == key) {
        Some(i) => Ok(i),
        None => invalid(format!(
            "node {key:#x} is not a node of the graph executable graph {exec_key:#x} was \
             instantiated from"
        )),
    }
}

/// `cuGraphExecEventRecordNodeSetEvent` (`record`) / `cuGraphExecEventWaitNodeSetEvent`:
/// the executable graph's copy of the node takes the event; the graph's node keeps its
/// own.
pub(crate) fn exec_set_event(
    st: &mut State,
    exec_key: usize,
    key: usize,
    record: bool,
    event: usize,
) -> Res<()> {
    crate::event::get(st, event)?;
    let i = exec_index(st, exec_key, key)?;
    let e = st.ext.graphs.execs.get_mut(&exec_key);
    match e
        .and_then(|e| e.work.get_mut(i))
        .is_some_and(|w| with_event(w, record, event))
    {
        true => Ok(()),
        false => invalid(format!("node {key:#x} is not an event node of that kind")),
    }
}

/// Kernel, memcpy and memset nodes may be disabled; others are refused.
fn can_disable(st: &State, exec_key: usize, key: usize) -> Res<()> {
    let i = exec_index(st, exec_key, key)?;
    match exec(st, exec_key)?.work.get(i) {
        Some(Work::Kernel { .. } | Work::Copy { .. } | Work::Copy3D(_))
        | Some(Work::Memset { .. } | Work::Memset2D { .. }) => Ok(()),
        _ => invalid(format!(
            "node {key:#x} is not a kernel, memcpy or memset node"
        )),
    }
}

/// `cuGraphNodeGetEnabled`.
pub(crate) fn enabled(st: &State, exec_key: usize, key: usize) -> Res<bool> {
    can_disable(st, exec_key, key)?;
    Ok(!exec(st, exec_key)?.disabled.contains(&key))
}

/// `cuGraphNodeSetEnabled`: a disabled node runs as an empty node until enabled again.
pub(crate) fn set_enabled(st: &mut State, exec_key: usize, key: usize, on: bool) -> Res<()> {
    can_disable(st, exec_key, key)?;
    if let Some(e) = st.ext.graphs.execs.get_mut(&exec_key) {
        if on {
            e.disabled.remove(&key);
        } else {
            e.disabled.insert(key);
        }
    }
    Ok(())
}

/// `cuGraphNodeFindInClone`: the node of graph `cloned` that `cuGraphClone` made from
/// `original`.
pub(crate) fn find_in_clone(st: &State, original: usize, cloned: usize) -> Res<usize> {
    node(st, original)?;
    let g = &st.ext.graphs;
    let Some(graph) = g.graphs.get(&cloned) else {
        return invalid(format!("graph {cloned:#x} does not exist"));
    };
    let found = graph
        .nodes
        .iter()
        .find(|n| g.nodes.get(n).is_some_and(|n| n.origin == Some(original)));
    match found {
        Some(&n) => Ok(n),
        None => invalid(format!(
            "graph {cloned:#x} is not a clone of the graph of node {original:#x}"
        )),
    }
}

/// `cuGraphAddChildGraphNode`: the node holds a copy of graph `child` (which must exist
/// and must not be `graph` itself).
pub(crate) fn add_child(st: &mut State, graph: usize, deps: &[usize], child: usize) -> Res<usize> {
    if child == graph {
        return invalid("a graph cannot be its own child");
    }
    if !st.ext.graphs.graphs.contains_key(&graph) {
        return invalid(format!("graph {graph:#x} does not exist"));
    }
    let copy = clone(st, child)?;
    let work = Work::Child {
        graph: copy,
        work: Vec::new(),
    };
    match add_node_after(st, graph, deps, work) {
        Ok(n) => Ok(n),
        Err(e) => {
            super::destroy(st, copy)?;
            Err(e)
        }
    }
}

/// `cuGraphAddNode` of a child graph node with `CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE`:
/// the node takes graph `child` itself (which must exist, must not be `graph` and must
/// not be another node's already), to be destroyed with it.
pub(crate) fn add_moved_child(
    st: &mut State,
    graph: usize,
    deps: &[usize],
    child: usize,
) -> Res<usize> {
    if child == graph {
        return invalid("a graph cannot be its own child");
    }
    let g = &st.ext.graphs;
    if !g.graphs.contains_key(&child) {
        return invalid(format!("graph {child:#x} does not exist"));
    }
    let owned = g.nodes.values().any(|n| match &n.work {
        Work::Child { graph, .. } => *graph == child,
        Work::Conditional { bodies, .. } => bodies.contains(&child),
        _ => false,
    });
    if owned {
        return invalid(format!("graph {child:#x} belongs to a node already"));
    }
    let work = Work::Child {
        graph: child,
        work: Vec::new(),
    };
    add_node_after(st, graph, deps, work)
}

/// `cuGraphChildGraphNodeGetGraph`: the child graph node's own graph.
pub(crate) fn child_graph(st: &State, key: usize) -> Res<usize> {
    match node(st, key)?.work {
        Work::Child { graph, .. } => Ok(graph),
        _ => invalid(format!("node {key:#x} is not a child graph node")),
    }
}

/// `cuGraphHostNodeGetParams`: a host node's function and argument.
pub(crate) fn host_of(st: &State, key: usize) -> Res<(HostFn, usize)> {
    match node(st, key)?.work {
        Work::Host { f, data } => Ok((f, data)),
        _ => invalid(format!("node {key:#x} is not a host node")),
    }
}

/// A host node's function.
pub(crate) type HostFn = unsafe extern "C" fn(*mut std::ffi::c_void);

/// `cuGraphHostNodeSetParams`.
pub(crate) fn set_host(st: &mut State, key: usize, f: HostFn, data: usize) -> Res<()> {
    host_of(st, key)?;
    if let Some(n) = st.ext.graphs.nodes.get_mut(&key) {
        n.work = Work::Host { f, data };
    }
    Ok(())
}

/// `cuGraphExecHostNodeSetParams`: the executable graph's copy of the node changes.
pub(crate) fn exec_set_host(
    st: &mut State,
    exec_key: usize,
    key: usize,
    f: HostFn,
    data: usize,
) -> Res<()> {
    let i = exec_index(st, exec_key, key)?;
    let e = st.ext.graphs.execs.get_mut(&exec_key);
    match e.and_then(|e| e.work.get_mut(i)) {
        Some(w @ Work::Host { .. }) => {
            *w = Work::Host { f, data };
            Ok(())
        }
        _ => invalid(format!("node {key:#x} is not a host node")),
    }
}

/// `cuGraphMemcpyNodeGetParams`: a memcpy node's copy (a captured one-dimensional copy
/// as its three-dimensional form).
pub(crate) fn copy_of(st: &State, key: usize) -> Res<CUDA_MEMCPY3D> {
    match &node(st, key)?.work {
        Work::Copy3D(c) => Ok(c.0),
        Work::Copy { dst, src, len } => {
            // SAFETY: all-zero bytes are a valid `CUDA_MEMCPY3D` (integers and NULLs).
            let mut c: CUDA_MEMCPY3D = unsafe { std::mem::zeroed() };
            (c.WidthInBytes, c.Height, c.Depth) = (*len, 1, 1);
            match *src {
                CopyEnd::Device(d) => (c.srcMemoryType, c.srcDevice) = (MEMORY_DEVICE, d),
                CopyEnd::Host(a) => (c.srcMemoryType, c.srcHost) = (MEMORY_HOST, a as *const _),
            }
            match *dst {
                CopyEnd::Device(d) => (c.dstMemoryType, c.dstDevice) = (MEMORY_DEVICE, d),
                CopyEnd::Host(a) => (c.dstMemoryType, c.dstHost) = (MEMORY_HOST, a as *mut _),
            }
            Ok(c)
        }
        _ => invalid(format!("node {key:#x} is not a memcpy node")),
    }
}

const MEMORY_HOST: CUmemorytype = CUmemorytype(1);
const MEMORY_DEVICE: CUmemorytype = CUmemorytype(2);

/// `cuGraphMemcpyNodeSetParams`.
pub(crate) fn set_copy(st: &mut State, key: usize, c: CUDA_MEMCPY3D) -> Res<()> {
    copy_of(st, key)?;
    if let Some(n) = st.ext.graphs.nodes.get_mut(&key) {
        n.work = Work::Copy3D(Copy3D(c));
    }
    Ok(())
}

/// `cuGraphExecMemcpyNodeSetParams`: the executable graph's copy of the node changes.
pub(crate) fn exec_set_copy(
    st: &mut State,
    exec_key: usize,
    key: usize,
    c: CUDA_MEMCPY3D,
) -> Res<()> {
    let i = exec_index(st, exec_key, key)?;
    let e = st.ext.graphs.execs.get_mut(&exec_key);
    match e.and_then(|e| e.work.get_mut(i)) {
        Some(w @ (Work::Copy3D(_) | Work::Copy { .. })) => {
            *w = Work::Copy3D(Copy3D(c));
            Ok(())
        }
        _ => invalid(format!("node {key:#x} is not a memcpy node")),
    }
}

/// `cuGraphExecKernelNodeSetParams`: the executable graph's copy of a kernel node takes
/// `work` (a kernel's).
pub(crate) fn exec_set_kernel(st: &mut State, exec_key: usize, key: usize, work: Work) -> Res<()> {
    let i = exec_index(st, exec_key, key)?;
    let e = st.ext.graphs.execs.get_mut(&exec_key);
    match e.and_then(|e| e.work.get_mut(i)) {
        Some(w @ Work::Kernel { .. }) => {
            *w = work;
            Ok(())
        }
        _ => invalid(format!("node {key:#x} is not a kernel node")),
    }
}

/// `cuGraphMemsetNodeGetParams`: a memset node's parameters (a captured memset as one
/// row).
pub(crate) fn memset_of(st: &State, key: usize) -> Res<CUDA_MEMSET_NODE_PARAMS> {
    let value = |pattern: &[u8]| {
        let mut v = [0u8; 4];
        v[..pattern.len().min(4)].copy_from_slice(&pattern[..pattern.len().min(4)]);
        u32::from_ne_bytes(v)
    };
    let element = |pattern: &[u8]| u32::try_from(pattern.len()).unwrap_or(0);
    match &node(st, key)?.work {
        Work::Memset2D {
            dst,
            pitch,
            pattern,
            width,
            height,
        } => Ok(CUDA_MEMSET_NODE_PARAMS {
            dst: *dst,
            pitch: *pitch,
            value: value(pattern),
            elementSize: element(pattern),
            width: *width,
            height: *height,
        }),
        Work::Memset {
            dst,
            pattern,
            count,
        } => Ok(CUDA_MEMSET_NODE_PARAMS {
            dst: *dst,
            pitch: 0,
            value: value(pattern),
            elementSize: element(pattern),
            width: *count,
            height: 1,
        }),
        _ => invalid(format!("node {key:#x} is not a memset node")),
    }
}

/// `cuGraphMemsetNodeSetParams` (no `exec_key`) or `cuGraphExecMemsetNodeSetParams`:
/// the memset node (or the executable graph's copy of it) takes `work`.
pub(crate) fn set_memset(
    st: &mut State,
    exec_key: Option<usize>,
    key: usize,
    work: Work,
) -> Res<()> {
    let is_memset = |w: &Work| matches!(w, Work::Memset { .. } | Work::Memset2D { .. });
    let slot = match exec_key {
        None => st.ext.graphs.nodes.get_mut(&key).map(|n| &mut n.work),
        Some(e) => {
            let i = exec_index(st, e, key)?;
            let e = st.ext.graphs.execs.get_mut(&e);
            e.and_then(|e| e.work.get_mut(i))
        }
    };
    match slot {
        Some(w) if is_memset(w) => {
            *w = work;
            Ok(())
        }
        _ => invalid(format!("node {key:#x} is not a memset node")),
    }
}

/// `cuGraphExecChildGraphNodeSetParams`: the executable graph's copy of child graph
/// node `key` takes graph `child`'s work (a snapshot, as at instantiation).
pub(crate) fn exec_set_child(st: &mut State, exec_key: usize, key: usize, child: usize) -> Res<()> {
    let i = exec_index(st, exec_key, key)?;
    let work = super::exec::work_of(st, child)?.1;
    let e = st.ext.graphs.execs.get_mut(&exec_key);
    match e.and_then(|e| e.work.get_mut(i)) {
        Some(Work::Child { work: w, .. }) => {
            *w = work;
            Ok(())
        }
        _ => invalid(format!("node {key:#x} is not a child graph node")),
    }
}

/// A memory allocation node's work (`cuGraphMemAllocNodeGetParams`).
pub(crate) fn mem_alloc_of(st: &State, key: usize) -> Res<Work> {
    match &node(st, key)?.work {
        w @ Work::MemAlloc { .. } => Ok(w.clone()),
        _ => invalid(format!("node {key:#x} is not a memory allocation node")),
    }
}

/// A memory free node's address (`cuGraphMemFreeNodeGetParams`).
pub(crate) fn mem_free_of(st: &State, key: usize) -> Res<u64> {
    match node(st, key)?.work {
        Work::MemFree { dptr } => Ok(dptr),
        _ => invalid(format!("node {key:#x} is not a memory free node")),
    }
}

/// Whether `dptr` is the address of a memory allocation node of any graph, which a
/// free node may free.
pub(crate) fn is_graph_allocation(st: &State, dptr: u64) -> bool {
    (st.ext.graphs.nodes.values())
        .any(|n| matches!(n.work, Work::MemAlloc { dptr: d, .. } if d == dptr))
}
