//! Child graph nodes: the driver crashes when a graph becomes a child node
//! of itself, so the worker refuses that before the driver sees it.

use vgpu_abi::types::{CUgraph, CUgraphNode, CUgraphNodeType};
use vgpu_abi::HandleKind;
use vgpu_proto::{graph_add_child_graph_node, Request};

use super::super::calls::{as_ptr, message, ok};
use super::super::status::INVALID_VALUE;
use super::super::Session;
use crate::driver::{entry, Status};

/// Before `cuGraphAddChildGraphNode`: `CUDA_ERROR_INVALID_VALUE` when the
/// child graph is the parent or holds it, directly or through nested child
/// nodes (the driver clones the child, so only the parent itself can be
/// found, but the walk costs little and does not rely on that).
pub fn check_graph_add_child_graph_node(s: &Session, req: &Request) -> Result<(), Status> {
    let r: &graph_add_child_graph_node::Request = message(req)?;
    let (parent, child) = {
        let t = s.tables();
        let parent = t.handle(HandleKind::Graph, r.hgraph.get())?;
        (parent, t.handle(HandleKind::Graph, r.child_graph.get())?)
    };
    // NULL graphs are the driver's to refuse.
    if parent == 0 || child == 0 {
        return Ok(());
    }
    match holds(s, as_ptr(child), as_ptr(parent))? {
        true => Err(INVALID_VALUE),
        false => Ok(()),
    }
}

/// Whether `graph` is `target` or holds it in a child node, at any depth.
pub(super) fn holds(s: &Session, graph: CUgraph, target: CUgraph) -> Result<bool, Status> {
    if graph == target {
        return Ok(true);
    }
    let get_nodes = entry(s.driver.cuGraphGetNodes)?;
    let mut count = 0usize;
    // SAFETY: a live out-pointer; NULL nodes asks for the count only.
    ok(unsafe { get_nodes(graph, std::ptr::null_mut(), &mut count) })?;
    let mut nodes: Vec<CUgraphNode> = vec![std::ptr::null_mut(); count];
    // SAFETY: `nodes` holds `count` elements, as `count` tells the driver.
    ok(unsafe { get_nodes(graph, nodes.as_mut_ptr(), &mut count) })?;
    nodes.truncate(count);
    for node in nodes {
        let mut ty = CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
        // SAFETY: a node the driver just listed; a live out-pointer.
        ok(unsafe { entry(s.driver.cuGraphNodeGetType)?(node, &mut ty) })?;
        if ty != CUgraphNodeType::CU_GRAPH_NODE_TYPE_GRAPH {
            continue;
        }
        let mut inner: CUgraph = std::ptr::null_mut();
        // SAFETY: a child graph node the driver just listed; a live out-pointer.
        ok(unsafe { entry(s.driver.cuGraphChildGraphNodeGetGraph)?(node, &mut inner) })?;
        if holds(s, inner, target)? {
            return Ok(true);
        }
    }
    Ok(false)
}
