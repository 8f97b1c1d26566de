//! `cuInit` and the device snapshot sent in the [`Welcome`].

use std::ffi::{c_char, c_int};

use vgpu_abi::types::{CUdevice_attribute, CUuuid};
use vgpu_proto::{fill_str, DeviceSnapshot, Welcome, ATTR_SLOTS, MAX_DEVICES};

use super::calls::ok as check;
use super::status;
use crate::driver::{entry, Driver, Status};

/// Initialises the driver and describes every device.
pub fn welcome(d: &Driver) -> Welcome {
    let mut w = Welcome {
        init_status: 0,
        driver_version: 0,
        features: 0,
        devices: Vec::new(),
    };
    let mut version: c_int = 0;
    if let Some(f) = d.cuDriverGetVersion {
        // SAFETY: the out-pointer is a live local.
        if unsafe { f(&mut version) } == status::SUCCESS {
            w.driver_version = version;
        }
    }
    match init_and_describe(d) {
        Ok(devices) => w.devices = devices,
        Err(st) => w.init_status = st.0,
    }
    w
}

fn init_and_describe(d: &Driver) -> Result<Vec<DeviceSnapshot>, Status> {
    // SAFETY: cuInit(0) takes no pointers.
    check(unsafe { entry(d.cuInit)?(0) })?;
    let mut count: c_int = 0;
    // SAFETY: the out-pointer is a live local.
    check(unsafe { entry(d.cuDeviceGetCount)?(&mut count) })?;
    let count = usize::try_from(count).unwrap_or(0).min(MAX_DEVICES);
    (0..count).map(|ordinal| describe(d, ordinal)).collect()
}

fn describe(d: &Driver, ordinal: usize) -> Result<DeviceSnapshot, Status> {
    let mut snap = DeviceSnapshot::default();
    let mut dev: c_int = 0;
    let ordinal = c_int::try_from(ordinal).map_err(|_| status::INVALID_VALUE)?;
    // SAFETY: the out-pointer is a live local.
    check(unsafe { entry(d.cuDeviceGet)?(&mut dev, ordinal) })?;
    let mut name = [0 as c_char; 256];
    // SAFETY: the buffer holds 256 bytes and the driver writes at most len bytes.
    check(unsafe { entry(d.cuDeviceGetName)?(name.as_mut_ptr(), 256, dev) })?;
    fill_str(&mut snap.name, &c_text(&name));
    let mut uuid = CUuuid { bytes: [0; 16] };
    // SAFETY: the out-pointer is a live local.
    check(unsafe { entry(d.cuDeviceGetUuid_v2)?(&mut uuid, dev) })?;
    snap.uuid = uuid.bytes.map(|b| b as u8);
    let mut bus = [0 as c_char; 32];
    // SAFETY: the buffer holds 32 bytes and len says so.
    check(unsafe { entry(d.cuDeviceGetPCIBusId)?(bus.as_mut_ptr(), 32, dev) })?;
    fill_str(&mut snap.pci_bus_id, &c_text(&bus));
    let mut total: usize = 0;
    // SAFETY: the out-pointer is a live local.
    check(unsafe { entry(d.cuDeviceTotalMem_v2)?(&mut total, dev) })?;
    snap.total_mem.set(total as u64);
    let get_attr = entry(d.cuDeviceGetAttribute)?;
    for id in 1..ATTR_SLOTS {
        let mut value: c_int = 0;
        let attr = CUdevice_attribute(u32::try_from(id).map_err(|_| status::INVALID_VALUE)?);
        // SAFETY: the out-pointer is a live local.
        if unsafe { get_attr(&mut value, attr, dev) } == status::SUCCESS {
            snap.set_attr(id, value);
        }
    }
    Ok(snap)
}

fn c_text(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
