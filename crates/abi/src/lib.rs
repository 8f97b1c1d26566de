//! vgpu abi
