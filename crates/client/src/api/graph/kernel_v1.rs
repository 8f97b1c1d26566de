//! The first forms of the kernel-node calls, whose `CUDA_KERNEL_NODE_PARAMS_v1`
//! has no kernel and no context: carried as the `_v2` forms with both NULL
//! (the node runs in the current context, as the driver's first form does).

use vgpu_abi::types::{
    CUDA_KERNEL_NODE_PARAMS_v1, CUgraph, CUgraphExec, CUgraphNode, CUDA_KERNEL_NODE_PARAMS,
};

use super::{kernel_node, kernel_node_params};
use crate::edge::{non_null, write_out, CuResult};

/// `cuGraphAddKernelNode` (with `ph`), `cuGraphKernelNodeSetParams` (with
/// `node`) and `cuGraphExecKernelNodeSetParams` (with `exec` and `node`).
///
/// # Safety
/// As for [`kernel_node`], with first-form parameters.
pub unsafe fn kernel_node_v1(
    ph: *mut CUgraphNode,
    graph: CUgraph,
    exec: CUgraphExec,
    node: CUgraphNode,
    deps: *const CUgraphNode,
    n: usize,
    p: *const CUDA_KERNEL_NODE_PARAMS_v1,
) -> CuResult<()> {
    non_null(p)?;
    // SAFETY: checked non-NULL; the application's parameters.
    let p = unsafe { p.read() };
    let v2 = CUDA_KERNEL_NODE_PARAMS {
        func: p.func,
        gridDimX: p.gridDimX,
        gridDimY: p.gridDimY,
        gridDimZ: p.gridDimZ,
        blockDimX: p.blockDimX,
        blockDimY: p.blockDimY,
        blockDimZ: p.blockDimZ,
        sharedMemBytes: p.sharedMemBytes,
        kernelParams: p.kernelParams,
        extra: p.extra,
        kern: std::ptr::null_mut(),
        ctx: std::ptr::null_mut(),
    };
    // SAFETY: forwarded from this function's contract; `v2` is a live local.
    unsafe { kernel_node(ph, graph, exec, node, deps, n, &v2) }
}

/// `cuGraphKernelNodeGetParams`: the `_v2` answer without its kernel and
/// context.
///
/// # Safety
/// `p` must be NULL or valid for a write.
pub unsafe fn kernel_node_params_v1(
    node: CUgraphNode,
    p: *mut CUDA_KERNEL_NODE_PARAMS_v1,
) -> CuResult<()> {
    non_null(p)?;
    // SAFETY: all-zero bytes are valid parameters (integers and NULL pointers).
    let mut v2: CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
    // SAFETY: `v2` is a live local.
    unsafe { kernel_node_params(node, &mut v2) }?;
    let v1 = CUDA_KERNEL_NODE_PARAMS_v1 {
        func: v2.func,
        gridDimX: v2.gridDimX,
        gridDimY: v2.gridDimY,
        gridDimZ: v2.gridDimZ,
        blockDimX: v2.blockDimX,
        blockDimY: v2.blockDimY,
        blockDimZ: v2.blockDimZ,
        sharedMemBytes: v2.sharedMemBytes,
        kernelParams: v2.kernelParams,
        extra: v2.extra,
    };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(p, v1) }
}
