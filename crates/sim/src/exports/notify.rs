//! Driver notifications: log callbacks (`cuLogsRegisterCallback`,
//! `cuLogsUnregisterCallback`) and async notifications
//! (`cuDeviceRegisterAsyncNotification`,
//! `cuDeviceUnregisterAsyncNotification`).
//!
//! Log callbacks get each line the simulator logs for a failed call
//! ([`crate::logs`]). The simulated device has no memory budget and raises
//! no async notification, so a registered notification function is never
//! called; registering and unregistering check their input as the driver
//! does.

use std::ffi::c_void;

use crate::cu::{
    CUasyncCallback, CUasyncCallbackHandle, CUdevice, CUlogsCallback, CUlogsCallbackHandle,
    CUresult,
};
use crate::error::{err, Res};
use crate::ffi::run;
use crate::state;

/// `cuLogsRegisterCallback`: `callback_out` is optional.
///
/// # Safety
/// `callback_out` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuLogsRegisterCallback(
    f: CUlogsCallback,
    user_data: *mut c_void,
    callback_out: *mut CUlogsCallbackHandle,
) -> CUresult {
    run("cuLogsRegisterCallback", || {
        let sim = state::sim()?;
        let Some(f) = f else {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "callbackFunc is NULL");
        };
        let mut st = sim.lock();
        let h = st.mint();
        st.ext.logs.register(h, f, user_data as usize);
        if !callback_out.is_null() {
            // SAFETY: non-NULL; the caller's contract.
            unsafe { callback_out.write_unaligned(h as CUlogsCallbackHandle) };
        }
        Ok(())
    })
}

/// `cuLogsUnregisterCallback`: a handle not registered (NULL, or already
/// unregistered) is `CUDA_ERROR_INVALID_VALUE`.
#[no_mangle]
pub extern "C" fn cuLogsUnregisterCallback(callback: CUlogsCallbackHandle) -> CUresult {
    run("cuLogsUnregisterCallback", || {
        let sim = state::sim()?;
        sim.lock().ext.logs.unregister(callback as usize)
    })
}

fn register_async(dev: CUdevice, f: CUasyncCallback, out: *mut CUasyncCallbackHandle) -> Res<()> {
    let sim = state::sim()?;
    sim.check_device(dev)?;
    if f.is_none() {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "callbackFunc is NULL");
    }
    if out.is_null() {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "callback is NULL");
    }
    let mut st = sim.lock();
    let h = st.mint();
    st.ext.notifications.insert(h, dev);
    // SAFETY: checked non-NULL; the export's contract.
    unsafe { out.write_unaligned(h as CUasyncCallbackHandle) };
    Ok(())
}

/// `cuDeviceRegisterAsyncNotification`: the function is kept, never called
/// (the simulated device raises no notification).
///
/// # Safety
/// `callback` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceRegisterAsyncNotification(
    dev: CUdevice,
    f: CUasyncCallback,
    _user_data: *mut c_void,
    callback: *mut CUasyncCallbackHandle,
) -> CUresult {
    run("cuDeviceRegisterAsyncNotification", || {
        register_async(dev, f, callback)
    })
}

/// `cuDeviceUnregisterAsyncNotification`: a handle not registered on
/// `dev` is `CUDA_ERROR_INVALID_VALUE`.
#[no_mangle]
pub extern "C" fn cuDeviceUnregisterAsyncNotification(
    dev: CUdevice,
    callback: CUasyncCallbackHandle,
) -> CUresult {
    run("cuDeviceUnregisterAsyncNotification", || {
        let sim = state::sim()?;
        sim.check_device(dev)?;
        let mut st = sim.lock();
        if st.ext.notifications.get(&(callback as usize)) != Some(&dev) {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                "no async notification callback is registered under this handle on this device",
            );
        }
        st.ext.notifications.remove(&(callback as usize));
        Ok(())
    })
}
