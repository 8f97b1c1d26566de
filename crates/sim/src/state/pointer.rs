//! Pointer facts for `cuPointerGetAttribute(s)`: what is known about live allocations
//! beyond the allocation table (buffer ids, stream-ordered origin).

use std::collections::{HashMap, HashSet};

/// Facts about live allocations that the allocation table does not hold.
#[derive(Debug, Default)]
pub(crate) struct Facts {
    next_id: u64,
    /// Base -> process-wide unique buffer id, handed out on first query.
    ids: HashMap<u64, u64>,
    /// Bases of allocations made by `cuMemAllocAsync`.
    stream_ordered: HashSet<u64>,
    /// Bases of allocations whose `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS` is set.
    sync_memops: HashSet<u64>,
}

impl Facts {
    /// Keeps the facts of allocations for which `live` is true.
    pub fn retain(&mut self, live: impl Fn(u64) -> bool) {
        self.ids.retain(|b, _| live(*b));
        self.stream_ordered.retain(|b| live(*b));
        self.sync_memops.retain(|b| live(*b));
    }

    /// Forgets a freed allocation.
    pub fn forget(&mut self, base: u64) {
        self.ids.remove(&base);
        self.stream_ordered.remove(&base);
        self.sync_memops.remove(&base);
    }

    /// Sets or clears `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS` of the allocation at `base`.
    pub fn set_sync_memops(&mut self, base: u64, on: bool) {
        if on {
            self.sync_memops.insert(base);
        } else {
            self.sync_memops.remove(&base);
        }
    }

    /// Whether `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS` is set on the allocation at `base`.
    pub fn sync_memops(&self, base: u64) -> bool {
        self.sync_memops.contains(&base)
    }

    /// Records that the allocation at `base` came from the stream-ordered allocator.
    pub fn mark_stream_ordered(&mut self, base: u64) {
        self.stream_ordered.insert(base);
    }

    /// Whether the allocation at `base` came from the stream-ordered allocator.
    pub fn is_stream_ordered(&self, base: u64) -> bool {
        self.stream_ordered.contains(&base)
    }

    /// The allocation's process-wide unique buffer id, handed out on first query.
    pub fn id(&mut self, base: u64) -> u64 {
        let next = &mut self.next_id;
        *self.ids.entry(base).or_insert_with(|| {
            *next += 1;
            *next
        })
    }
}
