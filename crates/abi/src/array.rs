//! Facts about CUDA arrays that both the worker (to bound copies) and the
//! simulated device (to lay arrays out in memory) need.

/// The bytes of one element of a `CUarray_format` with `channels` channels
/// (1, 2 or 4), for the plain numeric formats; `None` for any other format
/// or channel count (the driver judges those itself).
pub fn element_bytes(format: u32, channels: u32) -> Option<u64> {
    let one: u64 = match format {
        // UNSIGNED_INT8, SIGNED_INT8
        0x01 | 0x08 => 1,
        // UNSIGNED_INT16, SIGNED_INT16, HALF
        0x02 | 0x09 | 0x10 => 2,
        // UNSIGNED_INT32, SIGNED_INT32, FLOAT
        0x03 | 0x0a | 0x20 => 4,
        _ => return None,
    };
    matches!(channels, 1 | 2 | 4).then(|| one * u64::from(channels))
}

/// An array's extent as a copy sees it: bytes in a row, rows in a layer,
/// layers (a 1D array has one row, a 1D or 2D array one layer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub row_bytes: u64,
    pub rows: u64,
    pub layers: u64,
}

impl Extent {
    /// The extent of an array of `width` × `height` × `depth` elements
    /// (0 for an absent dimension) of `element` bytes.
    pub fn new(element: u64, width: u64, height: u64, depth: u64) -> Option<Self> {
        Some(Self {
            row_bytes: width.checked_mul(element)?,
            rows: height.max(1),
            layers: depth.max(1),
        })
    }

    /// All of the array's bytes.
    pub fn bytes(&self) -> Option<u64> {
        self.row_bytes
            .checked_mul(self.rows)?
            .checked_mul(self.layers)
    }

    /// Whether a box of `width` bytes × `height` rows × `depth` layers at
    /// (`x` bytes, `y`, `z`) lies inside the array.
    pub fn holds(&self, x: u64, y: u64, z: u64, width: u64, height: u64, depth: u64) -> bool {
        let within =
            |at: u64, n: u64, limit: u64| at.checked_add(n).is_some_and(|end| end <= limit);
        within(x, width, self.row_bytes)
            && within(y, height, self.rows)
            && within(z, depth, self.layers)
    }

    /// Whether `bytes` bytes at byte `offset` of the array, taken as one
    /// run of its bytes, lie inside it.
    pub fn holds_run(&self, offset: u64, bytes: u64) -> bool {
        offset
            .checked_add(bytes)
            .zip(self.bytes())
            .is_some_and(|(end, all)| end <= all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_and_extents() {
        assert_eq!(element_bytes(0x20, 4), Some(16));
        assert_eq!(element_bytes(0x01, 1), Some(1));
        assert_eq!(element_bytes(0x10, 2), Some(4));
        assert_eq!(element_bytes(0x20, 3), None);
        assert_eq!(element_bytes(0xb0, 1), None);
        let e = Extent::new(4, 16, 0, 0).expect("small");
        assert_eq!((e.row_bytes, e.rows, e.layers), (64, 1, 1));
        assert!(e.holds(0, 0, 0, 64, 1, 1));
        assert!(!e.holds(4, 0, 0, 64, 1, 1));
        assert!(!e.holds(0, 1, 0, 4, 1, 1));
        assert!(e.holds_run(60, 4));
        assert!(!e.holds_run(60, 5));
        assert!(!e.holds(u64::MAX, 0, 0, 1, 1, 1));
    }
}
