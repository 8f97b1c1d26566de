//! CUDA arrays: zeroed host blocks laid out row after row, layer after layer,
//! each element `format × channels` bytes.

use vgpu_abi::array::Extent;

use super::memory::Allocation;

/// One live CUDA array.
#[derive(Debug)]
pub(crate) struct Array {
    pub ctx: usize,
    /// Elements per row, rows, layers as created (0 for an absent dimension).
    pub width: usize,
    pub height: usize,
    pub depth: usize,
    pub format: u32,
    pub channels: u32,
    pub flags: u32,
    pub extent: Extent,
    /// The bytes: `extent.bytes()` of them.
    pub block: Allocation,
}
