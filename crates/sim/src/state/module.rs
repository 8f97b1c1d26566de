//! Modules and the functions fetched from them.

use std::collections::HashMap;

use crate::cu::CUdeviceptr;
use crate::kernels::Kernel;

/// A loaded module.
#[derive(Debug)]
pub(crate) struct Module {
    pub ctx: usize,
    pub kernels: Vec<String>,
    /// name -> (device address, size); allocations owned by `ctx`, freed at unload.
    pub globals: HashMap<String, (CUdeviceptr, usize)>,
    /// Function handles already handed out, by kernel name.
    pub functions: HashMap<String, usize>,
    /// Texture and surface reference handles, by name, minted at load.
    pub texrefs: HashMap<String, usize>,
    pub surfrefs: HashMap<String, usize>,
}

/// A function handle's target.
#[derive(Debug)]
pub(crate) struct Function {
    pub module: usize,
    pub kernel: Kernel,
    /// `cuFuncIsLoaded`: set at creation under eager loading, else by `cuFuncLoad` or the
    /// first launch.
    pub loaded: bool,
}
