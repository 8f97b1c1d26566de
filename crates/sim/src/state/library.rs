//! Libraries (`cuLibraryLoadData`) and the kernel handles fetched from them.

use std::collections::HashMap;

use crate::image::Image;
use crate::kernels::Kernel;

/// One loaded library.
#[derive(Debug)]
pub(crate) struct Library {
    pub image: Image,
    /// Context key -> the module holding this library in that context.
    pub modules: HashMap<usize, usize>,
    /// Kernel handles already handed out, by name.
    pub kernels: HashMap<String, usize>,
}

/// What a kernel handle names.
#[derive(Clone, Debug)]
pub(crate) struct KernelRef {
    pub library: usize,
    pub name: String,
    pub kernel: Kernel,
}

/// The library and kernel tables.
#[derive(Debug, Default)]
pub(crate) struct Libraries {
    pub libs: HashMap<usize, Library>,
    pub kernels: HashMap<usize, KernelRef>,
    /// Module key -> the library it was loaded for.
    pub owners: HashMap<usize, usize>,
}

impl Libraries {
    /// The kernel behind a kernel handle, if `key` is one.
    pub fn kernel(&self, key: usize) -> Option<&KernelRef> {
        self.kernels.get(&key)
    }

    /// The library a module was loaded for, if it was loaded for one.
    pub fn owner(&self, module: usize) -> Option<usize> {
        self.owners.get(&module).copied()
    }
}
