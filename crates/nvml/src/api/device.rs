//! Device handles and what the handshake's snapshot answers: names, UUIDs,
//! PCI info, compute capability.
//!
//! A handle is the address of one byte of [`SLOTS`], by device index: never
//! dereferenced, looked up by address, so a stale or forged handle is
//! `NVML_ERROR_INVALID_ARGUMENT`, never a fault.

use std::ffi::{c_char, c_int, c_uint, CStr};
use std::sync::Arc;

use vgpu_abi::types::CUdevice_attribute as A;
use vgpu_proto::{nvml as q, DeviceSnapshot, MAX_DEVICES};

use crate::edge::{non_null, write_out, write_str, NvmlError, Res};
use crate::generated::types::{nvmlDevice_t, nvmlPciInfo_t};
use crate::session::{self, Session};

/// One byte per possible device; handles point into it.
static SLOTS: [u8; MAX_DEVICES] = [0; MAX_DEVICES];

/// The handle of device `i`.
fn handle(i: usize) -> nvmlDevice_t {
    SLOTS.as_ptr().wrapping_add(i).cast_mut().cast()
}

/// The session and the index of the device behind `d`: `UNINITIALIZED`
/// before `nvmlInit`, `INVALID_ARGUMENT` for a handle that names no device,
/// `GPU_IS_LOST` once the mediator has gone.
pub fn lookup(d: nvmlDevice_t) -> Res<(Arc<Session>, usize)> {
    let s = session::current()?;
    let i = (d as usize)
        .checked_sub(SLOTS.as_ptr() as usize)
        .filter(|&i| i < s.devices.len())
        .ok_or(NvmlError::INVALID_ARGUMENT)?;
    s.alive()?;
    Ok((s, i))
}

/// `nvmlDeviceGetHandleByIndex` (and `_v2`).
///
/// # Safety
/// `d` must be NULL or valid for a write.
pub unsafe fn by_index(i: c_uint, d: *mut nvmlDevice_t) -> Res<()> {
    let s = session::current()?;
    non_null(d)?;
    let i = usize::try_from(i)
        .ok()
        .filter(|&i| i < s.devices.len())
        .ok_or(NvmlError::INVALID_ARGUMENT)?;
    s.alive()?;
    // SAFETY: the caller's contract.
    unsafe { write_out(d, handle(i)) }
}

/// Finds the device for which `matches` holds and writes its handle;
/// `matches` answers `None` for a key that names no device at all
/// (`NVML_ERROR_INVALID_ARGUMENT`).
///
/// # Safety
/// `key` must be NULL or a NUL-terminated string; `d` NULL or valid for a write.
unsafe fn find(
    key: *const c_char,
    d: *mut nvmlDevice_t,
    matches: impl Fn(&str, &DeviceSnapshot) -> Option<bool>,
) -> Res<()> {
    let s = session::current()?;
    non_null(key)?;
    non_null(d)?;
    // SAFETY: a non-NULL NUL-terminated string by the caller's contract.
    let key = unsafe { CStr::from_ptr(key) }
        .to_str()
        .map_err(|_| NvmlError::INVALID_ARGUMENT)?;
    let mut found = None;
    for (i, dev) in s.devices.iter().enumerate() {
        if matches(key, dev).ok_or(NvmlError::INVALID_ARGUMENT)? {
            found = Some(i);
            break;
        }
    }
    let i = found.ok_or(NvmlError::NOT_FOUND)?;
    s.alive()?;
    // SAFETY: the caller's contract.
    unsafe { write_out(d, handle(i)) }
}

/// `nvmlDeviceGetHandleByUUID`.
///
/// # Safety
/// As [`find`].
pub unsafe fn by_uuid(uuid: *const c_char, d: *mut nvmlDevice_t) -> Res<()> {
    // SAFETY: the caller's contract.
    unsafe {
        find(uuid, d, |key, dev| {
            Some(key.eq_ignore_ascii_case(&q::uuid_string(&dev.uuid)))
        })
    }
}

/// `nvmlDeviceGetHandleByPciBusId` (and `_v2`): any of NVML's forms,
/// `domain:bus:device.function` or `bus:device.function`, in hex.
///
/// # Safety
/// As [`find`].
pub unsafe fn by_pci_bus_id(bus_id: *const c_char, d: *mut nvmlDevice_t) -> Res<()> {
    // SAFETY: the caller's contract.
    unsafe {
        find(bus_id, d, |key, dev| {
            parse_bus_id(key).map(|at| at == (location(dev), 0))
        })
    }
}

/// `((domain, bus, device), function)` of a bus id string; `None` for a
/// string that is not one.
fn parse_bus_id(text: &str) -> Option<((u32, u32, u32), u32)> {
    let (head, function) = text.trim().split_once('.')?;
    let parts: Vec<&str> = head.split(':').collect();
    let hex = |s: &str| u32::from_str_radix(s, 16).ok();
    let at = match parts.as_slice() {
        [domain, bus, device] => (hex(domain)?, hex(bus)?, hex(device)?),
        [bus, device] => (0, hex(bus)?, hex(device)?),
        _ => return None,
    };
    Some((at, hex(function)?))
}

/// `(domain, bus, device)` of a device, from its attributes or else its bus
/// id string.
pub fn location(dev: &DeviceSnapshot) -> (u32, u32, u32) {
    let attr = |a: A| {
        usize::try_from(a.0)
            .ok()
            .and_then(|id| dev.attr(id))
            .and_then(|v| u32::try_from(v).ok())
    };
    match (
        attr(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
        attr(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
        attr(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID),
    ) {
        (Some(domain), Some(bus), Some(device)) => (domain, bus, device),
        _ => parse_bus_id(dev.pci_bus_id_str()).map_or_else(Default::default, |(at, _)| at),
    }
}

/// `nvmlDeviceGetIndex`.
///
/// # Safety
/// `i` must be NULL or valid for a write.
pub unsafe fn index(d: nvmlDevice_t, i: *mut c_uint) -> Res<()> {
    let (_, index) = lookup(d)?;
    // SAFETY: the caller's contract.
    unsafe { write_out(i, c_uint::try_from(index).unwrap_or(c_uint::MAX)) }
}

/// `nvmlDeviceIsMigDeviceHandle`: 0, as the real library answers for a
/// whole GPU's handle (vgpu hands out no MIG device handles). `nvidia-smi`
/// asks it of every device before it prints the process table, and lists
/// no process when the call fails.
///
/// # Safety
/// `is_mig` must be NULL or valid for a write.
pub unsafe fn is_mig_device_handle(d: nvmlDevice_t, is_mig: *mut c_uint) -> Res<()> {
    lookup(d)?;
    // SAFETY: the caller's contract.
    unsafe { write_out(is_mig, 0) }
}

/// `nvmlDeviceGetName`: the driver's device name.
///
/// # Safety
/// `buf` must be NULL or valid for `len` bytes.
pub unsafe fn name(d: nvmlDevice_t, buf: *mut c_char, len: c_uint) -> Res<()> {
    let (s, i) = lookup(d)?;
    // SAFETY: the caller's contract.
    unsafe { write_str(buf, len, s.devices[i].name_str().as_bytes()) }
}

/// `nvmlDeviceGetUUID`: `GPU-` and the driver's UUID.
///
/// # Safety
/// As [`name`].
pub unsafe fn uuid(d: nvmlDevice_t, buf: *mut c_char, len: c_uint) -> Res<()> {
    let (s, i) = lookup(d)?;
    let text = q::uuid_string(&s.devices[i].uuid);
    // SAFETY: the caller's contract.
    unsafe { write_str(buf, len, text.as_bytes()) }
}

/// `nvmlDeviceGetPciInfo` and `_v2` fill the structure those versions were
/// built against: 52 bytes, a 16-byte bus id, the ids, then 16 reserved
/// bytes. (`_v3`'s structure is 68 bytes: it adds the 32-byte bus id, so
/// writing it here would run 16 bytes past an old caller's.)
#[repr(C)]
#[derive(Default)]
pub struct PciInfoV2 {
    bus_id: [c_char; 16],
    domain: c_uint,
    bus: c_uint,
    device: c_uint,
    pci_device_id: c_uint,
    pci_subsystem_id: c_uint,
    reserved: [c_uint; 4],
}

const _: () = assert!(std::mem::size_of::<PciInfoV2>() == 52);

/// `nvmlDeviceGetPciInfo` and `nvmlDeviceGetPciInfo_v2`.
///
/// # Safety
/// `pci` must be NULL or valid for a write of [`PciInfoV2`].
pub unsafe fn pci_info_v2(d: nvmlDevice_t, pci: *mut PciInfoV2) -> Res<()> {
    let mut current = nvmlPciInfo_t::default();
    // SAFETY: a local of the current layout.
    unsafe { pci_info(d, &mut current) }?;
    non_null(pci)?;
    let old = PciInfoV2 {
        bus_id: current.busIdLegacy,
        domain: current.domain,
        bus: current.bus,
        device: current.device,
        pci_device_id: current.pciDeviceId,
        pci_subsystem_id: current.pciSubSystemId,
        reserved: [0; 4],
    };
    // SAFETY: the caller's contract.
    unsafe { write_out(pci, old) }
}

/// `nvmlDeviceGetPciInfo_v3`. The ids come from the host's sysfs; where it
/// has none (a simulated device) they are 0.
///
/// # Safety
/// `pci` must be NULL or valid for a write.
pub unsafe fn pci_info(d: nvmlDevice_t, pci: *mut nvmlPciInfo_t) -> Res<()> {
    let (s, i) = lookup(d)?;
    non_null(pci)?;
    let (domain, bus, device) = location(&s.devices[i]);
    let (ids, subsystem) = match s.query(i, q::PCI_IDS, 0) {
        Ok(answer) => (answer.a, answer.b),
        Err(e) if e == NvmlError::NOT_SUPPORTED => (0, 0),
        Err(e) => return Err(e),
    };
    let mut info = nvmlPciInfo_t {
        domain,
        bus,
        device,
        pciDeviceId: c_uint::try_from(ids).unwrap_or(0),
        pciSubSystemId: c_uint::try_from(subsystem).unwrap_or(0),
        ..Default::default()
    };
    fill(
        &mut info.busId,
        &format!("{domain:08X}:{bus:02X}:{device:02X}.0"),
    );
    fill(
        &mut info.busIdLegacy,
        &format!("{domain:04X}:{bus:02X}:{device:02X}.0"),
    );
    // SAFETY: the caller's contract.
    unsafe { write_out(pci, info) }
}

/// Copies `text` into a fixed C string field, NUL-terminated, cut to fit.
fn fill(field: &mut [c_char], text: &str) {
    let n = text.len().min(field.len().saturating_sub(1));
    for (dst, &b) in field.iter_mut().zip(&text.as_bytes()[..n]) {
        *dst = b as c_char;
    }
    if let Some(end) = field.get_mut(n) {
        *end = 0;
    }
}

/// `nvmlDeviceGetCudaComputeCapability`.
///
/// # Safety
/// `major` and `minor` must be NULL or valid for a write.
pub unsafe fn compute_capability(d: nvmlDevice_t, major: *mut c_int, minor: *mut c_int) -> Res<()> {
    let (s, i) = lookup(d)?;
    non_null(major)?;
    non_null(minor)?;
    let dev = &s.devices[i];
    let attr = |a: A| {
        usize::try_from(a.0)
            .ok()
            .and_then(|id| dev.attr(id))
            .ok_or(NvmlError::NOT_SUPPORTED)
    };
    let (ma, mi) = (
        attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
        attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
    );
    // SAFETY: the caller's contract.
    unsafe {
        write_out(major, ma)?;
        write_out(minor, mi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_ids() {
        assert_eq!(parse_bus_id("00000000:5E:00.0"), Some(((0, 0x5e, 0), 0)));
        assert_eq!(parse_bus_id("0001:3b:1f.0"), Some(((1, 0x3b, 0x1f), 0)));
        assert_eq!(parse_bus_id("3B:00.0"), Some(((0, 0x3b, 0), 0)));
        assert_eq!(parse_bus_id("0000:3B:00.1"), Some(((0, 0x3b, 0), 1)));
        assert_eq!(parse_bus_id("0000:3B:00.x"), None);
        assert_eq!(parse_bus_id("nonsense"), None);
        assert_eq!(parse_bus_id("0:zz:00.0"), None);
    }

    #[test]
    fn fields_are_cut_and_terminated() {
        let mut f = [1 as c_char; 6];
        fill(&mut f, "0000:5E:00.0");
        assert_eq!(f.map(|c| c as u8), *b"0000:\0");
        let mut f = [1 as c_char; 16];
        fill(&mut f, "ab");
        assert_eq!(
            &f[..3].iter().map(|&c| c as u8).collect::<Vec<_>>(),
            b"ab\0"
        );
    }

    #[test]
    fn handles_are_one_byte_apart() {
        assert_eq!(handle(3) as usize - handle(0) as usize, 3);
    }
}
