//! Host nodes: the application's function runs in this process, on the
//! session's callback thread (`crate::callback`), whenever a launch reaches
//! the node; the worker's trampoline in the graph asks for it and waits. A
//! CUDA call from inside it returns `CUDA_ERROR_NOT_PERMITTED`, as for
//! stream callbacks. Each node's function stays registered for the
//! session's life. A user object's destructor is registered the same way,
//! for one run.

use vgpu_abi::types::{
    CUgraph, CUgraphExec, CUgraphNode, CUhostFn, CUuserObject, CUDA_HOST_NODE_PARAMS,
};
use vgpu_proto::{graph_host_node, graph_host_node_params, user_object_create};
use zerocopy::little_endian::{U32, U64};

use super::dependency_blob;
use crate::callback::Pending;
use crate::edge::{non_null, wire, write_out, CuError, CuResult};
use crate::runtime::runtime;

/// Which host-node call [`host_node`] makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostNodeCall {
    /// `cuGraphAddHostNode`.
    Add,
    /// `cuGraphHostNodeSetParams`.
    Set,
    /// `cuGraphExecHostNodeSetParams`.
    ExecSet,
}

/// `cuGraphAddHostNode` (in `graph` after `n` `deps`, the node written to
/// `ph`), `cuGraphHostNodeSetParams` of `node`, or
/// `cuGraphExecHostNodeSetParams` of `node` in `exec`.
///
/// # Safety
/// `ph` must be NULL or valid for a write; `deps` NULL or `n` handles; `p`
/// NULL or valid for a read.
#[allow(clippy::too_many_arguments)]
pub unsafe fn host_node(
    call: HostNodeCall,
    ph: *mut CUgraphNode,
    graph: CUgraph,
    exec: CUgraphExec,
    node: CUgraphNode,
    deps: *const CUgraphNode,
    n: usize,
    p: *const CUDA_HOST_NODE_PARAMS,
) -> CuResult<()> {
    let s = runtime().session()?;
    if call == HostNodeCall::Add {
        non_null(ph)?;
    }
    non_null(p)?;
    // SAFETY: checked non-NULL; the application's parameters.
    let p = unsafe { p.read() };
    let f = p.fn_.ok_or(CuError::INVALID_VALUE)?;
    // SAFETY: forwarded from this function's contract.
    let (count, blob) = unsafe { dependency_blob(deps, None, n) }?;
    let data = p.userData as usize;
    let id = s.callbacks.register_kept(s, Pending::Host { f, data })?;
    let r = graph_host_node::Request {
        what: call as u8,
        graph: U64::new(graph as usize as u64),
        node: U64::new(node as usize as u64),
        exec: U64::new(exec as usize as u64),
        id: U64::new(id),
        deps: U32::new(count),
    };
    let (rep, _) = s
        .request(&r, &blob)
        .inspect_err(|_| s.callbacks.forget(id))?;
    if call == HostNodeCall::Add {
        // SAFETY: checked non-NULL; the application's out-pointer.
        unsafe { write_out(ph, wire::handle(rep.node.get())) }?;
    }
    Ok(())
}

/// `cuGraphHostNodeGetParams`: the function and argument the application
/// gave the node.
///
/// # Safety
/// `p` must be NULL or valid for a write.
pub unsafe fn host_node_params(node: CUgraphNode, p: *mut CUDA_HOST_NODE_PARAMS) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(p)?;
    let r = graph_host_node_params::Request {
        node: U64::new(node as usize as u64),
    };
    let (rep, _) = s.request(&r, &[])?;
    let Some(Pending::Host { f, data }) = s.callbacks.get(rep.id.get()) else {
        return Err(CuError::UNKNOWN);
    };
    let params = CUDA_HOST_NODE_PARAMS {
        fn_: Some(f),
        userData: data as *mut core::ffi::c_void,
    };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(p, params) }
}

/// `cuUserObjectCreate`: `destroy(ptr)` runs in this process, on the
/// callback thread, when the object's last reference goes.
///
/// # Safety
/// `out` must be NULL or valid for a write.
pub unsafe fn user_object_create(
    out: *mut CUuserObject,
    ptr: *mut core::ffi::c_void,
    destroy: CUhostFn,
    count: core::ffi::c_uint,
    flags: core::ffi::c_uint,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(out)?;
    let f = destroy.ok_or(CuError::INVALID_VALUE)?;
    let id = s.callbacks.register(
        s,
        Pending::Host {
            f,
            data: ptr as usize,
        },
    )?;
    let r = user_object_create::Request {
        id: U64::new(id),
        count: U32::new(count),
        flags: U32::new(flags),
    };
    let (rep, _) = s.request(&r, &[]).inspect_err(|_| s.callbacks.forget(id))?;
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(out, wire::handle(rep.object.get())) }
}
