//! Memory pools between processes on the simulated device:
//! `cuMemPoolExportToShareableHandle`, `cuMemPoolImportFromShareableHandle`,
//! `cuMemPoolExportPointer` and `cuMemPoolImportPointer`.
//!
//! A pool created with POSIX file descriptors among its handle types exports as the
//! descriptor of an empty memfd that stands for it, named with the pool's device and a
//! random tag; importing such a descriptor makes a pool here that remembers the tag. An
//! allocation of the pool exports as the memfd of its pages (moved there in place, as
//! for `cuIpcGetMemHandle`) named by the 64 bytes of export data, with the pool's tag;
//! it imports only into the pool imported from that pool, and the opening process
//! reaches the pages through `/proc/PID/fd/FD` as for IPC handles. An imported
//! allocation is freed by `cuMemFree(Async)`, and counts against this process's
//! simulated budget and pool while it lives.
//!
//! As on driver 580: a device's default pool does not export
//! (`CUDA_ERROR_INVALID_VALUE`), nor does a pool created without POSIX file
//! descriptors; a descriptor that is not an exported pool gives `CUDA_ERROR_UNKNOWN`.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, IntoRawFd};

use crate::cu::CUresult;
use crate::error::{err, Error, Res};
use crate::ffi::us;
use crate::ipc::{reach, Named, KIND_POOL_POINTER, MEMFD_PREFIX};
use crate::state::memory::Allocation;
use crate::state::pool::Pool;
use crate::state::State;

/// The start of the names of the memfds that stand for exported pools.
const PREFIX: &str = "vgpu-sim-pool-";

fn bad<T>(why: impl Into<std::borrow::Cow<'static, str>>) -> Res<T> {
    err(CUresult::CUDA_ERROR_INVALID_VALUE, why)
}

fn os(what: &str, e: impl std::fmt::Display) -> Error {
    Error {
        code: CUresult::CUDA_ERROR_OUT_OF_MEMORY,
        why: format!("{what}: {e}").into(),
    }
}

/// The memfd standing for exportable pool `key` and its tag, made on first use.
fn exported(st: &mut State, key: usize) -> Res<(BorrowedFd<'_>, u64)> {
    let p = crate::pool::live(st, key)?;
    if p.default || !p.shareable {
        return bad("the pool was not created with POSIX file descriptors among its handle types");
    }
    let device = p.device;
    if let std::collections::hash_map::Entry::Vacant(e) = st.ext.ipc.pools.entry(key) {
        let tag = u64::from(std::process::id()).rotate_left(32) ^ key as u64;
        let name = format!("{PREFIX}{device}-{tag:016x}");
        let fd = rustix::fs::memfd_create(name, rustix::fs::MemfdFlags::CLOEXEC)
            .map_err(|e| os("memfd", e))?;
        e.insert((fd, tag));
    }
    let (fd, tag) = &st.ext.ipc.pools[&key];
    Ok((fd.as_fd(), *tag))
}

/// `cuMemPoolExportToShareableHandle` as a POSIX file descriptor.
pub(crate) fn export_fd(st: &mut State, key: usize, flags: u64) -> Res<i32> {
    if flags != 0 {
        return bad(format!("flags {flags:#x}"));
    }
    let (fd, _) = exported(st, key)?;
    let new = rustix::io::fcntl_dupfd_cloexec(fd, 3).map_err(|e| os("dup", e))?;
    Ok(new.into_raw_fd())
}

/// `cuMemPoolImportFromShareableHandle` of POSIX file descriptor `fd`.
pub(crate) fn import_fd(st: &mut State, fd: i32, flags: u64) -> Res<usize> {
    if flags != 0 {
        return bad(format!("flags {flags:#x}"));
    }
    let unknown = || Error {
        code: CUresult::CUDA_ERROR_UNKNOWN,
        why: format!("descriptor {fd} is not an exported pool").into(),
    };
    let target = std::fs::read_link(format!("/proc/self/fd/{fd}")).map_err(|_| unknown())?;
    let named = target
        .to_str()
        .and_then(|t| t.strip_prefix("/memfd:"))
        .and_then(|t| t.strip_suffix(" (deleted)"))
        .and_then(|t| t.strip_prefix(PREFIX))
        .and_then(|t| t.split_once('-'))
        .and_then(|(d, t)| Some((d.parse::<usize>().ok()?, u64::from_str_radix(t, 16).ok()?)));
    let (device, tag) = named.ok_or_else(unknown)?;
    if device >= st.used.len() {
        return Err(unknown());
    }
    let key = st.mint();
    let pool = Pool {
        imported: Some(tag),
        ..Pool::new(device, false, 0)
    };
    st.ext.pools.pools.insert(key, pool);
    Ok(key)
}

/// `cuMemPoolExportPointer` of an allocation of an exportable pool.
pub(crate) fn export_pointer(st: &mut State, dptr: u64) -> Res<[u8; 64]> {
    let Some(pool) = crate::pool::origin(st, dptr) else {
        return bad(format!("{dptr:#x} is not the base of a pool allocation"));
    };
    let (_, pool_tag) = exported(st, pool)?;
    let a = st.allocs.get_mut(&dptr).expect("a pool allocation is live");
    let size = a.size as u64;
    let (fd, tag) = a.share(MEMFD_PREFIX).map_err(|e| os("memfd", e))?;
    Ok(Named {
        kind: KIND_POOL_POINTER,
        pid: std::process::id(),
        fd: fd.as_raw_fd(),
        size,
        tag,
        pool: pool_tag,
    }
    .encode())
}

/// `cuMemPoolImportPointer` into imported pool `key`, in the current context.
pub(crate) fn import_pointer(st: &mut State, budget: u64, key: usize, data: &[u8; 64]) -> Res<u64> {
    let p = crate::pool::live(st, key)?;
    let n = Named::decode(data, KIND_POOL_POINTER)?;
    if p.imported != Some(n.pool) {
        return bad("the export data is not of a pool imported into this pool");
    }
    let device = p.device;
    let ctx = crate::context::current(st)?;
    if n.size > budget - st.used[device] {
        return err(
            CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            "over the simulated budget",
        );
    }
    let fd = reach(&n)?;
    let Some(a) = Allocation::import(ctx, device, us(n.size), fd) else {
        return err(
            CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            "cannot map the exported memory",
        );
    };
    let base = a.base();
    st.allocs.insert(base, a);
    st.used[device] += n.size;
    st.ext.facts.mark_stream_ordered(base);
    crate::pool::live_mut(st, key)?.take(n.size);
    st.ext.pools.origin.insert(base, (key, n.size));
    Ok(base)
}
