//! The JIT linker (`cuLink*`) over the simulated linker ([`crate::link`]).

use std::ffi::{c_char, c_uint, c_void, CStr};
use std::ptr;

use super::module::{jit_logs, write_log};
use crate::context;
use crate::cu::{CUjitInputType, CUjit_option, CUlinkState, CUresult};
use crate::error::{err, Res};
use crate::ffi::{handle, key, run, Out};
use crate::link::{self, Link, LogSlots};
use crate::state;

type LogPair = (Option<*mut c_char>, Option<*mut *mut c_void>);

fn to_slots(log: LogPair) -> (usize, usize) {
    (
        log.0.map_or(0, |p| p.expose_provenance()),
        log.1.map_or(0, |p| p.expose_provenance()),
    )
}

fn to_pair(slots: (usize, usize)) -> LogPair {
    let (buf, slot) = slots;
    (
        (buf != 0).then(|| ptr::with_exposed_provenance_mut(buf)),
        (slot != 0).then(|| ptr::with_exposed_provenance_mut(slot)),
    )
}

/// `cuLinkCreate_v2`: a link in the current context; its log options are
/// written by later calls on it.
///
/// # Safety
/// `state_out` must be NULL or valid for writes; `options`/`values` must be
/// NULL or hold `n` entries, and log buffers stay valid until `cuLinkDestroy`.
#[no_mangle]
pub unsafe extern "C" fn cuLinkCreate_v2(
    n: c_uint,
    options: *mut CUjit_option,
    values: *mut *mut c_void,
    state_out: *mut CUlinkState,
) -> CUresult {
    run("cuLinkCreate_v2", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(state_out, "stateOut") }?;
        // SAFETY: forwarded from this function's contract.
        let logs = unsafe { jit_logs(n, options, values) }?;
        let mut st = sim.lock();
        context::current_usable(&st)?;
        let k = st.mint();
        let logs = LogSlots {
            info: to_slots(logs.info),
            error: to_slots(logs.error),
        };
        let link = Link {
            logs,
            ..Link::default()
        };
        st.ext.links.insert(k, link);
        out.write(handle(k));
        Ok(())
    })
}

/// `cuLinkCreate`: as `cuLinkCreate_v2`.
///
/// # Safety
/// As for `cuLinkCreate_v2`.
#[no_mangle]
pub unsafe extern "C" fn cuLinkCreate(
    n: c_uint,
    options: *mut CUjit_option,
    values: *mut *mut c_void,
    state_out: *mut CUlinkState,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe { cuLinkCreate_v2(n, options, values, state_out) }
}

/// Adds one input; a bad one writes its reason into the link's error log.
fn add(state: CUlinkState, kind: u32, name: &str, bytes: &[u8]) -> Res<()> {
    let sim = state::sim()?;
    let mut st = sim.lock();
    let Some(l) = st.ext.links.get_mut(&key(state)) else {
        return err(CUresult::CUDA_ERROR_INVALID_HANDLE, "not a live link");
    };
    match link::parse_input(kind, name, bytes) {
        Ok(image) => {
            l.inputs.push(image);
            Ok(())
        }
        Err(e) => {
            // SAFETY: the application keeps its log buffers valid until cuLinkDestroy.
            unsafe { write_log(to_pair(l.logs.error), &format!("vgpu-sim: {}", e.why)) };
            Err(e)
        }
    }
}

/// `cuLinkAddData_v2`: the input must be a simulator module image.
///
/// # Safety
/// `data` must be NULL or hold `size` bytes; `name` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cuLinkAddData_v2(
    state: CUlinkState,
    kind: CUjitInputType,
    data: *mut c_void,
    size: usize,
    name: *const c_char,
    _n: c_uint,
    _options: *mut CUjit_option,
    _values: *mut *mut c_void,
) -> CUresult {
    run("cuLinkAddData_v2", || {
        state::sim()?;
        if data.is_null() || size == 0 {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "no data");
        }
        // SAFETY: `data` holds `size` bytes by the contract.
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) };
        let name = if name.is_null() {
            "<unnamed>".into()
        } else {
            // SAFETY: NUL-terminated by the contract.
            unsafe { CStr::from_ptr(name) }.to_string_lossy()
        };
        add(state, kind.0, &name, bytes)
    })
}

/// `cuLinkAddData`: as `cuLinkAddData_v2`.
///
/// # Safety
/// As for `cuLinkAddData_v2`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuLinkAddData(
    state: CUlinkState,
    kind: CUjitInputType,
    data: *mut c_void,
    size: usize,
    name: *const c_char,
    n: c_uint,
    options: *mut CUjit_option,
    values: *mut *mut c_void,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe { cuLinkAddData_v2(state, kind, data, size, name, n, options, values) }
}

/// `cuLinkAddFile_v2`: the file must hold a simulator module image.
///
/// # Safety
/// `path` must be NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cuLinkAddFile_v2(
    state: CUlinkState,
    kind: CUjitInputType,
    path: *const c_char,
    _n: c_uint,
    _options: *mut CUjit_option,
    _values: *mut *mut c_void,
) -> CUresult {
    run("cuLinkAddFile_v2", || {
        state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let path = unsafe { crate::ffi::read_c_str(path, "path") }?.to_string_lossy();
        let Ok(bytes) = std::fs::read(&*path) else {
            return err(CUresult::CUDA_ERROR_FILE_NOT_FOUND, "cannot read the file");
        };
        add(state, kind.0, &path, &bytes)
    })
}

/// `cuLinkAddFile`: as `cuLinkAddFile_v2`.
///
/// # Safety
/// As for `cuLinkAddFile_v2`.
#[no_mangle]
pub unsafe extern "C" fn cuLinkAddFile(
    state: CUlinkState,
    kind: CUjitInputType,
    path: *const c_char,
    n: c_uint,
    options: *mut CUjit_option,
    values: *mut *mut c_void,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe { cuLinkAddFile_v2(state, kind, path, n, options, values) }
}

/// `cuLinkComplete`: the linked image, owned by the link.
///
/// # Safety
/// `cubin` and `size` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuLinkComplete(
    state: CUlinkState,
    cubin: *mut *mut c_void,
    size: *mut usize,
) -> CUresult {
    run("cuLinkComplete", || {
        let sim = state::sim()?;
        let mut st = sim.lock();
        let Some(l) = st.ext.links.get_mut(&key(state)) else {
            return err(CUresult::CUDA_ERROR_INVALID_HANDLE, "not a live link");
        };
        // SAFETY: forwarded from this function's contract.
        let (c_out, s_out) = unsafe { (Out::new(cubin, "cubinOut")?, Out::new(size, "sizeOut")?) };
        match link::link(&l.inputs) {
            Ok(image) => {
                let msg = format!("vgpu-sim: linked {} inputs (no JIT)", l.inputs.len());
                // SAFETY: the application keeps its log buffers valid until cuLinkDestroy.
                unsafe { write_log(to_pair(l.logs.info), &msg) };
                let image = l.linked.insert(image);
                c_out.write(image.as_mut_ptr().cast());
                s_out.write(image.len());
                Ok(())
            }
            Err(e) => {
                // SAFETY: as above.
                unsafe { write_log(to_pair(l.logs.error), &format!("vgpu-sim: {}", e.why)) };
                Err(e)
            }
        }
    })
}

/// `cuLinkDestroy`: the link and its image go.
#[no_mangle]
pub extern "C" fn cuLinkDestroy(state: CUlinkState) -> CUresult {
    run("cuLinkDestroy", || {
        let sim = state::sim()?;
        match sim.lock().ext.links.remove(&key(state)) {
            Some(_) => Ok(()),
            None => err(CUresult::CUDA_ERROR_INVALID_HANDLE, "not a live link"),
        }
    })
}
