//! Typed node parameters, executable-graph setters, enabled nodes and clones: the model
//! functions of the generated exports (`generated/mod.rs`).

use std::ffi::c_uint;

use super::nodes::{kernel_work, node_keys};
use crate::cu::{
    CUcontext, CUevent, CUgraph, CUgraphConditionalHandle, CUgraphExec, CUgraphNode, CUhostFn,
    CUkernelNodeAttrID, CUkernelNodeAttrValue, CUresult, CUuserObject, CUDA_KERNEL_NODE_PARAMS,
};
use crate::error::{err, Res};
use crate::ffi::{handle, key, run, Out};
use crate::graph;
use crate::state;

/// `cuGraphEventRecordNodeGetEvent`.
pub(crate) fn graph_event_record_node_get_event(n: CUgraphNode, out: Out<CUevent>) -> Res<()> {
    out.write(handle(graph::event_of(
        &state::sim()?.lock(),
        key(n),
        true,
    )?));
    Ok(())
}

/// `cuGraphEventWaitNodeGetEvent`.
pub(crate) fn graph_event_wait_node_get_event(n: CUgraphNode, out: Out<CUevent>) -> Res<()> {
    out.write(handle(graph::event_of(
        &state::sim()?.lock(),
        key(n),
        false,
    )?));
    Ok(())
}

/// `cuGraphEventRecordNodeSetEvent`.
pub(crate) fn graph_event_record_node_set_event(n: CUgraphNode, event: CUevent) -> Res<()> {
    graph::set_event(&mut state::sim()?.lock(), key(n), true, key(event))
}

/// `cuGraphEventWaitNodeSetEvent`.
pub(crate) fn graph_event_wait_node_set_event(n: CUgraphNode, event: CUevent) -> Res<()> {
    graph::set_event(&mut state::sim()?.lock(), key(n), false, key(event))
}

/// `cuGraphExecEventRecordNodeSetEvent`.
pub(crate) fn graph_exec_event_record_node_set_event(
    e: CUgraphExec,
    n: CUgraphNode,
    event: CUevent,
) -> Res<()> {
    let mut st = state::sim()?.lock();
    graph::exec_set_event(&mut st, key(e), key(n), true, key(event))
}

/// `cuGraphExecEventWaitNodeSetEvent`.
pub(crate) fn graph_exec_event_wait_node_set_event(
    e: CUgraphExec,
    n: CUgraphNode,
    event: CUevent,
) -> Res<()> {
    let mut st = state::sim()?.lock();
    graph::exec_set_event(&mut st, key(e), key(n), false, key(event))
}

/// `cuGraphNodeGetEnabled`: 1 when enabled, 0 when disabled.
pub(crate) fn graph_node_get_enabled(e: CUgraphExec, n: CUgraphNode, out: Out<c_uint>) -> Res<()> {
    let on = graph::enabled(&state::sim()?.lock(), key(e), key(n))?;
    out.write(c_uint::from(on));
    Ok(())
}

/// `cuGraphNodeSetEnabled`: any nonzero value enables.
pub(crate) fn graph_node_set_enabled(e: CUgraphExec, n: CUgraphNode, on: c_uint) -> Res<()> {
    graph::set_enabled(&mut state::sim()?.lock(), key(e), key(n), on != 0)
}

/// `cuGraphNodeFindInClone`.
pub(crate) fn graph_node_find_in_clone(
    out: Out<CUgraphNode>,
    original: CUgraphNode,
    cloned: CUgraph,
) -> Res<()> {
    let n = graph::find_in_clone(&state::sim()?.lock(), key(original), key(cloned))?;
    out.write(handle(n));
    Ok(())
}

/// `cuGraphAddChildGraphNode`: the node holds a copy of `child`.
///
/// # Safety
/// `deps` must be NULL or hold `n` readable handles.
pub(crate) unsafe fn graph_add_child_graph_node(
    out: Out<CUgraphNode>,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    child: CUgraph,
) -> Res<()> {
    // SAFETY: forwarded from this function's contract.
    let deps = unsafe { node_keys(deps, n) }?;
    let node = graph::add_child(&mut state::sim()?.lock(), key(g), &deps, key(child))?;
    out.write(handle(node));
    Ok(())
}

/// `cuGraphExecChildGraphNodeSetParams`: the executable graph's copy of a child graph
/// node runs `child`'s work from now on.
pub(crate) fn graph_exec_child_graph_node_set_params(
    e: CUgraphExec,
    n: CUgraphNode,
    child: CUgraph,
) -> Res<()> {
    graph::exec_set_child(&mut state::sim()?.lock(), key(e), key(n), key(child))
}

/// `cuGraphChildGraphNodeGetGraph`: the node's own graph, not the one it was made from.
pub(crate) fn graph_child_graph_node_get_graph(n: CUgraphNode, out: Out<CUgraph>) -> Res<()> {
    out.write(handle(graph::child_graph(&state::sim()?.lock(), key(n))?));
    Ok(())
}

/// `cuGraphExecKernelNodeSetParams_v2`: the executable graph's copy of a kernel node
/// takes new parameters.
///
/// # Safety
/// `p` must be NULL or valid kernel node parameters.
#[no_mangle]
pub unsafe extern "C" fn cuGraphExecKernelNodeSetParams_v2(
    e: CUgraphExec,
    node: CUgraphNode,
    p: *const CUDA_KERNEL_NODE_PARAMS,
) -> CUresult {
    run("cuGraphExecKernelNodeSetParams_v2", || {
        if p.is_null() {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "nodeParams is NULL");
        }
        let mut st = state::sim()?.lock();
        // SAFETY: checked non-NULL; valid by the contract.
        let work = unsafe { kernel_work(&mut st, &*p) }?;
        graph::exec_set_kernel(&mut st, key(e), key(node), work)
    })
}

/// Runs the user-object destructors that became due, without the device's lock.
fn run_due(mut st: std::sync::MutexGuard<'_, crate::state::State>) {
    let due = graph::take_due(&mut st);
    drop(st);
    for (f, ptr) in due {
        // SAFETY: the destructor and pointer the application gave `cuUserObjectCreate`,
        // called once, as the driver calls it, with no lock of ours held.
        unsafe { f(ptr as *mut std::ffi::c_void) };
    }
}

/// `cuUserObjectCreate`.
///
/// # Safety
/// `out` must be NULL or valid for a write; `destroy` must be callable with `ptr`.
#[no_mangle]
pub unsafe extern "C" fn cuUserObjectCreate(
    out: *mut CUuserObject,
    ptr: *mut std::ffi::c_void,
    destroy: CUhostFn,
    refs: std::ffi::c_uint,
    flags: std::ffi::c_uint,
) -> CUresult {
    run("cuUserObjectCreate", || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let out = unsafe { Out::new(out, "object_out") }?;
        let Some(f) = destroy else {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "the destructor is NULL");
        };
        let k = graph::create_user_object(&mut state::sim()?.lock(), f, ptr as usize, refs, flags)?;
        out.write(handle(k));
        Ok(())
    })
}

/// `cuUserObjectRetain`.
pub(crate) fn user_object_retain(o: CUuserObject, count: std::ffi::c_uint) -> Res<()> {
    graph::retain_user_object(&mut state::sim()?.lock(), key(o), count)
}

/// `cuUserObjectRelease`: the last reference runs the destructor.
pub(crate) fn user_object_release(o: CUuserObject, count: std::ffi::c_uint) -> Res<()> {
    let mut st = state::sim()?.lock();
    graph::release_user_object(&mut st, key(o), u64::from(count))?;
    run_due(st);
    Ok(())
}

/// `cuGraphRetainUserObject`.
pub(crate) fn graph_retain_user_object(
    g: CUgraph,
    o: CUuserObject,
    count: std::ffi::c_uint,
    flags: std::ffi::c_uint,
) -> Res<()> {
    graph::graph_retain(&mut state::sim()?.lock(), key(g), key(o), count, flags)
}

/// `cuGraphReleaseUserObject`.
pub(crate) fn graph_release_user_object(
    g: CUgraph,
    o: CUuserObject,
    count: std::ffi::c_uint,
) -> Res<()> {
    let mut st = state::sim()?.lock();
    graph::graph_release(&mut st, key(g), key(o), count)?;
    run_due(st);
    Ok(())
}

/// After a graph or executable graph is destroyed: the destructors its references
/// made due.
pub(crate) fn after_destroy() -> Res<()> {
    run_due(state::sim()?.lock());
    Ok(())
}

/// `cuGraphKernelNodeGetAttribute`.
pub(crate) fn graph_kernel_node_get_attribute(
    n: CUgraphNode,
    attr: CUkernelNodeAttrID,
    value_out: Out<CUkernelNodeAttrValue>,
) -> Res<()> {
    value_out.write(graph::kernel_attr(&state::sim()?.lock(), key(n), attr.0)?);
    Ok(())
}

/// `cuGraphKernelNodeSetAttribute`.
///
/// # Safety
/// `value` must be NULL or valid for reads of one `CUkernelNodeAttrValue`.
pub(crate) unsafe fn graph_kernel_node_set_attribute(
    n: CUgraphNode,
    attr: CUkernelNodeAttrID,
    value: *const CUkernelNodeAttrValue,
) -> Res<()> {
    let sim = state::sim()?;
    if value.is_null() {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "value is NULL");
    }
    // SAFETY: non-NULL, and readable for one value by this function's contract.
    let v = unsafe { std::ptr::read_unaligned(value) };
    graph::set_kernel_attr(&mut sim.lock(), key(n), attr.0, &v)
}

/// `cuGraphKernelNodeCopyAttributes`.
pub(crate) fn graph_kernel_node_copy_attributes(dst: CUgraphNode, src: CUgraphNode) -> Res<()> {
    graph::copy_kernel_attrs(&mut state::sim()?.lock(), key(dst), key(src))
}

/// `cuGraphConditionalHandleCreate`.
pub(crate) fn graph_conditional_handle_create(
    out: Out<CUgraphConditionalHandle>,
    g: CUgraph,
    ctx: CUcontext,
    default_launch_value: c_uint,
    flags: c_uint,
) -> Res<()> {
    let mut st = state::sim()?.lock();
    let h = graph::conditional_handle(&mut st, key(g), key(ctx), default_launch_value, flags)?;
    out.write(h);
    Ok(())
}
