//! Inter-process handles between simulated devices in different processes (one per vgpu
//! worker): `cuIpcGetMemHandle`, `cuIpcOpenMemHandle`, `cuIpcCloseMemHandle`,
//! `cuIpcGetEventHandle`, `cuIpcOpenEventHandle`.
//!
//! Exporting an allocation moves its pages into a memfd in place
//! ([`Allocation::share`]); an event gets an empty memfd that only proves it is alive.
//! The 64-byte handle names the memfd as the exporting process holds it: its pid, the
//! descriptor number, the tag that ends the memfd's name (random for memory), and the
//! size. The
//! opening process reaches it through `/proc/PID/fd/FD`, which the kernel allows for a
//! process of the same uid, and checks the tag, so a forged handle (or one naming a
//! descriptor that has since been reused) opens nothing. When the exporter frees the
//! allocation or exits, the memfd closes and the handle no longer opens; processes that
//! opened it keep the pages until they close them, as with the real driver.
//!
//! As on the real driver: opening a handle in the process that exported it is
//! `CUDA_ERROR_INVALID_CONTEXT`; opening it again in the same context counts a
//! reference and returns the same address; closing an address that was not opened, or
//! `cuMemFree` of an opened one, is `CUDA_ERROR_INVALID_VALUE`, and so is a memory handle
//! that opens nothing, or exporting pool memory; an event handle that opens nothing is
//! `CUDA_ERROR_MAP_FAILED`; exporting an event created without `CU_EVENT_INTERPROCESS` is
//! `CUDA_ERROR_INVALID_HANDLE` (driver 580's answers). Recorded work has always completed on the simulated
//! device, so an opened event is complete whenever its exporter's is.

use std::os::fd::AsRawFd;
use std::time::Instant;

use crate::context;
use crate::cu::CUresult;
use crate::error::{err, Res};
use crate::ffi::us;
use crate::state::event::Event;
use crate::state::ipc::{Key, Opened};
use crate::state::memory::Allocation;
use crate::state::State;

const MAGIC: &[u8; 8] = b"vgpusim\0";
const KIND_MEMORY: u8 = 1;
const KIND_EVENT: u8 = 2;
/// `CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS`, the only open flag.
const LAZY_ENABLE_PEER_ACCESS: u32 = 1;
/// `CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS`.
const OPENED_EVENT_FLAGS: u32 = 0x2 | 0x4;
const EVENT_INTERPROCESS: u32 = 0x4;

/// Export data of a pool allocation (`crate::pool_share`).
pub(crate) const KIND_POOL_POINTER: u8 = 3;

/// What a handle names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Named {
    pub kind: u8,
    pub pid: u32,
    pub fd: i32,
    pub size: u64,
    pub tag: u64,
    /// For a pool allocation, its pool's tag; 0 otherwise.
    pub pool: u64,
}

impl Named {
    pub(crate) fn encode(&self) -> [u8; 64] {
        let mut h = [0u8; 64];
        h[..8].copy_from_slice(MAGIC);
        h[8] = self.kind;
        h[12..16].copy_from_slice(&self.pid.to_le_bytes());
        h[16..20].copy_from_slice(&self.fd.to_le_bytes());
        h[24..32].copy_from_slice(&self.size.to_le_bytes());
        h[32..40].copy_from_slice(&self.tag.to_le_bytes());
        h[40..48].copy_from_slice(&self.pool.to_le_bytes());
        h
    }

    pub(crate) fn decode(h: &[u8; 64], kind: u8) -> Res<Self> {
        let word = |r: std::ops::Range<usize>| {
            let mut b = [0u8; 8];
            b[..r.len()].copy_from_slice(&h[r]);
            u64::from_le_bytes(b)
        };
        if &h[..8] != MAGIC || h[8] != kind {
            return bad("the handle was not made by a simulated device's export");
        }
        Ok(Self {
            kind,
            pid: u32::try_from(word(12..16)).unwrap_or(0),
            fd: i32::from_le_bytes(h[16..20].try_into().expect("4 bytes")),
            size: word(24..32),
            tag: word(32..40),
            pool: word(40..48),
        })
    }
}

fn bad<T>(why: impl Into<std::borrow::Cow<'static, str>>) -> Res<T> {
    err(CUresult::CUDA_ERROR_INVALID_VALUE, why)
}

/// How the memfds of shared allocations and exported events are named: this, then
/// their tag in hex.
pub(crate) const MEMFD_PREFIX: &str = "vgpu-sim-mem-";

/// The memfd name that ends with `tag`.
fn memfd_name(tag: u64) -> String {
    format!("{MEMFD_PREFIX}{tag:016x}")
}

/// Opens the memfd a handle names, in its exporting process; checks its tag and size.
pub(crate) fn reach(n: &Named) -> Res<std::os::fd::OwnedFd> {
    if n.pid == std::process::id() {
        return err(
            CUresult::CUDA_ERROR_INVALID_CONTEXT,
            "the handle was exported by this process; open it in another one",
        );
    }
    let path = format!("/proc/{}/fd/{}", n.pid, n.fd);
    let target = std::fs::read_link(&path).map_err(|e| gone(&path, &e))?;
    let want = format!("/memfd:{} (deleted)", memfd_name(n.tag));
    if target.as_os_str() != want.as_str() {
        return bad(format!(
            "{path} is not the exported memory (a forged or stale handle)"
        ));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| gone(&path, &e))?;
    let len = file.metadata().map_err(|e| gone(&path, &e))?.len();
    if len < n.size {
        return bad(format!(
            "{path} holds {len} bytes, the handle says {}",
            n.size
        ));
    }
    Ok(file.into())
}

fn gone(path: &str, e: &std::io::Error) -> crate::error::Error {
    crate::error::Error {
        code: CUresult::CUDA_ERROR_INVALID_VALUE,
        why: format!(
            "{path}: {e} (the exporter freed the memory, exited, or the handle is forged)"
        )
        .into(),
    }
}

/// `cuIpcGetMemHandle`: a handle for the allocation that contains `dptr`.
pub(crate) fn get_mem_handle(st: &mut State, dptr: u64) -> Res<[u8; 64]> {
    let Some((base, _)) = crate::memory::containing(st, dptr) else {
        return bad(format!("{dptr:#x} is not in a live allocation"));
    };
    if st.ext.ipc.opened_at.contains_key(&base) {
        return bad(format!("{base:#x} was opened from another process"));
    }
    if crate::pool::origin(st, base).is_some() {
        return bad(format!(
            "{base:#x} came from a memory pool: export the pool (cuMemPoolExportPointer)"
        ));
    }
    let a = st.allocs.get_mut(&base).expect("found above");
    let size = a.size as u64;
    let (fd, tag) = a.share(MEMFD_PREFIX).map_err(|e| crate::error::Error {
        code: CUresult::CUDA_ERROR_OUT_OF_MEMORY,
        why: format!("cannot move the allocation into a memfd: {e}").into(),
    })?;
    let fd = fd.as_raw_fd();
    Ok(Named {
        kind: KIND_MEMORY,
        pid: std::process::id(),
        fd,
        size,
        tag,
        pool: 0,
    }
    .encode())
}

/// `cuIpcOpenMemHandle_v2` in the current context.
pub(crate) fn open_mem_handle(st: &mut State, handle: &[u8; 64], flags: u32) -> Res<u64> {
    if flags & !LAZY_ENABLE_PEER_ACCESS != 0 {
        return bad(format!("flags {flags:#x}"));
    }
    let ctx = context::current(st)?;
    let n = Named::decode(handle, KIND_MEMORY)?;
    let key: Key = (n.pid, n.tag, ctx);
    if let Some(o) = st.ext.ipc.opened.get_mut(&key) {
        o.count += 1;
        return Ok(o.base);
    }
    let fd = reach(&n)?;
    let device = context::live(st, ctx)?.device;
    let Some(a) = Allocation::import(ctx, device, us(n.size), fd) else {
        return err(
            CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            "cannot map the exported memory",
        );
    };
    let base = a.base();
    st.allocs.insert(base, a);
    st.ext.ipc.opened.insert(key, Opened { base, count: 1 });
    st.ext.ipc.opened_at.insert(base, key);
    Ok(base)
}

/// `cuIpcCloseMemHandle`: one open fewer; the mapping goes at the last.
pub(crate) fn close_mem_handle(st: &mut State, dptr: u64) -> Res<()> {
    let Some(&key) = st.ext.ipc.opened_at.get(&dptr) else {
        return bad(format!("{dptr:#x} was not opened by cuIpcOpenMemHandle"));
    };
    let o = st.ext.ipc.opened.get_mut(&key).expect("indexed");
    o.count -= 1;
    if o.count == 0 {
        st.ext.ipc.opened.remove(&key);
        st.ext.ipc.opened_at.remove(&dptr);
        st.allocs.remove(&dptr);
        st.ext.facts.forget(dptr);
    }
    Ok(())
}

/// The context that opened `base` is gone: so is the mapping.
pub(crate) fn context_gone(st: &mut State, base: u64) {
    if let Some(key) = st.ext.ipc.opened_at.remove(&base) {
        st.ext.ipc.opened.remove(&key);
    }
    st.allocs.remove(&base);
}

/// Whether `base` was opened from another process (`cuMemFree` refuses it).
pub(crate) fn is_opened(st: &State, base: u64) -> bool {
    st.ext.ipc.opened_at.contains_key(&base)
}

/// `cuIpcGetEventHandle` of an interprocess event.
pub(crate) fn get_event_handle(st: &mut State, key: usize) -> Res<[u8; 64]> {
    let e = crate::event::get(st, key)?;
    if e.flags & EVENT_INTERPROCESS == 0 {
        // Driver 580 answers CUDA_ERROR_INVALID_HANDLE here.
        return err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            "the event was not created with CU_EVENT_INTERPROCESS",
        );
    }
    let (fd, tag) = match st.ext.ipc.events.entry(key) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => {
            let tag =
                u64::try_from(key).unwrap_or(0) ^ u64::from(std::process::id()).rotate_left(32);
            let fd = rustix::fs::memfd_create(memfd_name(tag), rustix::fs::MemfdFlags::CLOEXEC)
                .map_err(|e| crate::error::Error {
                    code: CUresult::CUDA_ERROR_OUT_OF_MEMORY,
                    why: format!("memfd: {e}").into(),
                })?;
            e.insert((fd, tag))
        }
    };
    Ok(Named {
        kind: KIND_EVENT,
        pid: std::process::id(),
        fd: fd.as_raw_fd(),
        size: 0,
        tag: *tag,
        pool: 0,
    }
    .encode())
}

/// `cuIpcOpenEventHandle`: a new interprocess event of the current context.
pub(crate) fn open_event_handle(st: &mut State, handle: &[u8; 64]) -> Res<usize> {
    let ctx = context::current(st)?;
    // Driver 580 answers CUDA_ERROR_MAP_FAILED for an event handle it cannot
    // open (a forged or zero one); a handle of this process stays
    // CUDA_ERROR_INVALID_CONTEXT.
    let map_failed = |e: crate::error::Error| match e.code {
        CUresult::CUDA_ERROR_INVALID_VALUE => crate::error::Error {
            code: CUresult::CUDA_ERROR_MAP_FAILED,
            why: e.why,
        },
        _ => e,
    };
    let n = Named::decode(handle, KIND_EVENT).map_err(map_failed)?;
    reach(&n).map_err(map_failed)?;
    let key = st.mint();
    let event = Event {
        ctx,
        flags: OPENED_EVENT_FLAGS,
        stamp: Some(Instant::now()),
        captured: false,
    };
    st.events.insert(key, event);
    Ok(key)
}

/// The event `key` is destroyed: its handle no longer opens.
pub(crate) fn event_destroyed(st: &mut State, key: usize) {
    st.ext.ipc.events.remove(&key);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip_and_other_kinds_are_refused() {
        let n = Named {
            kind: KIND_MEMORY,
            pid: 42,
            fd: 7,
            size: 4096,
            tag: 0xfeed,
            pool: 0,
        };
        let h = n.encode();
        assert_eq!(Named::decode(&h, KIND_MEMORY), Ok(n));
        let e = Named::decode(&h, KIND_EVENT).expect_err("an event handle is not memory's");
        assert_eq!(e.code, CUresult::CUDA_ERROR_INVALID_VALUE);
        assert!(
            Named::decode(&[0u8; 64], KIND_MEMORY).is_err(),
            "zeros are forged"
        );
    }

    #[test]
    fn a_forged_descriptor_is_refused() {
        // This process's own stdin, named as if another process exported it.
        let n = Named {
            kind: KIND_MEMORY,
            pid: std::os::unix::process::parent_id(),
            fd: 0,
            size: 1,
            tag: 1,
            pool: 0,
        };
        let e = reach(&n).expect_err("not a memfd of the handle's tag");
        assert_eq!(e.code, CUresult::CUDA_ERROR_INVALID_VALUE);
        let own = Named {
            pid: std::process::id(),
            ..n
        };
        let e = reach(&own).expect_err("this process's own export");
        assert_eq!(e.code, CUresult::CUDA_ERROR_INVALID_CONTEXT);
    }
}
