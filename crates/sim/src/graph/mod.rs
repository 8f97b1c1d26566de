//! Stream capture and graphs.
//!
//! While a created stream is capturing, the work enqueued on it (memsets, copies,
//! launches, event records) is recorded as nodes of the capture's graph instead of run
//! ([`captured`]). A graph's nodes are kept in the order they were added; an executable
//! graph is a copy of their work, each node after the nodes it depends on (the simulator
//! runs everything in order, so a chain is faithful to any dependency structure), and
//! launching it runs the work in order on the stream, or records it when that stream is
//! capturing.
//!
//! Capture modes follow the driver: a thread's mode (`cuThreadExchangeStreamCaptureMode`,
//! global by default) decides whether a potentially unsafe call (a synchronous
//! allocation, copy, memset or synchronization) is refused while captures are open. Under
//! global mode it is refused while this thread has a capture not begun in relaxed mode or
//! any thread has one begun in global mode; under thread-local mode only for this thread's
//! own; under relaxed mode never. A refused call returns
//! `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` and invalidates the captures that refused it;
//! `cuStreamEndCapture` of an invalidated capture returns
//! `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED` and no graph.
//!
//! The simulator captures created streams only: capturing the NULL or legacy stream is
//! refused as the driver refuses it, and the per-thread stream gives
//! `CUDA_ERROR_NOT_SUPPORTED`.

use std::collections::{HashMap, HashSet};
use std::thread::ThreadId;

use crate::cu::{CUgraphEdgeData, CUresult};
use crate::error::{err, Res};
use crate::launch::Launch;
use crate::memory::End;
use crate::state::stream::AttrValue;
use crate::state::State;

mod attrs;
mod batch;
mod capture;
mod cond;
mod exec;
mod extsem;
mod node;
mod user;

pub(crate) use attrs::*;
pub(crate) use batch::*;
pub(crate) use capture::*;
pub(crate) use cond::*;
pub(crate) use exec::*;
pub(crate) use extsem::*;
pub(crate) use node::*;
pub(crate) use user::*;

/// One end of a recorded copy.
#[derive(Clone, Copy, Debug)]
pub(crate) enum CopyEnd {
    Device(u64),
    /// A host address, read or written when the graph runs (as the driver does).
    Host(usize),
}

impl CopyEnd {
    pub(crate) fn of(e: &End) -> Self {
        match e {
            End::Device(d) => CopyEnd::Device(*d),
            End::Host(p) => CopyEnd::Host(p.expose_provenance()),
        }
    }

    pub(super) fn end(self) -> End {
        match self {
            CopyEnd::Device(d) => End::Device(d),
            CopyEnd::Host(a) => End::Host(std::ptr::with_exposed_provenance_mut(a)),
        }
    }
}

/// A memcpy node's parameters. Host sides are the application's addresses, read or
/// written when the graph runs (as the driver does).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Copy3D(pub crate::cu::CUDA_MEMCPY3D);

// SAFETY: the host pointers inside are addresses the application gave, only dereferenced
// by a launch, on the launching thread, under the device's lock, as the driver would.
unsafe impl Send for Copy3D {}

/// The work of one node.
#[derive(Clone, Debug)]
pub(crate) enum Work {
    Empty,
    Memset {
        dst: u64,
        pattern: Vec<u8>,
        count: usize,
    },
    /// `height` rows of `width` elements at `pitch` bytes (a memset node).
    Memset2D {
        dst: u64,
        pitch: usize,
        pattern: Vec<u8>,
        width: usize,
        height: usize,
    },
    Copy {
        dst: CopyEnd,
        src: CopyEnd,
        len: usize,
    },
    Kernel {
        func: usize,
        geometry: Launch,
        /// Each argument's bytes, in order.
        args: Vec<Vec<u8>>,
    },
    EventRecord {
        event: usize,
        /// Made by a captured `cuEventRecord`: on driver 580 such a node
        /// leaves the event unusable from the host (see `crate::event`).
        captured: bool,
    },
    /// The event's work has run already (work runs at enqueue): nothing to wait for.
    EventWait {
        event: usize,
    },
    /// A child graph node: in a graph, `graph` is the node's own copy of the child graph
    /// and `work` is empty; in an executable graph, `work` is that graph's work.
    Child {
        graph: usize,
        work: Vec<Work>,
    },
    /// Stream memory operations (a captured `cuStreamWriteValue32`, …), in order.
    MemOps(Vec<crate::memop::MemOp>),
    /// A memcpy node's copy (`cuGraphAddMemcpyNode`).
    Copy3D(Copy3D),
    /// A host node: `f(data)` runs on the launching thread, without the device's lock.
    Host {
        f: unsafe extern "C" fn(*mut std::ffi::c_void),
        data: usize,
    },
    /// A memory allocation node. The driver reserves the address when the node is
    /// made; the simulator allocates the memory then, and keeps it for the process's
    /// life, so a launch has nothing to do. `access` holds the access descriptors as
    /// (location type, location id, flags).
    MemAlloc {
        dptr: u64,
        bytes: usize,
        device: i32,
        access: Vec<(u32, i32, u32)>,
    },
    /// A memory free node of an allocation node's address: nothing to do at a launch
    /// (see `MemAlloc`).
    MemFree {
        dptr: u64,
    },
    /// An external-semaphore signal or wait node (`wait`): each semaphore with its
    /// parameter struct's bytes, kept for `…GetParams`.
    ExtSem {
        wait: bool,
        sems: Vec<usize>,
        params: Vec<RawSemParams>,
    },
    /// A conditional node of handle `handle` and `CUgraphConditionalNodeType` `kind`:
    /// in a graph, `bodies` are its body graphs and `work` is empty; in an executable
    /// graph, `work` holds each body's work.
    Conditional {
        handle: u64,
        kind: u32,
        bodies: Vec<usize>,
        work: Vec<Vec<Work>>,
    },
}

impl Work {
    /// `CUgraphNodeType` of a node doing this work.
    fn node_type(&self) -> u32 {
        match self {
            Work::Kernel { .. } => 0,
            Work::Copy { .. } => 1,
            Work::Memset { .. } | Work::Memset2D { .. } => 2,
            Work::Empty => 5,
            Work::EventWait { .. } => 6,
            Work::EventRecord { .. } => 7,
            Work::Child { .. } => 4,
            Work::MemOps(_) => 12,
            Work::Host { .. } => 3,
            Work::Copy3D(_) => 1,
            Work::MemAlloc { .. } => 10,
            Work::MemFree { .. } => 11,
            Work::ExtSem { wait: false, .. } => 8,
            Work::ExtSem { wait: true, .. } => 9,
            Work::Conditional { .. } => 13,
        }
    }
}

/// One node of a graph.
#[derive(Debug)]
pub(crate) struct Node {
    pub graph: usize,
    pub work: Work,
    /// The nodes it depends on.
    pub deps: Vec<usize>,
    /// A kernel node's argument pointers as `cuGraphKernelNodeGetParams` last
    /// returned them (exposed addresses of `work`'s argument bytes).
    pub arg_ptrs: Vec<usize>,
    /// The node this one is a copy of, when `cuGraphClone` made it
    /// (`cuGraphNodeFindInClone`).
    pub origin: Option<usize>,
}

/// One graph: its nodes in the order they were added.
#[derive(Debug, Default)]
pub(crate) struct Graph {
    pub nodes: Vec<usize>,
}

/// One executable graph.
#[derive(Debug)]
pub(crate) struct Exec {
    pub ctx: usize,
    pub flags: u64,
    /// The graph's nodes when it was instantiated (the executable graph's setters name
    /// them), in order, each with its work.
    pub nodes: Vec<usize>,
    pub work: Vec<Work>,
    /// Nodes disabled by `cuGraphNodeSetEnabled`: they run as empty nodes.
    pub disabled: HashSet<usize>,
}

/// An open capture, by stream.
#[derive(Debug)]
pub(crate) struct Capture {
    pub graph: usize,
    /// The graph was made by the capture (`cuStreamBeginCapture`), not given
    /// (`cuStreamBeginCaptureToGraph`): an invalidated capture destroys it.
    pub owned: bool,
    pub mode: u32,
    /// Unique among the process's captures (`cuStreamGetCaptureInfo`).
    pub id: u64,
    pub thread: ThreadId,
    pub invalidated: bool,
    /// The nodes the next captured work will depend on, and their edges.
    pub deps: Vec<usize>,
    pub edges: Vec<CUgraphEdgeData>,
}

/// Graphs, nodes, executable graphs and open captures.
#[derive(Debug, Default)]
pub(crate) struct Graphs {
    pub graphs: HashMap<usize, Graph>,
    pub nodes: HashMap<usize, Node>,
    pub execs: HashMap<usize, Exec>,
    pub captures: HashMap<usize, Capture>,
    /// Capture ids handed out so far.
    pub capture_ids: u64,
    pub users: UserObjects,
    /// Kernel nodes' launch attributes set by `cuGraphKernelNodeSetAttribute`, by node.
    pub kernel_attrs: HashMap<usize, HashMap<u32, AttrValue>>,
    /// Batch memory-operation nodes' parameters as given, by node.
    pub batches: HashMap<usize, BatchParams>,
    /// Conditional handles handed out so far.
    pub conditionals: u64,
    /// Each conditional handle's graph and default value.
    pub handles: HashMap<u64, (usize, u32)>,
}

pub(super) fn invalid<T>(why: impl Into<std::borrow::Cow<'static, str>>) -> Res<T> {
    err(CUresult::CUDA_ERROR_INVALID_VALUE, why)
}

/// A new, empty graph.
pub(crate) fn create(st: &mut State) -> usize {
    let key = st.mint();
    st.ext.graphs.graphs.insert(key, Graph::default());
    key
}

/// `cuGraphDestroy`: the graph and its nodes (child graph nodes' graphs with them).
pub(crate) fn destroy(st: &mut State, key: usize) -> Res<()> {
    let g = &mut st.ext.graphs;
    if g.captures.values().any(|c| c.graph == key) {
        return invalid(format!("graph {key:#x} is being captured into"));
    }
    let Some(graph) = g.graphs.remove(&key) else {
        return invalid(format!("graph {key:#x} does not exist"));
    };
    user::drop_held(st, key);
    let g = &mut st.ext.graphs;
    g.handles.retain(|_, (graph, _)| *graph != key);
    let mut children = Vec::new();
    for n in graph.nodes {
        g.kernel_attrs.remove(&n);
        g.batches.remove(&n);
        if let Some(node) = g.nodes.remove(&n) {
            children.extend(owned_graphs(&node.work));
        }
    }
    children.into_iter().try_for_each(|c| destroy(st, c))
}

/// Adds a node doing `work` at the end of graph `key`.
pub(crate) fn add_node(st: &mut State, key: usize, work: Work, deps: Vec<usize>) -> Res<usize> {
    let node = st.mint();
    let g = &mut st.ext.graphs;
    let Some(graph) = g.graphs.get_mut(&key) else {
        return invalid(format!("graph {key:#x} does not exist"));
    };
    graph.nodes.push(node);
    g.nodes.insert(
        node,
        Node {
            graph: key,
            work,
            deps,
            arg_ptrs: Vec::new(),
            origin: None,
        },
    );
    Ok(node)
}

/// `cuGraphAdd…Node`: a node doing `work` in graph `key` after `deps`, which must be
/// nodes of that graph.
pub(crate) fn add_node_after(st: &mut State, key: usize, deps: &[usize], work: Work) -> Res<usize> {
    check_nodes(st, Some(key), deps)?;
    add_node(st, key, work, deps.to_vec())
}

/// `cuGraphAddDependencies` / `cuGraphRemoveDependencies`: every node must belong to
/// graph `key`. The graph runs its nodes in the order they were added, which satisfies
/// any dependencies between them, so the edges themselves change nothing here.
pub(crate) fn edges(
    st: &mut State,
    key: usize,
    from: &[usize],
    to: &[usize],
    add: bool,
) -> Res<()> {
    if !st.ext.graphs.graphs.contains_key(&key) {
        return invalid(format!("graph {key:#x} does not exist"));
    }
    check_nodes(st, Some(key), from)?;
    check_nodes(st, Some(key), to)?;
    for (&f, &t) in from.iter().zip(to) {
        let Some(n) = st.ext.graphs.nodes.get_mut(&t) else {
            continue;
        };
        let known = n.deps.contains(&f);
        match (add, known) {
            (true, true) => return invalid("the edge already exists"),
            (false, false) => return invalid("the edge does not exist"),
            (true, false) => n.deps.push(f),
            (false, true) => n.deps.retain(|&d| d != f),
        }
    }
    Ok(())
}

/// What [`query`] lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Query {
    Nodes,
    RootNodes,
    Dependencies,
    DependentNodes,
    /// (from, to) pairs.
    Edges,
}

/// `cuGraphGetNodes`, `…GetRootNodes`, `…NodeGetDependencies`,
/// `…NodeGetDependentNodes`, `…GetEdges` (pairs): of graph or node `key`, in the order
/// the nodes were added.
pub(crate) fn query(st: &State, q: Query, key: usize) -> Res<Vec<(usize, usize)>> {
    let g = &st.ext.graphs;
    let of_graph = |graph: usize| -> Res<Vec<(usize, &Node)>> {
        match g.graphs.get(&graph) {
            Some(gr) => Ok(gr
                .nodes
                .iter()
                .filter_map(|n| g.nodes.get(n).map(|node| (*n, node)))
                .collect()),
            None => invalid(format!("graph {graph:#x} does not exist")),
        }
    };
    let node = |n: usize| match g.nodes.get(&n) {
        Some(node) => Ok(node),
        None => invalid(format!("node {n:#x} does not exist")),
    };
    Ok(match q {
        Query::Nodes => of_graph(key)?.iter().map(|&(n, _)| (n, 0)).collect(),
        Query::RootNodes => of_graph(key)?
            .iter()
            .filter(|(_, node)| node.deps.is_empty())
            .map(|&(n, _)| (n, 0))
            .collect(),
        Query::Dependencies => node(key)?.deps.iter().map(|&d| (d, 0)).collect(),
        Query::DependentNodes => of_graph(node(key)?.graph)?
            .iter()
            .filter(|(_, other)| other.deps.contains(&key))
            .map(|&(n, _)| (n, 0))
            .collect(),
        Query::Edges => of_graph(key)?
            .iter()
            .flat_map(|&(n, node)| node.deps.iter().map(move |&d| (d, n)))
            .collect(),
    })
}

/// `cuGraphDebugDotPrint`'s text: each node by its `CUgraphNodeType`, then each edge.
pub(crate) fn dot(st: &State, key: usize) -> Res<String> {
    let mut out = format!("digraph vgpu_sim_graph_{key:x} {{\n");
    for (n, _) in query(st, Query::Nodes, key)? {
        let t = st
            .ext
            .graphs
            .nodes
            .get(&n)
            .map_or(0, |node| node.work.node_type());
        out.push_str(&format!("  n{n:x} [label=\"type {t}\"];\n"));
    }
    for (from, to) in query(st, Query::Edges, key)? {
        out.push_str(&format!("  n{from:x} -> n{to:x};\n"));
    }
    out.push_str("}\n");
    Ok(out)
}

/// `cuGraphKernelNodeSetParams`: `node` must be a kernel node.
pub(crate) fn set_kernel(st: &mut State, node: usize, work: Work) -> Res<()> {
    match st.ext.graphs.nodes.get_mut(&node) {
        Some(n) if matches!(n.work, Work::Kernel { .. }) => {
            n.work = work;
            Ok(())
        }
        _ => invalid(format!("node {node:#x} is not a kernel node")),
    }
}

/// `cuGraphKernelNodeGetParams`: a kernel node's function, geometry and the exposed
/// address of its argument pointers (one per parameter), valid until its parameters
/// change or it is destroyed.
pub(crate) fn kernel_params(st: &mut State, node: usize) -> Res<(usize, Launch, usize)> {
    match st.ext.graphs.nodes.get_mut(&node) {
        Some(Node {
            work:
                Work::Kernel {
                    func,
                    geometry,
                    args,
                },
            arg_ptrs,
            ..
        }) => {
            *arg_ptrs = args
                .iter()
                .map(|a| a.as_ptr().expose_provenance())
                .collect();
            Ok((*func, *geometry, arg_ptrs.as_ptr().expose_provenance()))
        }
        _ => invalid(format!("node {node:#x} is not a kernel node")),
    }
}

/// `cuGraphDestroyNode`.
pub(crate) fn destroy_node(st: &mut State, node: usize) -> Res<()> {
    let g = &mut st.ext.graphs;
    let Some(n) = g.nodes.remove(&node) else {
        return invalid(format!("node {node:#x} does not exist"));
    };
    g.kernel_attrs.remove(&node);
    g.batches.remove(&node);
    if let Some(graph) = g.graphs.get_mut(&n.graph) {
        graph.nodes.retain(|&k| k != node);
    }
    for other in g.nodes.values_mut() {
        other.deps.retain(|&d| d != node);
    }
    owned_graphs(&n.work)
        .into_iter()
        .try_for_each(|c| destroy(st, c))
}

/// The graphs a node owns: a child graph node's graph, a conditional node's bodies.
fn owned_graphs(w: &Work) -> Vec<usize> {
    match w {
        Work::Child { graph, .. } => vec![*graph],
        Work::Conditional { bodies, .. } => bodies.clone(),
        _ => Vec::new(),
    }
}

/// `cuGraphNodeGetType`.
pub(crate) fn node_type(st: &State, node: usize) -> Res<u32> {
    match st.ext.graphs.nodes.get(&node) {
        Some(n) => Ok(n.work.node_type()),
        None => invalid(format!("node {node:#x} does not exist")),
    }
}

/// `cuGraphClone`.
pub(crate) fn clone(st: &mut State, key: usize) -> Res<usize> {
    let g = &st.ext.graphs;
    let Some(graph) = g.graphs.get(&key) else {
        return invalid(format!("graph {key:#x} does not exist"));
    };
    let nodes: Vec<(usize, Work, Vec<usize>)> = graph
        .nodes
        .iter()
        .filter_map(|n| {
            g.nodes
                .get(n)
                .map(|node| (*n, node.work.clone(), node.deps.clone()))
        })
        .collect();
    let copy = create(st);
    let mut new_of = HashMap::new();
    for (old, w, deps) in nodes {
        let deps = deps.iter().filter_map(|d| new_of.get(d).copied()).collect();
        // A child graph node owns its graph: the copy gets a copy of it.
        let w = match w {
            Work::Child { graph, .. } => Work::Child {
                graph: clone(st, graph)?,
                work: Vec::new(),
            },
            Work::Conditional {
                handle,
                kind,
                bodies,
                ..
            } => Work::Conditional {
                handle,
                kind,
                bodies: bodies
                    .into_iter()
                    .map(|b| clone(st, b))
                    .collect::<Res<_>>()?,
                work: Vec::new(),
            },
            w => w,
        };
        let new = add_node(st, copy, w, deps)?;
        if let Some(n) = st.ext.graphs.nodes.get_mut(&new) {
            n.origin = Some(old);
        }
        // A kernel node's copy has its launch attributes.
        if let Some(attrs) = st.ext.graphs.kernel_attrs.get(&old).cloned() {
            st.ext.graphs.kernel_attrs.insert(new, attrs);
        }
        if let Some(p) = st.ext.graphs.batches.get(&old).cloned() {
            st.ext.graphs.batches.insert(new, p);
        }
        new_of.insert(old, new);
    }
    Ok(copy)
}
