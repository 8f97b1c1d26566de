//! Memcpy nodes with a pageable host side. The driver reads (or writes) the
//! application's pageable memory each time the graph runs; the worker cannot
//! reach that memory, so the node the worker's graph gets is a child graph of
//! two nodes through shared pinned staging memory:
//!
//! - host to device: a host node copying the application's rows into the
//!   staging memory, then the device copy from the staging memory;
//! - device to host: the device copy into the staging memory, then a host
//!   node copying it to the application's rows.
//!
//! An asynchronous copy between the device and pageable memory on a
//! capturing stream is captured the same way: a host function (a host node
//! of the captured graph) and a copy from or to the staging memory.
//!
//! The host node runs here, over the callback channel, at each launch. The
//! application still sees a memcpy node: its type and parameters are
//! answered from a record kept here. The staging memory and the host node's
//! description are kept for the life of the process, as the graph, its
//! clones and executable graphs may run at any later time.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::Mutex;

use vgpu_abi::types::CUdeviceptr;
use vgpu_abi::types::{
    CUcontext, CUgraph, CUgraphExec, CUgraphNode, CUgraphNodeType, CUmemorytype,
    CUDA_HOST_NODE_PARAMS, CUDA_MEMCPY3D,
};
use vgpu_proto::{graph_node_get_type, memcpy_dtoh_shared, memcpy_htod_shared};
use zerocopy::little_endian::U64;

use super::host::{host_node, HostNodeCall};
use super::memcpy::{request, MemcpyNodeCall};
use crate::api::host::map_shared;
use crate::edge::{non_null, wire, write_out, CuError, CuResult};
use crate::runtime::{runtime, Session};

/// `CU_MEMORYTYPE_HOST`.
const HOST: u32 = 1;

/// The parameters the application gave a staged node, and its graph.
#[derive(Clone, Copy)]
struct Given(CUDA_MEMCPY3D, usize);

// SAFETY: plain values; the pointers in it are only handed back to the
// application, never dereferenced here.
unsafe impl Send for Given {}

/// Staged memcpy nodes, by node handle: the parameters the application gave.
static STAGED: Mutex<BTreeMap<usize, Given>> = Mutex::new(BTreeMap::new());

/// `cuGraphDestroy`: the graph's staged nodes (and the external-semaphore
/// and conditional body arrays handed out for its nodes) are forgotten with it, as the driver
/// may hand their handles out again.
///
/// # Safety
/// Every pointer is NULL or valid as the CUDA API requires of its caller.
pub unsafe fn graph_destroy(graph: CUgraph) -> CuResult<()> {
    let s = runtime().session()?;
    let given = super::extsem::given_in(s, graph);
    destroy_in_worker(s, graph)?;
    super::extsem::forget(&given);
    super::generic::forget_bodies_in(graph as usize);
    let mut map = STAGED.lock().unwrap_or_else(|e| e.into_inner());
    map.retain(|_, g| g.1 != graph as usize);
    Ok(())
}

/// Destroys `graph` in the worker, nothing more: [`graph_destroy`]'s own
/// step, and all the child graphs this module builds need, as they hold no
/// node the client keeps records of.
fn destroy_in_worker(s: &Session, graph: CUgraph) -> CuResult<()> {
    let r = vgpu_proto::graph_destroy::Request {
        hgraph: U64::new(graph as usize as u64),
    };
    s.request(&r, &[]).map(drop)
}

/// `cuGraphDestroyNode`: a staged node (or the external-semaphore arrays
/// handed out for it) is forgotten with it.
///
/// # Safety
/// Every pointer is NULL or valid as the CUDA API requires of its caller.
pub unsafe fn graph_destroy_node(node: CUgraphNode) -> CuResult<()> {
    let s = runtime().session()?;
    let r = vgpu_proto::graph_destroy_node::Request {
        hnode: U64::new(node as usize as u64),
    };
    s.request(&r, &[])?;
    super::extsem::forget(&[node as usize]);
    super::generic::forget_bodies(&[node as usize]);
    let mut map = STAGED.lock().unwrap_or_else(|e| e.into_inner());
    map.remove(&(node as usize));
    Ok(())
}

fn staged(node: CUgraphNode) -> Option<CUDA_MEMCPY3D> {
    staged_record(node).map(|g| g.0)
}

/// A staged node's record: the parameters given and its graph.
fn staged_record(node: CUgraphNode) -> Option<Given> {
    let map = STAGED.lock().unwrap_or_else(|e| e.into_inner());
    map.get(&(node as usize)).copied()
}

/// The host side's rows: where they start in the application's memory and
/// in the staging memory, and their shape.
struct Rows {
    app: usize,
    staging: usize,
    pitch: usize,
    height: usize,
    width: usize,
    count: usize,
    depth: usize,
    to_device: bool,
}

impl Rows {
    /// Byte offset of row `j` of plane `k` from the first row.
    fn offset(&self, j: usize, k: usize) -> usize {
        self.pitch * (j + self.height * k)
    }
}

/// The host node's function: copies every row between the application's
/// memory and the staging memory, in the copy's direction.
unsafe extern "C" fn copy_rows(data: *mut c_void) {
    // SAFETY: `data` is the `Rows` leaked by `add`, never freed.
    let r = unsafe { &*(data as *const Rows) };
    for k in 0..r.depth {
        for j in 0..r.count {
            let off = r.offset(j, k);
            let (from, to) = match r.to_device {
                true => (r.app + off, r.staging + off),
                false => (r.staging + off, r.app + off),
            };
            // SAFETY: the application's rows, as its node described them, and
            // the staging memory sized for them (see `add`).
            unsafe { std::ptr::copy_nonoverlapping(from as *const u8, to as *mut u8, r.width) };
        }
    }
}

/// Whether `p`'s host side (exactly one side, the other on the device or an
/// array) lies in pageable memory the worker cannot reach.
pub(super) fn pageable(c: &CUDA_MEMCPY3D) -> bool {
    let unreachable = |kind: CUmemorytype, p: *const c_void| {
        kind.0 == HOST && !p.is_null() && crate::api::host::shared(p, 1).is_none()
    };
    let src = unreachable(c.srcMemoryType, c.srcHost);
    let dst = unreachable(c.dstMemoryType, c.dstHost);
    match (src, dst) {
        (true, false) => c.dstMemoryType.0 != HOST,
        (false, true) => c.srcMemoryType.0 != HOST,
        _ => false,
    }
}

/// The two nodes a staged copy `c` becomes: the device copy through new
/// staging memory, the host node copying between it and the application's
/// rows, and whether the copy goes to the device (the host node first).
///
/// # Safety
/// `c`'s host side the application's memory of the copy's extent, for as
/// long as the graph runs.
unsafe fn prepare(
    s: &Session,
    c: &CUDA_MEMCPY3D,
) -> CuResult<(CUDA_MEMCPY3D, CUDA_HOST_NODE_PARAMS, bool)> {
    let to_device = c.srcMemoryType.0 == HOST;
    let (x, y, z, pitch, height, app) = match to_device {
        true => (
            c.srcXInBytes,
            c.srcY,
            c.srcZ,
            c.srcPitch,
            c.srcHeight,
            c.srcHost as usize,
        ),
        false => (
            c.dstXInBytes,
            c.dstY,
            c.dstZ,
            c.dstPitch,
            c.dstHeight,
            c.dstHost as usize,
        ),
    };
    let (count, depth) = (c.Height.max(1), c.Depth.max(1));
    let (pitch, height) = (pitch.max(c.WidthInBytes), height.max(count));
    let bad = || CuError::INVALID_VALUE;
    let start = (height.checked_mul(z))
        .and_then(|v| v.checked_add(y))
        .and_then(|v| v.checked_mul(pitch))
        .and_then(|v| v.checked_add(x))
        .ok_or_else(bad)?;
    let span = ((depth - 1).checked_mul(height))
        .and_then(|v| v.checked_add(count - 1))
        .and_then(|v| v.checked_mul(pitch))
        .and_then(|v| v.checked_add(c.WidthInBytes))
        .filter(|&v| v > 0)
        .ok_or_else(bad)?;
    let app = app.checked_add(start).ok_or_else(bad)?;
    let staging = map_shared(s, span, vgpu_proto::host_alloc::STAGING)?;
    let rows = Box::leak(Box::new(Rows {
        app,
        staging: staging.at as usize,
        pitch,
        height,
        width: c.WidthInBytes,
        count,
        depth,
        to_device,
    }));
    // The device copy, its host side the staging memory at the worker's address.
    let mut device_copy = *c;
    let at: *mut c_void = wire::handle(staging.worker);
    match to_device {
        true => {
            (device_copy.srcHost, device_copy.srcXInBytes) = (at.cast_const(), 0);
            (device_copy.srcY, device_copy.srcZ) = (0, 0);
            (device_copy.srcPitch, device_copy.srcHeight) = (pitch, height);
        }
        false => {
            (device_copy.dstHost, device_copy.dstXInBytes) = (at, 0);
            (device_copy.dstY, device_copy.dstZ) = (0, 0);
            (device_copy.dstPitch, device_copy.dstHeight) = (pitch, height);
        }
    }
    let host = CUDA_HOST_NODE_PARAMS {
        fn_: Some(copy_rows),
        userData: (rows as *mut Rows).cast(),
    };
    Ok((device_copy, host, to_device))
}

/// A staged node's host node once its copy needs no staging: it does nothing.
unsafe extern "C" fn nothing(_: *mut c_void) {}

/// `cuGraphAddMemcpyNode` of a copy whose host side is pageable (see the
/// module documentation).
///
/// # Safety
/// `ph` valid for a write; `deps` NULL or `n` handles; `c`'s host side the
/// application's memory of the copy's extent, for as long as the graph runs.
pub(super) unsafe fn add(
    ph: *mut CUgraphNode,
    graph: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    c: &CUDA_MEMCPY3D,
    ctx: CUcontext,
) -> CuResult<()> {
    let s = runtime().session()?;
    // SAFETY: forwarded from this function's contract.
    let (device_copy, host, to_device) = unsafe { prepare(s, c) }?;
    // SAFETY: live locals; `deps` as this function's contract says.
    let child = unsafe { child_graph(&device_copy, &host, to_device, ctx) }?;
    // SAFETY: as above.
    let added = unsafe { crate::generated::graph_add_child_graph_node(ph, graph, deps, n, child) };
    // The graph made above; the driver cloned it into the node.
    let destroyed = destroy_in_worker(s, child);
    added?;
    destroyed?;
    // SAFETY: the node was written to `ph` above.
    let node = unsafe { ph.read() };
    let mut map = STAGED.lock().unwrap_or_else(|e| e.into_inner());
    map.insert(node as usize, Given(*c, graph as usize));
    Ok(())
}

/// A new graph of the device copy and the host node, in the copy's order.
///
/// # Safety
/// As for [`fill`].
unsafe fn child_graph(
    device_copy: &CUDA_MEMCPY3D,
    host: &CUDA_HOST_NODE_PARAMS,
    to_device: bool,
    ctx: CUcontext,
) -> CuResult<CUgraph> {
    let mut child: CUgraph = std::ptr::null_mut();
    // SAFETY: a live out-pointer.
    unsafe { crate::generated::graph_create(&mut child, 0) }?;
    // SAFETY: forwarded from this function's contract.
    match unsafe { fill(child, device_copy, host, to_device, ctx) } {
        Ok(()) => Ok(child),
        Err(e) => {
            // The graph made above.
            let _ = runtime()
                .session()
                .and_then(|s| destroy_in_worker(s, child));
            Err(e)
        }
    }
}

/// `cuGraphMemcpyNodeSetParams` (`exec` NULL) or
/// `cuGraphExecMemcpyNodeSetParams` of staged node `node`: the new copy `c`
/// goes through new staging memory when its host side is pageable, straight
/// otherwise (the host node then does nothing). In the graph, the node's
/// own graph takes the new copy and host function (its edge turned round
/// when the direction changes); in an executable graph, its copy of the node
/// takes a new graph of the same shape, which the driver judges as for
/// `cuGraphExecChildGraphNodeSetParams`. The driver's refusals are its own.
///
/// # Safety
/// `c`'s host side the application's memory of the copy's extent, for as
/// long as the graph runs.
pub(super) unsafe fn set(
    exec: CUgraphExec,
    node: CUgraphNode,
    c: &CUDA_MEMCPY3D,
    ctx: CUcontext,
) -> CuResult<()> {
    let s = runtime().session()?;
    let Some(old) = staged_record(node) else {
        return Err(CuError::INVALID_VALUE);
    };
    let was_to_device = old.0.srcMemoryType.0 == HOST;
    let (device_copy, host, to_device) = match pageable(c) {
        // SAFETY: forwarded from this function's contract.
        true => unsafe { prepare(s, c) }?,
        false => {
            let host = CUDA_HOST_NODE_PARAMS {
                fn_: Some(nothing),
                userData: std::ptr::null_mut(),
            };
            (*c, host, was_to_device)
        }
    };
    if !exec.is_null() {
        // SAFETY: live locals.
        let child = unsafe { child_graph(&device_copy, &host, to_device, ctx) }?;
        // SAFETY: handles of this session.
        let set =
            unsafe { crate::generated::graph_exec_child_graph_node_set_params(exec, node, child) };
        // The graph made above; the driver copied it.
        let destroyed = destroy_in_worker(s, child);
        return set.and(destroyed);
    }
    // SAFETY: live locals; `node` is a staged node of this session.
    let (inner, copy, run) = unsafe { inner_nodes(node) }?;
    let (ph, g, e, deps) = (
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null(),
    );
    let set_copy = MemcpyNodeCall::Set;
    // SAFETY: live locals; the node of the device copy.
    unsafe { request(set_copy, ph, g, e, copy, deps, 0, &device_copy, ctx) }?;
    // SAFETY: live locals; the host node.
    unsafe { host_node(HostNodeCall::Set, ph, g, e, run, deps, 0, &host) }?;
    if to_device != was_to_device {
        // The host node runs first for a copy to the device, last otherwise.
        let (from, to) = if to_device { (copy, run) } else { (run, copy) };
        // SAFETY: one edge each; nodes of the node's own graph.
        unsafe {
            crate::generated::graph_remove_dependencies(inner, &from, &to, 1)?;
            crate::generated::graph_add_dependencies(inner, &to, &from, 1)?;
        }
    }
    let mut map = STAGED.lock().unwrap_or_else(|e| e.into_inner());
    map.insert(node as usize, Given(*c, old.1));
    Ok(())
}

/// A staged node's own graph, its device copy node and its host node.
///
/// # Safety
/// `node` a staged node of this session.
unsafe fn inner_nodes(node: CUgraphNode) -> CuResult<(CUgraph, CUgraphNode, CUgraphNode)> {
    let s = runtime().session()?;
    let mut inner: CUgraph = std::ptr::null_mut();
    // SAFETY: a live out-pointer.
    unsafe { crate::generated::graph_child_graph_node_get_graph(node, &mut inner) }?;
    let (mut copy, mut run) = (None, None);
    for id in super::nodes::graph_nodes(s, inner as usize as u64)? {
        let r = graph_node_get_type::Request {
            hnode: U64::new(id),
        };
        let (rep, _) = s.request(&r, &[])?;
        match CUgraphNodeType(rep.type_.get()) {
            CUgraphNodeType::CU_GRAPH_NODE_TYPE_MEMCPY => copy = Some(wire::handle(id)),
            CUgraphNodeType::CU_GRAPH_NODE_TYPE_HOST => run = Some(wire::handle(id)),
            _ => {}
        }
    }
    let (copy, run) = copy.zip(run).ok_or(CuError::UNKNOWN)?;
    Ok((inner, copy, run))
}

/// Adds the device copy and the host node to `child`, in the copy's order.
///
/// # Safety
/// `child` a graph of this session; `host`'s data as `copy_rows` needs it.
unsafe fn fill(
    child: CUgraph,
    device_copy: &CUDA_MEMCPY3D,
    host: &CUDA_HOST_NODE_PARAMS,
    to_device: bool,
    ctx: CUcontext,
) -> CuResult<()> {
    let (none, exec) = (std::ptr::null_mut(), std::ptr::null_mut());
    let (mut first, mut second): (CUgraphNode, CUgraphNode) = (none, none);
    let copy = |ph: *mut CUgraphNode, dep: *const CUgraphNode, n| {
        // SAFETY: live locals; the staging side is shared pinned memory.
        unsafe {
            request(
                MemcpyNodeCall::Add,
                ph,
                child,
                exec,
                none,
                dep,
                n,
                device_copy,
                ctx,
            )
        }
    };
    let run = |ph: *mut CUgraphNode, dep: *const CUgraphNode, n| {
        // SAFETY: live locals.
        unsafe { host_node(HostNodeCall::Add, ph, child, exec, none, dep, n, host) }
    };
    if to_device {
        run(&mut first, std::ptr::null(), 0)?;
        copy(&mut second, &first, 1)
    } else {
        copy(&mut first, std::ptr::null(), 0)?;
        run(&mut second, &first, 1)
    }
}

/// `cuGraphMemcpyNodeGetParams` of a staged node: what the application gave.
pub(super) fn params(node: CUgraphNode) -> Option<CUDA_MEMCPY3D> {
    staged(node)
}

/// `cuGraphNodeGetType`: a staged node is a memcpy node; the worker answers
/// for every other.
///
/// # Safety
/// `ty` must be NULL or valid for a write.
pub unsafe fn graph_node_get_type(node: CUgraphNode, ty: *mut CUgraphNodeType) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(ty)?;
    let answer = match staged(node) {
        Some(_) => CUgraphNodeType::CU_GRAPH_NODE_TYPE_MEMCPY,
        None => {
            let r = graph_node_get_type::Request {
                hnode: U64::new(node as usize as u64),
            };
            let (rep, _) = s.request(&r, &[])?;
            CUgraphNodeType(rep.type_.get())
        }
    };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(ty, answer) }
}

/// An asynchronous copy of `n` bytes between `device` and pageable memory at
/// `app` on capturing stream `sid` (`to_device`: from `app`): captured as a
/// host function copying between `app` and new staging memory and the copy
/// from or to that staging memory, in the copy's order.
///
/// # Safety
/// `app` must hold `n` bytes for as long as the captured graph runs.
pub(crate) unsafe fn capture_copy(
    s: &Session,
    device: CUdeviceptr,
    app: usize,
    n: usize,
    sid: u64,
    to_device: bool,
) -> CuResult<()> {
    let staging = map_shared(s, n, vgpu_proto::host_alloc::STAGING)?;
    let rows = Box::leak(Box::new(Rows {
        app,
        staging: staging.at as usize,
        pitch: n,
        height: 1,
        width: n,
        count: 1,
        depth: 1,
        to_device,
    }));
    let data: *mut Rows = rows;
    let run = || crate::api::callback::launch_host_func(sid, Some(copy_rows), data.cast());
    let (host, bytes, stream) = (U64::new(staging.worker), U64::new(n as u64), U64::new(sid));
    if to_device {
        run()?;
        let r = memcpy_htod_shared::Request {
            dst: U64::new(device),
            host,
            bytes,
            stream,
            is_async: 1,
        };
        s.request(&r, &[]).map(drop)
    } else {
        let r = memcpy_dtoh_shared::Request {
            host,
            src: U64::new(device),
            bytes,
            stream,
            is_async: 1,
        };
        s.request(&r, &[])?;
        run()
    }
}
