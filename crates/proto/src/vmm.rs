//! Mapped device ranges (`cuMemMap`) and whether their access was set: what
//! the worker checks a copy or memset against, and what the client checks
//! before it posts one. One computation for both sides, so the client never
//! posts what the worker would refuse.

use std::collections::BTreeMap;

/// One mapping: its size, and whether `cuMemSetAccess` gave some device
/// read or read-write access to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mapping {
    size: u64,
    access: bool,
}

/// A session's mappings, by base address.
#[derive(Debug, Default, Clone)]
pub struct Mappings {
    by_base: BTreeMap<u64, Mapping>,
}

impl Mappings {
    /// A new mapping of `[base, base + size)`, without access.
    pub fn map(&mut self, base: u64, size: u64) {
        self.by_base.insert(
            base,
            Mapping {
                size,
                access: false,
            },
        );
    }

    /// The bases of the mappings overlapping `[ptr, ptr + len)`.
    fn overlapping(&self, ptr: u64, len: u64) -> Vec<u64> {
        let end = ptr.saturating_add(len);
        let first = self
            .by_base
            .range(..=ptr)
            .next_back()
            .map_or(ptr, |(&b, _)| b);
        self.by_base
            .range(first..end)
            .filter(|(&b, m)| b.saturating_add(m.size) > ptr)
            .map(|(&b, _)| b)
            .collect()
    }

    /// Forgets every mapping overlapping `[ptr, ptr + len)` (unmapped, or
    /// its reservation freed).
    pub fn unmap(&mut self, ptr: u64, len: u64) {
        for base in self.overlapping(ptr, len) {
            self.by_base.remove(&base);
        }
    }

    /// Sets whether the mappings overlapping `[ptr, ptr + len)` serve copies.
    pub fn set_access(&mut self, ptr: u64, len: u64, access: bool) {
        for base in self.overlapping(ptr, len) {
            if let Some(m) = self.by_base.get_mut(&base) {
                m.access = access;
            }
        }
    }

    /// Whether `[ptr, ptr + len)` is mapped throughout, by adjacent
    /// mappings whose access was set.
    pub fn accessible(&self, ptr: u64, len: u64) -> bool {
        let Some(end) = ptr.checked_add(len) else {
            return false;
        };
        let mut at = ptr;
        while at < end {
            match self.by_base.range(..=at).next_back() {
                Some((&b, m)) if m.access && at - b < m.size => at = b + m.size,
                _ => return false,
            }
        }
        true
    }

    /// Every mapping: (base, size), by base.
    pub fn ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.by_base.iter().map(|(&b, m)| (b, m.size))
    }

    /// Whether any mapping contains `addr`.
    pub fn contains(&self, addr: u64) -> bool {
        self.by_base
            .range(..=addr)
            .next_back()
            .is_some_and(|(&b, m)| addr - b < m.size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_mapped_ranges_with_access_serve_copies() {
        let mut v = Mappings::default();
        assert!(!v.accessible(0x10_0000, 1), "nothing mapped");
        v.map(0x10_0000, 0x20_0000);
        assert!(v.contains(0x10_0000));
        assert_eq!(v.ranges().collect::<Vec<_>>(), [(0x10_0000, 0x20_0000)]);
        assert!(!v.accessible(0x10_0000, 1), "mapped without access");
        v.set_access(0x10_0000, 0x20_0000, true);
        assert!(v.accessible(0x10_0000, 0x20_0000));
        assert!(!v.accessible(0x10_0000, 0x20_0001), "past the mapping");
        v.map(0x30_0000, 0x20_0000);
        v.set_access(0x30_0000, 0x20_0000, true);
        assert!(v.accessible(0x2f_ff00, 0x200), "across adjacent mappings");
        assert!(!v.accessible(0x2f_ff00, 0x20_0200), "past the last mapping");
        assert!(!v.accessible(u64::MAX, 2), "wraps");
        assert!(v.accessible(0x5000, 0), "nothing to check");
        v.set_access(0x30_0000, 0x20_0000, false);
        assert!(!v.accessible(0x30_0000, 1), "access taken away");
        v.unmap(0x20_0000, 0x10_0001);
        assert!(
            !v.contains(0x10_0000) && !v.contains(0x30_0000),
            "both overlapped"
        );
        assert!(!v.accessible(0x10_0000, 1), "unmapped");
    }
}
