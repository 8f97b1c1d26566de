//! Host callbacks: `cuLaunchHostFunc` and `cuStreamAddCallback` (and their
//! `_ptsz` forms). The function runs in this process, on the session's
//! callback thread (`crate::callback`), in stream order: the worker's
//! trampoline on the real stream asks for it and waits for it to return.
//!
//! The call is posted when this side can check what the driver checks at
//! once (a function, flags 0, a live current context and a stream of it);
//! anything else waits for the worker's answer, which is the driver's. A
//! `cuLaunchHostFunc` on a capturing stream becomes a host node of the
//! captured graph, run at every launch.

use std::ffi::{c_uint, c_void};

use vgpu_abi::types::{CUhostFn, CUstream, CUstreamCallback};
use vgpu_proto::host_callback;
use zerocopy::little_endian::U64;

use crate::callback::Pending;
use crate::context::current;
use crate::edge::{CuError, CuResult};
use crate::lane::Follows;
use crate::runtime::runtime;

/// `cuLaunchHostFunc`: `sid` is the stream's wire id (the `_ptsz` form
/// passes the per-thread stream for NULL).
pub fn launch_host_func(sid: u64, f: CUhostFn, data: *mut c_void) -> CuResult<()> {
    let f = f.ok_or(CuError::INVALID_VALUE)?;
    let p = Pending::Host {
        f,
        data: data as usize,
    };
    enqueue(sid, p, false)
}

/// `cuStreamAddCallback`: the callback gets `st`, the application's own
/// handle, and the stream's status.
pub fn add_callback(
    sid: u64,
    st: CUstream,
    f: CUstreamCallback,
    data: *mut c_void,
    flags: c_uint,
) -> CuResult<()> {
    let f = f.ok_or(CuError::INVALID_VALUE)?;
    if flags != 0 {
        return Err(CuError::INVALID_VALUE);
    }
    let p = Pending::Stream {
        f,
        stream: st as usize,
        data: data as usize,
    };
    enqueue(sid, p, true)
}

fn enqueue(sid: u64, p: Pending, status: bool) -> CuResult<()> {
    let s = runtime().session()?;
    let postable = s.objects().stream_ok(current(), sid);
    // On a capturing stream the worker puts the function in a graph as a
    // host node, which runs at every launch: it stays registered. (Asking
    // costs a round trip only while some capture is open.)
    let id = if crate::api::graph::capturing(s, sid)? {
        s.callbacks.register_kept(s, p)?
    } else {
        s.callbacks.register(s, p)?
    };
    let r = host_callback::Request {
        stream: U64::new(sid),
        id: U64::new(id),
        status: u8::from(status),
    };
    s.post_or_request(&r, &[], postable, Follows::Stream(sid))
        .inspect_err(|_| s.callbacks.forget(id))
}
