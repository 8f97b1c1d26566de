//! Graph memory: the device's graph memory attributes.

use std::ffi::c_void;

use vgpu_abi::types::CUgraphMem_attribute;
use vgpu_proto::{device_graph_mem_attribute, Request};
use zerocopy::little_endian::U64;

use super::super::calls::{message, ok, Reply};
use super::super::exec::Lane;
use super::super::status::INVALID_VALUE;
use super::super::Session;
use crate::driver::{entry, Status};

/// `CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH`, the last attribute: the driver
/// reads or writes a `cuuint64_t` for each, so no other reaches it.
const LAST_ATTRIBUTE: u32 = 3;

/// `cuDeviceGetGraphMemAttribute` or `cuDeviceSetGraphMemAttribute`.
pub fn device_graph_mem_attribute(
    _: &mut Lane,
    s: &Session,
    req: &Request,
) -> Result<Reply, Status> {
    let r: &device_graph_mem_attribute::Request = message(req)?;
    if r.attr.get() > LAST_ATTRIBUTE {
        return Err(INVALID_VALUE);
    }
    let attr = CUgraphMem_attribute(r.attr.get());
    let mut value: u64 = r.value.get();
    let at = (&raw mut value).cast::<c_void>();
    // SAFETY: `value` is a live `cuuint64_t`, every attribute's type.
    ok(unsafe {
        match r.set {
            0 => entry(s.driver.cuDeviceGetGraphMemAttribute)?(r.dev.get(), attr, at),
            _ => entry(s.driver.cuDeviceSetGraphMemAttribute)?(r.dev.get(), attr, at),
        }
    })?;
    Ok(Reply::new(
        &device_graph_mem_attribute::Reply {
            value: U64::new(value),
        },
        Vec::new(),
    ))
}
