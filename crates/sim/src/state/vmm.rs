//! Virtual memory management: address reservations, physical allocations and the
//! mappings between them.

use std::collections::{BTreeMap, HashMap};

use super::memory::Allocation;

/// First reserved address: above every user-space host address of x86-64 and AArch64
/// (47 or 48 bits), so a reservation never collides with a host or `cuMemAlloc` block.
const FIRST_VA: u64 = 1 << 48;

/// A physical allocation made by `cuMemCreate`.
#[derive(Debug)]
pub(crate) struct Physical {
    pub block: Allocation,
    /// The `CUmemAllocationProp` it was created with, as its bytes.
    pub prop: [u8; 32],
    /// `cuMemCreate` and `cuMemRetainAllocationHandle` add one, `cuMemRelease` takes
    /// one; at 0 the handle is gone, and the memory with it once nothing maps it.
    pub refs: u32,
    /// Imported from another process (`cuMemImportFromShareableHandle`): its memory is
    /// charged to the exporter's device budget, not this one's.
    pub imported: bool,
}

/// One `cuMemMap`: `size` bytes of physical allocation `handle` from `offset`.
#[derive(Debug, Clone)]
pub(crate) struct Mapping {
    pub size: u64,
    pub handle: u64,
    pub offset: u64,
    /// Access flags by device ordinal (`CUmemAccess_flags`), as `cuMemSetAccess` set them.
    pub access: Vec<(i32, u32)>,
    /// A buffer id, unique over the process's life (`CU_POINTER_ATTRIBUTE_BUFFER_ID`).
    pub buffer_id: u64,
}

impl Mapping {
    /// The flags set for `device`: `CU_MEM_ACCESS_FLAGS_PROT_NONE` (0) until set.
    pub fn flags(&self, device: i32) -> u32 {
        self.access
            .iter()
            .find(|(d, _)| *d == device)
            .map_or(0, |&(_, f)| f)
    }

    /// Whether any device may read it.
    pub fn accessible(&self) -> bool {
        self.access.iter().any(|&(_, f)| f != 0)
    }
}

#[derive(Debug)]
pub(crate) struct Vmm {
    next_va: u64,
    /// Reservations: base → size.
    pub reserved: BTreeMap<u64, u64>,
    /// Physical allocations by handle value.
    pub physical: HashMap<u64, Physical>,
    /// Mappings by base address.
    pub mappings: BTreeMap<u64, Mapping>,
}

impl Default for Vmm {
    fn default() -> Self {
        Self {
            next_va: FIRST_VA,
            reserved: BTreeMap::new(),
            physical: HashMap::new(),
            mappings: BTreeMap::new(),
        }
    }
}

impl Vmm {
    /// A fresh address range of `size` bytes aligned to `align` (a power of two); never
    /// reused. `None` when the simulated address space is spent.
    pub fn carve(&mut self, size: u64, align: u64) -> Option<u64> {
        let base = self.next_va.checked_next_multiple_of(align)?;
        self.next_va = base.checked_add(size)?;
        Some(base)
    }

    /// The reservation holding all of `[ptr, ptr + len)`: (base, size).
    pub fn reservation(&self, ptr: u64, len: u64) -> Option<(u64, u64)> {
        let (&base, &size) = self.reserved.range(..=ptr).next_back()?;
        let end = ptr.checked_add(len)?;
        (end <= base + size).then_some((base, size))
    }

    /// The mapping containing `addr`: (base, mapping).
    pub fn mapping(&self, addr: u64) -> Option<(u64, &Mapping)> {
        let (&base, m) = self.mappings.range(..=addr).next_back()?;
        (addr - base < m.size).then_some((base, m))
    }

    /// The mappings overlapping `[ptr, end)`, by base.
    pub fn overlapping(&self, ptr: u64, end: u64) -> Vec<u64> {
        let first = self.mapping(ptr).map_or(ptr, |(b, _)| b);
        self.mappings
            .range(first..end)
            .filter(|(&b, m)| b + m.size > ptr)
            .map(|(&b, _)| b)
            .collect()
    }

    /// Whether `[ptr, end)` is exactly a run of whole, adjacent mappings.
    pub fn whole_mappings(&self, ptr: u64, end: u64) -> bool {
        let mut at = ptr;
        while at < end {
            match self.mappings.get(&at) {
                Some(m) => at += m.size,
                None => return false,
            }
        }
        at == end
    }

    /// Whether physical allocation `handle` is still mapped anywhere.
    pub fn mapped(&self, handle: u64) -> bool {
        self.mappings.values().any(|m| m.handle == handle)
    }
}
