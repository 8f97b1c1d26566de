//! What an `NvmlQuery` asks (`docs/protocol.md`): the `what` ids of its
//! values, the shapes of the host NVML functions it passes through, and the
//! layout of the process list.
//!
//! `libvgpu-nvml.so` answers what it can from the session's [`Welcome`]
//! (count, names, UUIDs, bus ids, compute capability, CUDA version) and asks
//! the worker for the rest with one `NvmlQuery` each.
//!
//! [`Welcome`]: crate::Welcome

use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// The host's driver version string (`nvmlSystemGetDriverVersion`); a system
/// value: `device` is ignored. The blob holds the string, without its NUL.
pub const DRIVER_VERSION: u32 = 1;
/// The host's NVML version string (`nvmlSystemGetNVMLVersion`); a system value.
pub const NVML_VERSION: u32 = 2;
/// The tenant's memory on the device: `a` is the device memory held by the
/// sessions of the caller's uid, `b` the device's total as the host's NVML
/// counts it (0 without a host NVML), in bytes.
pub const MEMORY: u32 = 10;
/// The tenant's processes on the device: the blob holds one [`Process`] per
/// live session of the caller's uid that runs CUDA (the asking session is
/// not one).
pub const PROCESSES: u32 = 11;
/// The device's PCI ids: `a` is `pciDeviceId` (device id << 16 | vendor
/// id), `b` is `pciSubSystemId` (subsystem device id << 16 | subsystem
/// vendor id), as NVML packs them.
pub const PCI_IDS: u32 = 12;
/// The host NVML's field values (`nvmlDeviceGetFieldValues`): the request's
/// blob holds the caller's `nvmlFieldValue_t`s ([`FIELD_VALUE_SIZE`] bytes
/// each, at most [`MAX_FIELD_VALUES`]), the reply's blob the same entries as
/// the host's NVML filled them.
pub const FIELD_VALUES: u32 = 13;
/// Bytes of one `nvmlFieldValue_t`.
pub const FIELD_VALUE_SIZE: usize = 40;
/// The most field values one query carries; callers split longer lists.
pub const MAX_FIELD_VALUES: usize = 256;
/// The first id of the host pass-through values: `HOST_BASE + i` calls
/// [`HOST`]`[i]` of the host's NVML on the device.
pub const HOST_BASE: u32 = 100;

/// The C signature of a host NVML function the worker passes through; every
/// one takes the device handle first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `(device, unsigned int *)`: the value is `a`.
    U32,
    /// `(device, unsigned long long *)`: the value is `a`.
    U64,
    /// `(device, unsigned int *, unsigned int *)`: the values are `a` and `b`.
    Pair,
    /// `(device, struct { unsigned int x, y; } *)`: `a` and `b`.
    Struct2,
    /// `(device, unsigned int arg, unsigned int *)`: the value is `a`.
    ArgU32,
    /// `(device, char *, unsigned int length)`: the blob holds the string.
    Str,
    /// `(device, unsigned int arg, char *, unsigned int length)`: the blob
    /// holds the string.
    ArgStr,
    /// `(device, T *)` for a structure `T` of this many bytes (at most
    /// [`MAX_STRING`]) with no version field: the blob holds its bytes.
    Struct(usize),
    /// `(device, T *)` for a versioned structure `T` of `.0` bytes whose
    /// first field, the version, must say `NVML_STRUCT_VERSION(T, .1)`: the
    /// worker sets it; the blob holds the bytes.
    Versioned(usize, u32),
    /// `(device, unsigned int x, unsigned int y, unsigned long long *)`: the
    /// request's `arg` packs `x << 16 | y` (both small enums); the value is `a`.
    Arg2U64,
}

/// The host NVML functions the worker passes through, by `what - HOST_BASE`.
/// Append only: the index is on the wire.
pub const HOST: &[(&str, Shape)] = &[
    ("nvmlDeviceGetUtilizationRates", Shape::Struct2),
    ("nvmlDeviceGetClockInfo", Shape::ArgU32),
    ("nvmlDeviceGetMaxClockInfo", Shape::ArgU32),
    ("nvmlDeviceGetTemperature", Shape::ArgU32),
    ("nvmlDeviceGetPowerUsage", Shape::U32),
    ("nvmlDeviceGetEnforcedPowerLimit", Shape::U32),
    ("nvmlDeviceGetPersistenceMode", Shape::U32),
    ("nvmlDeviceGetComputeMode", Shape::U32),
    ("nvmlDeviceGetMinorNumber", Shape::U32),
    ("nvmlDeviceGetBrand", Shape::U32),
    ("nvmlDeviceGetSerial", Shape::Str),
    ("nvmlDeviceGetFanSpeed", Shape::U32),
    ("nvmlDeviceGetPerformanceState", Shape::U32),
    ("nvmlDeviceGetPowerState", Shape::U32),
    ("nvmlDeviceGetPowerManagementMode", Shape::U32),
    ("nvmlDeviceGetPowerManagementLimit", Shape::U32),
    ("nvmlDeviceGetPowerManagementDefaultLimit", Shape::U32),
    ("nvmlDeviceGetPowerManagementLimitConstraints", Shape::Pair),
    ("nvmlDeviceGetDisplayMode", Shape::U32),
    ("nvmlDeviceGetDisplayActive", Shape::U32),
    ("nvmlDeviceGetEccMode", Shape::Pair),
    ("nvmlDeviceGetMigMode", Shape::Pair),
    ("nvmlDeviceGetGpuOperationMode", Shape::Pair),
    ("nvmlDeviceGetCurrentClocksEventReasons", Shape::U64),
    ("nvmlDeviceGetCurrentClocksThrottleReasons", Shape::U64),
    ("nvmlDeviceGetTotalEnergyConsumption", Shape::U64),
    ("nvmlDeviceGetTemperatureThreshold", Shape::ArgU32),
    ("nvmlDeviceGetApplicationsClock", Shape::ArgU32),
    ("nvmlDeviceGetDefaultApplicationsClock", Shape::ArgU32),
    ("nvmlDeviceGetMaxCustomerBoostClock", Shape::ArgU32),
    ("nvmlDeviceGetFanSpeed_v2", Shape::ArgU32),
    ("nvmlDeviceGetPcieThroughput", Shape::ArgU32),
    ("nvmlDeviceGetCurrPcieLinkGeneration", Shape::U32),
    ("nvmlDeviceGetCurrPcieLinkWidth", Shape::U32),
    ("nvmlDeviceGetMaxPcieLinkGeneration", Shape::U32),
    ("nvmlDeviceGetMaxPcieLinkWidth", Shape::U32),
    ("nvmlDeviceGetPcieReplayCounter", Shape::U32),
    ("nvmlDeviceGetEncoderUtilization", Shape::Pair),
    ("nvmlDeviceGetDecoderUtilization", Shape::Pair),
    ("nvmlDeviceGetVbiosVersion", Shape::Str),
    ("nvmlDeviceGetBoardPartNumber", Shape::Str),
    ("nvmlDeviceGetInforomImageVersion", Shape::Str),
    ("nvmlDeviceGetBoardId", Shape::U32),
    ("nvmlDeviceGetMultiGpuBoard", Shape::U32),
    ("nvmlDeviceGetNumFans", Shape::U32),
    ("nvmlDeviceGetTotalEccErrors", Shape::Arg2U64),
    ("nvmlDeviceGetArchitecture", Shape::U32),
    ("nvmlDeviceGetAccountingMode", Shape::U32),
    ("nvmlDeviceGetAccountingBufferSize", Shape::U32),
    ("nvmlDeviceGetModuleId", Shape::U32),
    ("nvmlDeviceGetNumaNodeId", Shape::U32),
    ("nvmlDeviceGetGpuMaxPcieLinkGeneration", Shape::U32),
    ("nvmlDeviceGetIrqNum", Shape::U32),
    ("nvmlDeviceGetVirtualizationMode", Shape::U32),
    ("nvmlDeviceGetRetiredPagesPendingStatus", Shape::U32),
    ("nvmlDeviceGetMemoryBusWidth", Shape::U32),
    ("nvmlDeviceGetNumGpuCores", Shape::U32),
    ("nvmlDeviceGetPowerSource", Shape::U32),
    ("nvmlDeviceGetPcieLinkMaxSpeed", Shape::U32),
    ("nvmlDeviceGetPcieSpeed", Shape::U32),
    ("nvmlDeviceGetMaxMigDeviceCount", Shape::U32),
    ("nvmlDeviceGetAutoBoostedClocksEnabled", Shape::Pair),
    ("nvmlDeviceGetGspFirmwareMode", Shape::Pair),
    ("nvmlDeviceGetInforomVersion", Shape::ArgStr),
    // nvmlBAR1Memory_t: total, free, used (u64 each).
    ("nvmlDeviceGetBAR1MemoryInfo", Shape::Struct(24)),
    // nvmlMarginTemperature_v1_t: version, marginTemperature.
    ("nvmlDeviceGetMarginTemperature", Shape::Versioned(8, 1)),
    // nvmlDeviceAddressingMode_v1_t: version, value.
    ("nvmlDeviceGetAddressingMode", Shape::Versioned(8, 1)),
];

/// `NVML_STRUCT_VERSION`: the version field of a `size`-byte structure of
/// version `version`.
#[allow(clippy::cast_possible_truncation)] // structure sizes are far below 2^24
pub const fn struct_version(size: usize, version: u32) -> u32 {
    (size as u32) | (version << 24)
}

/// The `what` id of host function `name`, if it is passed through.
pub fn host_what(name: &str) -> Option<u32> {
    HOST.iter()
        .position(|(n, _)| *n == name)
        .and_then(|i| u32::try_from(i).ok())
        .map(|i| HOST_BASE + i)
}

/// The host function of `what`, if it names one.
pub fn host_entry(what: u32) -> Option<(&'static str, Shape)> {
    let i = usize::try_from(what.checked_sub(HOST_BASE)?).ok()?;
    HOST.get(i).copied()
}

/// NVML return codes the worker answers with itself (`nvmlReturn_t`).
pub mod status {
    pub const SUCCESS: u32 = 0;
    pub const INVALID_ARGUMENT: u32 = 2;
    pub const NOT_SUPPORTED: u32 = 3;
    pub const NOT_FOUND: u32 = 6;
    pub const UNKNOWN: u32 = 999;
}

/// The symbol `libvgpu-nvml.so` exports so that the worker never loads it as
/// the host's NVML.
pub const NVML_MARKER: &str = "vgpu_nvml_marker";

/// NVML's form of a device UUID: `GPU-` and the 16 bytes in hex, grouped
/// 8-4-4-4-12.
pub fn uuid_string(bytes: &[u8; 16]) -> String {
    let mut s = String::from("GPU-");
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// The longest string a string value's blob carries.
pub const MAX_STRING: u32 = 256;

/// One process of a [`PROCESSES`] reply.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Unaligned,
)]
#[repr(C)]
pub struct Process {
    /// The client's process id.
    pub pid: U32,
    /// Zero.
    pub reserved: U32,
    /// The device memory its session holds, in bytes.
    pub memory: U64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_ids_round_trip() {
        for (i, (name, shape)) in HOST.iter().enumerate() {
            let what = host_what(name).expect("listed");
            assert_eq!(what, HOST_BASE + u32::try_from(i).expect("small"));
            assert_eq!(host_entry(what), Some((*name, *shape)));
        }
        assert_eq!(host_what("nvmlDeviceGetName"), None);
        assert_eq!(host_entry(MEMORY), None);
        assert_eq!(host_entry(HOST_BASE + 10_000), None);
        assert_eq!(core::mem::size_of::<Process>(), 16);
    }

    #[test]
    fn uuid_form() {
        let b: [u8; 16] = core::array::from_fn(|i| u8::try_from(i * 17).expect("small"));
        assert_eq!(uuid_string(&b), "GPU-00112233-4455-6677-8899-aabbccddeeff");
    }

    #[test]
    fn host_names_are_unique() {
        let mut names: Vec<&str> = HOST.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), HOST.len());
    }
}
