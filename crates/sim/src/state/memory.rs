//! Device allocations: real, zeroed, page-aligned host mappings (so 256-byte aligned, as
//! `cuMemAlloc` guarantees). A block starts private; exporting it to another process
//! (`cuIpcGetMemHandle`) moves its pages into a memfd in place, at the same address, and
//! a block opened from another process maps that memfd.

use std::ffi::c_void;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;

use rustix::fs::{ftruncate, memfd_create, MemfdFlags};
use rustix::mm::{mmap, mmap_anonymous, munmap, MapFlags, ProtFlags};

/// An owned, zeroed, page-aligned mapping of host memory.
#[derive(Debug)]
struct Block {
    ptr: NonNull<u8>,
    /// The mapping's length: the size rounded up to whole pages.
    len: usize,
    /// The memfd behind the pages once they are shared, and the random tag that ends
    /// its name.
    shared: Option<(OwnedFd, u64)>,
}

// SAFETY: the block is plain bytes owned by exactly one `Block`; all access goes through
// the state mutex.
unsafe impl Send for Block {}

fn page_len(size: usize) -> Option<usize> {
    let page = rustix::param::page_size();
    size.checked_next_multiple_of(page).filter(|&l| l != 0)
}

impl Block {
    /// A fresh block, reserved lazily (`MAP_NORESERVE`): its zero pages take host
    /// memory only when first touched, so a large allocation that is used sparsely
    /// costs what it uses. The simulated budget, bounded by what the host can hold
    /// (`crate::config::host_bound`), is what `cuMemAlloc` charges.
    fn new(size: usize) -> Option<Self> {
        let len = page_len(size)?;
        // SAFETY: a fresh anonymous mapping; nothing aliases it.
        let p = unsafe {
            mmap_anonymous(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE | MapFlags::NORESERVE,
            )
        }
        .ok()?;
        Some(Self {
            ptr: NonNull::new(p.cast())?,
            len,
            shared: None,
        })
    }

    /// Maps `size` bytes of `fd` from `offset` (page-aligned), shared with the process
    /// that exported them.
    fn from_fd(fd: OwnedFd, size: usize, offset: u64) -> Option<Self> {
        let len = page_len(size)?;
        // SAFETY: a fresh shared mapping of a file this block will own.
        let p = unsafe {
            mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                &fd,
                offset,
            )
        }
        .ok()?;
        Some(Self {
            ptr: NonNull::new(p.cast())?,
            len,
            shared: Some((fd, 0)),
        })
    }

    /// The memfd behind the block and its tag, made on first use and named `prefix`
    /// then the tag in hex: the bytes are copied into it and it is mapped over the
    /// block's own pages, so the address does not change.
    fn share(&mut self, prefix: &str) -> std::io::Result<(BorrowedFd<'_>, u64)> {
        if self.shared.is_none() {
            let tag = fresh_tag();
            let fd = memfd_create(format!("{prefix}{tag:016x}"), MemfdFlags::CLOEXEC)?;
            ftruncate(&fd, self.len as u64)?;
            // SAFETY: the block's own `len` bytes, read while the state lock is held.
            let bytes = unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) };
            std::fs::File::from(fd.try_clone()?).write_all(bytes)?;
            // SAFETY: replaces the block's own mapping, of exactly its length, with the
            // memfd holding the same bytes; nothing else maps these addresses.
            unsafe {
                mmap(
                    self.ptr.as_ptr().cast::<c_void>(),
                    self.len,
                    ProtFlags::READ | ProtFlags::WRITE,
                    MapFlags::SHARED | MapFlags::FIXED,
                    &fd,
                    0,
                )
            }?;
            self.shared = Some((fd, tag));
        }
        let (fd, tag) = self.shared.as_ref().expect("set above");
        Ok((fd.as_fd(), *tag))
    }
}

/// A random tag for a memfd's name.
fn fresh_tag() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.finish()
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: the block's own mapping, unmapped once.
        let _ = unsafe { munmap(self.ptr.as_ptr().cast(), self.len) };
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

    /// An allocation over `size` bytes of memory another process exported (`fd`).
    pub fn import(ctx: usize, device: usize, size: usize, fd: OwnedFd) -> Option<Self> {
        Self::import_at(ctx, device, size, fd, 0)
    }

    /// [`Allocation::import`] of the bytes from `offset` (page-aligned).
    pub fn import_at(
        ctx: usize,
        device: usize,
        size: usize,
        fd: OwnedFd,
        offset: u64,
    ) -> Option<Self> {
        let block = Block::from_fd(fd, size, offset)?;
        Some(Self {
            ctx,
            device,
            size,
            block,
        })
    }

    /// The memfd behind the allocation's pages and the tag that ends its name (which
    /// starts with `prefix` when this call makes it).
    pub fn share(&mut self, prefix: &str) -> std::io::Result<(BorrowedFd<'_>, u64)> {
        self.block.share(prefix)
    }
}
