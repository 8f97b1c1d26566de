//! Stream capture and graphs.
//!
//! While a created stream is capturing, the work enqueued on it (memsets, copies,
//! launches, event records) is recorded as nodes of the capture's graph instead of run
//! ([`captured`]). A graph's nodes are kept in the order they were added, each after the
//! one before it (the simulator runs everything in order, so a chain is faithful to any
//! dependency structure); an executable graph is a copy of that work, and launching it
//! runs the work in order on the stream, or records it when that stream is capturing.
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

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::thread::{self, ThreadId};

use crate::cu::{CUgraphEdgeData, CUresult};
use crate::error::{err, Res};
use crate::launch::Launch;
use crate::memory::End;
use crate::state::State;
use crate::stream;

/// `CU_STREAM_CAPTURE_MODE_GLOBAL`.
pub(crate) const MODE_GLOBAL: u32 = 0;
/// `CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`.
pub(crate) const MODE_THREAD_LOCAL: u32 = 1;
/// `CU_STREAM_CAPTURE_MODE_RELAXED`.
pub(crate) const MODE_RELAXED: u32 = 2;

thread_local! {
    /// This thread's capture mode.
    static MODE: Cell<u32> = const { Cell::new(MODE_GLOBAL) };
}

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

    fn end(self) -> End {
        match self {
            CopyEnd::Device(d) => End::Device(d),
            CopyEnd::Host(a) => End::Host(std::ptr::with_exposed_provenance_mut(a)),
        }
    }
}

/// The work of one node.
#[derive(Clone, Debug)]
pub(crate) enum Work {
    Memset {
        dst: u64,
        pattern: Vec<u8>,
        count: usize,
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
    },
}

impl Work {
    /// `CUgraphNodeType` of a node doing this work.
    fn node_type(&self) -> u32 {
        match self {
            Work::Kernel { .. } => 0,
            Work::Copy { .. } => 1,
            Work::Memset { .. } => 2,
            Work::EventRecord { .. } => 7,
        }
    }
}

/// One node of a graph.
#[derive(Debug)]
pub(crate) struct Node {
    pub graph: usize,
    pub work: Work,
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
    pub work: Vec<Work>,
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
}

fn invalid<T>(why: impl Into<std::borrow::Cow<'static, str>>) -> Res<T> {
    err(CUresult::CUDA_ERROR_INVALID_VALUE, why)
}

/// `cuThreadExchangeStreamCaptureMode`: sets this thread's mode, returns the old one.
pub(crate) fn exchange_mode(mode: u32) -> Res<u32> {
    if mode > MODE_RELAXED {
        return invalid(format!("{mode} is not a CUstreamCaptureMode"));
    }
    Ok(MODE.with(|m| m.replace(mode)))
}

/// A new, empty graph.
pub(crate) fn create(st: &mut State) -> usize {
    let key = st.mint();
    st.ext.graphs.graphs.insert(key, Graph::default());
    key
}

/// `cuGraphDestroy`: the graph and its nodes.
pub(crate) fn destroy(st: &mut State, key: usize) -> Res<()> {
    let g = &mut st.ext.graphs;
    if g.captures.values().any(|c| c.graph == key) {
        return invalid(format!("graph {key:#x} is being captured into"));
    }
    let Some(graph) = g.graphs.remove(&key) else {
        return invalid(format!("graph {key:#x} does not exist"));
    };
    for n in graph.nodes {
        g.nodes.remove(&n);
    }
    Ok(())
}

/// Adds a node doing `work` at the end of graph `key`.
pub(crate) fn add_node(st: &mut State, key: usize, work: Work) -> Res<usize> {
    let node = st.mint();
    let g = &mut st.ext.graphs;
    let Some(graph) = g.graphs.get_mut(&key) else {
        return invalid(format!("graph {key:#x} does not exist"));
    };
    graph.nodes.push(node);
    g.nodes.insert(node, Node { graph: key, work });
    Ok(node)
}

/// `cuGraphDestroyNode`.
pub(crate) fn destroy_node(st: &mut State, node: usize) -> Res<()> {
    let g = &mut st.ext.graphs;
    let Some(n) = g.nodes.remove(&node) else {
        return invalid(format!("node {node:#x} does not exist"));
    };
    if let Some(graph) = g.graphs.get_mut(&n.graph) {
        graph.nodes.retain(|&k| k != node);
    }
    Ok(())
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
    let work = work_of(st, key)?;
    let copy = create(st);
    for w in work {
        add_node(st, copy, w)?;
    }
    Ok(copy)
}

fn work_of(st: &State, key: usize) -> Res<Vec<Work>> {
    let g = &st.ext.graphs;
    let Some(graph) = g.graphs.get(&key) else {
        return invalid(format!("graph {key:#x} does not exist"));
    };
    Ok(graph
        .nodes
        .iter()
        .filter_map(|n| g.nodes.get(n))
        .map(|n| n.work.clone())
        .collect())
}

/// `cuGraphInstantiateWithFlags`: a snapshot of the graph's work, in the current context.
pub(crate) fn instantiate(st: &mut State, key: usize, flags: u64) -> Res<usize> {
    // CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | _UPLOAD | _DEVICE_LAUNCH | _USE_NODE_PRIORITY
    if flags & !0xF != 0 {
        return invalid(format!("instantiate flags {flags:#x} are not valid"));
    }
    let ctx = crate::context::current(st)?;
    let work = work_of(st, key)?;
    let exec = st.mint();
    st.ext.graphs.execs.insert(exec, Exec { ctx, flags, work });
    Ok(exec)
}

fn exec(st: &State, key: usize) -> Res<&Exec> {
    match st.ext.graphs.execs.get(&key) {
        Some(e) => Ok(e),
        None => invalid(format!("executable graph {key:#x} does not exist")),
    }
}

/// `cuGraphExecDestroy`.
pub(crate) fn exec_destroy(st: &mut State, key: usize) -> Res<()> {
    match st.ext.graphs.execs.remove(&key) {
        Some(_) => Ok(()),
        None => invalid(format!("executable graph {key:#x} does not exist")),
    }
}

/// `cuGraphExecGetFlags`.
pub(crate) fn exec_flags(st: &State, key: usize) -> Res<u64> {
    exec(st, key).map(|e| e.flags)
}

/// `cuGraphUpload`: nothing to upload; checks the graph and the stream.
pub(crate) fn upload(st: &State, key: usize, stream_key: usize) -> Res<()> {
    let ctx = exec(st, key)?.ctx;
    if stream::usable(st, stream_key)? != ctx {
        return invalid("executable graph and stream belong to different contexts");
    }
    Ok(())
}

/// `cuGraphLaunch`: runs the work in order on the stream (records it when the stream is
/// capturing). The first failing node's error is the launch's.
pub(crate) fn launch(st: &mut State, key: usize, stream_key: usize) -> Res<()> {
    upload(st, key, stream_key)?;
    let work = exec(st, key)?.work.clone();
    for w in work {
        run(st, stream_key, w)?;
    }
    Ok(())
}

/// Runs (or records) one node's work on a stream.
fn run(st: &mut State, stream_key: usize, w: Work) -> Res<()> {
    match w {
        Work::Memset {
            dst,
            pattern,
            count,
        } => {
            if captured(st, stream_key, || Work::Memset {
                dst,
                pattern: pattern.clone(),
                count,
            })? {
                return Ok(());
            }
            crate::memory::memset(st, dst, &pattern, count)
        }
        Work::Copy { dst, src, len } => {
            if captured(st, stream_key, || Work::Copy { dst, src, len })? {
                return Ok(());
            }
            // SAFETY: host ends were given by the application when the copy was captured
            // or added, valid (as the driver requires) whenever the graph runs.
            unsafe { crate::memory::copy(st, dst.end(), src.end(), len) }
        }
        Work::Kernel {
            func,
            geometry,
            args,
        } => {
            let ptrs: Vec<*const c_void> = args.iter().map(|a| a.as_ptr().cast()).collect();
            // SAFETY: one pointer per parameter, each to that parameter's bytes, as they
            // were read when the launch was captured.
            unsafe { crate::launch::launch_kernel(st, func, geometry, stream_key, ptrs.as_ptr()) }
        }
        Work::EventRecord { event } => crate::event::record(st, event, stream_key),
    }
}

/// Whether the thread's capture mode forbids potentially unsafe calls now.
fn unsafe_forbidden(st: &State) -> bool {
    let me = thread::current().id();
    let mode = MODE.with(Cell::get);
    st.ext.graphs.captures.values().any(|c| match mode {
        MODE_GLOBAL => (c.thread == me && c.mode != MODE_RELAXED) || c.mode == MODE_GLOBAL,
        MODE_THREAD_LOCAL => c.thread == me && c.mode != MODE_RELAXED,
        _ => false,
    })
}

/// Refuses a potentially unsafe call (a synchronous allocation, copy, memset or
/// synchronization) that an open capture forbids, and invalidates those captures.
pub(crate) fn forbid_unsafe(st: &mut State, what: &str) -> Res<()> {
    if !unsafe_forbidden(st) {
        return Ok(());
    }
    let me = thread::current().id();
    for c in st.ext.graphs.captures.values_mut() {
        if c.mode == MODE_GLOBAL || (c.thread == me && c.mode != MODE_RELAXED) {
            c.invalidated = true;
        }
    }
    err(
        CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
        format!("{what} is not permitted while a stream is capturing"),
    )
}

/// Refuses to synchronize with or query a capturing stream (the capture is invalidated),
/// and a synchronization that an open capture forbids.
pub(crate) fn forbid_sync(st: &mut State, stream_key: usize, query: bool) -> Res<()> {
    if let Some(c) = st.ext.graphs.captures.get_mut(&stream_key) {
        c.invalidated = true;
        return err(
            CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
            "a capturing stream cannot be synchronized or queried",
        );
    }
    if query {
        return Ok(());
    }
    forbid_unsafe(st, "a synchronization")
}

/// Records `work` when stream `stream_key` is capturing (`Ok(true)`: do not run it);
/// `Ok(false)` when it is not. Work on an invalidated capture is refused.
pub(crate) fn captured(
    st: &mut State,
    stream_key: usize,
    work: impl FnOnce() -> Work,
) -> Res<bool> {
    let Some(c) = st.ext.graphs.captures.get(&stream_key) else {
        return Ok(false);
    };
    if c.invalidated {
        return err(
            CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
            "the stream's capture was invalidated by an earlier error",
        );
    }
    let graph = c.graph;
    let node = add_node(st, graph, work())?;
    if let Some(c) = st.ext.graphs.captures.get_mut(&stream_key) {
        c.deps = vec![node];
        c.edges = vec![no_edge()];
    }
    Ok(true)
}

fn no_edge() -> CUgraphEdgeData {
    CUgraphEdgeData {
        from_port: 0,
        to_port: 0,
        type_: 0,
        reserved: [0; 5],
    }
}

/// `cuStreamBeginCapture_v2`: into a new graph.
pub(crate) fn begin(st: &mut State, stream_key: usize, mode: u32) -> Res<()> {
    begin_into(st, stream_key, mode, None, Vec::new())
}

/// `cuStreamBeginCaptureToGraph`: into graph `into` after `deps`, which must be its
/// nodes.
pub(crate) fn begin_into(
    st: &mut State,
    stream_key: usize,
    mode: u32,
    into: Option<usize>,
    deps: Vec<usize>,
) -> Res<()> {
    if mode > MODE_RELAXED {
        return invalid(format!("{mode} is not a CUstreamCaptureMode"));
    }
    match stream_key {
        0 | stream::LEGACY => {
            stream::context_of(st, stream_key)?;
            return err(
                CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                "the legacy stream cannot be captured",
            );
        }
        stream::PER_THREAD => {
            stream::context_of(st, stream_key)?;
            return err(
                CUresult::CUDA_ERROR_NOT_SUPPORTED,
                "the simulator does not capture the per-thread stream",
            );
        }
        _ => {}
    }
    stream::usable(st, stream_key)?;
    if st.ext.graphs.captures.contains_key(&stream_key) {
        return err(
            CUresult::CUDA_ERROR_ILLEGAL_STATE,
            "the stream is already capturing",
        );
    }
    if let Some(g) = into {
        if !st.ext.graphs.graphs.contains_key(&g) {
            return invalid(format!("graph {g:#x} does not exist"));
        }
    }
    check_nodes(st, into, &deps)?;
    let (graph, owned) = match into {
        Some(g) => (g, false),
        None => (create(st), true),
    };
    let g = &mut st.ext.graphs;
    g.capture_ids += 1;
    let id = g.capture_ids;
    let edges = vec![no_edge(); deps.len()];
    g.captures.insert(
        stream_key,
        Capture {
            graph,
            owned,
            mode,
            id,
            thread: thread::current().id(),
            invalidated: false,
            deps,
            edges,
        },
    );
    Ok(())
}

/// Every node of `deps` belongs to graph `graph` (none may be given without one).
fn check_nodes(st: &State, graph: Option<usize>, deps: &[usize]) -> Res<()> {
    let g = &st.ext.graphs;
    for n in deps {
        match g.nodes.get(n) {
            Some(node) if Some(node.graph) == graph => {}
            _ => return invalid(format!("node {n:#x} is not a node of the capture's graph")),
        }
    }
    Ok(())
}

/// `cuStreamGetCaptureInfo`: status, then (while capturing) the capture's id, graph and
/// current dependencies.
pub(crate) fn info(
    st: &State,
    stream_key: usize,
) -> Res<(u32, Option<(u64, usize, &[usize], &[CUgraphEdgeData])>)> {
    let status = status(st, stream_key)?;
    Ok((
        status,
        st.ext
            .graphs
            .captures
            .get(&stream_key)
            .map(|c| (c.id, c.graph, c.deps.as_slice(), c.edges.as_slice())),
    ))
}

/// `cuStreamUpdateCaptureDependencies`: `flags` 0 adds `deps` to the current set, 1
/// replaces it.
pub(crate) fn update_deps(
    st: &mut State,
    stream_key: usize,
    deps: Vec<usize>,
    edges: Vec<CUgraphEdgeData>,
    flags: u32,
) -> Res<()> {
    stream::context_of(st, stream_key)?;
    if flags > 1 {
        return invalid(format!(
            "{flags:#x} is not a CUstreamUpdateCaptureDependencies_flags"
        ));
    }
    let Some(c) = st.ext.graphs.captures.get(&stream_key) else {
        return err(
            CUresult::CUDA_ERROR_ILLEGAL_STATE,
            "the stream is not capturing",
        );
    };
    let graph = c.graph;
    check_nodes(st, Some(graph), &deps)?;
    if let Some(c) = st.ext.graphs.captures.get_mut(&stream_key) {
        if flags == 1 {
            c.deps.clear();
            c.edges.clear();
        }
        c.deps.extend(deps);
        c.edges.extend(edges);
    }
    Ok(())
}

/// `cuStreamEndCapture`: the captured graph; an invalidated capture ends without one.
pub(crate) fn end(st: &mut State, stream_key: usize) -> Res<usize> {
    stream::context_of(st, stream_key)?;
    let g = &mut st.ext.graphs;
    let Some(c) = g.captures.get(&stream_key) else {
        return err(
            CUresult::CUDA_ERROR_ILLEGAL_STATE,
            "the stream is not capturing",
        );
    };
    if c.mode != MODE_RELAXED && c.thread != thread::current().id() {
        return err(
            CUresult::CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
            "the capture was begun on another thread",
        );
    }
    let Some(c) = g.captures.remove(&stream_key) else {
        return err(
            CUresult::CUDA_ERROR_ILLEGAL_STATE,
            "the stream is not capturing",
        );
    };
    if c.invalidated {
        if c.owned {
            destroy(st, c.graph)?;
        }
        return err(
            CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
            "the capture was invalidated by an earlier error",
        );
    }
    Ok(c.graph)
}

/// `cuStreamIsCapturing`: `CUstreamCaptureStatus` of the stream (none, active,
/// invalidated).
pub(crate) fn status(st: &State, stream_key: usize) -> Res<u32> {
    stream::context_of(st, stream_key)?;
    Ok(match st.ext.graphs.captures.get(&stream_key) {
        None => 0,
        Some(c) if c.invalidated => 2,
        Some(_) => 1,
    })
}
