//! Graph memory nodes against a tenant's quota.
//!
//! A memory allocation node (`cuGraphAddMemAllocNode`) is charged its size
//! when it is added (past the limit the call fails with
//! `CUDA_ERROR_OUT_OF_MEMORY`, one of its documented results), and given
//! back when the node or its graph is destroyed. The driver allocates the
//! memory when a graph that holds the node runs, so this charges the most a
//! graph can hold, once per node however many times the graph is
//! instantiated. Allocations captured from streams (`cuMemAllocAsync` in a
//! capture) are not charged.

use std::collections::HashMap;
use std::sync::Mutex;

use vgpu_proto::{graph_destroy, graph_destroy_node, graph_mem_alloc_node, Message, Op, Request};

/// Each charged node: its graph and its bytes, by node id.
static NODES: Mutex<Option<HashMap<u64, (u64, u64)>>> = Mutex::new(None);

fn field<M: Message>(req: &Request, f: impl Fn(&M) -> u64) -> Option<u64> {
    req.message::<M>().ok().map(f)
}

/// The bytes a request that adds a memory node asks for.
pub fn asks_for(req: &Request) -> Option<u64> {
    match req.op {
        Op::GraphMemAllocNode => field(req, |r: &graph_mem_alloc_node::Request| r.bytes.get()),
        _ => None,
    }
}

/// After `req` succeeded with `reply`: whether it added a memory node, whose
/// reservation is then kept (recorded here); and the bytes to give back for
/// a destroyed node or graph.
pub fn settle(req: &Request, reply: &[u8], reserved: u64) -> (bool, u64) {
    if !matches!(
        req.op,
        Op::GraphMemAllocNode | Op::GraphDestroyNode | Op::GraphDestroy
    ) {
        return (false, 0);
    }
    let mut nodes = NODES.lock().unwrap_or_else(|e| e.into_inner());
    let nodes = nodes.get_or_insert_with(HashMap::new);
    match req.op {
        Op::GraphMemAllocNode => {
            let graph = field(req, |r: &graph_mem_alloc_node::Request| r.graph.get());
            let node = reply
                .get(..8)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_le_bytes);
            match (graph, node) {
                (Some(graph), Some(node)) => {
                    nodes.insert(node, (graph, reserved));
                    (true, 0)
                }
                _ => (false, 0),
            }
        }
        Op::GraphDestroyNode => {
            let node = field(req, |r: &graph_destroy_node::Request| r.hnode.get());
            (
                false,
                node.and_then(|n| nodes.remove(&n)).map_or(0, |(_, b)| b),
            )
        }
        Op::GraphDestroy => {
            let Some(graph) = field(req, |r: &graph_destroy::Request| r.hgraph.get()) else {
                return (false, 0);
            };
            let mut bytes = 0u64;
            nodes.retain(|_, &mut (g, b)| {
                let mine = g == graph;
                if mine {
                    bytes = bytes.saturating_add(b);
                }
                !mine
            });
            (false, bytes)
        }
        _ => (false, 0),
    }
}
