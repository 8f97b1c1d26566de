//! Stream capture: the capture modes, what an open capture forbids, recording work
//! as nodes, and the capture's state (`cuStreamBeginCapture`, `…GetCaptureInfo`,
//! `…UpdateCaptureDependencies`, `…EndCapture`, `…IsCapturing`).

use std::cell::Cell;
use std::thread;

use super::{add_node, create, destroy, invalid, Capture, Work};
use crate::cu::{CUgraphEdgeData, CUresult};
use crate::error::{err, Res};
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

/// `cuThreadExchangeStreamCaptureMode`: sets this thread's mode, returns the old one.
pub(crate) fn exchange_mode(mode: u32) -> Res<u32> {
    if mode > MODE_RELAXED {
        return invalid(format!("{mode} is not a CUstreamCaptureMode"));
    }
    Ok(MODE.with(|m| m.replace(mode)))
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
    let (graph, deps) = (c.graph, c.deps.clone());
    let node = add_node(st, graph, work(), deps)?;
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
pub(super) fn check_nodes(st: &State, graph: Option<usize>, deps: &[usize]) -> Res<()> {
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
pub(crate) fn info(st: &State, stream_key: usize) -> Res<(u32, Option<CaptureView<'_>>)> {
    let status = status(st, stream_key)?;
    Ok((
        status,
        st.ext
            .graphs
            .captures
            .get(&stream_key)
            .map(|c| CaptureView {
                id: c.id,
                graph: c.graph,
                deps: &c.deps,
                edges: &c.edges,
            }),
    ))
}

/// An open capture as `cuStreamGetCaptureInfo` reports it.
pub(crate) struct CaptureView<'a> {
    pub id: u64,
    pub graph: usize,
    pub deps: &'a [usize],
    pub edges: &'a [CUgraphEdgeData],
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
