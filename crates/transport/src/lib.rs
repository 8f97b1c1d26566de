//! vgpu transport
