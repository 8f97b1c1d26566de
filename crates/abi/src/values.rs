//! Values passed through an untyped `void *` whose size depends on another
//! argument. The size rule of each such entry point is written here once, so
//! the client (which reads or writes the application's buffer), the worker
//! (which hands the driver a buffer of that size) and the simulated device
//! agree on it.

use crate::types::CUmemPool_attribute;

/// The size in bytes of the value of memory-pool attribute `attr`
/// (`cuMemPoolGetAttribute`, `cuMemPoolSetAttribute`), or `None` for a value
/// that is not a `CUmemPool_attribute` of CUDA 13.0.
///
/// | attribute | value type |
/// |---|---|
/// | `REUSE_FOLLOW_EVENT_DEPENDENCIES` (1), `REUSE_ALLOW_OPPORTUNISTIC` (2), `REUSE_ALLOW_INTERNAL_DEPENDENCIES` (3) | `int` |
/// | `RELEASE_THRESHOLD` (4), `RESERVED_MEM_CURRENT` (5), `RESERVED_MEM_HIGH` (6), `USED_MEM_CURRENT` (7), `USED_MEM_HIGH` (8) | `cuuint64_t` |
pub const fn mem_pool_attribute_size(attr: CUmemPool_attribute) -> Option<usize> {
    match attr.0 {
        1..=3 => Some(core::mem::size_of::<core::ffi::c_int>()),
        4..=8 => Some(core::mem::size_of::<crate::types::cuuint64_t>()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_attribute_sizes() {
        let size = |a| mem_pool_attribute_size(CUmemPool_attribute(a));
        assert_eq!(size(0), None);
        assert_eq!(
            size(CUmemPool_attribute::CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES.0),
            Some(4)
        );
        assert_eq!(
            size(CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD.0),
            Some(8)
        );
        assert_eq!(
            size(CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH.0),
            Some(8)
        );
        assert_eq!(size(9), None);
    }
}
