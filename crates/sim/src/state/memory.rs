//! Device allocations: real, zeroed, 256-byte aligned host blocks.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;

/// Alignment of every allocation, as `cuMemAlloc` guarantees.
pub(crate) const ALIGN: usize = 256;

/// An owned, zeroed, 256-byte aligned block of host memory.
#[derive(Debug)]
struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the block is plain bytes owned by exactly one `Block`; all access goes through
// the state mutex.
unsafe impl Send for Block {}

impl Block {
    fn new(size: usize) -> Option<Self> {
        let layout = Layout::from_size_align(size, ALIGN)
            .ok()
            .filter(|l| l.size() != 0)?;
        // SAFETY: the layout has a nonzero size.
        let ptr = NonNull::new(unsafe { alloc_zeroed(layout) })?;
        Some(Self { ptr, layout })
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc_zeroed` with this very layout and is freed once.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// One live device allocation.
#[derive(Debug)]
pub(crate) struct Allocation {
    pub ctx: usize,
    pub device: usize,
    pub size: usize,
    block: Block,
}

impl Allocation {
    /// A zeroed allocation of `size` bytes (never 0) for context `ctx` on `device`; `None`
    /// if the host cannot provide the memory.
    pub fn new(ctx: usize, device: usize, size: usize) -> Option<Self> {
        let block = Block::new(size)?;
        Some(Self {
            ctx,
            device,
            size,
            block,
        })
    }

    /// The device address of the first byte: the block's address, exposed so that the
    /// address handed to the application can be turned back into a pointer.
    pub fn base(&self) -> u64 {
        self.block.ptr.as_ptr().expose_provenance() as u64
    }

    /// A pointer to the first byte, valid for `size` bytes while the allocation lives.
    pub fn ptr(&self) -> *mut u8 {
        self.block.ptr.as_ptr()
    }
}
