//! Initialisation and the system's values.

use std::ffi::{c_char, c_int, c_uint};

use vgpu_proto::nvml as q;

use crate::edge::{write_out, write_str, NvmlError, Res};
use crate::session;

/// `nvmlInit`, `nvmlInit_v2`, `nvmlInitWithFlags`. The flags
/// (`NVML_INIT_FLAG_NO_GPUS`, `NVML_INIT_FLAG_NO_ATTACH`) change nothing
/// here: the session needs no GPU and attaches to none.
pub fn init(_flags: c_uint) -> Res<()> {
    session::init()
}

/// `nvmlSystemGetDriverVersion`: the host's driver version.
///
/// # Safety
/// `buf` must be NULL or valid for `len` bytes.
pub unsafe fn driver_version(buf: *mut c_char, len: c_uint) -> Res<()> {
    // SAFETY: the caller's contract.
    unsafe { system_string(q::DRIVER_VERSION, buf, len) }
}

/// `nvmlSystemGetNVMLVersion`: the host NVML's version.
///
/// # Safety
/// As [`driver_version`].
pub unsafe fn nvml_version(buf: *mut c_char, len: c_uint) -> Res<()> {
    // SAFETY: the caller's contract.
    unsafe { system_string(q::NVML_VERSION, buf, len) }
}

/// # Safety
/// As [`driver_version`].
unsafe fn system_string(what: u32, buf: *mut c_char, len: c_uint) -> Res<()> {
    let s = session::current()?;
    crate::edge::non_null(buf)?;
    let answer = s.query_system(what)?;
    // SAFETY: the caller's contract.
    unsafe { write_str(buf, len, &answer.blob) }
}

/// `nvmlSystemGetCudaDriverVersion` (and `_v2`): the worker's driver's
/// `cuDriverGetVersion`.
///
/// # Safety
/// `v` must be NULL or valid for a write.
pub unsafe fn cuda_driver_version(v: *mut c_int) -> Res<()> {
    let s = session::current()?;
    // SAFETY: the caller's contract.
    unsafe { write_out(v, s.cuda_version) }
}

/// `nvmlDeviceGetCount` (and `_v2`).
///
/// # Safety
/// `n` must be NULL or valid for a write.
pub unsafe fn device_count(n: *mut c_uint) -> Res<()> {
    let s = session::current()?;
    let count = c_uint::try_from(s.devices.len()).unwrap_or(c_uint::MAX);
    // SAFETY: the caller's contract.
    unsafe { write_out(n, count) }
}

/// The program process `pid` of this host runs: the first word of its
/// command line, else its short name; `None` for no such process.
pub fn program_of(pid: u32) -> Option<Vec<u8>> {
    let dir = std::path::Path::new("/proc").join(pid.to_string());
    let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
    match cmdline.split(|&b| b == 0).next() {
        Some(first) if !first.is_empty() => Some(first.to_vec()),
        _ => std::fs::read(dir.join("comm"))
            .ok()
            .map(|comm| comm.trim_ascii_end().to_vec()),
    }
}

/// `nvmlSystemGetProcessName`: [`program_of`] the process;
/// `NVML_ERROR_NOT_FOUND` for no such process.
///
/// # Safety
/// `buf` must be NULL or valid for `len` bytes.
pub unsafe fn process_name(pid: c_uint, buf: *mut c_char, len: c_uint) -> Res<()> {
    session::current()?;
    crate::edge::non_null(buf)?;
    let name = program_of(pid).ok_or(NvmlError::NOT_FOUND)?;
    // SAFETY: the caller's contract.
    unsafe { write_str(buf, len, &name) }
}
