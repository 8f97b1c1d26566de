//! The FFI edge: the one place where Rust results become `CUresult`s.
//!
//! Every export runs inside [`guard`], which catches panics, so no Rust panic
//! ever unwinds into the application.

use std::num::NonZeroU32;
use std::panic::{catch_unwind, AssertUnwindSafe};

use vgpu_abi::types::CUresult;

/// A failed CUDA call: a non-zero `CUresult`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CuError(pub NonZeroU32);

const _: () = assert!(std::mem::size_of::<Result<(), CuError>>() == std::mem::size_of::<u32>());

/// Result of every typed implementation function.
pub type CuResult<T> = Result<T, CuError>;

/// Names the `CUresult`s the client returns itself, by the ABI crate's
/// constants (`INVALID_VALUE` is `CUresult::CUDA_ERROR_INVALID_VALUE`).
macro_rules! codes {
    ($($name:ident = $code:ident),* $(,)?) => {
        impl CuError {
            $(pub const $name: CuError = CuError::of(CUresult::$code);)*
        }
    };
}

codes! {
    INVALID_VALUE = CUDA_ERROR_INVALID_VALUE,
    OUT_OF_MEMORY = CUDA_ERROR_OUT_OF_MEMORY,
    NOT_INITIALIZED = CUDA_ERROR_NOT_INITIALIZED,
    NO_DEVICE = CUDA_ERROR_NO_DEVICE,
    INVALID_DEVICE = CUDA_ERROR_INVALID_DEVICE,
    INVALID_IMAGE = CUDA_ERROR_INVALID_IMAGE,
    INVALID_CONTEXT = CUDA_ERROR_INVALID_CONTEXT,
    INVALID_HANDLE = CUDA_ERROR_INVALID_HANDLE,
    FILE_NOT_FOUND = CUDA_ERROR_FILE_NOT_FOUND,
    OPERATING_SYSTEM = CUDA_ERROR_OPERATING_SYSTEM,
    NOT_FOUND = CUDA_ERROR_NOT_FOUND,
    CONTEXT_IS_DESTROYED = CUDA_ERROR_CONTEXT_IS_DESTROYED,
    DEVICE_UNAVAILABLE = CUDA_ERROR_DEVICE_UNAVAILABLE,
    NOT_SUPPORTED = CUDA_ERROR_NOT_SUPPORTED,
    STREAM_CAPTURE_UNSUPPORTED = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
    STREAM_CAPTURE_INVALIDATED = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
    STREAM_CAPTURE_WRONG_THREAD = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
    NOT_PERMITTED = CUDA_ERROR_NOT_PERMITTED,
    HOST_MEMORY_ALREADY_REGISTERED = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
    HOST_MEMORY_NOT_REGISTERED = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
    UNKNOWN = CUDA_ERROR_UNKNOWN,
}

impl CuError {
    /// The error of a failing `CUresult`; `CUDA_SUCCESS` is none (a
    /// compile-time error where used in a constant).
    pub const fn of(code: CUresult) -> CuError {
        match NonZeroU32::new(code.0) {
            Some(v) => CuError(v),
            None => panic!("CUDA_SUCCESS is not an error"),
        }
    }

    /// The `CUresult` the application sees.
    pub const fn code(self) -> CUresult {
        CUresult(self.0.get())
    }
}

impl CuError {
    /// Wraps a raw status; `None` for success.
    pub fn from_status(st: u32) -> Option<CuError> {
        NonZeroU32::new(st).map(CuError)
    }
}

/// `Ok(())` for 0, the error otherwise.
pub fn check(st: u32) -> CuResult<()> {
    match CuError::from_status(st) {
        None => Ok(()),
        Some(e) => Err(e),
    }
}

/// Maps a result to the `CUresult` the application sees.
pub fn to_curesult(r: CuResult<()>) -> CUresult {
    match r {
        Ok(()) => CUresult::CUDA_SUCCESS,
        Err(e) => e.code(),
    }
}

/// Runs an export's body, turning a panic into `CUDA_ERROR_UNKNOWN`.
pub fn guard(name: &'static str, body: impl FnOnce() -> CUresult) -> CUresult {
    guard_traced(name, String::new, body)
}

/// [`guard`], with the call's arguments described for `VGPU_TRACE`.
pub fn guard_traced(
    name: &'static str,
    args: impl FnOnce() -> String,
    body: impl FnOnce() -> CUresult,
) -> CUresult {
    match catch_unwind(AssertUnwindSafe(|| crate::trace::traced(name, args, body))) {
        Ok(r) => r,
        Err(_) => {
            crate::log::always(format_args!(
                "{name}: internal panic; returning CUDA_ERROR_UNKNOWN"
            ));
            CuError::UNKNOWN.code()
        }
    }
}

/// Body of every export that vgpu does not implement yet.
pub fn not_supported(name: &'static str) -> CUresult {
    crate::log::once(
        name,
        format_args!("{name} is not implemented by vgpu (CUDA_ERROR_NOT_SUPPORTED)"),
    );
    CuError::NOT_SUPPORTED.code()
}

/// Writes `value` through an application out-pointer, or fails with
/// `CUDA_ERROR_INVALID_VALUE` when the pointer is NULL.
///
/// # Safety
/// `p` must be NULL or valid for a write of `T`, as the CUDA API requires of
/// its callers.
pub unsafe fn write_out<T>(p: *mut T, value: T) -> CuResult<()> {
    if p.is_null() {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: non-NULL, and the caller promises it is valid for writes.
    unsafe { p.write_unaligned(value) };
    Ok(())
}

/// Fails with `CUDA_ERROR_INVALID_VALUE` when an out-pointer is NULL, before
/// any work is done.
pub fn non_null<T>(p: *const T) -> CuResult<()> {
    if p.is_null() {
        Err(CuError::INVALID_VALUE)
    } else {
        Ok(())
    }
}

/// Conversions at the wire and handle boundary.
///
/// vgpu supports 64-bit targets only (asserted below), so `u64` ↔ `usize` is
/// lossless. The worker widens the driver's 32-bit results to `u64` on the
/// wire; narrowing them back restores the driver's own values.
pub mod wire {
    const _: () = assert!(usize::BITS == 64, "vgpu supports 64-bit targets only");

    /// `u64` → `usize`, lossless on 64-bit targets.
    #[allow(clippy::cast_possible_truncation)]
    pub const fn usize(v: u64) -> usize {
        v as usize
    }

    /// A 32-bit unsigned driver value carried as `u64`.
    #[allow(clippy::cast_possible_truncation)]
    pub const fn u32(v: u64) -> u32 {
        v as u32
    }

    /// An opaque handle value for the application, from its id.
    pub fn handle<T>(id: u64) -> *mut T {
        usize(id) as *mut T
    }
}
