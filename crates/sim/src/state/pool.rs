//! Memory pools: each pool's device, properties, attributes, usage counters and peer
//! access; every device's default and current pool; and the pool each stream-ordered
//! allocation came from.

use std::collections::HashMap;

/// One memory pool.
#[derive(Debug)]
pub(crate) struct Pool {
    pub device: usize,
    /// The device's default pool, which cannot be destroyed.
    pub default: bool,
    /// `CUmemPoolProps::maxSize`; 0 is no limit but the device's memory.
    pub max_size: u64,
    /// `CU_MEMPOOL_ATTR_REUSE_*` (attributes 1 to 3), each 0 or 1.
    pub reuse: [i32; 3],
    pub release_threshold: u64,
    /// Bytes of live allocations, and their high watermark.
    pub used: u64,
    pub used_high: u64,
    /// Bytes the pool holds (live allocations and freed memory kept back), and their high
    /// watermark.
    pub reserved: u64,
    pub reserved_high: u64,
    /// Access of other devices by ordinal (`CUmemAccess_flags`); absent is none. The
    /// pool's own device always has read-write access.
    pub access: HashMap<usize, u32>,
    /// Created with POSIX file descriptors among its handle types: it may be exported.
    pub shareable: bool,
    /// Imported from another process: the tag of the exporter's pool.
    pub imported: Option<u64>,
}

impl Pool {
    /// A pool on `device` with the driver's defaults: every reuse policy enabled, a
    /// release threshold of 0, nothing used or reserved.
    pub fn new(device: usize, default: bool, max_size: u64) -> Self {
        Self {
            device,
            default,
            max_size,
            reuse: [1; 3],
            release_threshold: 0,
            used: 0,
            used_high: 0,
            reserved: 0,
            reserved_high: 0,
            access: HashMap::new(),
            shareable: false,
            imported: None,
        }
    }

    /// Counts an allocation of `size` bytes.
    pub fn take(&mut self, size: u64) {
        self.used += size;
        self.used_high = self.used_high.max(self.used);
        // Freed memory kept back is used first.
        self.reserved = self.reserved.max(self.used);
        self.reserved_high = self.reserved_high.max(self.reserved);
    }

    /// Counts the free of `size` bytes: the memory stays reserved up to the release
    /// threshold (streams are always idle, so the release that the driver does at the
    /// next synchronization is due at once).
    pub fn give_back(&mut self, size: u64) {
        self.used -= size.min(self.used);
        self.reserved = self.reserved.min(self.used.max(self.release_threshold));
    }

    /// `cuMemPoolTrimTo`: releases reserved memory not in use until at most
    /// `keep` bytes are held.
    pub fn trim(&mut self, keep: u64) {
        self.reserved = self.used.max(self.reserved.min(keep));
    }
}

/// Every pool, by handle.
#[derive(Debug, Default)]
pub(crate) struct Pools {
    pub pools: HashMap<usize, Pool>,
    /// Per-device default pool, minted on first use.
    pub default: HashMap<usize, usize>,
    /// Per-device current pool, when set to other than the default.
    pub current: HashMap<usize, usize>,
    /// Base of each live stream-ordered allocation -> (pool, bytes). The pool may
    /// have been destroyed since: its allocations stay live.
    pub origin: HashMap<u64, (usize, u64)>,
}
