//! The simulated devices: identity (name, UUID, PCI address), memory size and the full
//! attribute table of an H100-class GPU (compute capability 9.0, 132 SMs).

use crate::cu::{CUdevice_attribute as A, CUresult};
use crate::error::{err, Res};

/// The name every simulated device reports.
pub(crate) const NAME: &str = "vgpu simulated device (not a GPU)";
/// PCI bus number of device 0; device `n` sits on bus `BUS0 + n`.
const BUS0: u32 = 0x5E;

/// Largest persisting-L2 size (`CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE`).
pub(crate) const MAX_PERSISTING_L2: usize = 82 << 19;

/// The device's UUID: `vgpu-sim` in ASCII, zeros, then the ordinal. Fixed per ordinal.
pub(crate) fn uuid(dev: usize) -> [u8; 16] {
    let mut b = *b"vgpu-sim\0\0\0\0\0\0\0\0";
    // dev < MAX_DEVICES (8).
    b[15] = u8::try_from(dev).unwrap_or(u8::MAX);
    b
}

fn bus(dev: usize) -> u32 {
    // dev < MAX_DEVICES (8), so this cannot overflow.
    BUS0 + u32::try_from(dev).unwrap_or(0)
}

/// `cuDeviceGetPCIBusId`: `domain:bus:device.function`, consistent with the PCI
/// attributes.
pub(crate) fn pci_bus_id(dev: usize) -> String {
    format!("0000:{:02X}:00.0", bus(dev))
}

/// A PCI address: (domain, bus, device, function).
pub(crate) type PciAddress = (u32, u32, u32, u32);

/// Device `dev`'s PCI address, as [`pci_bus_id`] writes it.
pub(crate) fn pci_address(dev: usize) -> PciAddress {
    (0, bus(dev), 0, 0)
}

fn hex(s: &str, max_digits: usize) -> Option<u32> {
    if s.is_empty() || s.len() > max_digits || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(s, 16).ok()
}

/// Parses a PCI bus id in the forms `cuDeviceGetByPCIBusId` accepts:
/// `[domain]:[bus]:[device].[function]`, `[domain]:[bus]:[device]` and
/// `[bus]:[device].[function]`, in hexadecimal of either case. A missing domain or
/// function is 0.
pub(crate) fn parse_pci_bus_id(s: &str) -> Option<PciAddress> {
    let parts: Vec<&str> = s.split(':').collect();
    let (domain, bus, rest, needs_function) = match parts.as_slice() {
        [d, b, rest] => (hex(d, 8)?, hex(b, 2)?, *rest, false),
        [b, rest] => (0, hex(b, 2)?, *rest, true),
        _ => return None,
    };
    let (device, function) = match rest.split_once('.') {
        Some((d, f)) => (hex(d, 2)?, hex(f, 1)?),
        None if !needs_function => (hex(rest, 2)?, 0),
        None => return None,
    };
    (device < 32 && function < 8).then_some((domain, bus, device, function))
}

/// `cuDeviceGetAttribute`. Every id in `1..CU_DEVICE_ATTRIBUTE_MAX` answers.
pub(crate) fn attribute(attr: A, dev: usize) -> Res<i32> {
    let v = match attr {
        A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK => 1024,
        A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X => 1024,
        A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y => 1024,
        A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z => 64,
        A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X => i32::MAX,
        A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y => 65535,
        A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z => 65535,
        A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK => 48 << 10,
        A::CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY => 64 << 10,
        A::CU_DEVICE_ATTRIBUTE_WARP_SIZE => 32,
        A::CU_DEVICE_ATTRIBUTE_MAX_PITCH => i32::MAX,
        A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK => 65536,
        A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE => 1_980_000,
        A::CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT => 512,
        A::CU_DEVICE_ATTRIBUTE_GPU_OVERLAP => 1,
        A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT => 132,
        A::CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT => 0,
        A::CU_DEVICE_ATTRIBUTE_INTEGRATED => 0,
        A::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY => 1,
        A::CU_DEVICE_ATTRIBUTE_COMPUTE_MODE => 0,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH => 131_072,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH => 131_072,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT => 65536,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH => 16384,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT => 16384,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH => 16384,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH => 32768,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT => 32768,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS => 2048,
        A::CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT => 512,
        A::CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS => 1,
        A::CU_DEVICE_ATTRIBUTE_ECC_ENABLED => 1,
        A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID => i32::try_from(bus(dev)).unwrap_or(0),
        A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID => 0,
        A::CU_DEVICE_ATTRIBUTE_TCC_DRIVER => 0,
        A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE => 2_619_000,
        A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH => 5120,
        A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE => 50 << 20,
        A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR => 2048,
        A::CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT => 3,
        A::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING => 1,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH => 32768,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS => 2048,
        A::CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER => 1,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH => 32768,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT => 32768,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE => 8192,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE => 8192,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE => 32768,
        A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID => 0,
        A::CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT => 32,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH => 32768,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH => 32768,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS => 2046,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH => 32768,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH => 131_072,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT => 65536,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH => 16384,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT => 16384,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH => 16384,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH => 32768,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS => 2048,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH => 32768,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT => 32768,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS => 2048,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH => 32768,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH => 32768,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS => 2046,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH => 1 << 28,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH => 131_072,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT => 65000,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH => 2_097_120,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH => 32768,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT => 32768,
        A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR => 9,
        A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR => 0,
        A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH => 32768,
        A::CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED => 1,
        A::CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED => 1,
        A::CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED => 1,
        A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR => 233_472,
        A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR => 65536,
        A::CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY => 1,
        A::CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD => 0,
        A::CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID => i32::try_from(dev).unwrap_or(0),
        A::CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED => 0,
        A::CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO => 2,
        A::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS => 0,
        A::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS => 1,
        A::CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED => 1,
        A::CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM => 1,
        A::CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1 => 0,
        A::CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1 => 0,
        A::CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1 => 0,
        A::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH => 1,
        A::CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH => 1,
        A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN => 232_448,
        A::CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES => 0,
        A::CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED => 1,
        A::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES => 0,
        A::CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST => 0,
        A::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED => 1,
        A::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED => 1,
        A::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED => 0,
        A::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED => 0,
        A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR => 32,
        A::CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED => 1,
        A::CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE => {
            i32::try_from(MAX_PERSISTING_L2).unwrap_or(0)
        }
        A::CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE => 134_213_632,
        A::CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED => 1,
        A::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK => 1024,
        A::CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED => 1,
        A::CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED => 1,
        A::CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED => 1,
        A::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED => 1,
        A::CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED => 1,
        // CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST
        A::CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS => 1,
        // CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER
        A::CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING => 100,
        // CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
        A::CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES => 1,
        A::CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH => 1,
        A::CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED => 1,
        A::CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS => 1,
        A::CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR => 1,
        A::CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED => 1,
        A::CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED => 1,
        A::CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT => 4,
        A::CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED => 1,
        A::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED => 0,
        A::CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS => 1,
        // CU_DEVICE_NUMA_CONFIG_NONE, so no NUMA id
        A::CU_DEVICE_ATTRIBUTE_NUMA_CONFIG => 0,
        A::CU_DEVICE_ATTRIBUTE_NUMA_ID => -1,
        A::CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED => 0,
        A::CU_DEVICE_ATTRIBUTE_MPS_ENABLED => 0,
        A::CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID => 0,
        A::CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED => 0,
        // The simulated Snappy engine (`crate::decompress`); an H100/H200 has none (0, 0).
        A::CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK => crate::decompress::SNAPPY as i32,
        A::CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH => crate::decompress::MAXIMUM_LENGTH,
        A::CU_DEVICE_ATTRIBUTE_VULKAN_CIG_SUPPORTED => 0,
        // (PCI device id << 16) | vendor id: 0x2330 (H100 SXM5), 0x10de (NVIDIA)
        A::CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID => 0x2330_10DE,
        A::CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID => 0x16C1_10DE,
        A::CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED => 0,
        A::CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED => 0,
        A::CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED => 0,
        A::CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED => 0,
        A::CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED => 0,
        A::CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED => 0,
        A::CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED => 0,
        _ => {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("device attribute {} is not a CUdevice_attribute", attr.0),
            )
        }
    };
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_attribute_answers_and_unknown_ones_do_not() {
        for id in 1..A::CU_DEVICE_ATTRIBUTE_MAX.0 {
            assert!(attribute(A(id), 0).is_ok(), "attribute {id}");
        }
        for id in [0, A::CU_DEVICE_ATTRIBUTE_MAX.0, 9999] {
            let e = attribute(A(id), 0).expect_err("unknown attribute");
            assert_eq!(e.code, CUresult::CUDA_ERROR_INVALID_VALUE);
        }
    }

    #[test]
    fn pci_bus_ids_parse_in_every_accepted_form() {
        let want = Some((0, 0x5E, 0, 0));
        for s in [
            "0000:5E:00.0",
            "0000:5e:00.0",
            "5e:00.0",
            "00000000:5E:00.0",
            "0:5e:0",
            "0000:5E:00",
        ] {
            assert_eq!(parse_pci_bus_id(s), want, "{s}");
        }
        assert_eq!(parse_pci_bus_id("0001:3b:1f.7"), Some((1, 0x3B, 0x1F, 7)));
        for s in [
            "",
            "5e",
            "5e:00",
            "0000:5E:00.0:1",
            "0000:5G:00.0",
            "0000:5E:20.0",
            "0000:5E:00.8",
            "000000000:5E:00.0",
            " 0000:5E:00.0",
            "0000:5E:00.00",
        ] {
            assert_eq!(parse_pci_bus_id(s), None, "{s:?}");
        }
        assert_eq!(parse_pci_bus_id(&pci_bus_id(3)), Some(pci_address(3)));
    }

    #[test]
    fn identity_is_per_device_and_consistent() {
        assert_ne!(uuid(0), uuid(1));
        assert_eq!(pci_bus_id(0), "0000:5E:00.0");
        assert_eq!(pci_bus_id(1), "0000:5F:00.0");
        let bus = attribute(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 1).expect("bus");
        assert_eq!(format!("{bus:02X}"), "5F");
    }
}
