//! `cuOccupancyMaxPotentialBlockSize(WithFlags)`: the block size that gives
//! a function the most resident threads per multiprocessor.
//!
//! The application's `blockSizeToDynamicSMemSize` callback is a function of
//! its own process, so the search runs here, as the driver runs it: each
//! candidate block size, from the largest the function and device allow
//! down in steps of the warp size, is asked of the worker's driver with
//! `cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags` (with the
//! callback's shared memory size for it); the first size that reaches the
//! most threads wins, and the search stops early once a size fills the
//! multiprocessor. Device attributes come from the session's snapshot and
//! the function's limit from `cuFuncGetAttribute`, so only the occupancy
//! queries travel.

use std::ffi::{c_int, c_uint};

use vgpu_abi::types::{CUdevice_attribute, CUfunction, CUfunction_attribute, CUoccupancyB2DSize};

use crate::edge::{non_null, write_out, CuError, CuResult};

/// One device attribute of the current context's device.
fn device_attribute(attr: CUdevice_attribute) -> CuResult<c_int> {
    let (mut dev, mut v) = (0, 0);
    // SAFETY: both out-pointers are live locals.
    unsafe {
        super::context::get_device(&mut dev)?;
        super::device::attribute(&mut v, attr, dev)?;
    }
    Ok(v)
}

/// Blocks of `block` threads with `smem` bytes of dynamic shared memory
/// that fit on one multiprocessor, by the worker's driver.
fn blocks_per_sm(f: CUfunction, block: c_int, smem: usize, flags: c_uint) -> CuResult<c_int> {
    let mut n = 0;
    // SAFETY: the out-pointer is a live local.
    unsafe {
        crate::generated::occupancy_max_active_blocks_per_multiprocessor_with_flags(
            &mut n, f, block, smem, flags,
        )?;
    }
    Ok(n)
}

/// `cuOccupancyMaxPotentialBlockSize` (`flags` 0) and
/// `cuOccupancyMaxPotentialBlockSizeWithFlags`.
///
/// # Safety
/// `min_grid` and `block_size` must be NULL or valid for writes;
/// `smem_of`, when set, must be safe to call with any block size.
pub unsafe fn max_potential_block_size(
    min_grid: *mut c_int,
    block_size: *mut c_int,
    f: CUfunction,
    smem_of: CUoccupancyB2DSize,
    smem: usize,
    limit: c_int,
    flags: c_uint,
) -> CuResult<()> {
    non_null(min_grid)?;
    non_null(block_size)?;
    super::module::function(f)?;
    let mut func_max = 0;
    // SAFETY: the out-pointer is a live local.
    unsafe {
        super::library::func_get_attribute(
            &mut func_max,
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            f,
        )?;
    }
    let device_max =
        device_attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?;
    let warp = device_attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?;
    let sm_threads =
        device_attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?;
    let sms = device_attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
    if warp <= 0 {
        return Err(CuError::UNKNOWN);
    }
    let mut cap = device_max.min(func_max);
    if limit > 0 {
        cap = cap.min(limit);
    }
    let (mut best_block, mut best_blocks, mut best_threads) = (0, 0, 0);
    let mut aligned = (cap + warp - 1) / warp * warp;
    while aligned > 0 {
        let block = cap.min(aligned);
        let dynamic = match smem_of {
            // SAFETY: the application's callback, which takes a block size.
            Some(cb) => unsafe { cb(block) },
            None => smem,
        };
        let blocks = blocks_per_sm(f, block, dynamic, flags)?;
        let threads = block.saturating_mul(blocks);
        if threads > best_threads {
            (best_block, best_blocks, best_threads) = (block, blocks, threads);
        }
        if best_threads == sm_threads {
            break;
        }
        aligned -= warp;
    }
    // SAFETY: checked non-NULL; the application's out-pointers.
    unsafe {
        write_out(min_grid, best_blocks.saturating_mul(sms))?;
        write_out(block_size, best_block)
    }
}
