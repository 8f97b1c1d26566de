//! The generic node calls (`cuGraphAddNode`, `cuGraphAddNode_v2`, `cuGraphNodeSetParams`,
//! `cuGraphExecNodeSetParams`): each type of `CUgraphNodeParams` goes to its own entry
//! point, so it is checked and modelled as there. A conditional node exists only
//! through `cuGraphAddNode` (`crate::graph::add_conditional`); a child graph may be
//! moved into its node instead of copied. Memory allocation and free nodes take no new
//! parameters (`CUDA_ERROR_NOT_SUPPORTED`, as the driver documents); neither do empty,
//! conditional and (outside an executable graph) child graph nodes here
//! (`CUDA_ERROR_INVALID_VALUE`).

use super::nodes::node_keys;
use crate::cu::{
    CUgraph, CUgraphEdgeData, CUgraphExec, CUgraphNode, CUgraphNodeParams, CUresult,
    CUDA_HOST_NODE_PARAMS, CUDA_KERNEL_NODE_PARAMS, CUDA_MEMSET_NODE_PARAMS,
    CUDA_MEM_ALLOC_NODE_PARAMS,
};
use crate::error::err;
use crate::exports as cu;
use crate::ffi::{handle, key, run, Out};
use crate::graph;
use crate::state;

/// `CUgraphNodeType` values.
const KERNEL: u32 = 0;
const MEMCPY: u32 = 1;
const MEMSET: u32 = 2;
const HOST: u32 = 3;
const GRAPH: u32 = 4;
const EMPTY: u32 = 5;
const EVENT_WAIT: u32 = 6;
const EVENT_RECORD: u32 = 7;
const EXT_SEMAS_SIGNAL: u32 = 8;
const EXT_SEMAS_WAIT: u32 = 9;
const MEM_ALLOC: u32 = 10;
const MEM_FREE: u32 = 11;
const BATCH_MEM_OP: u32 = 12;
const CONDITIONAL: u32 = 13;
/// `CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE`.
const MOVE: u32 = 1;

fn fail(code: CUresult, name: &str, why: &'static str) -> CUresult {
    run(name, || err(code, why))
}

/// `cuGraphAddNode` of the typed parameters `p`.
///
/// # Safety
/// Every pointer is NULL or valid as the CUDA API requires of its caller.
#[no_mangle]
pub unsafe extern "C" fn cuGraphAddNode(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    p: *mut CUgraphNodeParams,
) -> CUresult {
    let name = "cuGraphAddNode";
    if p.is_null() {
        return fail(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            name,
            "the parameters are NULL",
        );
    }
    // SAFETY: checked non-NULL; valid by the contract. Each arm reads the member of
    // the union the type names, whose layout is the per-type struct's, and forwards
    // the caller's pointers.
    unsafe {
        let u = (*p).__bindgen_anon_1;
        match (*p).type_.0 {
            KERNEL => {
                let k = std::ptr::addr_of!(u.kernel).cast::<CUDA_KERNEL_NODE_PARAMS>();
                cu::cuGraphAddKernelNode_v2(ph, g, deps, n, k)
            }
            MEMCPY if u.memcpy.flags != 0 || u.memcpy.reserved != 0 => fail(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                name,
                "a memcpy node's flags and reserved field must be zero",
            ),
            MEMCPY => {
                let m = u.memcpy;
                cu::cuGraphAddMemcpyNode(ph, g, deps, n, &m.copyParams, m.copyCtx)
            }
            MEMSET => {
                let m = u.memset;
                let v1 = CUDA_MEMSET_NODE_PARAMS {
                    dst: m.dst,
                    pitch: m.pitch,
                    value: m.value,
                    elementSize: m.elementSize,
                    width: m.width,
                    height: m.height,
                };
                cu::cuGraphAddMemsetNode(ph, g, deps, n, &v1, m.ctx)
            }
            HOST => {
                let h = std::ptr::addr_of!(u.host).cast::<CUDA_HOST_NODE_PARAMS>();
                cu::cuGraphAddHostNode(ph, g, deps, n, h)
            }
            GRAPH if u.graph.ownership.0 == MOVE => run(name, || {
                let out = Out::new(ph, "phGraphNode")?;
                let deps = node_keys(deps, n)?;
                let mut st = state::sim()?.lock();
                let node = graph::add_moved_child(&mut st, key(g), &deps, key(u.graph.graph))?;
                out.write(handle(node));
                Ok(())
            }),
            GRAPH if u.graph.ownership.0 == 0 => {
                cu::cuGraphAddChildGraphNode(ph, g, deps, n, u.graph.graph)
            }
            EMPTY => cu::cuGraphAddEmptyNode(ph, g, deps, n),
            EVENT_WAIT => cu::cuGraphAddEventWaitNode(ph, g, deps, n, u.eventWait.event),
            EVENT_RECORD => cu::cuGraphAddEventRecordNode(ph, g, deps, n, u.eventRecord.event),
            EXT_SEMAS_SIGNAL => cu::cuGraphAddExternalSemaphoresSignalNode(
                ph,
                g,
                deps,
                n,
                std::ptr::addr_of!(u.extSemSignal).cast(),
            ),
            EXT_SEMAS_WAIT => cu::cuGraphAddExternalSemaphoresWaitNode(
                ph,
                g,
                deps,
                n,
                std::ptr::addr_of!(u.extSemWait).cast(),
            ),
            MEM_ALLOC => {
                // The allocation's address goes back into the caller's parameters.
                let a = std::ptr::addr_of_mut!((*p).__bindgen_anon_1.alloc);
                cu::cuGraphAddMemAllocNode(ph, g, deps, n, a.cast::<CUDA_MEM_ALLOC_NODE_PARAMS>())
            }
            MEM_FREE => cu::cuGraphAddMemFreeNode(ph, g, deps, n, u.free.dptr),
            BATCH_MEM_OP => {
                cu::cuGraphAddBatchMemOpNode(ph, g, deps, n, std::ptr::addr_of!(u.memOp).cast())
            }
            CONDITIONAL => run(name, || {
                let out = Out::new(ph, "phGraphNode")?;
                let c = u.conditional;
                let deps = node_keys(deps, n)?;
                let mut st = state::sim()?.lock();
                let node = graph::add_conditional(
                    &mut st,
                    key(g),
                    &deps,
                    c.handle,
                    c.type_.0,
                    c.size,
                    key(c.ctx),
                )?;
                // As the driver does, `phGraph_out` is set to an array the
                // simulator owns, valid as long as the node: the node's own
                // list of body keys, which are the graphs' handles.
                let bodies = graph::bodies_of(&st, node)?;
                (*p).__bindgen_anon_1.conditional.phGraph_out = bodies.cast_mut().cast();
                out.write(handle(node));
                Ok(())
            }),
            _ => fail(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                name,
                "unknown node type",
            ),
        }
    }
}

/// `cuGraphAddNode_v2`: the simulator keeps default edges only, so the node is added
/// after its dependencies and any other edge data is refused as
/// `cuGraphAddDependencies_v2` refuses it.
///
/// # Safety
/// Every pointer is NULL or valid as the CUDA API requires of its caller.
#[no_mangle]
pub unsafe extern "C" fn cuGraphAddNode_v2(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    edges: *const CUgraphEdgeData,
    n: usize,
    p: *mut CUgraphNodeParams,
) -> CUresult {
    // SAFETY: `n` edges by the contract.
    let data = |i: usize| unsafe { edges.add(i).cast::<[u8; 8]>().read_unaligned() };
    if edges.is_null() || (0..n).all(|i| data(i) == [0; 8]) {
        // SAFETY: forwarded from this function's contract.
        return unsafe { cuGraphAddNode(ph, g, deps, n, p) };
    }
    // SAFETY: forwarded from this function's contract.
    let r = unsafe { cuGraphAddNode(ph, g, std::ptr::null(), 0, p) };
    if r != CUresult::CUDA_SUCCESS {
        return r;
    }
    // SAFETY: written by the successful add.
    let node = unsafe { ph.read() };
    let to = vec![node; n];
    // SAFETY: `n` dependencies and edges by the contract; `to` holds `n`.
    let linked = unsafe { cu::cuGraphAddDependencies_v2(g, deps, to.as_ptr(), edges, n) };
    if linked != CUresult::CUDA_SUCCESS {
        let _ = cu::cuGraphDestroyNode(node);
    }
    linked
}

/// `cuGraphNodeSetParams` (`e` None) or `cuGraphExecNodeSetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a read, its pointers as the CUDA API requires.
unsafe fn set(
    name: &str,
    e: Option<CUgraphExec>,
    node: CUgraphNode,
    p: *mut CUgraphNodeParams,
) -> CUresult {
    if p.is_null() {
        return fail(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            name,
            "the parameters are NULL",
        );
    }
    let invalid = CUresult::CUDA_ERROR_INVALID_VALUE;
    // SAFETY: checked non-NULL; each arm reads the member the type names, whose
    // layout is the per-type struct's, and forwards the caller's pointers.
    unsafe {
        let u = (*p).__bindgen_anon_1;
        match ((*p).type_.0, e) {
            (KERNEL, None) => {
                cu::cuGraphKernelNodeSetParams_v2(node, std::ptr::addr_of!(u.kernel).cast())
            }
            (KERNEL, Some(e)) => {
                cu::cuGraphExecKernelNodeSetParams_v2(e, node, std::ptr::addr_of!(u.kernel).cast())
            }
            (MEMCPY, _) if u.memcpy.flags != 0 || u.memcpy.reserved != 0 => fail(
                invalid,
                name,
                "a memcpy node's flags and reserved field must be zero",
            ),
            (MEMCPY, None) => cu::cuGraphMemcpyNodeSetParams(node, &u.memcpy.copyParams),
            (MEMCPY, Some(e)) => {
                let m = u.memcpy;
                cu::cuGraphExecMemcpyNodeSetParams(e, node, &m.copyParams, m.copyCtx)
            }
            (MEMSET, e) => {
                let m = u.memset;
                let v1 = CUDA_MEMSET_NODE_PARAMS {
                    dst: m.dst,
                    pitch: m.pitch,
                    value: m.value,
                    elementSize: m.elementSize,
                    width: m.width,
                    height: m.height,
                };
                match e {
                    None => cu::cuGraphMemsetNodeSetParams(node, &v1),
                    Some(e) => cu::cuGraphExecMemsetNodeSetParams(e, node, &v1, m.ctx),
                }
            }
            (HOST, None) => cu::cuGraphHostNodeSetParams(node, std::ptr::addr_of!(u.host).cast()),
            (HOST, Some(e)) => {
                cu::cuGraphExecHostNodeSetParams(e, node, std::ptr::addr_of!(u.host).cast())
            }
            (GRAPH, Some(e)) => cu::cuGraphExecChildGraphNodeSetParams(e, node, u.graph.graph),
            (EVENT_WAIT, None) => cu::cuGraphEventWaitNodeSetEvent(node, u.eventWait.event),
            (EVENT_WAIT, Some(e)) => {
                cu::cuGraphExecEventWaitNodeSetEvent(e, node, u.eventWait.event)
            }
            (EVENT_RECORD, None) => cu::cuGraphEventRecordNodeSetEvent(node, u.eventRecord.event),
            (EVENT_RECORD, Some(e)) => {
                cu::cuGraphExecEventRecordNodeSetEvent(e, node, u.eventRecord.event)
            }
            (EXT_SEMAS_SIGNAL, None) => cu::cuGraphExternalSemaphoresSignalNodeSetParams(
                node,
                std::ptr::addr_of!(u.extSemSignal).cast(),
            ),
            (EXT_SEMAS_SIGNAL, Some(e)) => cu::cuGraphExecExternalSemaphoresSignalNodeSetParams(
                e,
                node,
                std::ptr::addr_of!(u.extSemSignal).cast(),
            ),
            (EXT_SEMAS_WAIT, None) => cu::cuGraphExternalSemaphoresWaitNodeSetParams(
                node,
                std::ptr::addr_of!(u.extSemWait).cast(),
            ),
            (EXT_SEMAS_WAIT, Some(e)) => cu::cuGraphExecExternalSemaphoresWaitNodeSetParams(
                e,
                node,
                std::ptr::addr_of!(u.extSemWait).cast(),
            ),
            (BATCH_MEM_OP, None) => {
                cu::cuGraphBatchMemOpNodeSetParams(node, std::ptr::addr_of!(u.memOp).cast())
            }
            (BATCH_MEM_OP, Some(e)) => {
                cu::cuGraphExecBatchMemOpNodeSetParams(e, node, std::ptr::addr_of!(u.memOp).cast())
            }
            (MEM_ALLOC | MEM_FREE, _) => fail(
                CUresult::CUDA_ERROR_NOT_SUPPORTED,
                name,
                "memory allocation and free nodes take no new parameters",
            ),
            (GRAPH | EMPTY | CONDITIONAL, _) => {
                fail(invalid, name, "this node type takes no new parameters here")
            }
            _ => fail(invalid, name, "unknown node type"),
        }
    }
}

/// `cuGraphNodeSetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a read, its pointers as the CUDA API requires.
#[no_mangle]
pub unsafe extern "C" fn cuGraphNodeSetParams(
    node: CUgraphNode,
    p: *mut CUgraphNodeParams,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe { set("cuGraphNodeSetParams", None, node, p) }
}

/// `cuGraphExecNodeSetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a read, its pointers as the CUDA API requires.
#[no_mangle]
pub unsafe extern "C" fn cuGraphExecNodeSetParams(
    e: CUgraphExec,
    node: CUgraphNode,
    p: *mut CUgraphNodeParams,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe { set("cuGraphExecNodeSetParams", Some(e), node, p) }
}
