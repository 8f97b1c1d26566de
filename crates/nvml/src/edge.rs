//! The FFI edge: the one place where Rust results become `nvmlReturn_t`s,
//! and where application pointers are checked and written.

use std::ffi::{c_char, c_uint};
use std::num::NonZeroU32;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::generated::types::nvmlReturn_t;

/// A failed NVML call: a non-zero `nvmlReturn_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NvmlError(pub NonZeroU32);

const _: () = assert!(std::mem::size_of::<Result<(), NvmlError>>() == std::mem::size_of::<u32>());

/// Result of every typed implementation function.
pub type Res<T> = Result<T, NvmlError>;

/// Names the codes the library returns itself, by the header's constants.
macro_rules! codes {
    ($($name:ident = $code:ident),* $(,)?) => {
        impl NvmlError {
            $(pub const $name: NvmlError = NvmlError::of(nvmlReturn_t::$code);)*
        }
    };
}

codes! {
    UNINITIALIZED = NVML_ERROR_UNINITIALIZED,
    INVALID_ARGUMENT = NVML_ERROR_INVALID_ARGUMENT,
    NOT_SUPPORTED = NVML_ERROR_NOT_SUPPORTED,
    NOT_FOUND = NVML_ERROR_NOT_FOUND,
    INSUFFICIENT_SIZE = NVML_ERROR_INSUFFICIENT_SIZE,
    DRIVER_NOT_LOADED = NVML_ERROR_DRIVER_NOT_LOADED,
    FUNCTION_NOT_FOUND = NVML_ERROR_FUNCTION_NOT_FOUND,
    GPU_IS_LOST = NVML_ERROR_GPU_IS_LOST,
    TIMEOUT = NVML_ERROR_TIMEOUT,
    ARGUMENT_VERSION_MISMATCH = NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
    UNKNOWN = NVML_ERROR_UNKNOWN,
}

impl NvmlError {
    /// The error of a failing code; `NVML_SUCCESS` is none (a compile-time
    /// error where used in a constant).
    pub const fn of(code: nvmlReturn_t) -> NvmlError {
        match NonZeroU32::new(code.0) {
            Some(v) => NvmlError(v),
            None => panic!("NVML_SUCCESS is not an error"),
        }
    }

    /// `Ok(())` for 0 (`NVML_SUCCESS`), the error otherwise.
    pub fn check(status: u32) -> Res<()> {
        NonZeroU32::new(status).map_or(Ok(()), |v| Err(NvmlError(v)))
    }
}

/// Maps a result to the code the application sees.
pub fn to_return(r: Res<()>) -> nvmlReturn_t {
    match r {
        Ok(()) => nvmlReturn_t::NVML_SUCCESS,
        Err(e) => nvmlReturn_t(e.0.get()),
    }
}

/// Runs an export's body, turning a panic into `NVML_ERROR_UNKNOWN`. Every
/// answer other than success is logged (with `VGPU_LOG`), so that what a
/// tool such as `nvidia-smi` was refused can be read after it stops.
pub fn guard(name: &'static str, body: impl FnOnce() -> nvmlReturn_t) -> nvmlReturn_t {
    let r = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|_| {
        crate::config::log(format_args!(
            "{name}: internal panic; returning NVML_ERROR_UNKNOWN"
        ));
        nvmlReturn_t::NVML_ERROR_UNKNOWN
    });
    if r != nvmlReturn_t::NVML_SUCCESS {
        crate::config::log(format_args!("{name} returned {}", r.0));
    }
    r
}

/// Body of every export vgpu does not implement: `NVML_ERROR_UNINITIALIZED`
/// before `nvmlInit`, as for every call, and `NVML_ERROR_NOT_SUPPORTED` after.
pub fn not_supported(name: &'static str) -> nvmlReturn_t {
    if !crate::session::initialized() {
        return nvmlReturn_t::NVML_ERROR_UNINITIALIZED;
    }
    crate::config::log(format_args!(
        "{name} is not implemented by vgpu (NVML_ERROR_NOT_SUPPORTED)"
    ));
    nvmlReturn_t::NVML_ERROR_NOT_SUPPORTED
}

/// `Err(INVALID_ARGUMENT)` for a NULL pointer.
pub fn non_null<T>(p: *const T) -> Res<()> {
    if p.is_null() {
        Err(NvmlError::INVALID_ARGUMENT)
    } else {
        Ok(())
    }
}

/// Writes `value` through an application out-pointer, or fails with
/// `NVML_ERROR_INVALID_ARGUMENT` when it is NULL.
///
/// # Safety
/// `p` must be NULL or valid for a write of `T`, as NVML requires of callers.
pub unsafe fn write_out<T>(p: *mut T, value: T) -> Res<()> {
    non_null(p)?;
    // SAFETY: non-NULL, and valid for a write of `T` by the caller's contract.
    unsafe { p.write_unaligned(value) };
    Ok(())
}

/// Writes `value` through a pointer to a 32-bit NVML type (an unsigned int
/// or an enum, which are `unsigned int`-sized in NVML's ABI).
///
/// # Safety
/// As [`write_out`].
pub unsafe fn write_u32<T>(p: *mut T, value: u32) -> Res<()> {
    const { assert!(std::mem::size_of::<T>() == 4) };
    // SAFETY: `T` is 4 bytes (checked above); the caller's contract covers `p`.
    unsafe { write_out(p.cast::<u32>(), value) }
}

/// The value of a 32-bit NVML argument (an unsigned int or an enum).
pub fn arg_u32<T: Copy>(value: T) -> u32 {
    const { assert!(std::mem::size_of::<T>() == 4) };
    // SAFETY: `T` is a plain 4-byte integer or `repr(transparent)` newtype of
    // one (checked above), so every bit pattern is a valid u32.
    unsafe { std::mem::transmute_copy::<T, u32>(&value) }
}

/// Copies `text` and a NUL into the application's buffer of `length` bytes:
/// `NVML_ERROR_INVALID_ARGUMENT` for a NULL buffer,
/// `NVML_ERROR_INSUFFICIENT_SIZE` when it cannot hold them.
///
/// # Safety
/// `buf` must be NULL or valid for writes of `length` bytes.
pub unsafe fn write_str(buf: *mut c_char, length: c_uint, text: &[u8]) -> Res<()> {
    non_null(buf)?;
    if usize::try_from(length).map_or(true, |n| n <= text.len()) {
        return Err(NvmlError::INSUFFICIENT_SIZE);
    }
    // SAFETY: the buffer holds `length` > `text.len()` bytes (checked).
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), text.len());
        buf.add(text.len()).write(0);
    }
    Ok(())
}

/// The message `nvmlErrorString` gives for `code`.
pub fn error_string(code: u32) -> &'static std::ffi::CStr {
    match code {
        0 => c"Success",
        1 => c"Uninitialized",
        2 => c"Invalid Argument",
        3 => c"Not Supported",
        4 => c"Insufficient Permissions",
        5 => c"Already Initialized",
        6 => c"Not Found",
        7 => c"Insufficient Size",
        8 => c"Insufficient External Power",
        9 => c"Driver Not Loaded",
        10 => c"Timeout",
        11 => c"Interrupt Request Issue",
        12 => c"NVML Shared Library Not Found",
        13 => c"Function Not Found",
        14 => c"Corrupted infoROM",
        15 => c"GPU is lost",
        16 => c"GPU requires reset",
        17 => c"GPU access blocked by the operating system",
        18 => c"Driver/library version mismatch",
        19 => c"In use by another client",
        20 => c"Insufficient Memory",
        21 => c"No data",
        22 => c"vGPU ECC not supported",
        23 => c"Insufficient Resources",
        24 => c"Invalid Frequency",
        25 => c"Argument version mismatch",
        26 => c"Requested functionality has been deprecated",
        27 => c"System is not in ready state",
        28 => c"No supported GPUs were found",
        29 => c"Resource not in correct state to perform requested operation",
        30 => c"Reset type is not supported for given device",
        _ => c"Unknown Error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        assert_eq!(NvmlError::check(0), Ok(()));
        assert_eq!(NvmlError::check(15), Err(NvmlError::GPU_IS_LOST));
        assert_eq!(to_return(Err(NvmlError::NOT_FOUND)).0, 6);
        assert_eq!(to_return(Ok(())).0, 0);
    }

    #[test]
    fn strings_are_bounded() {
        let mut buf = [7 as c_char; 8];
        // SAFETY: the buffer holds 8 bytes.
        let r = unsafe { write_str(buf.as_mut_ptr(), 8, b"12345678") };
        assert_eq!(r, Err(NvmlError::INSUFFICIENT_SIZE));
        assert_eq!(buf[0], 7, "nothing written");
        // SAFETY: as above.
        unsafe { write_str(buf.as_mut_ptr(), 8, b"1234567") }.expect("fits with its NUL");
        assert_eq!(buf[7], 0);
        // SAFETY: NULL is refused before any write.
        let r = unsafe { write_str(std::ptr::null_mut(), 8, b"x") };
        assert_eq!(r, Err(NvmlError::INVALID_ARGUMENT));
    }

    #[test]
    fn error_strings() {
        assert_eq!(error_string(0), c"Success");
        assert_eq!(error_string(15), c"GPU is lost");
        // As the real library of driver 580 words them.
        assert_eq!(
            error_string(26),
            c"Requested functionality has been deprecated"
        );
        assert_eq!(
            error_string(30),
            c"Reset type is not supported for given device"
        );
        assert_eq!(error_string(12345), c"Unknown Error");
    }
}
