//! External-semaphore signal and wait nodes. The semaphores travel as the
//! worker's ids and their parameter structs as bytes, as for
//! `cuSignalExternalSemaphoresAsync`. The arrays `…GetParams` hands out are
//! copies kept here, by node: the driver documents that they live as long as
//! the node, so they are forgotten only with the node or its graph.

use std::collections::BTreeMap;
use std::sync::Mutex;

use vgpu_abi::types::{
    CUexternalSemaphore, CUgraph, CUgraphExec, CUgraphNode, CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS,
    CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, CUDA_EXT_SEM_SIGNAL_NODE_PARAMS,
    CUDA_EXT_SEM_WAIT_NODE_PARAMS,
};
use vgpu_proto::{graph_ext_sem_node, graph_ext_sem_node_params};
use zerocopy::little_endian::{U32, U64};

use super::dependency_blob;
use crate::api::external::{MAX_SEMAPHORES, PARAMS};
use crate::edge::{non_null, wire, write_out, CuError, CuResult};
use crate::runtime::{runtime, Session};

/// One signal or wait parameter struct, as 8-byte words (its size and
/// alignment), so a kept copy can be handed out as either.
type RawParams = [u64; PARAMS / 8];

const _: () = {
    assert!(core::mem::size_of::<CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS>() == PARAMS);
    assert!(core::mem::size_of::<CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS>() == PARAMS);
    assert!(core::mem::align_of::<CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS>() <= 8);
    assert!(core::mem::size_of::<RawParams>() == PARAMS);
    // The signal and wait node parameters differ only in their struct's name.
    assert!(
        core::mem::size_of::<CUDA_EXT_SEM_SIGNAL_NODE_PARAMS>()
            == core::mem::size_of::<CUDA_EXT_SEM_WAIT_NODE_PARAMS>()
    );
};

/// The arrays handed out for one node.
struct Kept {
    sems: Box<[usize]>,
    params: Box<[RawParams]>,
}

/// What `…GetParams` handed out, by node handle.
static GIVEN: Mutex<BTreeMap<usize, Kept>> = Mutex::new(BTreeMap::new());

/// Which call [`ext_sem_node`] makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtSemNodeCall {
    /// `cuGraphAddExternalSemaphores{Signal,Wait}Node`.
    Add = 0,
    /// `cuGraphExternalSemaphores{Signal,Wait}NodeSetParams`.
    Set = 1,
    /// `cuGraphExecExternalSemaphores{Signal,Wait}NodeSetParams`.
    ExecSet = 2,
}

/// An external-semaphore node's add or set (`wait`: a wait node's): in
/// `graph` after `n` `deps` (the node written to `ph`), or of `node` (in
/// `exec`). `p` is a `CUDA_EXT_SEM_SIGNAL_NODE_PARAMS` or, with `wait`, a
/// `CUDA_EXT_SEM_WAIT_NODE_PARAMS` (the same layout).
///
/// # Safety
/// `ph` must be NULL or valid for a write; `deps` NULL or `n` handles; `p`
/// NULL or valid for a read, its arrays NULL or holding `numExtSems`
/// elements.
#[allow(clippy::too_many_arguments)]
pub unsafe fn ext_sem_node(
    call: ExtSemNodeCall,
    wait: bool,
    ph: *mut CUgraphNode,
    graph: CUgraph,
    exec: CUgraphExec,
    node: CUgraphNode,
    deps: *const CUgraphNode,
    n: usize,
    p: *const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS,
) -> CuResult<()> {
    let s = runtime().session()?;
    if call == ExtSemNodeCall::Add {
        non_null(ph)?;
    }
    non_null(p)?;
    // SAFETY: checked non-NULL; the application's parameters.
    let c = unsafe { p.read_unaligned() };
    // SAFETY: forwarded from this function's contract.
    let (count, mut blob) = unsafe { dependency_blob(deps, None, n) }?;
    if c.numExtSems > MAX_SEMAPHORES {
        return Err(CuError::INVALID_VALUE);
    }
    let k = c.numExtSems as usize;
    if k > 0 {
        non_null(c.extSemArray)?;
        non_null(c.paramsArray)?;
    }
    for i in 0..k {
        // SAFETY: `numExtSems` readable handles by the contract.
        let h = unsafe { c.extSemArray.add(i).read_unaligned() };
        blob.extend_from_slice(&(h as usize as u64).to_le_bytes());
    }
    if k > 0 {
        // SAFETY: `numExtSems` readable structs of PARAMS bytes by the contract.
        let bytes = unsafe { std::slice::from_raw_parts(c.paramsArray.cast::<u8>(), k * PARAMS) };
        blob.extend_from_slice(bytes);
    }
    let r = graph_ext_sem_node::Request {
        what: call as u8,
        wait: u8::from(wait),
        graph: U64::new(graph as usize as u64),
        node: U64::new(node as usize as u64),
        exec: U64::new(exec as usize as u64),
        count: U32::new(c.numExtSems),
        deps: U32::new(count),
    };
    let (rep, _) = s.request(&r, &blob)?;
    if call != ExtSemNodeCall::Add {
        return Ok(());
    }
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(ph, wire::handle(rep.node.get())) }
}

/// `cuGraphExternalSemaphores{Signal,Wait}NodeGetParams` (`wait`): the
/// arrays stay valid as long as the node, or until the next such call on it
/// finds different parameters.
///
/// # Safety
/// `p` must be NULL or valid for a write (either struct: the same layout).
pub unsafe fn ext_sem_node_params(
    node: CUgraphNode,
    wait: bool,
    p: *mut CUDA_EXT_SEM_SIGNAL_NODE_PARAMS,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(p)?;
    let r = graph_ext_sem_node_params::Request {
        node: U64::new(node as usize as u64),
        wait: u8::from(wait),
    };
    let (rep, blob) = s.request(&r, &[])?;
    let k = rep.count.get() as usize;
    if blob.len() != k * (8 + PARAMS) {
        return Err(CuError::UNKNOWN);
    }
    let (ids, params) = blob.split_at(k * 8);
    let sems: Box<[usize]> = ids
        .chunks_exact(8)
        .map(|c| wire::handle::<u8>(u64::from_le_bytes(c.try_into().unwrap_or_default())).addr())
        .collect();
    let params: Box<[RawParams]> = params
        .chunks_exact(PARAMS)
        .map(|c| {
            let mut words = [0u64; PARAMS / 8];
            for (w, b) in words.iter_mut().zip(c.chunks_exact(8)) {
                *w = u64::from_ne_bytes(b.try_into().unwrap_or_default());
            }
            words
        })
        .collect();
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    let same = given
        .get(&(node as usize))
        .is_some_and(|old| old.sems == sems && old.params == params);
    if !same {
        given.insert(node as usize, Kept { sems, params });
    }
    let kept = given.get_mut(&(node as usize)).ok_or(CuError::UNKNOWN)?;
    let out = CUDA_EXT_SEM_SIGNAL_NODE_PARAMS {
        extSemArray: if k == 0 {
            std::ptr::null_mut()
        } else {
            kept.sems.as_mut_ptr().cast::<CUexternalSemaphore>()
        },
        paramsArray: if k == 0 {
            std::ptr::null()
        } else {
            kept.params.as_ptr().cast()
        },
        numExtSems: rep.count.get(),
    };
    drop(given);
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(p, out) }
}

/// Forgets the arrays handed out for `nodes` (destroyed).
pub(super) fn forget(nodes: &[usize]) {
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    for n in nodes {
        given.remove(n);
    }
}

/// The nodes of graph `graph` whose arrays were handed out, to forget once
/// the graph is destroyed. Costs a round trip only when arrays were handed
/// out.
pub(super) fn given_in(s: &Session, graph: CUgraph) -> Vec<usize> {
    if GIVEN.lock().unwrap_or_else(|e| e.into_inner()).is_empty() {
        return Vec::new();
    }
    let nodes = super::nodes::graph_nodes(s, graph as usize as u64).unwrap_or_default();
    let given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    nodes
        .into_iter()
        .map(|n| wire::handle::<u8>(n).addr())
        .filter(|n| given.contains_key(n))
        .collect()
}
