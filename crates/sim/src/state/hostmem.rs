//! Page-locked host memory: the ranges registered with `cuMemHostRegister` and the blocks
//! allocated with `cuMemHostAlloc`, by base address.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::BTreeMap;
use std::ptr::NonNull;

use crate::cu::CUresult;
use crate::error::{err, Res};

/// Alignment of host allocations: a page.
const PAGE: usize = 4096;

/// A page-aligned, zeroed host block owned by the simulator.
#[derive(Debug)]
pub(crate) struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the block is plain bytes owned by exactly one `Block`; the simulator touches it
// only under the state mutex.
unsafe impl Send for Block {}

impl Block {
    /// A zeroed, page-aligned block of `len` bytes (`CUDA_ERROR_OUT_OF_MEMORY` if the host
    /// cannot provide it).
    pub fn new(len: usize) -> Res<Self> {
        let Ok(layout) = Layout::from_size_align(len, PAGE) else {
            return err(CUresult::CUDA_ERROR_OUT_OF_MEMORY, "size too large");
        };
        if layout.size() == 0 {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                "host allocation of 0 bytes",
            );
        }
        // SAFETY: the layout has a nonzero size.
        let Some(ptr) = NonNull::new(unsafe { alloc_zeroed(layout) }) else {
            return err(
                CUresult::CUDA_ERROR_OUT_OF_MEMORY,
                format!("host allocation of {len} bytes failed"),
            );
        };
        Ok(Self { ptr, layout })
    }

    /// The first byte.
    pub fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc_zeroed` with this very layout and is freed once.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// One page-locked range.
#[derive(Debug)]
pub(crate) struct Region {
    pub ctx: usize,
    pub device: usize,
    pub len: usize,
    /// `CU_MEMHOSTREGISTER_*` or `CU_MEMHOSTALLOC_*` flags, as given.
    pub flags: u32,
    /// The memory, when the simulator allocated it (`cuMemHostAlloc`).
    block: Option<Block>,
    /// Managed memory (`cuMemAllocManaged`): a block the device and the host share,
    /// freed with `cuMemFree`.
    pub managed: bool,
}

impl Region {
    /// A range the caller registered; its memory stays the caller's.
    pub fn registered(ctx: usize, device: usize, len: usize, flags: u32) -> Self {
        Self {
            ctx,
            device,
            len,
            flags,
            block: None,
            managed: false,
        }
    }

    /// A range over a block the simulator allocated, freed with the range.
    pub fn with_block(ctx: usize, device: usize, flags: u32, block: Block) -> Self {
        Self {
            ctx,
            device,
            len: block.layout.size(),
            flags,
            block: Some(block),
            managed: false,
        }
    }

    /// Managed memory over a block the simulator allocated (`CU_MEM_ATTACH_*` flags).
    pub fn managed(ctx: usize, device: usize, flags: u32, block: Block) -> Self {
        Self {
            managed: true,
            ..Self::with_block(ctx, device, flags, block)
        }
    }

    /// The first byte of the block, when the simulator allocated this range.
    pub fn block_ptr(&self) -> Option<*mut u8> {
        self.block.as_ref().map(Block::ptr)
    }

    /// Whether the simulator allocated this range (rather than the caller registering it).
    pub fn allocated(&self) -> bool {
        self.block.is_some()
    }
}

/// Every page-locked range, by base address.
#[derive(Debug, Default)]
pub(crate) struct Host {
    pub regions: BTreeMap<u64, Region>,
}

impl Host {
    /// Drops the ranges of context `ctx`, freeing the ones the simulator allocated.
    pub fn release_context(&mut self, ctx: usize) {
        self.regions.retain(|_, r| r.ctx != ctx);
    }
}
