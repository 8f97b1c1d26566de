//! `cuMemBatchDecompressAsync` and its `_ptsz` form (`crate::decompress`):
//! the exports the worker calls. The `_ptsz` form reads NULL as the
//! per-thread stream.

use std::ffi::c_uint;

use crate::cu::{CUmemDecompressParams, CUresult, CUstream};
use crate::error::err;
use crate::ffi::{key, run};
use crate::{decompress, state};

use super::stream::ptsz;

/// Runs a batch on stream `stream_key`, writing the error index of a
/// failure to `error_index` when it is not NULL.
///
/// # Safety
/// `params` must be NULL or hold `count` operations; `error_index` NULL or
/// writable.
unsafe fn batch_on(
    name: &str,
    stream_key: usize,
    params: *const CUmemDecompressParams,
    count: usize,
    flags: c_uint,
    error_index: *mut usize,
) -> CUresult {
    run(name, || {
        let sim = state::sim()?;
        if params.is_null() && count > 0 {
            if !error_index.is_null() {
                // SAFETY: non-NULL, writable by this function's contract.
                unsafe { error_index.write_unaligned(usize::MAX) };
            }
            return err(CUresult::CUDA_ERROR_INVALID_VALUE, "paramsArray is NULL");
        }
        let ops: Vec<CUmemDecompressParams> = (0..count)
            // SAFETY: `count` readable operations by this function's contract.
            .map(|i| unsafe { params.add(i).read_unaligned() })
            .collect();
        let st = sim.lock();
        decompress::batch(&st, stream_key, &ops, flags).map_err(|(e, i)| {
            if !error_index.is_null() {
                // SAFETY: non-NULL, writable by this function's contract.
                unsafe { error_index.write_unaligned(i) };
            }
            e
        })
    })
}

/// `cuMemBatchDecompressAsync`.
///
/// # Safety
/// `params` must be NULL or hold `count` operations; `error_index` NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn cuMemBatchDecompressAsync(
    params: *mut CUmemDecompressParams,
    count: usize,
    flags: c_uint,
    error_index: *mut usize,
    stream: CUstream,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        batch_on(
            "cuMemBatchDecompressAsync",
            key(stream),
            params,
            count,
            flags,
            error_index,
        )
    }
}

/// `cuMemBatchDecompressAsync_ptsz`.
///
/// # Safety
/// As for `cuMemBatchDecompressAsync`.
#[no_mangle]
pub unsafe extern "C" fn cuMemBatchDecompressAsync_ptsz(
    params: *mut CUmemDecompressParams,
    count: usize,
    flags: c_uint,
    error_index: *mut usize,
    stream: CUstream,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        batch_on(
            "cuMemBatchDecompressAsync_ptsz",
            ptsz(stream),
            params,
            count,
            flags,
            error_index,
        )
    }
}
