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

/// One live texture or surface object: what it was created with.
#[derive(Clone, Copy)]
pub(crate) struct TexObject {
    pub ctx: usize,
    pub surface: bool,
    pub resource: crate::cu::CUDA_RESOURCE_DESC,
    pub texture: Option<crate::cu::CUDA_TEXTURE_DESC>,
    pub view: Option<crate::cu::CUDA_RESOURCE_VIEW_DESC>,
}

impl std::fmt::Debug for TexObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TexObject")
            .field("ctx", &self.ctx)
            .field("surface", &self.surface)
            .field("resType", &self.resource.resType.0)
            .finish_non_exhaustive()
    }
}

// SAFETY: the handles inside the resource descriptor are table keys of the simulated
// device, never dereferenced; all access goes through the state mutex.
unsafe impl Send for TexObject {}

/// One live mipmapped array: its levels are arrays of their own, halving
/// each present dimension (down to 1) from level to level.
#[derive(Debug)]
pub(crate) struct MipmappedArray {
    pub ctx: usize,
    pub levels: Vec<usize>,
}

/// What is bound to a legacy texture reference.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) enum Binding {
    #[default]
    None,
    Array(usize),
    Mipmapped(usize),
    /// Linear (`pitch` None) or pitched 2D memory at a device address.
    Memory {
        dptr: u64,
        pitch: Option<usize>,
    },
}

/// A legacy texture reference (`cuTexRefCreate`, or a module's `texref`):
/// what it is bound to and how fetches through it read.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TexRef {
    pub binding: Binding,
    pub format: u32,
    pub channels: i32,
    pub address_mode: [u32; 3],
    pub filter: u32,
    pub mipmap_filter: u32,
    pub mipmap_bias: f32,
    pub mipmap_clamp: (f32, f32),
    pub max_anisotropy: u32,
    pub border: [f32; 4],
    pub flags: u32,
}
