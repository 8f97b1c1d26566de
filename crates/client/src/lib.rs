//! vgpu client
