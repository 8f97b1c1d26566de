//! Host nodes: the node runs the worker's trampoline, which asks the client to
//! run the application's function over the callback channel
//! ([`super::super::callback`]) at every launch, and waits for it. User
//! objects' destructors run the same way, once.

use vgpu_abi::types::{CUgraphNode, CUuserObject, CUDA_HOST_NODE_PARAMS};
use vgpu_abi::HandleKind;
use vgpu_proto::{graph_host_node, graph_host_node_params, user_object_create, Request};
use zerocopy::little_endian::U64;

use super::super::callback;
use super::super::calls::{as_ptr, message, ok, Reply};
use super::super::exec::Lane;
use super::super::status::INVALID_VALUE;
use super::super::Session;
use super::dependencies;
use crate::driver::{entry, Status};

/// `cuGraphAddHostNode` (`what` 0), `cuGraphHostNodeSetParams` (1),
/// `cuGraphExecHostNodeSetParams` (2) with the client's callback `id`.
pub fn graph_host_node(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &graph_host_node::Request = message(req)?;
    let (deps, _) = dependencies(s, &req.blob, r.deps.get(), false)?;
    let p = callback::node_params(s, r.id.get());
    let mut node: CUgraphNode = std::ptr::null_mut();
    match r.what {
        0 => {
            let graph = s.tables().handle(HandleKind::Graph, r.graph.get())?;
            // SAFETY: live locals (the trampoline, a kept ticket); handles of this session.
            ok(unsafe {
                entry(s.driver.cuGraphAddHostNode)?(
                    &mut node,
                    as_ptr(graph),
                    super::list(&deps),
                    deps.len(),
                    &p,
                )
            })?;
        }
        1 => {
            let n = s.tables().handle(HandleKind::GraphNode, r.node.get())?;
            // SAFETY: live locals (the trampoline, a kept ticket); handles of this session.
            ok(unsafe { entry(s.driver.cuGraphHostNodeSetParams)?(as_ptr(n), &p) })?;
        }
        2 => {
            let (e, n) = {
                let t = s.tables();
                let e = t.handle(HandleKind::GraphExec, r.exec.get())?;
                (e, t.handle(HandleKind::GraphNode, r.node.get())?)
            };
            // SAFETY: live locals (the trampoline, a kept ticket); handles of this session.
            ok(unsafe { entry(s.driver.cuGraphExecHostNodeSetParams)?(as_ptr(e), as_ptr(n), &p) })?;
        }
        _ => return Err(INVALID_VALUE),
    }
    // A set call leaves `node` NULL, whose id is 0.
    let id = s
        .tables()
        .id_of(HandleKind::GraphNode, node as usize, req.ctx);
    Ok(Reply::new(
        &graph_host_node::Reply { node: U64::new(id) },
        Vec::new(),
    ))
}

/// `cuGraphHostNodeGetParams`: the client's callback id behind the node's
/// trampoline.
pub fn graph_host_node_params(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &graph_host_node_params::Request = message(req)?;
    let n = s.tables().handle(HandleKind::GraphNode, r.node.get())?;
    let mut p = CUDA_HOST_NODE_PARAMS {
        fn_: None,
        userData: std::ptr::null_mut(),
    };
    // SAFETY: the out-pointer is a live local; the node is this session's.
    ok(unsafe { entry(s.driver.cuGraphHostNodeGetParams)?(as_ptr(n), &mut p) })?;
    let id = callback::node_id(s, &p).ok_or(INVALID_VALUE)?;
    Ok(Reply::new(
        &graph_host_node_params::Reply { id: U64::new(id) },
        Vec::new(),
    ))
}

/// `cuUserObjectCreate`: the destructor is a one-run trampoline for the
/// client's callback `id`. An object whose last reference went is not
/// forgotten by the worker's tables (the driver destroys it on its own).
pub fn user_object_create(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &user_object_create::Request = message(req)?;
    let (f, ticket) = callback::one_shot(s, r.id.get());
    let mut object: CUuserObject = std::ptr::null_mut();
    let f_create = entry(s.driver.cuUserObjectCreate);
    // SAFETY: the out-pointer is a live local; the trampoline takes the
    // ticket back once, when the driver destroys the object.
    let made = f_create
        .and_then(|c| ok(unsafe { c(&mut object, ticket, Some(f), r.count.get(), r.flags.get()) }));
    if let Err(e) = made {
        // SAFETY: the driver refused the object, so never runs the trampoline.
        unsafe { callback::forget_one_shot(ticket) };
        return Err(e);
    }
    let id = s
        .tables()
        .id_of(HandleKind::UserObject, object as usize, req.ctx);
    Ok(Reply::new(
        &user_object_create::Reply {
            object: U64::new(id),
        },
        Vec::new(),
    ))
}
