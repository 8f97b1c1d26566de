//! External memory (`crate::external`): the exports the worker calls.

use crate::cu::{
    CUdeviceptr, CUexternalMemory, CUresult, CUDA_EXTERNAL_MEMORY_BUFFER_DESC,
    CUDA_EXTERNAL_MEMORY_HANDLE_DESC,
};
use crate::error::{err, Res};
use crate::ffi::{handle, key, run, Out};
use crate::{external, state};

/// A descriptor the caller passes by pointer, copied out.
///
/// # Safety
/// `p` must be NULL or valid for a read of a `T`.
unsafe fn read<T: Copy>(p: *const T, what: &str) -> Res<T> {
    if p.is_null() {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{what} is NULL"),
        );
    }
    // SAFETY: non-NULL, and valid for a read by this function's contract.
    Ok(unsafe { p.read_unaligned() })
}

/// `cuImportExternalMemory`.
///
/// # Safety
/// `out` must be NULL or valid for writes, `desc` NULL or valid for reads.
#[no_mangle]
pub unsafe extern "C" fn cuImportExternalMemory(
    out: *mut CUexternalMemory,
    desc: *const CUDA_EXTERNAL_MEMORY_HANDLE_DESC,
) -> CUresult {
    run("cuImportExternalMemory", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(out, "extMem_out") }?;
        // SAFETY: as above.
        let d = unsafe { read(desc, "memHandleDesc") }?;
        // SAFETY: the union's `fd` member; checked against the type in the model.
        let fd = unsafe { d.handle.fd };
        let k = external::import(&mut sim.lock(), d.type_.0, fd, d.size, d.flags)?;
        out.write(handle(k));
        Ok(())
    })
}

/// `cuExternalMemoryGetMappedBuffer`.
///
/// # Safety
/// `dptr` must be NULL or valid for writes, `desc` NULL or valid for reads.
#[no_mangle]
pub unsafe extern "C" fn cuExternalMemoryGetMappedBuffer(
    dptr: *mut CUdeviceptr,
    mem: CUexternalMemory,
    desc: *const CUDA_EXTERNAL_MEMORY_BUFFER_DESC,
) -> CUresult {
    run("cuExternalMemoryGetMappedBuffer", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(dptr, "devPtr") }?;
        // SAFETY: as above.
        let d = unsafe { read(desc, "bufferDesc") }?;
        let budget = sim.cfg.memory_bytes;
        let mut st = sim.lock();
        out.write(external::mapped_buffer(
            &mut st,
            budget,
            key(mem),
            d.offset,
            d.size,
            d.flags,
        )?);
        Ok(())
    })
}

/// `cuDestroyExternalMemory`.
#[no_mangle]
pub extern "C" fn cuDestroyExternalMemory(mem: CUexternalMemory) -> CUresult {
    run("cuDestroyExternalMemory", || {
        external::destroy(&mut state::sim()?.lock(), key(mem))
    })
}
