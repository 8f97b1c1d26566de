//! Sealed shared memory: tables the supervisor makes and its workers map
//! (the session table, [`crate::sessions`]; the tenants' counters,
//! [`crate::tenants::quota`]). A memfd sealed at its size cannot be shrunk
//! by a worker under the supervisor, which would then die of SIGBUS on its
//! next read.

use std::os::fd::{AsFd, OwnedFd};
use std::ptr::NonNull;

/// A new memfd of `bytes` zero bytes, sealed at that size.
pub fn sealed_memfd(name: &str, bytes: usize) -> std::io::Result<OwnedFd> {
    use rustix::fs::{MemfdFlags, SealFlags};
    let fd = rustix::fs::memfd_create(name, MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)?;
    rustix::fs::ftruncate(&fd, bytes as u64)?;
    rustix::fs::fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL)?;
    Ok(fd)
}

/// Maps `fd` shared, read and write, once it is a memfd of exactly `bytes`
/// whose size is sealed; anything else is refused, naming it `what`.
pub fn map_sealed(fd: &OwnedFd, bytes: usize, what: &str) -> std::io::Result<NonNull<u8>> {
    use rustix::fs::SealFlags;
    use rustix::mm::{MapFlags, ProtFlags};
    let seals = rustix::fs::fcntl_get_seals(fd)?;
    if !seals.contains(SealFlags::SHRINK | SealFlags::GROW) {
        return Err(std::io::Error::other(format!(
            "the {what}'s size is not sealed"
        )));
    }
    let size = rustix::fs::fstat(fd)?.st_size;
    if usize::try_from(size).ok() != Some(bytes) {
        return Err(std::io::Error::other(format!(
            "the {what} is {size} bytes, not {bytes}"
        )));
    }
    // SAFETY: a null hint lets the kernel pick a fresh range, so nothing
    // existing is aliased; `fd` is valid for the call.
    let p = unsafe {
        rustix::mm::mmap(
            std::ptr::null_mut(),
            bytes,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::SHARED,
            fd.as_fd(),
            0,
        )
    }?;
    NonNull::new(p.cast::<u8>()).ok_or_else(|| std::io::Error::other("mmap returned null"))
}
