//! The implemented functions: one line each, mapping an export's arguments to
//! its typed implementation (`system`, `device`, `live`).

mod device;
mod events;
mod internal;
mod live;
mod system;

pub use device::location;

use crate::edge::to_return;
use crate::generated::types::nvmlReturn_t;

/// Gives each export's `Probe` its inherent `call` (see `exports.rs`).
macro_rules! implement {
    ($( $name:ident ( $($arg:ident),* ) => $body:expr; )*) => {
        $(
            impl crate::exports::$name::Probe {
                /// # Safety
                /// The arguments must be what the NVML API requires of its caller.
                #[allow(non_snake_case, unused_parens, unused_unsafe)]
                pub unsafe fn call(self, ($($arg,)*): crate::exports::$name::Args) -> nvmlReturn_t {
                    // SAFETY: the arguments come straight from the application,
                    // which must pass values valid for this function.
                    to_return(unsafe { $body })
                }
            }
        )*
    };
}

/// Functions whose value is the host NVML's, passed through by the worker
/// (`vgpu_proto::nvml::HOST`), by the shape of their C signature.
macro_rules! host {
    ($( $shape:ident : $($name:ident),+ ; )*) => {
        $( $( host!(@one $shape $name); )+ )*
    };
    (@one u32 $name:ident) => { implement! { $name(d, out) => live::host_u32(stringify!($name), d, out); } };
    (@one u64 $name:ident) => { implement! { $name(d, out) => live::host_u64(stringify!($name), d, out); } };
    (@one pair $name:ident) => { implement! { $name(d, x, y) => live::host_pair(stringify!($name), d, x, y); } };
    (@one struct2 $name:ident) => { implement! { $name(d, out) => live::host_struct2(stringify!($name), d, out); } };
    (@one arg_u32 $name:ident) => { implement! { $name(d, arg, out) => live::host_arg_u32(stringify!($name), d, arg, out); } };
    (@one arg2_u64 $name:ident) => { implement! { $name(d, x, y, out) => live::host_arg2_u64(stringify!($name), d, x, y, out); } };
    (@one arg_string $name:ident) => { implement! { $name(d, arg, buf, len) => live::host_arg_string(stringify!($name), d, arg, buf, len); } };
    (@one structure $name:ident) => { implement! { $name(d, out) => live::host_struct(stringify!($name), d, out); } };
    (@one versioned $name:ident) => { implement! { $name(d, out) => live::host_versioned(stringify!($name), d, out); } };
    (@one string $name:ident) => { implement! { $name(d, buf, len) => live::host_string(stringify!($name), d, buf, len); } };
}

implement! {
    nvmlInit() => system::init(0);
    nvmlInit_v2() => system::init(0);
    nvmlInitWithFlags(flags) => system::init(flags);
    nvmlShutdown() => crate::session::shutdown();
    nvmlInternalGetExportTable(table, id) => internal::get(table, id);
    nvmlEventSetCreate(set) => events::create(set);
    nvmlEventSetFree(set) => events::free(set);
    nvmlEventSetWait(set, data, timeout) => events::wait(set, data, timeout);
    nvmlEventSetWait_v2(set, data, timeout) => events::wait(set, data, timeout);
    nvmlDeviceGetSupportedEventTypes(d, types) => events::supported(d, types);
    nvmlDeviceRegisterEvents(d, types, set) => events::register(d, types, set);
    nvmlSystemGetDriverVersion(buf, len) => system::driver_version(buf, len);
    nvmlSystemGetNVMLVersion(buf, len) => system::nvml_version(buf, len);
    nvmlSystemGetCudaDriverVersion(v) => system::cuda_driver_version(v);
    nvmlSystemGetCudaDriverVersion_v2(v) => system::cuda_driver_version(v);
    nvmlSystemGetProcessName(pid, buf, len) => system::process_name(pid, buf, len);
    nvmlDeviceGetCount(n) => system::device_count(n);
    nvmlDeviceGetCount_v2(n) => system::device_count(n);

    nvmlDeviceGetHandleByIndex(i, d) => device::by_index(i, d);
    nvmlDeviceGetHandleByIndex_v2(i, d) => device::by_index(i, d);
    nvmlDeviceGetHandleByUUID(uuid, d) => device::by_uuid(uuid, d);
    nvmlDeviceGetHandleByPciBusId(bus, d) => device::by_pci_bus_id(bus, d);
    nvmlDeviceGetHandleByPciBusId_v2(bus, d) => device::by_pci_bus_id(bus, d);
    nvmlDeviceGetIndex(d, i) => device::index(d, i);
    nvmlDeviceIsMigDeviceHandle(d, is_mig) => device::is_mig_device_handle(d, is_mig);
    nvmlDeviceGetName(d, buf, len) => device::name(d, buf, len);
    nvmlDeviceGetUUID(d, buf, len) => device::uuid(d, buf, len);
    nvmlDeviceGetPciInfo(d, pci) => device::pci_info_v2(d, pci.cast());
    nvmlDeviceGetPciInfo_v2(d, pci) => device::pci_info_v2(d, pci.cast());
    nvmlDeviceGetPciInfo_v3(d, pci) => device::pci_info(d, pci);
    nvmlDeviceGetCudaComputeCapability(d, major, minor) => device::compute_capability(d, major, minor);

    nvmlDeviceGetFieldValues(d, n, values) => live::field_values(d, n, values);
    nvmlDeviceGetMemoryInfo(d, m) => live::memory_info(d, m);
    nvmlDeviceGetMemoryInfo_v2(d, m) => live::memory_info_v2(d, m);
    nvmlDeviceGetComputeRunningProcesses(d, n, p) => live::compute_processes(d, n, p);
    nvmlDeviceGetComputeRunningProcesses_v2(d, n, p) => live::compute_processes(d, n, p);
    nvmlDeviceGetComputeRunningProcesses_v3(d, n, p) => live::compute_processes(d, n, p);
    nvmlDeviceGetGraphicsRunningProcesses(d, n, p) => live::no_processes(d, n, p);
    nvmlDeviceGetGraphicsRunningProcesses_v2(d, n, p) => live::no_processes(d, n, p);
    nvmlDeviceGetGraphicsRunningProcesses_v3(d, n, p) => live::no_processes(d, n, p);
    nvmlDeviceGetMPSComputeRunningProcesses(d, n, p) => live::no_processes(d, n, p);
    nvmlDeviceGetMPSComputeRunningProcesses_v2(d, n, p) => live::no_processes(d, n, p);
    nvmlDeviceGetMPSComputeRunningProcesses_v3(d, n, p) => live::no_processes(d, n, p);
    nvmlDeviceGetTemperatureV(d, t) => live::temperature_v(d, t);
}

host! {
    u32: nvmlDeviceGetPowerUsage, nvmlDeviceGetEnforcedPowerLimit, nvmlDeviceGetPersistenceMode,
        nvmlDeviceGetComputeMode, nvmlDeviceGetMinorNumber, nvmlDeviceGetBrand,
        nvmlDeviceGetFanSpeed, nvmlDeviceGetPerformanceState, nvmlDeviceGetPowerState,
        nvmlDeviceGetPowerManagementMode, nvmlDeviceGetPowerManagementLimit,
        nvmlDeviceGetPowerManagementDefaultLimit, nvmlDeviceGetDisplayMode,
        nvmlDeviceGetDisplayActive, nvmlDeviceGetCurrPcieLinkGeneration,
        nvmlDeviceGetCurrPcieLinkWidth, nvmlDeviceGetMaxPcieLinkGeneration,
        nvmlDeviceGetMaxPcieLinkWidth, nvmlDeviceGetPcieReplayCounter, nvmlDeviceGetBoardId,
        nvmlDeviceGetMultiGpuBoard, nvmlDeviceGetNumFans, nvmlDeviceGetArchitecture,
        nvmlDeviceGetAccountingMode, nvmlDeviceGetAccountingBufferSize, nvmlDeviceGetModuleId,
        nvmlDeviceGetNumaNodeId, nvmlDeviceGetGpuMaxPcieLinkGeneration, nvmlDeviceGetIrqNum,
        nvmlDeviceGetVirtualizationMode, nvmlDeviceGetRetiredPagesPendingStatus,
        nvmlDeviceGetMemoryBusWidth, nvmlDeviceGetNumGpuCores, nvmlDeviceGetPowerSource,
        nvmlDeviceGetPcieLinkMaxSpeed, nvmlDeviceGetPcieSpeed, nvmlDeviceGetMaxMigDeviceCount;
    u64: nvmlDeviceGetCurrentClocksEventReasons, nvmlDeviceGetCurrentClocksThrottleReasons,
        nvmlDeviceGetTotalEnergyConsumption;
    pair: nvmlDeviceGetPowerManagementLimitConstraints, nvmlDeviceGetEccMode,
        nvmlDeviceGetMigMode, nvmlDeviceGetGpuOperationMode, nvmlDeviceGetEncoderUtilization,
        nvmlDeviceGetDecoderUtilization, nvmlDeviceGetAutoBoostedClocksEnabled,
        nvmlDeviceGetGspFirmwareMode;
    struct2: nvmlDeviceGetUtilizationRates;
    arg_u32: nvmlDeviceGetClockInfo, nvmlDeviceGetMaxClockInfo, nvmlDeviceGetTemperature,
        nvmlDeviceGetTemperatureThreshold, nvmlDeviceGetApplicationsClock,
        nvmlDeviceGetDefaultApplicationsClock, nvmlDeviceGetMaxCustomerBoostClock,
        nvmlDeviceGetFanSpeed_v2, nvmlDeviceGetPcieThroughput;
    arg2_u64: nvmlDeviceGetTotalEccErrors;
    arg_string: nvmlDeviceGetInforomVersion;
    structure: nvmlDeviceGetBAR1MemoryInfo;
    versioned: nvmlDeviceGetMarginTemperature, nvmlDeviceGetAddressingMode;
    string: nvmlDeviceGetSerial, nvmlDeviceGetVbiosVersion, nvmlDeviceGetBoardPartNumber,
        nvmlDeviceGetInforomImageVersion;
}
