//! Shareable allocation handles on the simulated device: `cuMemExportToShareableHandle`,
//! `cuMemImportFromShareableHandle` and `cuMemGetHandleForAddressRange`.
//!
//! A physical allocation created with `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR` among
//! its requested handle types exports as a file descriptor of a memfd holding its
//! pages (moved there in place, [`Allocation::share`]); the memfd's name carries the
//! allocation's properties, so another process, a simulated device of another worker
//! among them, imports the descriptor as a new physical allocation over the same pages.
//! A descriptor that is not such a memfd is `CUDA_ERROR_UNKNOWN`, as driver 580 answers
//! for `/dev/null`, a plain memfd or a closed descriptor. Exporting as a type the
//! allocation was not created for is `CUDA_ERROR_INVALID_VALUE`. Imported memory stays
//! charged to the exporter's device budget, not the importer's.
//!
//! A dma-buf for an address range (`cuMemGetHandleForAddressRange`) is the memfd of the
//! `cuMemAlloc` allocation holding it; the range must be page-aligned, as on the driver.

use std::os::fd::{AsFd, BorrowedFd, IntoRawFd, OwnedFd};

use crate::cu::CUresult;
use crate::error::{err, Error, Res};
use crate::ffi::us;
use crate::state::memory::Allocation;
use crate::state::vmm::Physical;
use crate::state::State;

/// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`.
pub(crate) const POSIX_FD: u32 = 1;
/// `CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD`.
const DMA_BUF_FD: u32 = 1;
/// The start of the memfd names of exported physical allocations.
const PREFIX: &str = "vgpu-sim-vmm-";

fn bad<T>(why: impl Into<std::borrow::Cow<'static, str>>) -> Res<T> {
    err(CUresult::CUDA_ERROR_INVALID_VALUE, why)
}

fn os(what: &str, e: impl std::fmt::Display) -> Error {
    Error {
        code: CUresult::CUDA_ERROR_OUT_OF_MEMORY,
        why: format!("{what}: {e}").into(),
    }
}

/// A new descriptor of `fd`'s file for the caller, close-on-exec.
fn dup(fd: BorrowedFd<'_>) -> Res<i32> {
    let new = rustix::io::fcntl_dupfd_cloexec(fd, 3).map_err(|e| os("dup", e))?;
    Ok(new.into_raw_fd())
}

/// `cuMemExportToShareableHandle` as a POSIX file descriptor.
pub(crate) fn export_fd(st: &mut State, handle: u64, flags: u64) -> Res<i32> {
    if flags != 0 {
        return bad(format!("flags {flags:#x}"));
    }
    let Some(p) = st.ext.vmm.physical.get_mut(&handle).filter(|p| p.refs > 0) else {
        return bad(format!("{handle:#x} is not a live allocation handle"));
    };
    let types = u32::from_le_bytes([p.prop[4], p.prop[5], p.prop[6], p.prop[7]]);
    if types & POSIX_FD == 0 {
        return bad("the allocation was not created shareable as a POSIX file descriptor");
    }
    let prefix = format!("{PREFIX}{}-", hex(&p.prop));
    let (fd, _) = p.block.share(&prefix).map_err(|e| os("memfd", e))?;
    dup(fd)
}

/// `cuMemExportToShareableHandle` as another type: only file descriptors are simulated.
pub(crate) fn export_other(st: &State, handle: u64, kind: u32) -> Res<()> {
    if !st.ext.vmm.physical.contains_key(&handle) {
        return bad(format!("{handle:#x} is not a live allocation handle"));
    }
    bad(format!(
        "handle type {kind:#x}: the allocation was not created shareable as it"
    ))
}

/// The properties an exported physical allocation's memfd name carries, if `fd` is one.
fn exported_prop(fd: i32) -> Option<[u8; 32]> {
    let target = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
    let name = target.to_str()?.strip_prefix("/memfd:")?;
    let (hexed, _tag) = name
        .strip_suffix(" (deleted)")?
        .strip_prefix(PREFIX)?
        .split_once('-')?;
    let mut prop = [0u8; 32];
    if hexed.len() != 64 {
        return None;
    }
    for (i, b) in prop.iter_mut().enumerate() {
        *b = u8::from_str_radix(hexed.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(prop)
}

/// `cuMemImportFromShareableHandle` of POSIX file descriptor `fd` (the caller keeps it).
pub(crate) fn import_fd(st: &mut State, fd: i32) -> Res<u64> {
    let unknown = |why: String| Error {
        code: CUresult::CUDA_ERROR_UNKNOWN,
        why: why.into(),
    };
    let prop = exported_prop(fd)
        .ok_or_else(|| unknown(format!("descriptor {fd} is not an exported allocation")))?;
    // SAFETY: `fd` is open (its /proc link was just read) and only borrowed for the dup.
    let own: OwnedFd = rustix::io::fcntl_dupfd_cloexec(unsafe { BorrowedFd::borrow_raw(fd) }, 3)
        .map_err(|e| unknown(format!("descriptor {fd}: {e}")))?;
    let size = rustix::fs::fstat(&own)
        .map_err(|e| unknown(format!("descriptor {fd}: {e}")))?
        .st_size;
    let device = us(u64::from(u32::from_le_bytes([
        prop[12], prop[13], prop[14], prop[15],
    ])));
    let size = usize::try_from(size).unwrap_or(0);
    if device >= st.used.len() || size == 0 {
        return Err(unknown(format!(
            "descriptor {fd}: not a device allocation of this simulator"
        )));
    }
    let Some(block) = Allocation::import(0, device, size, own) else {
        return err(
            CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            "cannot map the descriptor",
        );
    };
    let handle = st.mint() as u64;
    let p = Physical {
        block,
        prop,
        refs: 1,
        imported: true,
    };
    st.ext.vmm.physical.insert(handle, p);
    Ok(handle)
}

/// `cuMemGetHandleForAddressRange` as a dma-buf descriptor.
pub(crate) fn range_fd(st: &mut State, dptr: u64, size: u64, kind: u32, flags: u64) -> Res<i32> {
    if kind != DMA_BUF_FD || flags > 1 {
        return bad(format!("handle type {kind}, flags {flags:#x}"));
    }
    let page = rustix::param::page_size() as u64;
    if size == 0 || !dptr.is_multiple_of(page) || !size.is_multiple_of(page) {
        return bad(format!("{dptr:#x}+{size:#x}: not a page-aligned range"));
    }
    let Some((base, a)) = crate::memory::containing(st, dptr) else {
        return bad(format!("{dptr:#x} is not in a live allocation"));
    };
    if dptr - base + size > a.size.next_multiple_of(us(page)) as u64 {
        return bad(format!("{dptr:#x}+{size:#x} runs past its allocation"));
    }
    let a = st.allocs.get_mut(&base).expect("found above");
    let (fd, _) = a
        .share(crate::ipc::MEMFD_PREFIX)
        .map_err(|e| os("memfd", e))?;
    dup(fd.as_fd())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
