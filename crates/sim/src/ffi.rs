//! The FFI edge: panic containment, out-pointers, and handle <-> key conversions.

use std::ffi::{c_char, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};

use crate::cu::CUresult;
use crate::error::{err, Res};
use crate::state::log_enabled;
use vgpu_abi::errors;

/// Runs the body of export `name`, mapping its result to a `CUresult`. A panic becomes
/// `CUDA_ERROR_UNKNOWN`; with `VGPU_LOG` set each error is logged as one line.
pub(crate) fn run(name: &str, body: impl FnOnce() -> Res<()>) -> CUresult {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => CUresult::CUDA_SUCCESS,
        Ok(Err(e)) => {
            // The driver's error log (`cuLogs*`), once the simulator runs.
            if let Ok(sim) = crate::state::sim() {
                let logged = sim.lock().ext.logs.record(name, &e.why);
                logged.deliver();
            }
            if log_enabled() {
                eprintln!(
                    "vgpu-sim: {name} -> {}: {}",
                    errors::name(e.code).map_or("?".into(), CStr::to_string_lossy),
                    e.why
                );
            }
            e.code
        }
        Err(_) => {
            eprintln!("vgpu-sim: {name} panicked; returning CUDA_ERROR_UNKNOWN");
            CUresult::CUDA_ERROR_UNKNOWN
        }
    }
}

/// A checked, non-NULL out-pointer supplied by the caller.
pub(crate) struct Out<T>(NonNull<T>);

impl<T> Out<T> {
    /// Checks `p` for NULL (`CUDA_ERROR_INVALID_VALUE`).
    ///
    /// # Safety
    /// `p` must be NULL or valid for writes of one `T` (alignment not required) for as long
    /// as the returned `Out` lives.
    pub unsafe fn new(p: *mut T, what: &'static str) -> Res<Self> {
        match NonNull::new(p) {
            Some(p) => Ok(Self(p)),
            None => err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("{what} is NULL"),
            ),
        }
    }

    /// Like [`Out::new`], but NULL means "not wanted" and gives `None`.
    ///
    /// # Safety
    /// As for [`Out::new`].
    pub unsafe fn optional(p: *mut T) -> Option<Self> {
        NonNull::new(p).map(Self)
    }

    /// Stores `v` through the pointer.
    pub fn write(self, v: T) {
        // SAFETY: non-NULL was checked in `new`, and its contract makes the pointer valid
        // for an (unaligned) write of one `T`.
        unsafe { self.0.as_ptr().write_unaligned(v) }
    }
}

/// The table key behind a handle (`CUcontext`, `CUstream`, …). Never dereferenced.
pub(crate) fn key<T>(h: *mut T) -> usize {
    h.addr()
}

/// The handle for a table key: the key itself as a pointer without provenance.
pub(crate) fn handle<T>(key: usize) -> *mut T {
    ptr::without_provenance_mut(key)
}

/// A device address (`CUdeviceptr`) as a `usize`; the crate only builds for 64-bit targets.
#[allow(clippy::cast_possible_truncation)]
pub(crate) fn us(x: u64) -> usize {
    x as usize
}

/// Writes `s` as a NUL-terminated C string into a caller buffer of `len` bytes,
/// truncating as the driver does.
///
/// # Safety
/// `dst` must be NULL or valid for `len` bytes of writes.
pub(crate) unsafe fn write_c_str(dst: *mut c_char, len: c_int, s: &str) -> Res<()> {
    let Ok(len) = usize::try_from(len) else {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "negative buffer length");
    };
    if dst.is_null() || len == 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "string buffer is NULL or empty",
        );
    }
    let n = s.len().min(len - 1);
    // SAFETY: `n + 1 <= len` bytes are written, within the caller's buffer.
    unsafe {
        ptr::copy_nonoverlapping(s.as_ptr(), dst.cast::<u8>(), n);
        dst.add(n).write(0);
    }
    Ok(())
}

/// Reads a caller's NUL-terminated name.
///
/// # Safety
/// `p` must be NULL or point to a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn read_c_str<'a>(p: *const c_char, what: &'static str) -> Res<&'a CStr> {
    if p.is_null() {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{what} is NULL"),
        );
    }
    // SAFETY: non-NULL and NUL-terminated by the contract.
    Ok(unsafe { CStr::from_ptr(p) })
}

/// A NUL-terminated string the caller passes; NULL is `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
/// `p` must be NULL or point to a NUL-terminated string that outlives the call.
pub(crate) unsafe fn c_str<'a>(p: *const c_char, what: &'static str) -> Res<&'a CStr> {
    if p.is_null() {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{what} is NULL"),
        );
    }
    // SAFETY: non-NULL, and the caller promises a NUL-terminated string.
    Ok(unsafe { CStr::from_ptr(p) })
}
