//! Stream capture and graphs. The table calls (`generated/mod.rs`) carry
//! capture, instantiation, launch and destruction; graph, node and
//! executable graph handles are worker-minted ids ([`super::tables`]), and a
//! destroyed one is forgotten, so using it again never reaches the driver.
//! Each call runs on the calling client thread's lane, whose thread keeps
//! that thread's capture mode.

use vgpu_abi::types::CUstreamCaptureMode;
use vgpu_proto::{exchange_capture_mode, Request};
use zerocopy::little_endian::U32;

use super::calls::{message, ok, Reply};
use super::exec::Lane;
use super::Session;
use crate::driver::{entry, Status};

/// `cuThreadExchangeStreamCaptureMode` on the lane's thread, which stands
/// for the client's thread.
pub fn exchange_capture_mode(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &exchange_capture_mode::Request = message(req)?;
    let mut mode = CUstreamCaptureMode(r.mode.get());
    // SAFETY: the out-pointer is a live local.
    ok(unsafe { entry(s.driver.cuThreadExchangeStreamCaptureMode)?(&mut mode) })?;
    Ok(Reply::new(
        &exchange_capture_mode::Reply {
            mode: U32::new(mode.0),
        },
        Vec::new(),
    ))
}
