//! `cuGraphDebugDotPrint`: the driver writes the file in the worker, whose
//! bytes go back to the client, which writes them where the application
//! asked.

use std::ffi::CString;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;

use rustix::fs::{memfd_create, MemfdFlags};
use vgpu_abi::types::CUgraph;
use vgpu_abi::HandleKind;
use vgpu_proto::{graph_debug_dot_print, Request};

use super::super::calls::{as_ptr, message, ok, Reply};
use super::super::exec::Lane;
use super::super::status::OPERATING_SYSTEM;
use super::super::Session;
use crate::driver::{entry, Status};

/// `cuGraphDebugDotPrint` into an anonymous file of the worker (named by
/// its `/proc/self/fd` path), whose bytes go back to the client.
pub fn graph_debug_dot_print(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &graph_debug_dot_print::Request = message(req)?;
    let graph: CUgraph = as_ptr(s.tables().handle(HandleKind::Graph, r.graph.get())?);
    let fd = memfd_create("vgpu-graph-dot", MemfdFlags::CLOEXEC).map_err(|_| OPERATING_SYSTEM)?;
    let path =
        CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).map_err(|_| OPERATING_SYSTEM)?;
    // SAFETY: a NUL-terminated path; the graph is this session's own.
    ok(unsafe { entry(s.driver.cuGraphDebugDotPrint)?(graph, path.as_ptr(), r.flags.get()) })?;
    let mut file = std::fs::File::from(fd);
    let mut dot = Vec::new();
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_end(&mut dot))
        .map_err(|_| OPERATING_SYSTEM)?;
    Ok(Reply::new(&graph_debug_dot_print::Reply {}, dot))
}
