//! Graph memory: the device's graph memory attributes and trim. The simulated
//! device has no memory allocation nodes, so no graph memory is ever used or
//! reserved: every attribute reads 0, and trimming has nothing to release.

use std::ffi::c_void;

use crate::cu::{CUgraphMem_attribute, CUresult};
use crate::error::{err, Res};
use crate::ffi::run;
use crate::state;

/// `CU_GRAPH_MEM_ATTR_USED_MEM_HIGH` and `CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH`:
/// the high watermarks, the only attributes that may be set (to 0, a reset).
const HIGH: [u32; 2] = [1, 3];
/// `CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH`, the last attribute.
const LAST: u32 = 3;

fn check(dev: i32, attr: CUgraphMem_attribute, value: *mut c_void) -> Res<()> {
    state::sim()?.check_device(dev)?;
    if value.is_null() || attr.0 > LAST {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!(
                "graph memory attribute {} or its value is not valid",
                attr.0
            ),
        );
    }
    Ok(())
}

/// `cuDeviceGetGraphMemAttribute`.
///
/// # Safety
/// `value` must be NULL or valid for a write of a `cuuint64_t`.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetGraphMemAttribute(
    dev: i32,
    attr: CUgraphMem_attribute,
    value: *mut c_void,
) -> CUresult {
    run("cuDeviceGetGraphMemAttribute", || {
        check(dev, attr, value)?;
        // SAFETY: checked non-NULL; valid by the contract.
        unsafe { value.cast::<u64>().write_unaligned(0) };
        Ok(())
    })
}

/// `cuDeviceSetGraphMemAttribute`: only a high watermark, only reset to 0.
///
/// # Safety
/// `value` must be NULL or valid for a read of a `cuuint64_t`.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceSetGraphMemAttribute(
    dev: i32,
    attr: CUgraphMem_attribute,
    value: *mut c_void,
) -> CUresult {
    run("cuDeviceSetGraphMemAttribute", || {
        check(dev, attr, value)?;
        // SAFETY: checked non-NULL; valid by the contract.
        let v = unsafe { value.cast::<u64>().read_unaligned() };
        if !HIGH.contains(&attr.0) || v != 0 {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("graph memory attribute {} cannot be set to {v}", attr.0),
            );
        }
        Ok(())
    })
}

/// `cuDeviceGraphMemTrim`: checks the device; there is nothing to release.
pub(crate) fn device_graph_mem_trim(dev: i32) -> Res<()> {
    state::sim()?.check_device(dev).map(drop)
}
