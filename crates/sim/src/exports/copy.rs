//! `cuMemcpy2D_v2` and `cuMemcpy2DAsync_v2`.

use crate::context;
use crate::copy2d;
use crate::cu::{CUresult, CUstream, CUDA_MEMCPY2D};
use crate::error::{err, Res};
use crate::ffi::{key, run};
use crate::state;
use crate::stream;

/// Reads the descriptor and runs the copy on the current context (`stream == None`) or on
/// a stream.
///
/// # Safety
/// `p` must be NULL or a readable descriptor whose host sides hold the region.
unsafe fn copy_on(name: &str, p: *const CUDA_MEMCPY2D, stream_h: Option<CUstream>) -> CUresult {
    run(name, || {
        let sim = state::sim()?;
        let st = sim.lock();
        match stream_h {
            None => context::current_usable(&st).map(drop)?,
            Some(h) => stream::usable(&st, key(h)).map(drop)?,
        }
        // SAFETY: forwarded from this function's contract.
        let c = unsafe { read(p) }?;
        // SAFETY: forwarded from this function's contract.
        unsafe { copy2d::copy(&st, &c) }
    })
}

/// # Safety
/// `p` must be NULL or readable.
unsafe fn read(p: *const CUDA_MEMCPY2D) -> Res<CUDA_MEMCPY2D> {
    if p.is_null() {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "pCopy is NULL");
    }
    // SAFETY: non-NULL and readable by the contract.
    Ok(unsafe { p.read_unaligned() })
}

/// `cuMemcpy2D_v2`: host, device and unified sides; CUDA arrays are not simulated. Every
/// bound is checked before a byte moves.
///
/// # Safety
/// `p_copy` must be NULL or a readable descriptor whose host sides hold the region.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpy2D_v2(p_copy: *const CUDA_MEMCPY2D) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe { copy_on("cuMemcpy2D_v2", p_copy, None) }
}

/// `cuMemcpy2DAsync_v2`: runs at once, in stream order.
///
/// # Safety
/// As for [`cuMemcpy2D_v2`].
#[no_mangle]
pub unsafe extern "C" fn cuMemcpy2DAsync_v2(
    p_copy: *const CUDA_MEMCPY2D,
    h_stream: CUstream,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe { copy_on("cuMemcpy2DAsync_v2", p_copy, Some(h_stream)) }
}
