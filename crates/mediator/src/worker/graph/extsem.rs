//! External-semaphore signal and wait nodes: the semaphores are this
//! session's (looked up by id), their parameter structs plain values (a
//! NvSciSync fence pointer matters only to NvSciSync semaphores, which
//! cannot be imported here).

use std::ptr;

use vgpu_abi::types::{CUexternalSemaphore, CUgraphNode, CUDA_EXT_SEM_SIGNAL_NODE_PARAMS};
use vgpu_abi::HandleKind;
use vgpu_proto::{graph_ext_sem_node, graph_ext_sem_node_params, Request};
use zerocopy::little_endian::{U32, U64};

use super::super::calls::{as_ptr, message, ok, Reply};
use super::super::exec::Lane;
use super::super::status::INVALID_VALUE;
use super::super::Session;
use super::{dependencies, list};
use crate::driver::{entry, Status};

/// Bytes of one signal or wait parameter struct.
const PARAMS: usize = 144;
/// Most semaphores one node may name.
const MAX_SEMAPHORES: usize = 1024;
/// One parameter struct as 8-byte words (its size and alignment).
type RawParams = [u64; PARAMS / 8];

/// The node's semaphores and parameter structs from the wire.
fn operands(
    s: &Session,
    blob: &[u8],
    n: usize,
) -> Result<(Vec<CUexternalSemaphore>, Vec<RawParams>), Status> {
    if n > MAX_SEMAPHORES || blob.len() != n * (8 + PARAMS) {
        return Err(INVALID_VALUE);
    }
    let (ids, params) = blob.split_at(n * 8);
    let t = s.tables();
    let sems = ids
        .chunks_exact(8)
        .map(|c| {
            let id = u64::from_le_bytes(c.try_into().map_err(|_| INVALID_VALUE)?);
            t.handle(HandleKind::ExternalSemaphore, id).map(as_ptr)
        })
        .collect::<Result<Vec<_>, Status>>()?;
    let params = params
        .chunks_exact(PARAMS)
        .map(|c| {
            let mut words = [0u64; PARAMS / 8];
            for (w, b) in words.iter_mut().zip(c.chunks_exact(8)) {
                *w = u64::from_ne_bytes(b.try_into().unwrap_or_default());
            }
            words
        })
        .collect();
    Ok((sems, params))
}

/// `cuGraphAddExternalSemaphores{Signal,Wait}Node` (`what` 0), their
/// `…NodeSetParams` (1) and `cuGraphExecExternalSemaphores…NodeSetParams`
/// (2); `wait` picks the wait forms.
pub fn graph_ext_sem_node(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &graph_ext_sem_node::Request = message(req)?;
    let split = (r.deps.get() as usize)
        .checked_mul(8)
        .filter(|&n| n <= req.blob.len())
        .ok_or(INVALID_VALUE)?;
    let (ids, tail) = req.blob.split_at(split);
    let (deps, _) = dependencies(s, ids, r.deps.get(), false)?;
    let (mut sems, params) = operands(s, tail, r.count.get() as usize)?;
    let p = CUDA_EXT_SEM_SIGNAL_NODE_PARAMS {
        extSemArray: if sems.is_empty() {
            ptr::null_mut()
        } else {
            sems.as_mut_ptr()
        },
        paramsArray: list(&params).cast(),
        numExtSems: r.count.get(),
    };
    let handle = |kind, id: &U64| s.tables().handle(kind, id.get());
    let wait = r.wait != 0;
    let mut node: CUgraphNode = ptr::null_mut();
    // Every call below gets live locals (the wait forms' struct has the same
    // layout), `count` semaphores of this session and `count` parameter
    // structs, and handles of this session.
    match (r.what, wait) {
        (0, false) => {
            let g = handle(HandleKind::Graph, &r.graph)?;
            let f = entry(s.driver.cuGraphAddExternalSemaphoresSignalNode)?;
            // SAFETY: as said above.
            ok(unsafe { f(&mut node, as_ptr(g), list(&deps), deps.len(), &p) })?;
        }
        (0, true) => {
            let g = handle(HandleKind::Graph, &r.graph)?;
            let f = entry(s.driver.cuGraphAddExternalSemaphoresWaitNode)?;
            // SAFETY: as said above.
            ok(unsafe {
                f(
                    &mut node,
                    as_ptr(g),
                    list(&deps),
                    deps.len(),
                    ptr::from_ref(&p).cast(),
                )
            })?;
        }
        (1, false) => {
            let n = handle(HandleKind::GraphNode, &r.node)?;
            let f = entry(s.driver.cuGraphExternalSemaphoresSignalNodeSetParams)?;
            // SAFETY: as said above.
            ok(unsafe { f(as_ptr(n), &p) })?;
        }
        (1, true) => {
            let n = handle(HandleKind::GraphNode, &r.node)?;
            let f = entry(s.driver.cuGraphExternalSemaphoresWaitNodeSetParams)?;
            // SAFETY: as said above.
            ok(unsafe { f(as_ptr(n), ptr::from_ref(&p).cast()) })?;
        }
        (2, false) => {
            let e = handle(HandleKind::GraphExec, &r.exec)?;
            let n = handle(HandleKind::GraphNode, &r.node)?;
            let f = entry(s.driver.cuGraphExecExternalSemaphoresSignalNodeSetParams)?;
            // SAFETY: as said above.
            ok(unsafe { f(as_ptr(e), as_ptr(n), &p) })?;
        }
        (2, true) => {
            let e = handle(HandleKind::GraphExec, &r.exec)?;
            let n = handle(HandleKind::GraphNode, &r.node)?;
            let f = entry(s.driver.cuGraphExecExternalSemaphoresWaitNodeSetParams)?;
            // SAFETY: as said above.
            ok(unsafe { f(as_ptr(e), as_ptr(n), ptr::from_ref(&p).cast()) })?;
        }
        _ => return Err(INVALID_VALUE),
    }
    let id = s
        .tables()
        .id_of(HandleKind::GraphNode, node as usize, req.ctx);
    Ok(Reply::new(
        &graph_ext_sem_node::Reply { node: U64::new(id) },
        Vec::new(),
    ))
}

/// `cuGraphExternalSemaphores{Signal,Wait}NodeGetParams`: the semaphores
/// as ids, then their parameter structs.
pub fn graph_ext_sem_node_params(
    _: &mut Lane,
    s: &Session,
    req: &Request,
) -> Result<Reply, Status> {
    let r: &graph_ext_sem_node_params::Request = message(req)?;
    let node: CUgraphNode = as_ptr(s.tables().handle(HandleKind::GraphNode, r.node.get())?);
    let mut p = CUDA_EXT_SEM_SIGNAL_NODE_PARAMS {
        extSemArray: ptr::null_mut(),
        paramsArray: ptr::null(),
        numExtSems: 0,
    };
    if r.wait != 0 {
        let f = entry(s.driver.cuGraphExternalSemaphoresWaitNodeGetParams)?;
        // SAFETY: a live out-pointer (the wait struct has the same layout);
        // the node is this session's.
        // SAFETY: as said above.
        ok(unsafe { f(node, ptr::from_mut(&mut p).cast()) })?;
    } else {
        let f = entry(s.driver.cuGraphExternalSemaphoresSignalNodeGetParams)?;
        // SAFETY: a live out-pointer; the node is this session's.
        // SAFETY: as said above.
        ok(unsafe { f(node, &mut p) })?;
    }
    let n = p.numExtSems as usize;
    if n > MAX_SEMAPHORES || (n > 0 && (p.extSemArray.is_null() || p.paramsArray.is_null())) {
        return Err(INVALID_VALUE);
    }
    let mut blob = Vec::with_capacity(n * (8 + PARAMS));
    {
        let mut t = s.tables();
        for i in 0..n {
            // SAFETY: the driver's array of `numExtSems` semaphores, owned by the node.
            let sem = unsafe { p.extSemArray.add(i).read() };
            let id = t.id_of(HandleKind::ExternalSemaphore, sem as usize, req.ctx);
            blob.extend_from_slice(&id.to_le_bytes());
        }
    }
    if n > 0 {
        // SAFETY: the driver's array of `numExtSems` structs of PARAMS bytes.
        let bytes = unsafe { std::slice::from_raw_parts(p.paramsArray.cast::<u8>(), n * PARAMS) };
        blob.extend_from_slice(bytes);
    }
    Ok(Reply::new(
        &graph_ext_sem_node_params::Reply {
            count: U32::new(p.numExtSems),
        },
        blob,
    ))
}
