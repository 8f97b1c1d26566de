//! Memory pools and stream-ordered allocation (`cuMemAllocAsync`,
//! `cuMemAllocFromPoolAsync`, `cuMemFreeAsync`). Streams run their work at enqueue time,
//! so a stream-ordered allocation or free takes effect at once; what stays stream-ordered
//! is the checking: the stream must be usable, and the allocation is made in the
//! stream's context, from the device's current pool or the pool named.
//!
//! Pools follow the driver: each device has a default pool (never destroyed) that is its
//! current pool until another is set; destroying a pool leaves its outstanding
//! allocations live, and a device whose current pool it was returns to its default.
//! Bad pools, attributes and locations are `CUDA_ERROR_INVALID_VALUE`, as the driver
//! documents for every pool call.

use crate::cu::{CUdeviceptr, CUresult};
use crate::error::{err, Res};
use crate::memory;
use crate::state::pool::Pool;
use crate::state::State;
use crate::stream;

/// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`, the only shareable handle type on Linux.
const HANDLE_POSIX_FD: u32 = 1;
/// `CU_MEM_ACCESS_FLAGS_PROT_NONE` and `_PROT_READWRITE`.
const ACCESS_NONE: u32 = 0;
const ACCESS_READWRITE: u32 = 3;

/// The pool behind handle `key`, or `CUDA_ERROR_INVALID_VALUE` if it is not a live pool.
pub(crate) fn live(st: &State, key: usize) -> Res<&Pool> {
    match st.ext.pools.pools.get(&key) {
        Some(p) => Ok(p),
        None => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{key:#x} is not a live memory pool"),
        ),
    }
}

pub(crate) fn live_mut(st: &mut State, key: usize) -> Res<&mut Pool> {
    match st.ext.pools.pools.get_mut(&key) {
        Some(p) => Ok(p),
        None => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{key:#x} is not a live memory pool"),
        ),
    }
}

/// Device `device`'s default pool, made on first use.
pub(crate) fn default_pool(st: &mut State, device: usize) -> usize {
    if let Some(&p) = st.ext.pools.default.get(&device) {
        return p;
    }
    let p = st.mint();
    st.ext.pools.pools.insert(p, Pool::new(device, true, 0));
    st.ext.pools.default.insert(device, p);
    p
}

/// Device `device`'s current pool.
pub(crate) fn current_pool(st: &mut State, device: usize) -> usize {
    match st.ext.pools.current.get(&device) {
        Some(&p) => p,
        None => default_pool(st, device),
    }
}

/// `cuDeviceSetMemPool`: `pool` must be a live pool of `device`.
pub(crate) fn set_current(st: &mut State, device: usize, pool: usize) -> Res<()> {
    if live(st, pool)?.device != device {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("pool {pool:#x} is not a pool of device {device}"),
        );
    }
    st.ext.pools.current.insert(device, pool);
    Ok(())
}

/// `cuMemPoolCreate` of a device pool, its properties checked by the caller but for
/// the handle types (POSIX file descriptors may be asked for, and then the pool
/// exports: `crate::pool_share`).
pub(crate) fn create(
    st: &mut State,
    device: usize,
    max_size: u64,
    handle_types: u32,
) -> Res<usize> {
    if handle_types & !HANDLE_POSIX_FD != 0 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("handle types {handle_types:#x}: only POSIX file descriptors exist here"),
        );
    }
    let p = st.mint();
    let pool = Pool {
        shareable: handle_types & HANDLE_POSIX_FD != 0,
        ..Pool::new(device, false, max_size)
    };
    st.ext.pools.pools.insert(p, pool);
    Ok(p)
}

/// `cuMemPoolDestroy`: not a default pool; its allocations stay live.
pub(crate) fn destroy(st: &mut State, pool: usize) -> Res<()> {
    let p = live(st, pool)?;
    if p.default {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "a device's default memory pool cannot be destroyed",
        );
    }
    let device = p.device;
    st.ext.pools.pools.remove(&pool);
    st.ext.ipc.pools.remove(&pool);
    if st.ext.pools.current.get(&device) == Some(&pool) {
        st.ext.pools.current.remove(&device);
    }
    Ok(())
}

/// `cuMemPoolGetAttribute`: the value, widened to 64 bits.
pub(crate) fn attribute(st: &State, pool: usize, attr: u32) -> Res<u64> {
    let p = live(st, pool)?;
    Ok(match attr {
        1..=3 => u64::from(p.reuse[attr as usize - 1].unsigned_abs()),
        4 => p.release_threshold,
        5 => p.reserved,
        6 => p.reserved_high,
        7 => p.used,
        8 => p.used_high,
        _ => return bad_attribute(attr),
    })
}

fn bad_attribute<T>(attr: u32) -> Res<T> {
    err(
        CUresult::CUDA_ERROR_INVALID_VALUE,
        format!("{attr} is not a CUmemPool_attribute"),
    )
}

/// `cuMemPoolSetAttribute` with the value read at its size: reuse policies are on or
/// off, the watermarks can only be reset (to zero, which sets them to the current
/// value), the current counters are read-only.
pub(crate) fn set_attribute(st: &mut State, pool: usize, attr: u32, value: u64) -> Res<()> {
    let p = live_mut(st, pool)?;
    let reset = |what: &str| -> Res<()> {
        if value == 0 {
            Ok(())
        } else {
            err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("{what} can only be reset, to 0, not set to {value}"),
            )
        }
    };
    match attr {
        1..=3 => p.reuse[attr as usize - 1] = i32::from(value != 0),
        4 => {
            p.release_threshold = value;
            // Memory above the new threshold is released at the next synchronization,
            // which is now.
            p.reserved = p.reserved.min(p.used.max(value));
        }
        6 => {
            reset("CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH")?;
            p.reserved_high = p.reserved;
        }
        8 => {
            reset("CU_MEMPOOL_ATTR_USED_MEM_HIGH")?;
            p.used_high = p.used;
        }
        5 | 7 => {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("pool attribute {attr} is read-only"),
            )
        }
        _ => return bad_attribute(attr),
    }
    Ok(())
}

/// `cuMemPoolTrimTo`.
pub(crate) fn trim(st: &mut State, pool: usize, keep: u64) -> Res<()> {
    live_mut(st, pool)?.trim(keep);
    Ok(())
}

/// `cuMemPoolSetAccess` of each (device, flags): the pool's own device keeps read-write
/// access; another may get read-write or none. Every entry is checked before any is
/// applied, so a refused list changes nothing.
pub(crate) fn set_access(st: &mut State, pool: usize, wanted: &[(usize, u32)]) -> Res<()> {
    let p = live_mut(st, pool)?;
    for &(device, flags) in wanted {
        let fine = if device == p.device {
            flags == ACCESS_READWRITE
        } else {
            flags == ACCESS_READWRITE || flags == ACCESS_NONE
        };
        if !fine {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!(
                    "access {flags} of device {device} to a pool of device {}",
                    p.device
                ),
            );
        }
    }
    for &(device, flags) in wanted {
        if device != p.device {
            p.access.insert(device, flags);
        }
    }
    Ok(())
}

/// `cuMemPoolGetAccess` of device `device`.
pub(crate) fn access(st: &State, pool: usize, device: usize) -> Res<u32> {
    let p = live(st, pool)?;
    if device == p.device {
        return Ok(ACCESS_READWRITE);
    }
    Ok(p.access.get(&device).copied().unwrap_or(ACCESS_NONE))
}

/// A stream-ordered allocation of `size` bytes from `pool` (the current pool of the
/// stream's device when `None`) in the context of stream `stream_key`.
pub(crate) fn alloc(
    st: &mut State,
    budget: u64,
    size: usize,
    pool: Option<usize>,
    stream_key: usize,
) -> Res<CUdeviceptr> {
    let ctx = stream::usable(st, stream_key)?;
    let pool = match pool {
        Some(p) => {
            live(st, p)?;
            p
        }
        None => {
            let device = crate::context::live(st, ctx)?.device;
            current_pool(st, device)
        }
    };
    let p = live(st, pool)?;
    if p.max_size != 0 && p.used.saturating_add(size as u64) > p.max_size {
        return err(
            CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            format!(
                "{size} bytes would pass the pool's maximum of {}",
                p.max_size
            ),
        );
    }
    let base = memory::alloc(st, budget, ctx, size)?;
    st.ext.facts.mark_stream_ordered(base);
    live_mut(st, pool)?.take(size as u64);
    st.ext.pools.origin.insert(base, (pool, size as u64));
    Ok(base)
}

/// Counts the free of the allocation at `base` against its pool, if it came from one
/// that still lives.
pub(crate) fn released(st: &mut State, base: u64) {
    if let Some((pool, size)) = st.ext.pools.origin.remove(&base) {
        if let Some(p) = st.ext.pools.pools.get_mut(&pool) {
            p.give_back(size);
        }
    }
}

/// The pool the allocation at `base` came from, if it was stream-ordered.
pub(crate) fn origin(st: &State, base: u64) -> Option<usize> {
    st.ext.pools.origin.get(&base).map(|&(p, _)| p)
}

/// `cuMemFreeAsync`: `p` must be the base of a live allocation (NULL included: unlike
/// `cuMemFree`, the stream-ordered free has nothing to do for NULL and says so).
pub(crate) fn free(st: &mut State, p: CUdeviceptr, stream_key: usize) -> Res<()> {
    stream::usable(st, stream_key)?;
    if p == 0 {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "cuMemFreeAsync(NULL)");
    }
    memory::free(st, p)
}
