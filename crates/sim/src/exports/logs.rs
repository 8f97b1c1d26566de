//! Driver logs (`cuLogs*`) over [`crate::logs`].

use std::ffi::{c_char, c_uint};

use crate::cu::{CUlogIterator, CUresult};
use crate::error::{err, Res};
use crate::ffi::{read_c_str, run, Out};
use crate::logs::MAX_BYTES;
use crate::state;

fn no_flags(flags: c_uint) -> Res<()> {
    if flags != 0 {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "flags must be 0");
    }
    Ok(())
}

/// `cuLogsCurrent`. Driver 580 takes any flags (they are reserved).
pub(crate) fn logs_current(iterator: Out<CUlogIterator>, _flags: c_uint) -> Res<()> {
    let sim = state::sim()?;
    iterator.write(sim.lock().ext.logs.current());
    Ok(())
}

/// The lines from `*iterator` (all when NULL), advancing it.
///
/// # Safety
/// `iterator` must be NULL or valid for a read and a write.
unsafe fn take(iterator: *mut CUlogIterator, cap: usize) -> Res<String> {
    let sim = state::sim()?;
    let st = sim.lock();
    // SAFETY: forwarded from this function's contract.
    let from = (!iterator.is_null()).then(|| unsafe { iterator.read_unaligned() });
    let (text, after) = st.ext.logs.dump(from, cap)?;
    if !iterator.is_null() {
        // SAFETY: as above.
        unsafe { iterator.write_unaligned(after) };
    }
    Ok(text)
}

/// `cuLogsDumpToMemory`: whole lines that fit with a NUL; `*size` is the
/// bytes written without it (0, with `CUDA_ERROR_INVALID_VALUE`, when no
/// line fits).
///
/// # Safety
/// `iterator` NULL or valid; `buffer` NULL or valid for `*size` bytes;
/// `size` NULL or valid for a read and a write.
#[no_mangle]
pub unsafe extern "C" fn cuLogsDumpToMemory(
    iterator: *mut CUlogIterator,
    buffer: *mut c_char,
    size: *mut usize,
    flags: c_uint,
) -> CUresult {
    run("cuLogsDumpToMemory", || {
        state::sim()?;
        no_flags(flags)?;
        if buffer.is_null() {
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "buffer cannot be NULL");
        }
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(size, "size") }?;
        // SAFETY: as above.
        let cap = unsafe { size.read_unaligned() };
        // SAFETY: as above.
        let text = match unsafe { take(iterator, cap) } {
            Ok(t) => t,
            Err(e) => {
                out.write(0);
                return Err(e);
            }
        };
        if cap > 0 {
            // SAFETY: `buffer` holds `cap > text.len()` bytes (`dump` left room for the NUL).
            unsafe {
                std::ptr::copy_nonoverlapping(text.as_ptr(), buffer.cast::<u8>(), text.len());
                buffer.add(text.len()).write(0);
            }
        }
        out.write(text.len());
        Ok(())
    })
}

/// `cuLogsDumpToFile`: the lines from `*iterator` (all when NULL) into
/// the file at `path`.
///
/// # Safety
/// `iterator` NULL or valid; `path` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cuLogsDumpToFile(
    iterator: *mut CUlogIterator,
    path: *const c_char,
    flags: c_uint,
) -> CUresult {
    run("cuLogsDumpToFile", || {
        state::sim()?;
        no_flags(flags)?;
        // SAFETY: forwarded from this function's contract.
        let path = unsafe { read_c_str(path, "pathToFile") }?
            .to_string_lossy()
            .into_owned();
        // SAFETY: as above.
        let text = unsafe { take(iterator, MAX_BYTES + 1) }?;
        std::fs::write(&path, text).or_else(|e| {
            err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("cannot write {path}: {e}"),
            )
        })
    })
}
