//! The one way the worker reaches a driver: a table of function pointers
//! resolved from a library loaded by absolute path.
//!
//! The real `libcuda.so.1` and the simulated `libvgpu-sim.so` go through the
//! same code. A library that exports the client's marker symbol is refused, so
//! the worker can never load vgpu's own client library.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::path::{Path, PathBuf};

use crate::MediatorError;

/// `CUresult` as it crosses the C ABI.
pub type Status = u32;
/// Any driver handle (`CUcontext`, `CUstream`, ...), opaque to the worker.
pub type Handle = *mut c_void;
/// `CUdeviceptr`.
pub type DevPtr = u64;

/// `CUlaunchConfig`, as the driver reads it.
#[repr(C)]
#[derive(Debug)]
pub struct LaunchConfig {
    pub grid: [c_uint; 3],
    pub block: [c_uint; 3],
    pub shared_mem_bytes: c_uint,
    pub stream: Handle,
    pub attrs: *mut u8,
    pub num_attrs: c_uint,
}

/// `CUDA_MEMCPY2D`, as the driver reads it.
#[repr(C)]
#[derive(Debug)]
pub struct Memcpy2D {
    pub src_x_in_bytes: usize,
    pub src_y: usize,
    pub src_memory_type: c_uint,
    pub src_host: *const c_void,
    pub src_device: DevPtr,
    pub src_array: Handle,
    pub src_pitch: usize,
    pub dst_x_in_bytes: usize,
    pub dst_y: usize,
    pub dst_memory_type: c_uint,
    pub dst_host: *mut c_void,
    pub dst_device: DevPtr,
    pub dst_array: Handle,
    pub dst_pitch: usize,
    pub width_in_bytes: usize,
    pub height: usize,
}

/// Size of one `CUlaunchAttribute`: id, padding, and a 64-byte value union.
pub const LAUNCH_ATTRIBUTE_SIZE: usize = 72;

/// The symbol every build of the vgpu client exports and no driver does.
pub const CLIENT_MARKER: &str = "vgpu_shim_marker";

/// `CUDA_ERROR_NOT_SUPPORTED`, for entry points the loaded library lacks.
pub const NOT_SUPPORTED: Status = 801;

macro_rules! driver_table {
    ($( $field:ident = $sym:literal : fn($($arg:ty),* $(,)?); )*) => {
        /// Entry points resolved from the loaded driver; `None` where it lacks one.
        #[allow(clippy::type_complexity)]
        pub struct Driver {
            path: PathBuf,
            _lib: libloading::Library,
            $( pub $field: Option<unsafe extern "C" fn($($arg),*) -> Status>, )*
        }

        impl Driver {
            fn resolve(path: PathBuf, lib: libloading::Library) -> Driver {
                Driver {
                    $( $field: {
                        // SAFETY: the symbol is looked up by its exported C name and
                        // the pointer type is the CUDA Driver API prototype of that name.
                        unsafe { lib.get::<unsafe extern "C" fn($($arg),*) -> Status>(concat!($sym, "\0").as_bytes()) }
                            .ok()
                            .map(|s| *s)
                    }, )*
                    path,
                    _lib: lib,
                }
            }
        }
    };
}

driver_table! {
    init = "cuInit": fn(c_uint);
    driver_get_version = "cuDriverGetVersion": fn(*mut c_int);
    device_get_count = "cuDeviceGetCount": fn(*mut c_int);
    device_get = "cuDeviceGet": fn(*mut c_int, c_int);
    device_get_name = "cuDeviceGetName": fn(*mut c_char, c_int, c_int);
    device_get_uuid = "cuDeviceGetUuid_v2": fn(*mut [u8; 16], c_int);
    device_get_pci_bus_id = "cuDeviceGetPCIBusId": fn(*mut c_char, c_int, c_int);
    device_total_mem = "cuDeviceTotalMem_v2": fn(*mut usize, c_int);
    device_get_attribute = "cuDeviceGetAttribute": fn(*mut c_int, c_int, c_int);

    primary_ctx_retain = "cuDevicePrimaryCtxRetain": fn(*mut Handle, c_int);
    primary_ctx_release = "cuDevicePrimaryCtxRelease_v2": fn(c_int);
    primary_ctx_get_state = "cuDevicePrimaryCtxGetState": fn(c_int, *mut c_uint, *mut c_int);
    primary_ctx_set_flags = "cuDevicePrimaryCtxSetFlags_v2": fn(c_int, c_uint);
    primary_ctx_reset = "cuDevicePrimaryCtxReset_v2": fn(c_int);

    ctx_create = "cuCtxCreate_v2": fn(*mut Handle, c_uint, c_int);
    ctx_destroy = "cuCtxDestroy_v2": fn(Handle);
    ctx_set_current = "cuCtxSetCurrent": fn(Handle);
    ctx_synchronize = "cuCtxSynchronize": fn();
    ctx_get_limit = "cuCtxGetLimit": fn(*mut usize, c_int);
    ctx_set_limit = "cuCtxSetLimit": fn(c_int, usize);
    ctx_get_stream_priority_range = "cuCtxGetStreamPriorityRange": fn(*mut c_int, *mut c_int);
    ctx_get_flags = "cuCtxGetFlags": fn(*mut c_uint);
    ctx_get_api_version = "cuCtxGetApiVersion": fn(Handle, *mut c_uint);

    mem_alloc = "cuMemAlloc_v2": fn(*mut DevPtr, usize);
    mem_free = "cuMemFree_v2": fn(DevPtr);
    mem_get_info = "cuMemGetInfo_v2": fn(*mut usize, *mut usize);
    mem_get_address_range = "cuMemGetAddressRange_v2": fn(*mut DevPtr, *mut usize, DevPtr);
    memcpy_htod = "cuMemcpyHtoD_v2": fn(DevPtr, *const c_void, usize);
    memcpy_dtoh = "cuMemcpyDtoH_v2": fn(*mut c_void, DevPtr, usize);
    memcpy_dtod = "cuMemcpyDtoD_v2": fn(DevPtr, DevPtr, usize);
    memcpy_htod_async = "cuMemcpyHtoDAsync_v2": fn(DevPtr, *const c_void, usize, Handle);
    memcpy_dtoh_async = "cuMemcpyDtoHAsync_v2": fn(*mut c_void, DevPtr, usize, Handle);
    memcpy_dtod_async = "cuMemcpyDtoDAsync_v2": fn(DevPtr, DevPtr, usize, Handle);
    memset_d8 = "cuMemsetD8_v2": fn(DevPtr, u8, usize);
    memset_d16 = "cuMemsetD16_v2": fn(DevPtr, u16, usize);
    memset_d32 = "cuMemsetD32_v2": fn(DevPtr, u32, usize);
    memset_d8_async = "cuMemsetD8Async": fn(DevPtr, u8, usize, Handle);
    memset_d16_async = "cuMemsetD16Async": fn(DevPtr, u16, usize, Handle);
    memset_d32_async = "cuMemsetD32Async": fn(DevPtr, u32, usize, Handle);

    stream_create_with_priority = "cuStreamCreateWithPriority": fn(*mut Handle, c_uint, c_int);
    stream_destroy = "cuStreamDestroy_v2": fn(Handle);
    stream_synchronize = "cuStreamSynchronize": fn(Handle);
    stream_query = "cuStreamQuery": fn(Handle);
    stream_wait_event = "cuStreamWaitEvent": fn(Handle, Handle, c_uint);
    stream_get_flags = "cuStreamGetFlags": fn(Handle, *mut c_uint);
    stream_get_priority = "cuStreamGetPriority": fn(Handle, *mut c_int);

    event_create = "cuEventCreate": fn(*mut Handle, c_uint);
    event_destroy = "cuEventDestroy_v2": fn(Handle);
    event_record = "cuEventRecord": fn(Handle, Handle);
    event_record_with_flags = "cuEventRecordWithFlags": fn(Handle, Handle, c_uint);
    event_synchronize = "cuEventSynchronize": fn(Handle);
    event_query = "cuEventQuery": fn(Handle);
    event_elapsed_time = "cuEventElapsedTime": fn(*mut f32, Handle, Handle);

    module_load_data_ex = "cuModuleLoadDataEx": fn(*mut Handle, *const c_void, c_uint, *mut c_int, *mut *mut c_void);
    module_unload = "cuModuleUnload": fn(Handle);
    module_get_function = "cuModuleGetFunction": fn(*mut Handle, Handle, *const c_char);
    module_get_global = "cuModuleGetGlobal_v2": fn(*mut DevPtr, *mut usize, Handle, *const c_char);
    func_get_param_info = "cuFuncGetParamInfo": fn(Handle, usize, *mut usize, *mut usize);
    launch_kernel = "cuLaunchKernel": fn(Handle, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, Handle, *mut *mut c_void, *mut *mut c_void);
    launch_kernel_ex = "cuLaunchKernelEx": fn(*const LaunchConfig, Handle, *mut *mut c_void, *mut *mut c_void);

    library_load_data = "cuLibraryLoadData": fn(*mut Handle, *const c_void, *mut c_int, *mut *mut c_void, c_uint, *mut c_int, *mut *mut c_void, c_uint);
    library_unload = "cuLibraryUnload": fn(Handle);
    library_get_kernel = "cuLibraryGetKernel": fn(*mut Handle, Handle, *const c_char);
    library_get_global = "cuLibraryGetGlobal": fn(*mut DevPtr, *mut usize, Handle, *const c_char);
    library_get_module = "cuLibraryGetModule": fn(*mut Handle, Handle);
    kernel_get_function = "cuKernelGetFunction": fn(*mut Handle, Handle);
    kernel_get_param_info = "cuKernelGetParamInfo": fn(Handle, usize, *mut usize, *mut usize);
    kernel_get_attribute = "cuKernelGetAttribute": fn(*mut c_int, c_int, Handle, c_int);
    kernel_set_attribute = "cuKernelSetAttribute": fn(c_int, c_int, Handle, c_int);
    func_get_attribute = "cuFuncGetAttribute": fn(*mut c_int, c_int, Handle);
    func_set_attribute = "cuFuncSetAttribute": fn(Handle, c_int, c_int);
    occupancy_max_active_blocks = "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags": fn(*mut c_int, Handle, c_int, usize, c_uint);
    occupancy_available_dynamic_smem = "cuOccupancyAvailableDynamicSMemPerBlock": fn(*mut usize, Handle, c_int, c_int);
    occupancy_max_active_clusters = "cuOccupancyMaxActiveClusters": fn(*mut c_int, Handle, *const LaunchConfig);
    stream_is_capturing = "cuStreamIsCapturing": fn(Handle, *mut c_int);
    module_get_loading_mode = "cuModuleGetLoadingMode": fn(*mut c_int);
    mem_host_register = "cuMemHostRegister_v2": fn(*mut c_void, usize, c_uint);
    mem_host_unregister = "cuMemHostUnregister": fn(*mut c_void);
    mem_host_get_device_pointer = "cuMemHostGetDevicePointer_v2": fn(*mut DevPtr, *mut c_void, c_uint);
    get_export_table = "cuGetExportTable": fn(*mut *const c_void, *const [u8; 16]);
    mem_alloc_async = "cuMemAllocAsync": fn(*mut DevPtr, usize, Handle);
    mem_free_async = "cuMemFreeAsync": fn(DevPtr, Handle);
    memcpy_2d = "cuMemcpy2D_v2": fn(*const Memcpy2D);
    memcpy_2d_async = "cuMemcpy2DAsync_v2": fn(*const Memcpy2D, Handle);
    pointer_get_attribute = "cuPointerGetAttribute": fn(*mut c_void, c_int, DevPtr);
    pointer_get_attributes = "cuPointerGetAttributes": fn(c_uint, *mut c_int, *mut *mut c_void, DevPtr);
}

/// The CUDA runtime's private interface table and the slot that returns a
/// device's primary context without retaining it.
const CUDART_INTERFACE: [u8; 16] = [
    0x6B, 0xD5, 0xFB, 0x6C, 0x5B, 0xF4, 0xE7, 0x4A, 0x89, 0x87, 0xD9, 0x39, 0x12, 0xFD, 0x9D, 0xF9,
];
const CUDART_INTERFACE_PRIMARY_CONTEXT: usize = 2;
/// The tools' module table and its kernel-walking slot.
const TOOLS_MODULE: [u8; 16] = [
    0x6E, 0x16, 0x3F, 0xBE, 0xB9, 0x58, 0x44, 0x4D, 0x83, 0x5C, 0xE1, 0x82, 0xAF, 0xF1, 0x99, 0x1E,
];
const TOOLS_MODULE_KERNELS: usize = 7;

/// Collects (function, name) pairs from the kernel walk.
extern "C" fn collect_kernel(ud: *mut c_void, f: Handle, name: *const c_char) {
    if ud.is_null() || name.is_null() {
        return;
    }
    // SAFETY: `ud` is the `Vec` passed by `module_kernels` for this call only;
    // `name` is a NUL-terminated string owned by the driver.
    unsafe {
        let out = &mut *ud.cast::<Vec<(usize, String)>>();
        out.push((
            f as usize,
            std::ffi::CStr::from_ptr(name)
                .to_string_lossy()
                .into_owned(),
        ));
    }
}

impl Driver {
    /// The device's primary context, not retained (through the driver's own
    /// runtime interface table).
    pub fn primary_context_unretained(&self, dev: c_int) -> Result<Handle, Status> {
        let (table, slots) = self.table(&CUDART_INTERFACE)?;
        if slots <= CUDART_INTERFACE_PRIMARY_CONTEXT {
            return Err(NOT_SUPPORTED);
        }
        // SAFETY: the slot lies inside the table (checked) and holds
        // `fn(CUcontext *out, CUdevice dev) -> CUresult`.
        let slot: unsafe extern "C" fn(*mut Handle, c_int) -> Status =
            unsafe { std::mem::transmute(*table.add(CUDART_INTERFACE_PRIMARY_CONTEXT)) };
        let mut ctx: Handle = std::ptr::null_mut();
        // SAFETY: live out-pointer.
        match unsafe { slot(&mut ctx, dev) } {
            0 => Ok(ctx),
            st => Err(st),
        }
    }

    /// A private table of the driver, by UUID: its address and size in slots.
    fn table(&self, id: &[u8; 16]) -> Result<(*const *const c_void, usize), Status> {
        let mut table: *const c_void = std::ptr::null();
        // SAFETY: live out-pointer; the UUID is 16 bytes.
        let st = unsafe { entry(self.get_export_table)?(&mut table, id) };
        if st != 0 || table.is_null() {
            return Err(if st != 0 { st } else { NOT_SUPPORTED });
        }
        // SAFETY: the table is sized: slot 0 holds its size in bytes.
        let size = unsafe { *table.cast::<usize>() };
        Ok((table.cast(), size / 8))
    }

    /// The kernels of `module`, in the driver's order, with every function
    /// of the module loaded (the tools' module walk does both).
    ///
    /// # Safety
    /// `module` must be a live module of this driver.
    pub unsafe fn module_kernels(&self, module: Handle) -> Result<Vec<(usize, String)>, Status> {
        let (table, slots) = self.table(&TOOLS_MODULE)?;
        if slots <= TOOLS_MODULE_KERNELS {
            return Err(NOT_SUPPORTED);
        }
        type Walk = unsafe extern "C" fn(
            *mut c_void,
            Handle,
            extern "C" fn(*mut c_void, Handle, *const c_char),
            *mut c_void,
        ) -> c_int;
        // SAFETY: the slot lies inside the table (checked) and holds the walk.
        let walk: Walk = unsafe { std::mem::transmute(*table.add(TOOLS_MODULE_KERNELS)) };
        let mut found: Vec<(usize, String)> = Vec::new();
        // SAFETY: `module` is a live module; the callback only appends to `found`.
        let n = unsafe {
            walk(
                std::ptr::null_mut(),
                module,
                collect_kernel,
                (&raw mut found).cast(),
            )
        };
        if n < 0 {
            return Err(1);
        }
        Ok(found)
    }

    /// Loads the library at `path` and resolves the table.
    pub fn load(path: &Path) -> Result<Driver, MediatorError> {
        if !path.is_absolute() {
            return Err(MediatorError::Driver(format!(
                "{} is not an absolute path",
                path.display()
            )));
        }
        // SAFETY: loading a CUDA driver runs its initialisers; that is exactly what
        // the worker process exists for. The path is absolute, so no search path
        // can substitute another library.
        let lib = unsafe { libloading::Library::new(path) }
            .map_err(|e| MediatorError::Driver(format!("cannot load {}: {e}", path.display())))?;
        // SAFETY: only the presence of the symbol is checked; it is never called.
        let marker = unsafe { lib.get::<*const c_void>(CLIENT_MARKER.as_bytes()) }.is_ok();
        if marker {
            return Err(MediatorError::Driver(format!(
                "{} is vgpu's own client library (it exports {CLIENT_MARKER}), not a driver",
                path.display()
            )));
        }
        Ok(Driver::resolve(path.to_owned(), lib))
    }

    /// Where the driver was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Returns the entry point or `CUDA_ERROR_NOT_SUPPORTED` when the library lacks it.
pub fn entry<F: Copy>(f: Option<F>) -> Result<F, Status> {
    f.ok_or(NOT_SUPPORTED)
}

/// Folders where NVIDIA's installers put `libcuda.so.1`, searched in order.
const KNOWN_DRIVER_DIRS: &[&str] = &[
    "/usr/local/nvidia/lib64",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/lib/wsl/lib",
    "/usr/local/cuda/compat",
];

/// Loads the real driver: the known driver folders, then the `ldconfig`
/// cache. Candidates that are vgpu's client are skipped and logged.
pub fn load_real_driver() -> Option<Driver> {
    let known = KNOWN_DRIVER_DIRS
        .iter()
        .map(|d| Path::new(d).join("libcuda.so.1"));
    known
        .chain(ldconfig_candidates())
        .filter(|p| p.is_file())
        .find_map(|p| {
            Driver::load(&p)
                .map_err(|e| tracing::warn!("skipping driver candidate: {e}"))
                .ok()
        })
}

fn ldconfig_candidates() -> Vec<PathBuf> {
    let out = ["/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"]
        .iter()
        .find_map(|cmd| std::process::Command::new(cmd).arg("-p").output().ok());
    let Some(out) = out else { return Vec::new() };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.trim_start().starts_with("libcuda.so.1 "))
        .filter_map(|l| l.rsplit_once("=> ").map(|(_, p)| PathBuf::from(p.trim())))
        .collect()
}
