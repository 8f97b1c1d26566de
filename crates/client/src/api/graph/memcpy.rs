//! Memcpy nodes: a `CUDA_MEMCPY3D` travels as its sides' fields (host sides
//! as the application's addresses, arrays as ids); the worker checks them
//! and refuses a host side outside shared pinned memory (see the
//! `GraphMemcpyNode` operation). A new node with a pageable host side goes
//! through staging memory ([`super::staged`]).

use vgpu_abi::types::{CUcontext, CUgraph, CUgraphExec, CUgraphNode, CUmemorytype, CUDA_MEMCPY3D};
use vgpu_proto::{graph_memcpy_node, graph_memcpy_node_params};
use zerocopy::little_endian::{U32, U64};

use super::{dependency_blob, staged};
use crate::edge::{non_null, wire, write_out, CuResult};
use crate::runtime::runtime;

/// Which memcpy-node call [`memcpy_node`] makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemcpyNodeCall {
    /// `cuGraphAddMemcpyNode`.
    Add,
    /// `cuGraphMemcpyNodeSetParams`.
    Set,
    /// `cuGraphExecMemcpyNodeSetParams`.
    ExecSet,
}

/// `CU_MEMORYTYPE_HOST` and `CU_MEMORYTYPE_ARRAY`.
const HOST: u32 = 1;
const ARRAY: u32 = 3;

/// A side's memory type as the wire's byte, and its address or array id.
fn side(kind: CUmemorytype, host: usize, device: u64, array: usize) -> (u8, u64, u64) {
    let k = u8::try_from(kind.0).unwrap_or(u8::MAX);
    match kind.0 {
        HOST => (k, host as u64, 0),
        ARRAY => (k, 0, array as u64),
        _ => (k, device, 0),
    }
}

/// `cuGraphAddMemcpyNode` (in `graph` after `n` `deps`, the node written to
/// `ph`), `cuGraphMemcpyNodeSetParams` of `node`, or
/// `cuGraphExecMemcpyNodeSetParams` of `node` in `exec`.
///
/// # Safety
/// `ph` must be NULL or valid for a write; `deps` NULL or `n` handles; `p`
/// NULL or valid for a read.
#[allow(clippy::too_many_arguments)]
pub unsafe fn memcpy_node(
    call: MemcpyNodeCall,
    ph: *mut CUgraphNode,
    graph: CUgraph,
    exec: CUgraphExec,
    node: CUgraphNode,
    deps: *const CUgraphNode,
    n: usize,
    p: *const CUDA_MEMCPY3D,
    ctx: CUcontext,
) -> CuResult<()> {
    let s = runtime().session()?;
    if call == MemcpyNodeCall::Add {
        non_null(ph)?;
    }
    non_null(p)?;
    // SAFETY: checked non-NULL; the application's parameters.
    let c = unsafe { p.read() };
    if call == MemcpyNodeCall::Add && !s.remote && staged::pageable(&c) {
        // SAFETY: forwarded from this function's contract.
        return unsafe { staged::add(ph, graph, deps, n, &c, ctx) };
    }
    if call != MemcpyNodeCall::Add && staged::params(node).is_some() {
        // SAFETY: forwarded from this function's contract.
        return unsafe { staged::set(exec, node, &c, ctx) };
    }
    // SAFETY: forwarded from this function's contract.
    unsafe { request(call, ph, graph, exec, node, deps, n, &c, ctx) }
}

/// Sends a memcpy-node call as [`memcpy_node`] describes it, `c` unchanged.
///
/// # Safety
/// As for [`memcpy_node`], `ph` checked non-NULL for an addition.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn request(
    call: MemcpyNodeCall,
    ph: *mut CUgraphNode,
    graph: CUgraph,
    exec: CUgraphExec,
    node: CUgraphNode,
    deps: *const CUgraphNode,
    n: usize,
    c: &CUDA_MEMCPY3D,
    ctx: CUcontext,
) -> CuResult<()> {
    let s = runtime().session()?;
    // SAFETY: forwarded from this function's contract.
    let (count, blob) = unsafe { dependency_blob(deps, None, n) }?;
    let (src_kind, src_addr, src_array) = side(
        c.srcMemoryType,
        c.srcHost as usize,
        c.srcDevice,
        c.srcArray as usize,
    );
    let (dst_kind, dst_addr, dst_array) = side(
        c.dstMemoryType,
        c.dstHost as usize,
        c.dstDevice,
        c.dstArray as usize,
    );
    let u = |v: usize| U64::new(v as u64);
    let r = graph_memcpy_node::Request {
        what: call as u8,
        graph: U64::new(graph as usize as u64),
        node: U64::new(node as usize as u64),
        exec: U64::new(exec as usize as u64),
        ctx: U64::new(ctx as usize as u64),
        deps: U32::new(count),
        src_kind,
        src_addr: U64::new(src_addr),
        src_array: U64::new(src_array),
        src_x: u(c.srcXInBytes),
        src_y: u(c.srcY),
        src_z: u(c.srcZ),
        src_pitch: u(c.srcPitch),
        src_height: u(c.srcHeight),
        dst_kind,
        dst_addr: U64::new(dst_addr),
        dst_array: U64::new(dst_array),
        dst_x: u(c.dstXInBytes),
        dst_y: u(c.dstY),
        dst_z: u(c.dstZ),
        dst_pitch: u(c.dstPitch),
        dst_height: u(c.dstHeight),
        width: u(c.WidthInBytes),
        height: u(c.Height),
        depth: u(c.Depth),
    };
    let (rep, _) = s.request(&r, &blob)?;
    if call == MemcpyNodeCall::Add {
        // SAFETY: checked non-NULL; the application's out-pointer.
        unsafe { write_out(ph, wire::handle(rep.node.get())) }?;
    }
    Ok(())
}

/// `cuGraphMemcpyNodeGetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a write.
pub unsafe fn memcpy_node_params(node: CUgraphNode, p: *mut CUDA_MEMCPY3D) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(p)?;
    if let Some(given) = staged::params(node) {
        // SAFETY: checked non-NULL; the application's out-pointer.
        return unsafe { write_out(p, given) };
    }
    let r = graph_memcpy_node_params::Request {
        node: U64::new(node as usize as u64),
    };
    let (rep, _) = s.request(&r, &[])?;
    let z = |v: &U64| usize::try_from(v.get()).unwrap_or(usize::MAX);
    // SAFETY: all-zero bytes are a valid `CUDA_MEMCPY3D` (integers and NULL pointers).
    let mut c: CUDA_MEMCPY3D = unsafe { std::mem::zeroed() };
    c.srcMemoryType = CUmemorytype(u32::from(rep.src_kind));
    (c.srcXInBytes, c.srcY, c.srcZ) = (z(&rep.src_x), z(&rep.src_y), z(&rep.src_z));
    (c.srcPitch, c.srcHeight) = (z(&rep.src_pitch), z(&rep.src_height));
    match u32::from(rep.src_kind) {
        HOST => c.srcHost = z(&rep.src_addr) as *const core::ffi::c_void,
        ARRAY => c.srcArray = wire::handle(rep.src_array.get()),
        _ => c.srcDevice = rep.src_addr.get(),
    }
    c.dstMemoryType = CUmemorytype(u32::from(rep.dst_kind));
    (c.dstXInBytes, c.dstY, c.dstZ) = (z(&rep.dst_x), z(&rep.dst_y), z(&rep.dst_z));
    (c.dstPitch, c.dstHeight) = (z(&rep.dst_pitch), z(&rep.dst_height));
    match u32::from(rep.dst_kind) {
        HOST => c.dstHost = z(&rep.dst_addr) as *mut core::ffi::c_void,
        ARRAY => c.dstArray = wire::handle(rep.dst_array.get()),
        _ => c.dstDevice = rep.dst_addr.get(),
    }
    (c.WidthInBytes, c.Height, c.Depth) = (z(&rep.width), z(&rep.height), z(&rep.depth));
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(p, c) }
}
