//! Stream-ordered allocation and stream capture queries.

use crate::cu::{CUdeviceptr, CUresult, CUstream};
use crate::ffi::{key, run, Out};
use crate::pool;
use crate::state;

/// `cuMemAllocAsync`: a zeroed, 256-byte aligned allocation in the stream's context, made
/// at once (every stream is always idle).
///
/// # Safety
/// `dptr` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemAllocAsync(
    dptr: *mut CUdeviceptr,
    bytesize: usize,
    h_stream: CUstream,
) -> CUresult {
    run("cuMemAllocAsync", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(dptr, "dptr") }?;
        let mut st = sim.lock();
        out.write(pool::alloc(
            &mut st,
            sim.cfg.memory_bytes,
            bytesize,
            key(h_stream),
        )?);
        Ok(())
    })
}

/// `cuMemFreeAsync`: frees at once; `dptr` must be the base of a live allocation.
#[no_mangle]
pub extern "C" fn cuMemFreeAsync(dptr: CUdeviceptr, h_stream: CUstream) -> CUresult {
    run("cuMemFreeAsync", || {
        pool::free(&mut state::sim()?.lock(), dptr, key(h_stream))
    })
}
