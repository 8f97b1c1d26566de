//! Driver notifications: log callbacks (`cuLogsRegisterCallback`,
//! `cuLogsUnregisterCallback`) and async notifications
//! (`cuDeviceRegisterAsyncNotification`, `cuDeviceUnregisterAsyncNotification`).
//!
//! The worker's driver raises them, so the worker registers a trampoline of
//! its own that sends each one to this process as an event on the callback
//! channel (`crate::callback`); the callback thread runs the application's
//! function with the event's payload. A log message the driver raised inside
//! a call this thread waited for is run by the calling thread itself before
//! the call returns, as the driver does (`crate::lane`'s events). The application's function and user
//! data are kept here under a client-minted id, until it unregisters them;
//! the handle the application gets is that id, so a handle this process never
//! gave out (or gave out and took back) is refused here and never reaches
//! the driver.

use std::ffi::c_void;

use vgpu_abi::types::{
    CUasyncCallback, CUasyncCallbackHandle, CUdevice, CUlogsCallback, CUlogsCallbackHandle,
};
use vgpu_proto::{async_notification, logs_callback};
use zerocopy::little_endian::{I32, U64};

use crate::callback::Pending;
use crate::edge::{write_out, CuError, CuResult};
use crate::runtime::{runtime, Session};

/// The id behind a handle this process gave out: `None` for NULL.
fn handle_id<T>(h: *mut T) -> Option<u64> {
    (!h.is_null()).then_some(h as u64)
}

/// Whether `id` is a live registration that `is_kind` accepts.
fn registered(s: &Session, id: u64, is_kind: fn(&Pending) -> bool) -> bool {
    s.callbacks.get(id).as_ref().is_some_and(is_kind)
}

/// `cuLogsRegisterCallback`. `callback_out` is optional (the driver's
/// documentation); without it the function stays registered for the
/// session's life.
///
/// # Safety
/// `out` must be NULL or valid for a write.
pub unsafe fn logs_register_callback(
    f: CUlogsCallback,
    data: *mut c_void,
    out: *mut CUlogsCallbackHandle,
) -> CuResult<()> {
    let s = runtime().session()?;
    let Some(f) = f else {
        // The driver's own answer to a NULL function.
        let r = logs_callback::Request {
            id: U64::new(0),
            register: 1,
            null: 1,
        };
        s.request(&r, &[])?;
        if !out.is_null() {
            // SAFETY: checked non-NULL; the caller's contract.
            unsafe { write_out(out, std::ptr::null_mut())? };
        }
        return Ok(());
    };
    let p = Pending::Log {
        f,
        data: data as usize,
    };
    let id = s.callbacks.register_kept(s, p)?;
    let r = logs_callback::Request {
        id: U64::new(id),
        register: 1,
        null: 0,
    };
    s.request(&r, &[]).inspect_err(|_| s.callbacks.forget(id))?;
    if !out.is_null() {
        // SAFETY: checked non-NULL; the caller's contract.
        unsafe { write_out(out, id as CUlogsCallbackHandle)? };
    }
    Ok(())
}

/// `cuLogsUnregisterCallback`: a handle this process does not hold is
/// `CUDA_ERROR_INVALID_VALUE` (a NULL one gets the driver's own answer).
pub fn logs_unregister_callback(h: CUlogsCallbackHandle) -> CuResult<()> {
    let s = runtime().session()?;
    let id = match handle_id(h) {
        Some(id) if registered(s, id, |p| matches!(p, Pending::Log { .. })) => id,
        Some(_) => return Err(CuError::INVALID_VALUE),
        None => 0,
    };
    let r = logs_callback::Request {
        id: U64::new(id),
        register: 0,
        null: u8::from(id == 0),
    };
    s.request(&r, &[])?;
    s.callbacks.forget(id);
    Ok(())
}

/// `cuDeviceRegisterAsyncNotification`: the callback gets the driver's
/// notification and the handle written to `out`.
///
/// # Safety
/// `out` must be NULL or valid for a write.
pub unsafe fn device_register_async_notification(
    dev: CUdevice,
    f: CUasyncCallback,
    data: *mut c_void,
    out: *mut CUasyncCallbackHandle,
) -> CuResult<()> {
    let s = runtime().session()?;
    let request = |id: u64| async_notification::Request {
        device: I32::new(dev),
        id: U64::new(id),
        register: 1,
        null: u8::from(f.is_none()),
        no_out: u8::from(out.is_null()),
    };
    let Some(f) = f else {
        // The driver's own answer to a NULL function (should it take one,
        // the worker unregisters it at once: nothing could run).
        s.request(&request(0), &[])?;
        if !out.is_null() {
            // SAFETY: checked non-NULL; the caller's contract.
            unsafe { write_out(out, std::ptr::null_mut())? };
        }
        return Ok(());
    };
    let p = Pending::Notify {
        f,
        data: data as usize,
    };
    let id = s.callbacks.register_kept(s, p)?;
    s.request(&request(id), &[])
        .inspect_err(|_| s.callbacks.forget(id))?;
    if !out.is_null() {
        // SAFETY: checked non-NULL; the caller's contract.
        unsafe { write_out(out, id as CUasyncCallbackHandle)? };
    }
    Ok(())
}

/// `cuDeviceUnregisterAsyncNotification`: a handle this process does not
/// hold is `CUDA_ERROR_INVALID_VALUE`; the device is the driver's to check.
pub fn device_unregister_async_notification(
    dev: CUdevice,
    h: CUasyncCallbackHandle,
) -> CuResult<()> {
    let s = runtime().session()?;
    let id = match handle_id(h) {
        Some(id) if registered(s, id, |p| matches!(p, Pending::Notify { .. })) => id,
        _ => return Err(CuError::INVALID_VALUE),
    };
    let r = async_notification::Request {
        device: I32::new(dev),
        id: U64::new(id),
        register: 0,
        null: 0,
        no_out: 0,
    };
    s.request(&r, &[])?;
    s.callbacks.forget(id);
    Ok(())
}
