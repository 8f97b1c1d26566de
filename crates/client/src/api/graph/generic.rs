//! The generic node calls: `cuGraphAddNode` (`_v2`), `cuGraphNodeSetParams`
//! and `cuGraphExecNodeSetParams`. `CUgraphNodeParams` is a union tagged by
//! its `type`: each type goes the way its own entry point goes (kernel
//! arguments packed, pageable copies staged, host functions called back,
//! semaphore handles and memory operations checked), so it keeps its
//! translation and checks. Types whose parameters hold at most one handle
//! or address (empty, child graph, event, memory free) and types with no
//! setter of their own travel as GraphNodeGeneric; a conditional node is
//! GraphConditionalNode, whose reply names the body graphs the driver made.

use std::collections::BTreeMap;
use std::sync::Mutex;

use vgpu_abi::types::{
    CUgraph, CUgraphEdgeData, CUgraphExec, CUgraphNode, CUgraphNodeParams,
    CUDA_BATCH_MEM_OP_NODE_PARAMS, CUDA_EXT_SEM_SIGNAL_NODE_PARAMS, CUDA_HOST_NODE_PARAMS,
    CUDA_KERNEL_NODE_PARAMS, CUDA_MEMSET_NODE_PARAMS, CUDA_MEM_ALLOC_NODE_PARAMS,
};
use vgpu_proto::{graph_conditional_node, graph_node_generic};
use zerocopy::little_endian::{U32, U64};

use super::{
    batch_mem_op_node, dependency_blob, edges_v2, ext_sem_node, graph_destroy_node, host_node,
    kernel_node, mem_alloc_node, memcpy_node, memset_node, ExtSemNodeCall, HostNodeCall,
    MemcpyNodeCall,
};
use crate::edge::{non_null, wire, write_out, CuError, CuResult};
use crate::runtime::runtime;

/// `CUgraphNodeType` values.
mod ty {
    pub const KERNEL: u32 = 0;
    pub const MEMCPY: u32 = 1;
    pub const MEMSET: u32 = 2;
    pub const HOST: u32 = 3;
    pub const GRAPH: u32 = 4;
    pub const EVENT_WAIT: u32 = 6;
    pub const EVENT_RECORD: u32 = 7;
    pub const EXT_SEMAS_SIGNAL: u32 = 8;
    pub const EXT_SEMAS_WAIT: u32 = 9;
    pub const MEM_ALLOC: u32 = 10;
    pub const MEM_FREE: u32 = 11;
    pub const BATCH_MEM_OP: u32 = 12;
    pub const CONDITIONAL: u32 = 13;
}

/// Which generic call is made, with its own arguments.
#[derive(Clone, Copy)]
pub enum NodeCall {
    /// `cuGraphAddNode` (`edges` for `_v2`): the node goes to `ph`, in
    /// `graph` after `n` `deps`.
    Add {
        ph: *mut CUgraphNode,
        graph: CUgraph,
        deps: *const CUgraphNode,
        edges: Option<*const CUgraphEdgeData>,
        n: usize,
    },
    /// `cuGraphNodeSetParams`.
    Set { node: CUgraphNode },
    /// `cuGraphExecNodeSetParams`.
    ExecSet {
        exec: CUgraphExec,
        node: CUgraphNode,
    },
}

/// `cuGraphAddNode`, `cuGraphAddNode_v2`, `cuGraphNodeSetParams` or
/// `cuGraphExecNodeSetParams` of the typed parameters `p`.
///
/// # Safety
/// `ph` must be NULL or valid for a write, `deps` and `edges` NULL or
/// holding `n` elements, `p` NULL or valid for a read and a write, the
/// pointers inside it as the CUDA API requires for its type.
pub unsafe fn node_params(call: NodeCall, p: *mut CUgraphNodeParams) -> CuResult<()> {
    non_null(p)?;
    // SAFETY: checked non-NULL; the application's parameters.
    let t = unsafe { (*p).type_.0 };
    if let NodeCall::Add {
        ph,
        graph,
        deps,
        edges: Some(e),
        n,
    } = call
    {
        // SAFETY: `n` edges by the contract (read only when `e` is not NULL).
        let data = |i: usize| unsafe { e.add(i).cast::<[u8; 8]>().read_unaligned() };
        let plain = e.is_null() || (0..n).all(|i| data(i) == [0; 8]);
        // Conditional and generic nodes carry their edge data themselves.
        if !plain && t != ty::CONDITIONAL && !generic(t) {
            // SAFETY: forwarded from this function's contract.
            return unsafe { add_then_link(ph, graph, deps, e, n, t, p) };
        }
    }
    // SAFETY: forwarded from this function's contract.
    unsafe { typed(call, t, p) }
}

/// Types that travel as GraphNodeGeneric: those without an entry point of
/// their own to go through, or (for setters) without a setter of their own.
fn generic(t: u32) -> bool {
    !matches!(
        t,
        ty::KERNEL
            | ty::MEMCPY
            | ty::MEMSET
            | ty::HOST
            | ty::EXT_SEMAS_SIGNAL
            | ty::EXT_SEMAS_WAIT
            | ty::MEM_ALLOC
            | ty::BATCH_MEM_OP
            | ty::CONDITIONAL
    )
}

/// A node added with edge data its own path cannot carry: added without
/// dependencies, then linked to them with the data; removed again when the
/// driver refuses the edges.
///
/// # Safety
/// As for [`node_params`].
unsafe fn add_then_link(
    ph: *mut CUgraphNode,
    graph: CUgraph,
    deps: *const CUgraphNode,
    e: *const CUgraphEdgeData,
    n: usize,
    t: u32,
    p: *mut CUgraphNodeParams,
) -> CuResult<()> {
    non_null(ph)?;
    if deps.is_null() {
        return Err(CuError::INVALID_VALUE);
    }
    // The caller's value, put back when the node cannot be kept.
    // SAFETY: `ph` is valid for a read and a write by the contract; read as
    // possibly uninitialised bytes.
    let before = unsafe { ph.cast::<std::mem::MaybeUninit<CUgraphNode>>().read() };
    let alone = NodeCall::Add {
        ph,
        graph,
        deps: std::ptr::null(),
        edges: None,
        n: 0,
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { typed(alone, t, p) }?;
    // SAFETY: written by the successful add.
    let node = unsafe { ph.read() };
    let to = vec![node; n];
    // SAFETY: `n` dependencies and edges by the contract; `to` holds `n`.
    let linked = unsafe { edges_v2(true, graph, deps, to.as_ptr(), e, n) };
    if linked.is_err() {
        // SAFETY: the node just added; `ph` as above.
        unsafe {
            let _ = graph_destroy_node(node);
            ph.cast::<std::mem::MaybeUninit<CUgraphNode>>()
                .write(before);
        }
    }
    linked
}

/// A call's arguments, NULL where it has none.
struct Parts {
    ph: *mut CUgraphNode,
    graph: CUgraph,
    exec: CUgraphExec,
    node: CUgraphNode,
    deps: *const CUgraphNode,
    edges: Option<*const CUgraphEdgeData>,
    n: usize,
}

/// The wire's `what` (0 add, 1 set, 2 executable graph's set) and the
/// call's arguments.
fn parts(call: NodeCall) -> (u8, Parts) {
    let none = Parts {
        ph: std::ptr::null_mut(),
        graph: std::ptr::null_mut(),
        exec: std::ptr::null_mut(),
        node: std::ptr::null_mut(),
        deps: std::ptr::null(),
        edges: None,
        n: 0,
    };
    match call {
        NodeCall::Add {
            ph,
            graph,
            deps,
            edges,
            n,
        } => (
            0,
            Parts {
                ph,
                graph,
                deps,
                edges,
                n,
                ..none
            },
        ),
        NodeCall::Set { node } => (1, Parts { node, ..none }),
        NodeCall::ExecSet { exec, node } => (2, Parts { exec, node, ..none }),
    }
}

/// The call by type.
///
/// # Safety
/// As for [`node_params`].
unsafe fn typed(call: NodeCall, t: u32, p: *mut CUgraphNodeParams) -> CuResult<()> {
    // SAFETY: `p` is valid for a read (checked by the caller); every member
    // is plain data, read as the member `t` names.
    let u = unsafe { (*p).__bindgen_anon_1 };
    let (what, a) = parts(call);
    let Parts {
        ph,
        graph,
        exec,
        node,
        deps,
        n,
        ..
    } = a;
    // SAFETY: in every arm, the member of the union that `t` names, whose
    // layout matches the per-type struct it is read as; the pointers are
    // forwarded from this function's contract.
    unsafe {
        match t {
            ty::KERNEL => {
                let k = std::ptr::addr_of!(u.kernel).cast::<CUDA_KERNEL_NODE_PARAMS>();
                kernel_node(ph, graph, exec, node, deps, n, k)
            }
            ty::MEMCPY => {
                let m = u.memcpy;
                // Documented as zero; the copy's own path cannot carry them.
                if m.flags != 0 || m.reserved != 0 {
                    return Err(CuError::INVALID_VALUE);
                }
                let call = [
                    MemcpyNodeCall::Add,
                    MemcpyNodeCall::Set,
                    MemcpyNodeCall::ExecSet,
                ];
                let copy = std::ptr::addr_of!(m.copyParams);
                memcpy_node(
                    call[what as usize],
                    ph,
                    graph,
                    exec,
                    node,
                    deps,
                    n,
                    copy,
                    m.copyCtx,
                )
            }
            ty::MEMSET => {
                let m = u.memset;
                let v1 = CUDA_MEMSET_NODE_PARAMS {
                    dst: m.dst,
                    pitch: m.pitch,
                    value: m.value,
                    elementSize: m.elementSize,
                    width: m.width,
                    height: m.height,
                };
                memset_node(what, ph, graph, exec, node, deps, n, &v1, m.ctx)
            }
            ty::HOST => {
                let h = std::ptr::addr_of!(u.host).cast::<CUDA_HOST_NODE_PARAMS>();
                let call = [HostNodeCall::Add, HostNodeCall::Set, HostNodeCall::ExecSet];
                host_node(call[what as usize], ph, graph, exec, node, deps, n, h)
            }
            ty::EXT_SEMAS_SIGNAL | ty::EXT_SEMAS_WAIT => {
                let e =
                    std::ptr::addr_of!(u.extSemSignal).cast::<CUDA_EXT_SEM_SIGNAL_NODE_PARAMS>();
                let call = [
                    ExtSemNodeCall::Add,
                    ExtSemNodeCall::Set,
                    ExtSemNodeCall::ExecSet,
                ];
                let wait = t == ty::EXT_SEMAS_WAIT;
                ext_sem_node(call[what as usize], wait, ph, graph, exec, node, deps, n, e)
            }
            ty::BATCH_MEM_OP => {
                let b = std::ptr::addr_of!(u.memOp).cast::<CUDA_BATCH_MEM_OP_NODE_PARAMS>();
                batch_mem_op_node(what, ph, graph, exec, node, deps, n, b)
            }
            ty::MEM_ALLOC if what == 0 => {
                // The driver writes the allocation's address into the
                // caller's parameters.
                let a = std::ptr::addr_of_mut!((*p).__bindgen_anon_1.alloc);
                mem_alloc_node(ph, graph, deps, n, a.cast::<CUDA_MEM_ALLOC_NODE_PARAMS>())
            }
            ty::CONDITIONAL if what == 0 => conditional(call, p),
            _ => generic_call(what, call, t, p),
        }
    }
}

/// A node of a type that travels as GraphNodeGeneric.
///
/// # Safety
/// As for [`node_params`].
unsafe fn generic_call(
    what: u8,
    call: NodeCall,
    t: u32,
    p: *mut CUgraphNodeParams,
) -> CuResult<()> {
    let s = runtime().session()?;
    // SAFETY: `p` is valid for a read by the contract; the member `t` names.
    let u = unsafe { (*p).__bindgen_anon_1 };
    // SAFETY: in each arm, the member `t` names, plain data.
    let (value, ownership) = unsafe {
        match t {
            ty::GRAPH => (u.graph.graph as usize as u64, u.graph.ownership.0),
            ty::EVENT_WAIT => (u.eventWait.event as usize as u64, 0),
            ty::EVENT_RECORD => (u.eventRecord.event as usize as u64, 0),
            ty::MEM_FREE => (u.free.dptr, 0),
            _ => (0, 0),
        }
    };
    let Parts {
        ph,
        graph,
        exec,
        node,
        deps,
        edges,
        n,
    } = parts(call).1;
    if what == 0 {
        non_null(ph)?;
    }
    // SAFETY: forwarded from this function's contract.
    let (count, blob) = unsafe { dependency_blob(deps, edges, n) }?;
    let r = graph_node_generic::Request {
        what,
        graph: U64::new(graph as usize as u64),
        node: U64::new(node as usize as u64),
        exec: U64::new(exec as usize as u64),
        deps: U32::new(count),
        edges: u8::from(edges.is_some()),
        ty: U32::new(t),
        value: U64::new(value),
        ownership: U32::new(ownership),
    };
    let (rep, _) = s.request(&r, &blob)?;
    if what != 0 {
        return Ok(());
    }
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(ph, wire::handle(rep.node.get())) }
}

/// Most body graphs a conditional node has (a SWITCH node's cases).
const MAX_BODIES: u32 = 1 << 16;

/// The body graphs of conditional nodes, by node handle (with the graph
/// that holds the node): the arrays `conditional.phGraph_out` points at,
/// valid as long as the node, as the driver's own are.
static BODIES: Mutex<BTreeMap<usize, Bodies>> = Mutex::new(BTreeMap::new());

/// A conditional node's graph and body graphs.
type Bodies = (usize, Box<[usize]>);

/// Forgets the body arrays of `nodes` (destroyed).
pub(super) fn forget_bodies(nodes: &[usize]) {
    let mut bodies = BODIES.lock().unwrap_or_else(|e| e.into_inner());
    for n in nodes {
        bodies.remove(n);
    }
}

/// Forgets the body arrays of the nodes of `graph` (destroyed).
pub(super) fn forget_bodies_in(graph: usize) {
    let mut bodies = BODIES.lock().unwrap_or_else(|e| e.into_inner());
    bodies.retain(|_, (g, _)| *g != graph);
}

/// `cuGraphAddNode` of a conditional node: the driver makes the body graphs
/// and sets `conditional.phGraph_out` to an array of them that it owns,
/// valid as long as the node (the application's value is not read).
///
/// # Safety
/// As for [`node_params`].
unsafe fn conditional(call: NodeCall, p: *mut CUgraphNodeParams) -> CuResult<()> {
    let s = runtime().session()?;
    let NodeCall::Add {
        ph,
        graph,
        deps,
        edges,
        n,
    } = call
    else {
        return Err(CuError::INVALID_VALUE);
    };
    non_null(ph)?;
    // SAFETY: `p` is valid for a read by the contract; a conditional node's member.
    let c = unsafe { (*p).__bindgen_anon_1.conditional };
    if c.size > MAX_BODIES {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: forwarded from this function's contract.
    let (count, blob) = unsafe { dependency_blob(deps, edges, n) }?;
    let r = graph_conditional_node::Request {
        graph: U64::new(graph as usize as u64),
        deps: U32::new(count),
        edges: u8::from(edges.is_some()),
        handle: U64::new(c.handle),
        kind: U32::new(c.type_.0),
        size: U32::new(c.size),
        ctx: U64::new(c.ctx as usize as u64),
    };
    let (rep, back) = s.request(&r, &blob)?;
    let bodies = rep.count.get();
    if bodies != c.size || back.len() != bodies as usize * 8 {
        return Err(CuError::UNKNOWN);
    }
    let ids: Box<[usize]> = back
        .chunks_exact(8)
        .map(|id| wire::handle::<u8>(u64::from_le_bytes(id.try_into().unwrap_or_default())).addr())
        .collect();
    let node: CUgraphNode = wire::handle(rep.node.get());
    // A `usize` array is a `CUgraph` array: both are pointer-sized words.
    let out = ids.as_ptr().cast_mut().cast::<CUgraph>();
    BODIES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(node.addr(), (graph as usize, ids));
    // SAFETY: `p` is valid for writes by the contract; the array lives in
    // BODIES until the node or its graph is destroyed.
    unsafe { (*p).__bindgen_anon_1.conditional.phGraph_out = out };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(ph, node) }
}
