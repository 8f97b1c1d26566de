//! The CUDA types under their C names, from the generated ABI crate.

pub(crate) use vgpu_abi::types::*;
