//! Memory pools. A pool handle is an id the worker minted (`cuMemPoolCreate`
//! and the calls that name a device's pools are generated from the remoting
//! table); the worker translates it, so a forged or destroyed pool gets the
//! driver's error there.
//!
//! Written here: the attribute calls, whose value travels through a `void *`
//! sized by the attribute (`vgpu_abi::values::mem_pool_attribute_size`), the
//! destruction, after which the worker forgets the id, and the stream-ordered
//! allocation from a pool, whose range joins the session's known device
//! memory as `cuMemAllocAsync`'s does.

use std::ffi::c_void;

use vgpu_abi::types::{CUdeviceptr, CUmemPool_attribute, CUmemoryPool};
use vgpu_abi::values::mem_pool_attribute_size;
use vgpu_proto::{pool_alloc_async, pool_destroy, pool_get_attribute, pool_set_attribute};
use zerocopy::little_endian::{U32, U64};

use crate::edge::{non_null, write_out, CuError, CuResult};
use crate::runtime::runtime;

/// The pool id the wire carries: the handle's value.
pub fn id(p: CUmemoryPool) -> u64 {
    p as usize as u64
}

/// The value's size for `attr`. An attribute outside CUDA 13.0's list has no
/// known size, so its value cannot be carried: the driver refuses such an
/// attribute with `CUDA_ERROR_INVALID_VALUE`, and so does the client.
fn value_size(attr: CUmemPool_attribute) -> CuResult<usize> {
    mem_pool_attribute_size(attr).ok_or(CuError::INVALID_VALUE)
}

/// `cuMemPoolDestroy`.
pub fn destroy(pool: u64) -> CuResult<()> {
    let s = runtime().session()?;
    let r = pool_destroy::Request {
        pool: U64::new(pool),
    };
    s.request(&r, &[])?;
    Ok(())
}

/// `cuMemPoolGetAttribute`: writes 4 bytes (`int`) or 8 (`cuuint64_t`).
///
/// # Safety
/// `value` must be NULL or valid for a write of the attribute's value type.
pub unsafe fn get_attribute(
    pool: u64,
    attr: CUmemPool_attribute,
    value: *mut c_void,
) -> CuResult<()> {
    let s = runtime().session()?;
    let size = value_size(attr)?;
    non_null(value)?;
    let r = pool_get_attribute::Request {
        pool: U64::new(pool),
        attr: U32::new(attr.0),
    };
    let (rep, _) = s.request(&r, &[])?;
    let v = rep.value.get();
    // SAFETY: checked non-NULL; the application's buffer holds the
    // attribute's value type, of `size` bytes.
    unsafe {
        if size == 4 {
            let narrow = u32::try_from(v).map_err(|_| CuError::UNKNOWN)?;
            write_out(value.cast::<u32>(), narrow)
        } else {
            write_out(value.cast::<u64>(), v)
        }
    }
}

/// `cuMemPoolSetAttribute`: reads 4 bytes (`int`) or 8 (`cuuint64_t`).
///
/// # Safety
/// `value` must be NULL or valid for a read of the attribute's value type.
pub unsafe fn set_attribute(
    pool: u64,
    attr: CUmemPool_attribute,
    value: *mut c_void,
) -> CuResult<()> {
    let s = runtime().session()?;
    let size = value_size(attr)?;
    non_null(value)?;
    // SAFETY: checked non-NULL; the application's buffer holds the
    // attribute's value type, of `size` bytes (alignment not assumed).
    let v = unsafe {
        if size == 4 {
            u64::from(value.cast::<u32>().read_unaligned())
        } else {
            value.cast::<u64>().read_unaligned()
        }
    };
    let r = pool_set_attribute::Request {
        pool: U64::new(pool),
        attr: U32::new(attr.0),
        value: U64::new(v),
    };
    s.request(&r, &[])?;
    Ok(())
}

/// `cuMemAllocFromPoolAsync`: stream-ordered allocation from `pool`.
///
/// # Safety
/// `dptr` must be NULL or valid for a write of its pointee.
pub unsafe fn alloc_async(
    dptr: *mut CUdeviceptr,
    size: usize,
    pool: u64,
    sid: u64,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(dptr)?;
    if size == 0 {
        return Err(CuError::INVALID_VALUE);
    }
    let r = pool_alloc_async::Request {
        bytes: U64::new(size as u64),
        pool: U64::new(pool),
        stream: U64::new(sid),
    };
    let (rep, _) = s.request(&r, &[])?;
    let p = rep.dptr.get();
    s.objects().device_ranges.insert(p, size as u64);
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(dptr, p) }
}
