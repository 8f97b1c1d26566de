//! # vgpu-recorder: a RECORDING test driver (not a GPU, not a simulation)
//!
//! `libvgpu-recorder.so` is loaded by the worker exactly as the real
//! `libcuda.so.1` or the simulated device is (`--driver PATH`). It exists for
//! the conformance tests (`crates/cli/tests/conformance.rs`): one test per
//! generated call of the remoting table calls the entry point through the
//! client with known values, and the recorder's export of it
//! (`generated/mod.rs`) checks that every argument arrived as passed, with
//! handles translated to the recorder's own, then writes known values into
//! every output for the test to find.
//!
//! ## Contract
//! - **Fixtures.** The entry points the tests use to make their objects
//!   (a context, stream, event, allocation, module, function, library and
//!   kernel) are written here by hand and hand out fixed real handles
//!   ([`real`]), so a generated call can check that a handle it receives is
//!   the one the worker should have translated the client's id to.
//! - **Mismatches** are refused with `CUDA_ERROR_ASSERT`, each with one line
//!   naming the call, the parameter, what arrived and what was expected:
//!   on stderr and, when `VGPU_RECORDER_LOG` names a file at `cuInit`,
//!   appended to it.
//! - Loading does nothing; nothing here touches a GPU.

mod generated;

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::fmt::Debug;
use std::io::Write;
use std::sync::OnceLock;

use vgpu_abi::types::*;

pub use generated::EXPORTS as GENERATED;

/// The real handles the recorder hands out for the tests' fixtures; the
/// generated checks expect these after translation.
pub mod real {
    pub const CONTEXT: u64 = 0x0000_5100_0000_0001;
    pub const STREAM: u64 = 0x0000_5200_0000_0002;
    pub const EVENT: u64 = 0x0000_5300_0000_0003;
    pub const MODULE: u64 = 0x0000_5400_0000_0004;
    pub const FUNCTION: u64 = 0x0000_5500_0000_0005;
    pub const LIBRARY: u64 = 0x0000_5600_0000_0006;
    pub const KERNEL: u64 = 0x0000_5700_0000_0007;
    /// Every memory pool the generated exports hand out (the tests take
    /// theirs from `cuDeviceGetDefaultMemPool`).
    pub const MEMPOOL: u64 = 0x0000_5800_0000_0008;
    /// The CUDA array the generated `cuArray3DCreate_v2` hands out.
    pub const ARRAY: u64 = 0x0000_5900_0000_0009;
    /// The mipmapped array the generated `cuMipmappedArrayCreate` hands out.
    pub const MIPMAP: u64 = 0x0000_5A00_0000_000A;
    /// The one device allocation: below 4 GiB, so 32-bit forms reach it.
    pub const DPTR: u64 = 0x1000_0000;
}

/// The real driver's C signature of every export, named after it.
#[allow(non_camel_case_types, dead_code)]
mod signature {
    macro_rules! signatures {
        ($(fn $name:ident($($p:ident: $t:ty),* $(,)?) -> $r:ty;)*) => {
            $(pub type $name = unsafe extern "C" fn($($t),*) -> $r;)*
        };
    }
    vgpu_abi::cuda_exports!(signatures);
}

/// Where mismatch lines also go (`VGPU_RECORDER_LOG`, read once at `cuInit`).
static LOG: OnceLock<Option<std::path::PathBuf>> = OnceLock::new();

fn report(line: &str) {
    eprintln!("vgpu-recorder: {line}");
    if let Some(Some(path)) = LOG.get() {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{line}");
        }
    }
}

/// The checks of one call's arguments.
pub struct Check {
    call: &'static str,
    failures: Vec<String>,
}

impl Check {
    pub fn new(call: &'static str) -> Check {
        Check {
            call,
            failures: Vec::new(),
        }
    }

    /// `got` must be `want`.
    pub fn eq<T: PartialEq + Debug>(&mut self, what: &str, got: T, want: T) {
        if got != want {
            self.failures
                .push(format!("{what}: {got:?} arrived, {want:?} was passed"));
        }
    }

    /// An out-pointer (or an input pointer) must not be NULL.
    pub fn non_null<T>(&mut self, what: &str, p: *const T) {
        if p.is_null() {
            self.failures.push(format!("{what}: NULL arrived"));
        }
    }

    /// The `want.len()` bytes at `p` must be `want`.
    ///
    /// # Safety
    /// `p` must be NULL or readable for `want.len()` bytes.
    pub unsafe fn bytes(&mut self, what: &str, p: *const u8, want: &[u8]) {
        if p.is_null() {
            self.failures.push(format!("{what}: NULL arrived"));
            return;
        }
        // SAFETY: the caller's promise.
        let got = unsafe { std::slice::from_raw_parts(p, want.len()) };
        if let Some(at) = got.iter().zip(want).position(|(a, b)| a != b) {
            self.failures.push(format!(
                "{what}: byte {at} of {} is {:#04x}, {:#04x} was passed",
                want.len(),
                got[at],
                want[at]
            ));
        }
    }

    /// The string at `p` must be `want`.
    ///
    /// # Safety
    /// `p` must be NULL or NUL-terminated.
    pub unsafe fn c_str(&mut self, what: &str, p: *const c_char, want: &str) {
        if p.is_null() {
            self.failures.push(format!("{what}: NULL arrived"));
            return;
        }
        // SAFETY: the caller's promise.
        let got = unsafe { CStr::from_ptr(p) };
        if got.to_bytes() != want.as_bytes() {
            self.failures
                .push(format!("{what}: {got:?} arrived, {want:?} was passed"));
        }
    }

    /// `CUDA_ERROR_ASSERT` after reporting every mismatch, if there was one.
    pub fn failed(&self) -> Option<CUresult> {
        if self.failures.is_empty() {
            return None;
        }
        for f in &self.failures {
            report(&format!("{}: {f}", self.call));
        }
        Some(CUresult::CUDA_ERROR_ASSERT)
    }
}

/// Copies `bytes` to `p`.
///
/// # Safety
/// `p` must be writable for `bytes.len()` bytes.
pub unsafe fn write(p: *mut u8, bytes: &[u8]) {
    // SAFETY: the caller's promise.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len()) };
}

/// Writes `v` through `p` unless it is NULL.
///
/// # Safety
/// `p` must be NULL or valid for a write of `T`.
unsafe fn put<T>(p: *mut T, v: T) -> CUresult {
    if p.is_null() {
        return CUresult::CUDA_ERROR_INVALID_VALUE;
    }
    // SAFETY: non-NULL, and the caller's promise.
    unsafe { p.write_unaligned(v) };
    CUresult::CUDA_SUCCESS
}

#[allow(
    clippy::cast_possible_truncation,
    reason = "vgpu builds for 64-bit targets only: handles are u64 on the wire"
)]
fn handle<T>(real: u64) -> *mut T {
    real as usize as *mut T
}

// ---- what the worker asks at session start -------------------------------

/// `cuInit`: reads `VGPU_RECORDER_LOG` once.
#[no_mangle]
pub extern "C" fn cuInit(_flags: c_uint) -> CUresult {
    LOG.get_or_init(|| std::env::var_os("VGPU_RECORDER_LOG").map(Into::into));
    CUresult::CUDA_SUCCESS
}

/// `cuDriverGetVersion`: 13.0.
///
/// # Safety
/// `v` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuDriverGetVersion(v: *mut c_int) -> CUresult {
    // SAFETY: the caller's out-pointer.
    unsafe { put(v, 13000) }
}

/// Devices the recording driver has: two, so that the tests can pass a
/// device ordinal other than a default 0.
const DEVICES: c_int = 2;

/// `cuDeviceGetCount`.
///
/// # Safety
/// `n` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetCount(n: *mut c_int) -> CUresult {
    // SAFETY: the caller's out-pointer.
    unsafe { put(n, DEVICES) }
}

/// `cuDeviceGet`: the device is its ordinal.
///
/// # Safety
/// `d` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGet(d: *mut CUdevice, ordinal: c_int) -> CUresult {
    if !(0..DEVICES).contains(&ordinal) {
        return CUresult::CUDA_ERROR_INVALID_DEVICE;
    }
    // SAFETY: the caller's out-pointer.
    unsafe { put(d, ordinal) }
}

/// Copies `text` and a NUL into a buffer of `len` bytes.
///
/// # Safety
/// `buf` must be NULL or writable for `len` bytes.
unsafe fn put_str(buf: *mut c_char, len: c_int, text: &[u8]) -> CUresult {
    let n = usize::try_from(len).unwrap_or(0);
    if buf.is_null() || n <= text.len() {
        return CUresult::CUDA_ERROR_INVALID_VALUE;
    }
    // SAFETY: `n` writable bytes (the caller's promise) hold the text and a NUL.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr().cast(), buf, text.len());
        buf.add(text.len()).write(0);
    }
    CUresult::CUDA_SUCCESS
}

/// `cuDeviceGetName`.
///
/// # Safety
/// `name` must be NULL or writable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetName(
    name: *mut c_char,
    len: c_int,
    _dev: CUdevice,
) -> CUresult {
    // SAFETY: the caller's buffer.
    unsafe { put_str(name, len, b"vgpu recording test driver (not a GPU)") }
}

/// `cuDeviceGetPCIBusId`.
///
/// # Safety
/// `bus` must be NULL or writable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetPCIBusId(
    bus: *mut c_char,
    len: c_int,
    _dev: CUdevice,
) -> CUresult {
    // SAFETY: the caller's buffer.
    unsafe { put_str(bus, len, b"0000:00:00.0") }
}

/// `cuDeviceGetUuid_v2`: all zero.
///
/// # Safety
/// `uuid` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetUuid_v2(uuid: *mut CUuuid, _dev: CUdevice) -> CUresult {
    // SAFETY: the caller's out-pointer.
    unsafe { put(uuid, CUuuid { bytes: [0; 16] }) }
}

/// `cuDeviceTotalMem_v2`: 1 GiB.
///
/// # Safety
/// `bytes` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, _dev: CUdevice) -> CUresult {
    // SAFETY: the caller's out-pointer.
    unsafe { put(bytes, 1 << 30) }
}

/// `cuDeviceGetAttribute`: 1 for every attribute.
///
/// # Safety
/// `v` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    v: *mut c_int,
    _attr: CUdevice_attribute,
    _dev: CUdevice,
) -> CUresult {
    // SAFETY: the caller's out-pointer.
    unsafe { put(v, 1) }
}

// ---- the tests' fixtures ---------------------------------------------------

/// `cuCtxCreate_v2`: the fixture context.
///
/// # Safety
/// `pctx` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuCtxCreate_v2(
    pctx: *mut CUcontext,
    _flags: c_uint,
    _dev: CUdevice,
) -> CUresult {
    // SAFETY: the caller's out-pointer.
    unsafe { put(pctx, handle(real::CONTEXT)) }
}

/// `cuCtxSetCurrent`: only the fixture context (or NULL) can be current.
#[no_mangle]
pub extern "C" fn cuCtxSetCurrent(ctx: CUcontext) -> CUresult {
    let mut c = Check::new("cuCtxSetCurrent");
    if !ctx.is_null() {
        c.eq("ctx", ctx as usize as u64, real::CONTEXT);
    }
    c.failed().unwrap_or(CUresult::CUDA_SUCCESS)
}

/// `cuStreamCreateWithPriority`: the fixture stream.
///
/// # Safety
/// `ph` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuStreamCreateWithPriority(
    ph: *mut CUstream,
    _flags: c_uint,
    _prio: c_int,
) -> CUresult {
    // SAFETY: the caller's out-pointer.
    unsafe { put(ph, handle(real::STREAM)) }
}

/// `cuEventCreate`: the fixture event.
///
/// # Safety
/// `ph` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuEventCreate(ph: *mut CUevent, _flags: c_uint) -> CUresult {
    // SAFETY: the caller's out-pointer.
    unsafe { put(ph, handle(real::EVENT)) }
}

/// `cuMemAlloc_v2`: the fixture allocation.
///
/// # Safety
/// `p` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuMemAlloc_v2(p: *mut CUdeviceptr, _bytes: usize) -> CUresult {
    // SAFETY: the caller's out-pointer.
    unsafe { put(p, real::DPTR) }
}

/// `cuModuleLoadDataEx`: the fixture module, whatever the image.
///
/// # Safety
/// `m` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadDataEx(
    m: *mut CUmodule,
    _image: *const c_void,
    _n: c_uint,
    _opts: *mut CUjit_option,
    _vals: *mut *mut c_void,
) -> CUresult {
    // SAFETY: the caller's out-pointer.
    unsafe { put(m, handle(real::MODULE)) }
}

/// `cuModuleGetFunction`: the fixture function, whatever the name.
///
/// # Safety
/// `f` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuModuleGetFunction(
    f: *mut CUfunction,
    m: CUmodule,
    _name: *const c_char,
) -> CUresult {
    let mut c = Check::new("cuModuleGetFunction");
    c.eq("hmod", m as usize as u64, real::MODULE);
    if let Some(e) = c.failed() {
        return e;
    }
    // SAFETY: the caller's out-pointer.
    unsafe { put(f, handle(real::FUNCTION)) }
}

/// `cuFuncGetParamInfo`: the fixture function takes no parameters.
#[no_mangle]
pub extern "C" fn cuFuncGetParamInfo(
    _f: CUfunction,
    _i: usize,
    _off: *mut usize,
    _size: *mut usize,
) -> CUresult {
    CUresult::CUDA_ERROR_INVALID_VALUE
}

/// `cuLibraryLoadData`: the fixture library, whatever the image.
///
/// # Safety
/// `l` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuLibraryLoadData(
    l: *mut CUlibrary,
    _code: *const c_void,
    _jk: *mut CUjit_option,
    _jv: *mut *mut c_void,
    _nj: c_uint,
    _lk: *mut CUlibraryOption,
    _lv: *mut *mut c_void,
    _nl: c_uint,
) -> CUresult {
    // SAFETY: the caller's out-pointer.
    unsafe { put(l, handle(real::LIBRARY)) }
}

/// `cuLibraryGetKernel`: the fixture kernel, whatever the name.
///
/// # Safety
/// `k` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetKernel(
    k: *mut CUkernel,
    l: CUlibrary,
    _name: *const c_char,
) -> CUresult {
    let mut c = Check::new("cuLibraryGetKernel");
    c.eq("library", l as usize as u64, real::LIBRARY);
    if let Some(e) = c.failed() {
        return e;
    }
    // SAFETY: the caller's out-pointer.
    unsafe { put(k, handle(real::KERNEL)) }
}

/// `cuKernelGetParamInfo`: the fixture kernel takes no parameters.
#[no_mangle]
pub extern "C" fn cuKernelGetParamInfo(
    _k: CUkernel,
    _i: usize,
    _off: *mut usize,
    _size: *mut usize,
) -> CUresult {
    CUresult::CUDA_ERROR_INVALID_VALUE
}

/// Every export written by hand.
pub const HAND_EXPORTS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetPCIBusId",
    "cuDeviceGetUuid_v2",
    "cuDeviceTotalMem_v2",
    "cuDeviceGetAttribute",
    "cuCtxCreate_v2",
    "cuCtxSetCurrent",
    "cuStreamCreateWithPriority",
    "cuEventCreate",
    "cuMemAlloc_v2",
    "cuModuleLoadDataEx",
    "cuModuleGetFunction",
    "cuFuncGetParamInfo",
    "cuLibraryLoadData",
    "cuLibraryGetKernel",
    "cuKernelGetParamInfo",
];

const _: signature::cuInit = cuInit;
const _: signature::cuDriverGetVersion = cuDriverGetVersion;
const _: signature::cuDeviceGetCount = cuDeviceGetCount;
const _: signature::cuDeviceGet = cuDeviceGet;
const _: signature::cuDeviceGetName = cuDeviceGetName;
const _: signature::cuDeviceGetPCIBusId = cuDeviceGetPCIBusId;
const _: signature::cuDeviceGetUuid_v2 = cuDeviceGetUuid_v2;
const _: signature::cuDeviceTotalMem_v2 = cuDeviceTotalMem_v2;
const _: signature::cuDeviceGetAttribute = cuDeviceGetAttribute;
const _: signature::cuCtxCreate_v2 = cuCtxCreate_v2;
const _: signature::cuCtxSetCurrent = cuCtxSetCurrent;
const _: signature::cuStreamCreateWithPriority = cuStreamCreateWithPriority;
const _: signature::cuEventCreate = cuEventCreate;
const _: signature::cuMemAlloc_v2 = cuMemAlloc_v2;
const _: signature::cuModuleLoadDataEx = cuModuleLoadDataEx;
const _: signature::cuModuleGetFunction = cuModuleGetFunction;
const _: signature::cuFuncGetParamInfo = cuFuncGetParamInfo;
const _: signature::cuLibraryLoadData = cuLibraryLoadData;
const _: signature::cuLibraryGetKernel = cuLibraryGetKernel;
const _: signature::cuKernelGetParamInfo = cuKernelGetParamInfo;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mismatches_are_refused_with_assert() {
        let mut c = Check::new("t");
        c.eq("a", 1u32, 1u32);
        assert!(c.failed().is_none());
        c.eq("b", 2u32, 3u32);
        assert_eq!(c.failed(), Some(CUresult::CUDA_ERROR_ASSERT));
        let mut c = Check::new("t");
        let bytes = [1u8, 2, 3];
        // SAFETY: three readable bytes.
        unsafe { c.bytes("x", bytes.as_ptr(), &[1, 2, 4]) };
        assert!(c.failed().is_some());
        let mut c = Check::new("t");
        // SAFETY: a NUL-terminated string.
        unsafe { c.c_str("s", c"abc".as_ptr(), "abc") };
        c.non_null("p", std::ptr::null::<u8>());
        assert!(c.failed().is_some(), "the NULL pointer");
    }

    #[test]
    fn exports_are_driver_symbols_once() {
        let mut all: Vec<&str> = HAND_EXPORTS.iter().chain(GENERATED).copied().collect();
        for n in &all {
            assert!(vgpu_abi::find(n).is_some_and(|d| d.signature_known), "{n}");
        }
        let len = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), len, "an export is listed twice");
    }
}
