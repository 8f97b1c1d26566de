//! vgpu sim
