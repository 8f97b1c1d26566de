//! Initialisation and the driver version.

use std::ffi::{c_int, c_uint};

use crate::cu::CUresult;
use crate::error::err;
use crate::ffi::{run, Out};
use crate::state;

/// The CUDA version the simulator reports (13.0).
pub const DRIVER_VERSION: c_int = 13000;

/// `cuInit`: reads the configuration and announces the simulator, once.
#[no_mangle]
pub extern "C" fn cuInit(flags: c_uint) -> CUresult {
    run("cuInit", || {
        if flags != 0 {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("cuInit flags must be 0, got {flags:#x}"),
            );
        }
        state::init()
    })
}

/// `cuDriverGetVersion`: 13000. Works before `cuInit`, as the driver's does.
///
/// # Safety
/// `version` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuDriverGetVersion(version: *mut c_int) -> CUresult {
    run("cuDriverGetVersion", || {
        // SAFETY: forwarded from this function's contract.
        unsafe { Out::new(version, "driverVersion") }?.write(DRIVER_VERSION);
        Ok(())
    })
}
