//! Inter-process handles (`cuIpc*`). The 64-byte handles are the worker's
//! driver's own, passed through untouched, so the application can send them
//! to another process by any channel. That process's worker opens them after
//! the host's IPC registry says a session of the same uid exported them
//! (`docs/adr/0005-ipc.md`). Opened memory is device memory of this session
//! for unified addressing until its last close.

use std::ffi::c_uint;

use vgpu_abi::types::{CUdeviceptr, CUevent, CUipcEventHandle, CUipcMemHandle};
use vgpu_proto::{
    ipc_close_mem_handle, ipc_get_event_handle, ipc_get_mem_handle, ipc_open_event_handle,
    ipc_open_mem_handle,
};
use zerocopy::little_endian::{U32, U64};

use crate::context::current;
use crate::edge::{non_null, wire, write_out, CuResult};
use crate::runtime::{runtime, Kind};

/// A handle's 64 bytes, as the wire carries them.
fn handle_bytes(reserved: &[std::ffi::c_char; 64]) -> [u8; 64] {
    reserved.map(|c| c as u8)
}

/// A handle from the wire's 64 bytes.
fn handle_chars(bytes: [u8; 64]) -> [std::ffi::c_char; 64] {
    bytes.map(|b| b as std::ffi::c_char)
}

/// `cuIpcGetMemHandle`.
///
/// # Safety
/// `handle` must be NULL or valid for a write of a `CUipcMemHandle`.
pub unsafe fn get_mem_handle(handle: *mut CUipcMemHandle, dptr: CUdeviceptr) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(handle)?;
    let r = ipc_get_mem_handle::Request {
        dptr: U64::new(dptr),
    };
    let (rep, _) = s.request(&r, &[])?;
    let out = CUipcMemHandle {
        reserved: handle_chars(rep.handle),
    };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(handle, out) }
}

/// `cuIpcOpenMemHandle` and `cuIpcOpenMemHandle_v2`.
///
/// # Safety
/// `dptr` must be NULL or valid for a write.
pub unsafe fn open_mem_handle(
    dptr: *mut CUdeviceptr,
    handle: CUipcMemHandle,
    flags: c_uint,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(dptr)?;
    let r = ipc_open_mem_handle::Request {
        handle: handle_bytes(&handle.reserved),
        flags: U32::new(flags),
    };
    let (rep, _) = s.request(&r, &[])?;
    let (p, size) = (rep.dptr.get(), rep.size.get());
    s.objects().device_ranges.insert(p, size);
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(dptr, p) }
}

/// `cuIpcCloseMemHandle`. The worker counts the opens of each address; the
/// range stays device memory here until the last is closed.
pub fn close_mem_handle(dptr: CUdeviceptr) -> CuResult<()> {
    let s = runtime().session()?;
    let r = ipc_close_mem_handle::Request {
        dptr: U64::new(dptr),
    };
    let (rep, _) = s.request(&r, &[])?;
    if rep.left.get() == 0 {
        s.objects().device_ranges.remove(&dptr);
    }
    Ok(())
}

/// `cuIpcGetEventHandle`.
///
/// # Safety
/// `handle` must be NULL or valid for a write of a `CUipcEventHandle`.
pub unsafe fn get_event_handle(handle: *mut CUipcEventHandle, event: CUevent) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(handle)?;
    let r = ipc_get_event_handle::Request {
        event: U64::new(event as usize as u64),
    };
    let (rep, _) = s.request(&r, &[])?;
    let out = CUipcEventHandle {
        reserved: handle_chars(rep.handle),
    };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(handle, out) }
}

/// `cuIpcOpenEventHandle`: a new event of the current context under an id
/// minted here, like `cuEventCreate`'s.
///
/// # Safety
/// `event` must be NULL or valid for a write.
pub unsafe fn open_event_handle(event: *mut CUevent, handle: CUipcEventHandle) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(event)?;
    let eid = runtime().mint(Kind::Event);
    let r = ipc_open_event_handle::Request {
        event: U64::new(eid),
        handle: handle_bytes(&handle.reserved),
    };
    s.request(&r, &[])?;
    s.objects().events.insert(eid, current());
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(event, wire::handle(eid)) }
}
