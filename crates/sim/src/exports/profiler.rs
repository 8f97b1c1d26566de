//! Profiler control: the model functions of `cuProfilerInitialize`, `cuProfilerStart`
//! and `cuProfilerStop` (generated exports in `generated/mod.rs`). No profiler ever
//! attaches to the simulator, so starting and stopping only check their context.

use std::ffi::CStr;

use crate::context;
use crate::cu::{CUoutput_mode, CUresult};
use crate::error::{err, Res};
use crate::state;

/// `cuProfilerInitialize` (deprecated): "Starting with CUDA 12.0, it always returns error
/// code CUDA_ERROR_NOT_SUPPORTED", and so does the simulator (a CUDA 13 driver).
pub(crate) fn profiler_initialize(
    _config_file: &CStr,
    _output_file: &CStr,
    _output_mode: CUoutput_mode,
) -> Res<()> {
    state::sim()?;
    err(
        CUresult::CUDA_ERROR_NOT_SUPPORTED,
        "cuProfilerInitialize is not supported since CUDA 12.0",
    )
}

/// `cuProfilerStart`: succeeds, also when profiling is already enabled (an error only
/// before CUDA 5.0); needs a current context.
pub(crate) fn profiler_start() -> Res<()> {
    context::current(&state::sim()?.lock()).map(|_| ())
}

/// `cuProfilerStop`: succeeds, also when profiling is already disabled; needs a current
/// context.
pub(crate) fn profiler_stop() -> Res<()> {
    context::current(&state::sim()?.lock()).map(|_| ())
}
