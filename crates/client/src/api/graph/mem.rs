//! Graph memory: the device's graph memory attributes, each a `cuuint64_t`.

use std::ffi::c_void;

use vgpu_abi::types::{CUdevice, CUgraphMem_attribute};
use vgpu_proto::device_graph_mem_attribute;
use zerocopy::little_endian::{I32, U32, U64};

use crate::edge::{non_null, write_out, CuResult};
use crate::runtime::runtime;

/// `cuDeviceGetGraphMemAttribute` (`set` false) or
/// `cuDeviceSetGraphMemAttribute` (`set` true) of `attr` on `dev`.
///
/// # Safety
/// `value` must be NULL or valid for a read and a write of a `cuuint64_t`.
pub unsafe fn graph_mem_attribute(
    dev: CUdevice,
    attr: CUgraphMem_attribute,
    value: *mut c_void,
    set: bool,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(value)?;
    let value = value.cast::<u64>();
    let given = match set {
        // SAFETY: checked non-NULL; the application's value.
        true => unsafe { value.read_unaligned() },
        false => 0,
    };
    let r = device_graph_mem_attribute::Request {
        set: u8::from(set),
        dev: I32::new(dev),
        attr: U32::new(attr.0),
        value: U64::new(given),
    };
    let (rep, _) = s.request(&r, &[])?;
    if set {
        return Ok(());
    }
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(value, rep.value.get()) }
}
