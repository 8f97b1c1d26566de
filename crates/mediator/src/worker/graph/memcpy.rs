//! Memcpy nodes: a `CUDA_MEMCPY3D` whose sides are checked as a copy's are
//! (device boxes inside the session's allocations, array boxes inside their
//! arrays) before the driver sees it. A host side must lie in shared pinned
//! memory (`cuMemHostAlloc`), which the worker maps at the application's own
//! address: the driver reads or writes it whenever the graph runs. Pageable
//! memory of the application is out of the worker's reach at launch time,
//! so a host side there is refused with `CUDA_ERROR_INVALID_VALUE`.

use vgpu_abi::types::{CUgraphNode, CUmemorytype, CUDA_MEMCPY3D};
use vgpu_abi::HandleKind;
use vgpu_proto::{graph_memcpy_node, graph_memcpy_node_params, Request};
use zerocopy::little_endian::U64;

use super::super::array::{extent, real, span, Side};
use super::super::calls::{as_ptr, message, ok, size, Reply};
use super::super::exec::Lane;
use super::super::status::INVALID_VALUE;
use super::super::{host, Session};
use super::{dependencies, list};
use crate::driver::{entry, Status};

const HOST: u8 = 1;
const DEVICE: u8 = 2;
const ARRAY: u8 = 3;
const UNIFIED: u8 = 4;

/// Checks one side of a `width` x `height` x `depth` box.
fn check(s: &Session, side: &Side, width: u64, height: u64, depth: u64) -> Result<(), Status> {
    let pitched = Side {
        pitch: side.pitch.max(width),
        height: side.height.max(height),
        ..*side
    };
    let range = || span(&pitched, width, height, depth).ok_or(INVALID_VALUE);
    let host_ok = |(start, len)| host::check(s, start, len).map(drop);
    match side.kind {
        DEVICE => {
            let (start, len) = range()?;
            s.tables().check(start, len)
        }
        HOST => host_ok(range()?).inspect_err(|_| {
            tracing::warn!(
                "memcpy node refused: its host side is not shared pinned memory \
                 (cuMemHostAlloc), which the worker could reach when the graph runs"
            )
        }),
        UNIFIED => {
            let (start, len) = range()?;
            let device = s.tables().check_range(start, len).is_ok();
            if device {
                Ok(())
            } else {
                host_ok((start, len))
            }
        }
        ARRAY => {
            let array = real(s, side.array)?;
            match extent(s, array)? {
                Some(e) if !e.holds(side.x, side.y, side.z, width, height, depth) => {
                    Err(INVALID_VALUE)
                }
                _ => Ok(()),
            }
        }
        _ => Err(INVALID_VALUE),
    }
}

/// The driver's `CUDA_MEMCPY3D` of the request's sides, checked.
fn params(s: &Session, r: &graph_memcpy_node::Request) -> Result<CUDA_MEMCPY3D, Status> {
    let side = |kind, addr: &U64, array: &U64, xyz: [&U64; 3], pitch: &U64, height: &U64| Side {
        kind,
        device: addr.get(),
        array: array.get(),
        x: xyz[0].get(),
        y: xyz[1].get(),
        z: xyz[2].get(),
        pitch: pitch.get(),
        height: height.get(),
    };
    let src = side(
        r.src_kind,
        &r.src_addr,
        &r.src_array,
        [&r.src_x, &r.src_y, &r.src_z],
        &r.src_pitch,
        &r.src_height,
    );
    let dst = side(
        r.dst_kind,
        &r.dst_addr,
        &r.dst_array,
        [&r.dst_x, &r.dst_y, &r.dst_z],
        &r.dst_pitch,
        &r.dst_height,
    );
    let (width, height, depth) = (r.width.get(), r.height.get(), r.depth.get());
    if width != 0 && height != 0 && depth != 0 {
        check(s, &src, width, height, depth)?;
        check(s, &dst, width, height, depth)?;
    }
    // SAFETY: all-zero bytes are a valid `CUDA_MEMCPY3D` (integers and NULL pointers).
    let mut c: CUDA_MEMCPY3D = unsafe { std::mem::zeroed() };
    (c.WidthInBytes, c.Height, c.Depth) = (size(width)?, size(height)?, size(depth)?);
    c.srcMemoryType = CUmemorytype(u32::from(src.kind));
    (c.srcXInBytes, c.srcY, c.srcZ) = (size(src.x)?, size(src.y)?, size(src.z)?);
    (c.srcPitch, c.srcHeight) = (size(src.pitch)?, size(src.height)?);
    match src.kind {
        HOST => c.srcHost = size(src.device)? as *const core::ffi::c_void,
        ARRAY => c.srcArray = as_ptr(real(s, src.array)?),
        _ => c.srcDevice = src.device,
    }
    c.dstMemoryType = CUmemorytype(u32::from(dst.kind));
    (c.dstXInBytes, c.dstY, c.dstZ) = (size(dst.x)?, size(dst.y)?, size(dst.z)?);
    (c.dstPitch, c.dstHeight) = (size(dst.pitch)?, size(dst.height)?);
    match dst.kind {
        HOST => c.dstHost = size(dst.device)? as *mut core::ffi::c_void,
        ARRAY => c.dstArray = as_ptr(real(s, dst.array)?),
        _ => c.dstDevice = dst.device,
    }
    Ok(c)
}

/// `cuGraphAddMemcpyNode` (`what` 0), `cuGraphMemcpyNodeSetParams` (1),
/// `cuGraphExecMemcpyNodeSetParams` (2).
pub fn graph_memcpy_node(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &graph_memcpy_node::Request = message(req)?;
    let (deps, _) = dependencies(s, &req.blob, r.deps.get(), false)?;
    let c = params(s, r)?;
    let handle = |kind, id: &U64| s.tables().handle(kind, id.get());
    let mut node: CUgraphNode = std::ptr::null_mut();
    match r.what {
        0 => {
            let (g, ctx) = (
                handle(HandleKind::Graph, &r.graph)?,
                handle(HandleKind::Context, &r.ctx)?,
            );
            // SAFETY: live locals, host sides in shared pinned memory (checked); handles of this session.
            ok(unsafe {
                entry(s.driver.cuGraphAddMemcpyNode)?(
                    &mut node,
                    as_ptr(g),
                    list(&deps),
                    deps.len(),
                    &c,
                    as_ptr(ctx),
                )
            })?;
        }
        1 => {
            let n = handle(HandleKind::GraphNode, &r.node)?;
            // SAFETY: live locals, host sides in shared pinned memory (checked); handles of this session.
            ok(unsafe { entry(s.driver.cuGraphMemcpyNodeSetParams)?(as_ptr(n), &c) })?;
        }
        2 => {
            let e = handle(HandleKind::GraphExec, &r.exec)?;
            let n = handle(HandleKind::GraphNode, &r.node)?;
            let ctx = handle(HandleKind::Context, &r.ctx)?;
            // SAFETY: live locals, host sides in shared pinned memory (checked); handles of this session.
            ok(unsafe {
                entry(s.driver.cuGraphExecMemcpyNodeSetParams)?(
                    as_ptr(e),
                    as_ptr(n),
                    &c,
                    as_ptr(ctx),
                )
            })?;
        }
        _ => return Err(INVALID_VALUE),
    }
    // A set call leaves `node` NULL, whose id is 0.
    let id = s
        .tables()
        .id_of(HandleKind::GraphNode, node as usize, req.ctx);
    Ok(Reply::new(
        &graph_memcpy_node::Reply { node: U64::new(id) },
        Vec::new(),
    ))
}

/// `cuGraphMemcpyNodeGetParams`: host sides keep the application's address
/// (the worker maps shared pinned memory at it); arrays become ids.
pub fn graph_memcpy_node_params(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &graph_memcpy_node_params::Request = message(req)?;
    let n = s.tables().handle(HandleKind::GraphNode, r.node.get())?;
    // SAFETY: all-zero bytes are a valid `CUDA_MEMCPY3D`.
    let mut c: CUDA_MEMCPY3D = unsafe { std::mem::zeroed() };
    // SAFETY: the out-pointer is a live local; the node is this session's.
    ok(unsafe { entry(s.driver.cuGraphMemcpyNodeGetParams)?(as_ptr(n), &mut c) })?;
    let mut t = s.tables();
    let mut array = |a: usize| U64::new(t.id_of(HandleKind::Array, a, req.ctx));
    let kind = |k: CUmemorytype| u8::try_from(k.0).unwrap_or(0);
    let addr = |k: CUmemorytype, host: usize, device: u64| match kind(k) {
        HOST => host as u64,
        _ => device,
    };
    let u = |v: usize| U64::new(v as u64);
    let rep = graph_memcpy_node_params::Reply {
        src_kind: kind(c.srcMemoryType),
        src_addr: U64::new(addr(c.srcMemoryType, c.srcHost as usize, c.srcDevice)),
        src_array: array(c.srcArray as usize),
        src_x: u(c.srcXInBytes),
        src_y: u(c.srcY),
        src_z: u(c.srcZ),
        src_pitch: u(c.srcPitch),
        src_height: u(c.srcHeight),
        dst_kind: kind(c.dstMemoryType),
        dst_addr: U64::new(addr(c.dstMemoryType, c.dstHost as usize, c.dstDevice)),
        dst_array: array(c.dstArray as usize),
        dst_x: u(c.dstXInBytes),
        dst_y: u(c.dstY),
        dst_z: u(c.dstZ),
        dst_pitch: u(c.dstPitch),
        dst_height: u(c.dstHeight),
        width: u(c.WidthInBytes),
        height: u(c.Height),
        depth: u(c.Depth),
    };
    drop(t);
    Ok(Reply::new(&rep, Vec::new()))
}
