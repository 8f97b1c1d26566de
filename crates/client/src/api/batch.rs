//! Batches of linear copies (`cuMemcpyBatchAsync`): the batch and every
//! device side are checked first, as the driver checks them before any copy
//! starts, then each copy is posted on the stream in order as
//! `cuMemcpyAsync` posts one, so the worker checks every device side against
//! the session's allocations and host sides travel as for a single copy.
//! The attributes only hint how the driver may order and route the copies;
//! the copies run in stream order, which every attribute allows.

use vgpu_abi::types::{CUdeviceptr, CUmemcpyAttributes, CUmemcpySrcAccessOrder, CUstream};

use super::memory::{self, Sync};
use crate::edge::{CuError, CuResult};
use crate::runtime::runtime;

/// `CU_STREAM_LEGACY`: a batch may not run on the legacy default stream.
const STREAM_LEGACY: u64 = 1;

/// Reads element `i` of an application array.
///
/// # Safety
/// `p` must be non-NULL and hold more than `i` elements.
unsafe fn at<T: Copy>(p: *const T, i: usize) -> T {
    // SAFETY: forwarded from this function's contract.
    unsafe { p.add(i).read_unaligned() }
}

/// `cuMemcpyBatchAsync` (`fail_idx` Some) and `cuMemcpyBatchAsync_v2`, on
/// stream id `sid`. On failure `*fail_idx` is the copy that failed, or
/// `usize::MAX` when the batch as a whole was refused.
///
/// # Safety
/// The arrays must be NULL or hold `count` (`num_attrs`) elements, and each
/// copy's host side, if any, `sizes[i]` bytes.
#[allow(clippy::too_many_arguments)]
pub unsafe fn memcpy_batch(
    dsts: *const CUdeviceptr,
    srcs: *const CUdeviceptr,
    sizes: *const usize,
    count: usize,
    attrs: *const CUmemcpyAttributes,
    attr_idxs: *const usize,
    num_attrs: usize,
    fail_idx: Option<*mut usize>,
    sid: u64,
) -> CuResult<()> {
    runtime().session()?;
    let fail = |i: usize| {
        if let Some(p) = fail_idx.filter(|p| !p.is_null()) {
            // SAFETY: non-NULL; the application's out-pointer.
            unsafe { p.write_unaligned(i) };
        }
    };
    // SAFETY: forwarded from this function's contract.
    let checked = unsafe { check(dsts, srcs, sizes, count, attrs, attr_idxs, num_attrs, sid) };
    if let Err(e) = checked {
        fail(usize::MAX);
        return Err(e);
    }
    // Every device side first, as the driver checks the batch before it
    // starts any copy: a side outside the session's memory fails its copy.
    {
        let o = runtime().session()?.objects();
        for i in 0..count {
            // SAFETY: `i < count` elements of each array, checked non-NULL.
            let (d, s, n) = unsafe { (at(dsts, i), at(srcs, i), at(sizes, i)) };
            let inside = |p: CUdeviceptr| !o.is_device(p) || o.range_ok(p, n as u64);
            if !inside(d) || !inside(s) {
                drop(o);
                fail(i);
                return Err(CuError::INVALID_VALUE);
            }
        }
    }
    for i in 0..count {
        // SAFETY: `i < count` elements of each array, checked non-NULL.
        let (d, s, n) = unsafe { (at(dsts, i), at(srcs, i), at(sizes, i)) };
        // SAFETY: the application promises each host side holds `n` bytes.
        if let Err(e) = unsafe { memory::unified(d, s, n, Sync::Stream(sid)) } {
            fail(i);
            return Err(e);
        }
    }
    Ok(())
}

/// What the driver refuses of a batch as a whole: no copies, missing
/// arrays, attribute indices that do not start at 0 or do not increase, an
/// attribute without a source access order, or the legacy default stream.
///
/// # Safety
/// As for [`memcpy_batch`].
#[allow(clippy::too_many_arguments)]
unsafe fn check(
    dsts: *const CUdeviceptr,
    srcs: *const CUdeviceptr,
    sizes: *const usize,
    count: usize,
    attrs: *const CUmemcpyAttributes,
    attr_idxs: *const usize,
    num_attrs: usize,
    sid: u64,
) -> CuResult<()> {
    let bad = Err(CuError::INVALID_VALUE);
    if count == 0 || dsts.is_null() || srcs.is_null() || sizes.is_null() {
        return bad;
    }
    if num_attrs == 0 || num_attrs > count || attrs.is_null() || attr_idxs.is_null() {
        return bad;
    }
    if sid == 0 || sid == STREAM_LEGACY {
        return bad;
    }
    let mut last = None;
    for k in 0..num_attrs {
        // SAFETY: `k < num_attrs` elements of each, checked non-NULL.
        let (idx, a) = unsafe { (at(attr_idxs, k), at(attrs, k)) };
        let follows = match last {
            None => idx == 0,
            Some(prev) => idx > prev,
        };
        let order = a.srcAccessOrder.0;
        let known = order > CUmemcpySrcAccessOrder::CU_MEMCPY_SRC_ACCESS_ORDER_INVALID.0
            && order < CUmemcpySrcAccessOrder::CU_MEMCPY_SRC_ACCESS_ORDER_MAX.0;
        if !follows || idx >= count || !known {
            return bad;
        }
        last = Some(idx);
    }
    Ok(())
}

/// The stream id of a batch's stream (`per_thread`: the `_ptsz` forms).
pub fn stream_of(s: CUstream, per_thread: bool) -> u64 {
    if per_thread {
        super::stream::id_ptsz(s)
    } else {
        super::stream::id(s)
    }
}
