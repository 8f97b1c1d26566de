//! Initialisation, version, devices, primary contexts and error strings.

use std::ffi::{c_char, c_int, c_uint};

use crate::context;
use crate::cu::{CUcontext, CUdevice, CUdevice_attribute, CUresult, CUuuid};
use crate::device;
use crate::errors;
use crate::ffi::{handle, run, write_c_str, Out};
use crate::state::{self, err};

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

/// `cuDeviceGetCount`.
///
/// # Safety
/// `count` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CUresult {
    run("cuDeviceGetCount", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        unsafe { Out::new(count, "count") }?.write(sim.device_count());
        Ok(())
    })
}

/// `cuDeviceGet`.
///
/// # Safety
/// `device` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGet(device: *mut CUdevice, ordinal: c_int) -> CUresult {
    run("cuDeviceGet", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(device, "device") }?;
        sim.check_device(ordinal)?;
        out.write(ordinal);
        Ok(())
    })
}

/// `cuDeviceGetName`: "vgpu simulated device (not a GPU)", truncated to `len - 1` bytes.
///
/// # Safety
/// `name` must be NULL or valid for `len` bytes of writes.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, dev: CUdevice) -> CUresult {
    run("cuDeviceGetName", || {
        state::sim()?.check_device(dev)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { write_c_str(name, len, device::NAME) }
    })
}

/// `cuDeviceGetUuid`.
///
/// # Safety
/// `uuid` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetUuid(uuid: *mut CUuuid, dev: CUdevice) -> CUresult {
    run("cuDeviceGetUuid", || {
        let sim = state::sim()?;
        let d = sim.cfg.physical(sim.check_device(dev)?);
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(uuid, "uuid") }?;
        out.write(CUuuid {
            bytes: device::uuid(d).map(|b| b as c_char),
        });
        Ok(())
    })
}

/// `cuDeviceGetUuid_v2`: the same UUID as `cuDeviceGetUuid`.
///
/// # Safety
/// `uuid` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetUuid_v2(uuid: *mut CUuuid, dev: CUdevice) -> CUresult {
    // SAFETY: same contract.
    unsafe { cuDeviceGetUuid(uuid, dev) }
}

/// `cuDeviceGetPCIBusId`: `0000:5E:00.0` for device 0, `0000:5F:00.0` for device 1, ….
///
/// # Safety
/// `bus_id` must be NULL or valid for `len` bytes of writes.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetPCIBusId(
    bus_id: *mut c_char,
    len: c_int,
    dev: CUdevice,
) -> CUresult {
    run("cuDeviceGetPCIBusId", || {
        let sim = state::sim()?;
        let d = sim.cfg.physical(sim.check_device(dev)?);
        // SAFETY: forwarded from this function's contract.
        unsafe { write_c_str(bus_id, len, &device::pci_bus_id(d)) }
    })
}

/// `cuDeviceTotalMem_v2`: the configured budget (`VGPU_SIM_MEMORY_MB`).
///
/// # Safety
/// `bytes` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: CUdevice) -> CUresult {
    run("cuDeviceTotalMem_v2", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(bytes, "bytes") }?;
        sim.check_device(dev)?;
        out.write(crate::ffi::us(sim.cfg.memory_bytes));
        Ok(())
    })
}

/// `cuDeviceGetAttribute`: H100-class values for every attribute id.
///
/// # Safety
/// `pi` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    pi: *mut c_int,
    attrib: CUdevice_attribute,
    dev: CUdevice,
) -> CUresult {
    run("cuDeviceGetAttribute", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(pi, "pi") }?;
        let d = sim.cfg.physical(sim.check_device(dev)?);
        out.write(device::attribute(attrib, d)?);
        Ok(())
    })
}

/// `cuDevicePrimaryCtxRetain`.
///
/// # Safety
/// `pctx` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(pctx: *mut CUcontext, dev: CUdevice) -> CUresult {
    run("cuDevicePrimaryCtxRetain", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(pctx, "pctx") }?;
        let d = sim.check_device(dev)?;
        let key = context::primary_retain(&mut sim.lock(), d)?;
        out.write(handle(key));
        Ok(())
    })
}

/// `cuDevicePrimaryCtxRelease_v2`.
#[no_mangle]
pub extern "C" fn cuDevicePrimaryCtxRelease_v2(dev: CUdevice) -> CUresult {
    run("cuDevicePrimaryCtxRelease_v2", || {
        let sim = state::sim()?;
        let d = sim.check_device(dev)?;
        context::primary_release(&mut sim.lock(), d)
    })
}

/// `cuDevicePrimaryCtxGetState`.
///
/// # Safety
/// `flags` and `active` must each be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxGetState(
    dev: CUdevice,
    flags: *mut c_uint,
    active: *mut c_int,
) -> CUresult {
    run("cuDevicePrimaryCtxGetState", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let (f_out, a_out) = unsafe { (Out::new(flags, "flags")?, Out::new(active, "active")?) };
        let d = sim.check_device(dev)?;
        let (f, a) = context::primary_state(&sim.lock(), d);
        f_out.write(f);
        a_out.write(c_int::from(a));
        Ok(())
    })
}

/// `cuDevicePrimaryCtxSetFlags_v2`.
#[no_mangle]
pub extern "C" fn cuDevicePrimaryCtxSetFlags_v2(dev: CUdevice, flags: c_uint) -> CUresult {
    run("cuDevicePrimaryCtxSetFlags_v2", || {
        let sim = state::sim()?;
        let d = sim.check_device(dev)?;
        context::primary_set_flags(&mut sim.lock(), d, flags)
    })
}

/// `cuDevicePrimaryCtxReset_v2`.
#[no_mangle]
pub extern "C" fn cuDevicePrimaryCtxReset_v2(dev: CUdevice) -> CUresult {
    run("cuDevicePrimaryCtxReset_v2", || {
        let sim = state::sim()?;
        let d = sim.check_device(dev)?;
        context::primary_reset(&mut sim.lock(), d);
        Ok(())
    })
}

/// `cuGetErrorName`. Unknown codes give `CUDA_ERROR_INVALID_VALUE` and `*p_str = NULL`.
///
/// # Safety
/// `p_str` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuGetErrorName(error: CUresult, p_str: *mut *const c_char) -> CUresult {
    run("cuGetErrorName", || {
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(p_str, "pStr") }?;
        describe(out, errors::name_c(error), error)
    })
}

/// `cuGetErrorString`. Unknown codes give `CUDA_ERROR_INVALID_VALUE` and `*p_str = NULL`.
///
/// # Safety
/// `p_str` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuGetErrorString(error: CUresult, p_str: *mut *const c_char) -> CUresult {
    run("cuGetErrorString", || {
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(p_str, "pStr") }?;
        describe(out, errors::string_c(error), error)
    })
}

fn describe(
    out: Out<*const c_char>,
    text: Option<&'static std::ffi::CStr>,
    code: CUresult,
) -> state::Res<()> {
    match text {
        Some(s) => {
            out.write(s.as_ptr());
            Ok(())
        }
        None => {
            out.write(std::ptr::null());
            err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("unknown CUresult {}", code.0),
            )
        }
    }
}
