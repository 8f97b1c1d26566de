//! The one way the worker reaches a driver: a table of function pointers
//! resolved from a library loaded by absolute path.
//!
//! The real `libcuda.so.1` and the simulated `libvgpu-sim.so` go through the
//! same code. A library that exports the client's marker symbol is refused, so
//! the worker can never load vgpu's own client library.

use std::ffi::{c_char, c_int, c_void};
use std::path::{Path, PathBuf};

use vgpu_abi::types::CUresult;

use crate::MediatorError;

/// `CUresult` as the driver returns it.
pub type Status = CUresult;
/// Any driver handle (`CUcontext`, `CUstream`, ...), opaque to the worker.
pub type Handle = *mut c_void;
/// `CUdeviceptr`.
pub type DevPtr = u64;

pub use vgpu_abi::driver::CLIENT_MARKER;

/// Builds [`Driver`] from the ABI table's list of exports: one field per
/// export, named after it, with the prototype the ABI crate generated from
/// NVIDIA's headers.
macro_rules! driver_table {
    ($( fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $ret:ty; )*) => {
        /// Every export of the loaded driver, by its symbol name, with its
        /// prototype; `None` where the library lacks it.
        #[allow(non_snake_case, clippy::type_complexity)]
        pub struct Driver {
            path: PathBuf,
            _lib: libloading::Library,
            $( pub $name: Option<unsafe extern "C" fn($($ty),*) -> $ret>, )*
        }

        impl Driver {
            fn resolve(path: PathBuf, lib: libloading::Library) -> Driver {
                Driver {
                    $( $name: {
                        // SAFETY: the symbol is looked up by its exported C name and
                        // the pointer type is the ABI table's prototype of that name.
                        unsafe { lib.get::<unsafe extern "C" fn($($ty),*) -> $ret>(concat!(stringify!($name), "\0").as_bytes()) }
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

vgpu_abi::cuda_exports!(driver_table);

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
            return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
        }
        // SAFETY: the slot lies inside the table (checked) and holds
        // `fn(CUcontext *out, CUdevice dev) -> CUresult`.
        let slot: unsafe extern "C" fn(*mut Handle, c_int) -> Status =
            unsafe { std::mem::transmute(*table.add(CUDART_INTERFACE_PRIMARY_CONTEXT)) };
        let mut ctx: Handle = std::ptr::null_mut();
        // SAFETY: live out-pointer.
        match unsafe { slot(&mut ctx, dev) } {
            CUresult::CUDA_SUCCESS => Ok(ctx),
            st => Err(st),
        }
    }

    /// A private table of the driver, by UUID: its address and size in slots.
    fn table(&self, id: &[u8; 16]) -> Result<(*const *const c_void, usize), Status> {
        let mut table: *const c_void = std::ptr::null();
        let uuid = vgpu_abi::types::CUuuid {
            bytes: id.map(|b| b as c_char),
        };
        // SAFETY: live out-pointer; the UUID is 16 bytes.
        let st = unsafe { entry(self.cuGetExportTable)?(&mut table, &uuid) };
        if st != CUresult::CUDA_SUCCESS {
            return Err(st);
        }
        if table.is_null() {
            return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
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
            return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
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
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
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
    f.ok_or(CUresult::CUDA_ERROR_NOT_SUPPORTED)
}

/// Loads the real driver, trying each candidate of
/// [`vgpu_abi::driver::search_order`]. Candidates that are vgpu's client
/// are skipped and logged.
pub fn load_real_driver() -> Option<Driver> {
    let ldconfig = ["/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"]
        .iter()
        .find_map(|cmd| std::process::Command::new(cmd).arg("-p").output().ok())
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_default();
    vgpu_abi::driver::search_order(&ldconfig)
        .into_iter()
        .filter(|p| p.is_file())
        .find_map(|p| {
            Driver::load(&p)
                .map_err(|e| tracing::warn!("skipping driver candidate: {e}"))
                .ok()
        })
}
