//! Devices: count, identity, memory size, attributes and PCI addresses.

use std::ffi::{c_char, c_int, c_uint, CStr};

use crate::context;
use crate::cu::{
    CUarray_format, CUatomicOperation, CUdevice, CUdevice_attribute as A, CUdevprop,
    CUexecAffinityType, CUflushGPUDirectRDMAWritesScope as Scope,
    CUflushGPUDirectRDMAWritesTarget as Target, CUresult, CUuuid,
};
use crate::device;
use crate::error::{err, Res};
use crate::ffi::{run, write_c_str, Out};
use crate::state;

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
    attrib: A,
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

/// `cuDeviceGetByPCIBusId`: the visible device at the given PCI address. Accepts
/// `domain:bus:device.function`, `domain:bus:device` and `bus:device.function` in
/// hexadecimal of either case; a malformed id gives `CUDA_ERROR_INVALID_VALUE`, an
/// address no visible device has `CUDA_ERROR_INVALID_DEVICE`.
pub(crate) fn device_get_by_pci_bus_id(dev: Out<CUdevice>, pci_bus_id: &CStr) -> Res<()> {
    let sim = state::sim()?;
    let Some(addr) = pci_bus_id.to_str().ok().and_then(device::parse_pci_bus_id) else {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{pci_bus_id:?} is not a PCI bus id"),
        );
    };
    let found = (0..sim.device_count())
        .find(|&d| device::pci_address(sim.cfg.physical(d as usize)) == addr);
    match found {
        Some(d) => {
            dev.write(d);
            Ok(())
        }
        None => err(
            CUresult::CUDA_ERROR_INVALID_DEVICE,
            format!("no visible device at PCI address {pci_bus_id:?}"),
        ),
    }
}

/// `cuDeviceGetExecAffinitySupport`: 0 for `CU_EXEC_AFFINITY_TYPE_SM_COUNT`, because
/// SM-limited contexts need MPS, which the simulated device does not run
/// (`CU_DEVICE_ATTRIBUTE_MPS_ENABLED` is 0).
pub(crate) fn device_get_exec_affinity_support(
    pi: Out<c_int>,
    type_: CUexecAffinityType,
    dev: CUdevice,
) -> Res<()> {
    state::sim()?.check_device(dev)?;
    if type_ != CUexecAffinityType::CU_EXEC_AFFINITY_TYPE_SM_COUNT {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{} is not a CUexecAffinityType", type_.0),
        );
    }
    pi.write(0);
    Ok(())
}

/// `cuDeviceGetHostAtomicCapabilities`: the simulated link to the host has no native
/// atomics (`CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED` is 0), so every valid
/// operation's capability mask is 0. NULL arrays, a zero count or an invalid operation
/// give `CUDA_ERROR_INVALID_VALUE`, and nothing is written.
///
/// # Safety
/// `capabilities` and `operations` must each be NULL or valid for `count` elements.
pub(crate) unsafe fn device_get_host_atomic_capabilities(
    capabilities: *mut c_uint,
    operations: *const CUatomicOperation,
    count: c_uint,
    dev: CUdevice,
) -> Res<()> {
    state::sim()?.check_device(dev)?;
    if capabilities.is_null() || operations.is_null() || count == 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "NULL capabilities or operations, or a count of 0",
        );
    }
    let n = count as usize;
    for i in 0..n {
        // SAFETY: `i < count` elements are readable by this function's contract.
        let op = unsafe { operations.add(i).read_unaligned() };
        if op.0 >= CUatomicOperation::CU_ATOMIC_OPERATION_MAX.0 {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("operation {i} ({}) is not a CUatomicOperation", op.0),
            );
        }
    }
    for i in 0..n {
        // SAFETY: `i < count` elements are writable by this function's contract.
        unsafe { capabilities.add(i).write_unaligned(0) };
    }
    Ok(())
}

/// `cuDeviceGetLuid`: LUIDs exist only on Windows; the Linux driver answers
/// `CUDA_ERROR_NOT_SUPPORTED` for a valid call and writes nothing.
///
/// # Safety
/// `luid` must be NULL or valid for 8 bytes of writes (none are written).
pub(crate) unsafe fn device_get_luid(
    luid: *mut c_char,
    _device_node_mask: Out<c_uint>,
    dev: CUdevice,
) -> Res<()> {
    state::sim()?.check_device(dev)?;
    if luid.is_null() {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "luid is NULL");
    }
    err(
        CUresult::CUDA_ERROR_NOT_SUPPORTED,
        "device LUIDs exist only on Windows",
    )
}

/// `cuDeviceGetProperties` (deprecated): the legacy property block, from the attribute
/// table.
pub(crate) fn device_get_properties(prop: Out<CUdevprop>, dev: CUdevice) -> Res<()> {
    let sim = state::sim()?;
    let d = sim.cfg.physical(sim.check_device(dev)?);
    let a = |attr: A| device::attribute(attr, d);
    prop.write(CUdevprop {
        maxThreadsPerBlock: a(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        maxThreadsDim: [
            a(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
            a(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
            a(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
        ],
        maxGridSize: [
            a(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
            a(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
            a(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
        ],
        sharedMemPerBlock: a(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
        totalConstantMemory: a(A::CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY)?,
        SIMDWidth: a(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
        memPitch: a(A::CU_DEVICE_ATTRIBUTE_MAX_PITCH)?,
        regsPerBlock: a(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?,
        clockRate: a(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?,
        textureAlign: a(A::CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT)?,
    });
    Ok(())
}

/// `cuDeviceGetTexture1DLinearMaxWidth`: 2^28 elements for every valid element type, the
/// device's `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH`. The element must be
/// 1, 2 or 4 channels of an 8/16/32-bit integer, half or float format.
pub(crate) fn device_get_texture1d_linear_max_width(
    max_width_in_elements: Out<usize>,
    format: CUarray_format,
    num_channels: c_uint,
    dev: CUdevice,
) -> Res<()> {
    let sim = state::sim()?;
    let d = sim.cfg.physical(sim.check_device(dev)?);
    // CU_AD_FORMAT_{UNSIGNED,SIGNED}_INT{8,16,32}, HALF, FLOAT
    if !matches!(format.0, 1..=3 | 8..=10 | 16 | 32) || !matches!(num_channels, 1 | 2 | 4) {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!(
                "format {} with {num_channels} channels is not a linear texture element",
                format.0
            ),
        );
    }
    let w = device::attribute(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH, d)?;
    max_width_in_elements.write(usize::try_from(w).unwrap_or(0));
    Ok(())
}

/// `cuFlushGPUDirectRDMAWrites`: nothing writes into the simulated device from outside,
/// so the flush has nothing to wait for. The target must be the current context (which
/// must exist) and the scope `TO_OWNER` or `TO_ALL_DEVICES`.
pub(crate) fn flush_gpu_direct_rdma_writes(target: Target, scope: Scope) -> Res<()> {
    let sim = state::sim()?;
    if target != Target::CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX
        || !matches!(
            scope,
            Scope::CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER
                | Scope::CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES
        )
    {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!(
                "flush target {} / scope {} are not valid",
                target.0, scope.0
            ),
        );
    }
    context::current(&sim.lock()).map(|_| ())
}
