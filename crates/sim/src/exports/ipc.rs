//! Inter-process handles (`crate::ipc`): the exports the worker calls.

use std::ffi::c_uint;

use crate::cu::{CUdeviceptr, CUevent, CUipcEventHandle, CUipcMemHandle, CUresult};
use crate::ffi::{handle, key, run, Out};
use crate::{ipc, state};

fn chars(bytes: [u8; 64]) -> [std::ffi::c_char; 64] {
    bytes.map(|b| b as std::ffi::c_char)
}

fn bytes(chars: [std::ffi::c_char; 64]) -> [u8; 64] {
    chars.map(|c| c as u8)
}

/// `cuIpcGetMemHandle`.
///
/// # Safety
/// `p_handle` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuIpcGetMemHandle(
    p_handle: *mut CUipcMemHandle,
    dptr: CUdeviceptr,
) -> CUresult {
    run("cuIpcGetMemHandle", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(p_handle, "pHandle") }?;
        let h = ipc::get_mem_handle(&mut sim.lock(), dptr)?;
        out.write(CUipcMemHandle { reserved: chars(h) });
        Ok(())
    })
}

/// `cuIpcOpenMemHandle_v2`.
///
/// # Safety
/// `pdptr` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuIpcOpenMemHandle_v2(
    pdptr: *mut CUdeviceptr,
    h: CUipcMemHandle,
    flags: c_uint,
) -> CUresult {
    run("cuIpcOpenMemHandle_v2", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(pdptr, "pdptr") }?;
        out.write(ipc::open_mem_handle(
            &mut sim.lock(),
            &bytes(h.reserved),
            flags,
        )?);
        Ok(())
    })
}

/// `cuIpcOpenMemHandle`, the first ABI version: the same call.
///
/// # Safety
/// As for [`cuIpcOpenMemHandle_v2`].
#[no_mangle]
pub unsafe extern "C" fn cuIpcOpenMemHandle(
    pdptr: *mut CUdeviceptr,
    h: CUipcMemHandle,
    flags: c_uint,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe { cuIpcOpenMemHandle_v2(pdptr, h, flags) }
}

/// `cuIpcCloseMemHandle`.
#[no_mangle]
pub extern "C" fn cuIpcCloseMemHandle(dptr: CUdeviceptr) -> CUresult {
    run("cuIpcCloseMemHandle", || {
        ipc::close_mem_handle(&mut state::sim()?.lock(), dptr)
    })
}

/// `cuIpcGetEventHandle`.
///
/// # Safety
/// `p_handle` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuIpcGetEventHandle(
    p_handle: *mut CUipcEventHandle,
    event: CUevent,
) -> CUresult {
    run("cuIpcGetEventHandle", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(p_handle, "pHandle") }?;
        let h = ipc::get_event_handle(&mut sim.lock(), key(event))?;
        out.write(CUipcEventHandle { reserved: chars(h) });
        Ok(())
    })
}

/// `cuIpcOpenEventHandle`.
///
/// # Safety
/// `ph_event` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuIpcOpenEventHandle(
    ph_event: *mut CUevent,
    h: CUipcEventHandle,
) -> CUresult {
    run("cuIpcOpenEventHandle", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(ph_event, "phEvent") }?;
        let k = ipc::open_event_handle(&mut sim.lock(), &bytes(h.reserved))?;
        out.write(handle(k));
        Ok(())
    })
}
