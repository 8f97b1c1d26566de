//! vgpu proto
