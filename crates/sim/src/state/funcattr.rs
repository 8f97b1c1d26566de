//! Function and kernel attributes: the values a program set, per plain function or per
//! library kernel on one device.

use std::collections::HashMap;

/// Dynamic shared memory a block may use without opting in.
const SMEM_DEFAULT: i32 = 48 << 10;

/// Who an attribute belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Target {
    Function(usize),
    Kernel {
        library: usize,
        name: String,
        device: usize,
    },
}

/// The attributes a program may set; everything else is fixed per kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Settable {
    pub max_dynamic_shared: i32,
    pub carveout: i32,
    pub required_cluster: [i32; 3],
    pub non_portable_cluster: i32,
    pub cluster_policy: i32,
    /// `cuFuncSetCacheConfig` / `cuKernelSetCacheConfig`: a `CUfunc_cache`.
    pub cache_config: u32,
    /// `cuFuncSetBlockShape` (deprecated): the block of legacy `cuLaunch*` launches.
    pub block_shape: [i32; 3],
    /// `cuFuncSetSharedSize` (deprecated): dynamic shared memory of legacy launches.
    pub shared_size: u32,
}

impl Default for Settable {
    fn default() -> Self {
        Self {
            max_dynamic_shared: SMEM_DEFAULT,
            carveout: -1,
            required_cluster: [0; 3],
            non_portable_cluster: 0,
            cluster_policy: 0,
            cache_config: 0,
            block_shape: [1, 1, 1],
            shared_size: 0,
        }
    }
}

/// The attribute table.
#[derive(Debug, Default)]
pub(crate) struct Attrs {
    pub set: HashMap<Target, Settable>,
}

impl Attrs {
    /// Drops the attributes of functions for which `keep` is false.
    pub fn retain_functions(&mut self, keep: impl Fn(usize) -> bool) {
        self.set.retain(|t, _| match t {
            Target::Function(f) => keep(*f),
            Target::Kernel { .. } => true,
        });
    }

    /// Drops the attributes of a library's kernels.
    pub fn forget_library(&mut self, lib: usize) {
        self.set
            .retain(|t, _| !matches!(t, Target::Kernel { library, .. } if *library == lib));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settable_defaults() {
        let s = Settable::default();
        assert_eq!(s.max_dynamic_shared, 48 << 10);
        assert_eq!(s.carveout, -1);
    }
}
