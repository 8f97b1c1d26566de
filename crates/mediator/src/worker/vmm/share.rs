//! Shareable allocation handles: `cuMemExportToShareableHandle`,
//! `cuMemImportFromShareableHandle` and `cuMemGetHandleForAddressRange`.
//!
//! A POSIX file descriptor the driver makes in the worker goes to the
//! client by SCM_RIGHTS after the reply (and the worker closes its copy);
//! one the client imports comes the same way after the request, and the
//! worker closes it once the driver has imported it. Each exported
//! descriptor's file (device and inode) is recorded in the host's IPC
//! registry under the session's uid, like an IPC handle: a descriptor
//! recorded for another uid is refused with `CUDA_ERROR_INVALID_VALUE` and a
//! log line. One the registry does not know goes to the driver, which
//! answers for descriptors it cannot use (`CUDA_ERROR_UNKNOWN` on driver
//! 580).

use std::ffi::c_void;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use vgpu_abi::types::{CUmemAllocationHandleType, CUmemRangeHandleType};
use vgpu_abi::HandleKind;
use vgpu_proto::{
    mem_export_fd, mem_export_shareable, mem_import_fd, mem_import_shareable, mem_range_handle_fd,
    Request,
};
use zerocopy::little_endian::U64;

use super::super::calls::{message, ok, size, Reply};
use super::super::exec::Lane;
use super::super::registry::{Exporter, Handle, Refusal};
use super::super::status::{INVALID_VALUE, NOT_SUPPORTED};
use super::super::Session;
use crate::driver::{entry, Status};

/// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`.
const POSIX_FD: u32 = 1;
/// `CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD`.
const DMA_BUF_FD: u32 = 1;

/// The registry's key for the file behind `fd`: its device and inode.
fn file_key(fd: &OwnedFd) -> Option<Handle> {
    let st = rustix::fs::fstat(fd).ok()?;
    let mut key = [0u8; 64];
    key[..8].copy_from_slice(b"vgpu-fd\0");
    key[8..16].copy_from_slice(&st.st_dev.to_le_bytes());
    key[16..24].copy_from_slice(&st.st_ino.to_le_bytes());
    Some(key)
}

/// Records a descriptor this session exported.
pub(in crate::worker) fn record(s: &Session, fd: &OwnedFd) {
    let (Some(uid), Some(key)) = (s.peer.uid, file_key(fd)) else {
        return;
    };
    let who = Exporter {
        uid,
        worker: std::process::id(),
        session: s.peer.label.clone(),
    };
    s.registry.record(&key, &who);
    s.tables().ipc.exported_file(key);
}

/// Refuses a descriptor that another uid's session exported.
pub(in crate::worker) fn admit(s: &Session, fd: &OwnedFd) -> Result<(), Status> {
    let (Some(uid), Some(key)) = (s.peer.uid, file_key(fd)) else {
        return Ok(());
    };
    match s.registry.admit(&key, uid) {
        Ok(_) | Err(Refusal::Unknown) => Ok(()),
        Err(Refusal::OtherUid(who)) => {
            tracing::warn!(
                session = %s.peer.label,
                uid,
                exporter = %who.session,
                exporter_uid = who.uid,
                "import refused: the descriptor belongs to another \
                 tenant's session"
            );
            Err(INVALID_VALUE)
        }
    }
}

/// A descriptor the driver wrote.
pub(in crate::worker) fn owned(raw: i32) -> Result<OwnedFd, Status> {
    if raw < 0 {
        return Err(INVALID_VALUE);
    }
    // SAFETY: the driver just made `raw` for this call; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// `cuMemExportToShareableHandle` as a POSIX file descriptor.
pub fn mem_export_fd(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_export_fd::Request = message(req)?;
    let real = s.tables().vmm.real(r.handle.get())?;
    let mut raw: i32 = -1;
    let kind = CUmemAllocationHandleType(POSIX_FD);
    // SAFETY: the out-pointer is a live `int`, what the type's handle is.
    ok(unsafe {
        entry(s.driver.cuMemExportToShareableHandle)?(
            (&mut raw as *mut i32).cast::<c_void>(),
            real,
            kind,
            r.flags.get(),
        )
    })?;
    let fd = owned(raw)?;
    record(s, &fd);
    Ok(Reply {
        fd: Some(fd),
        ..Reply::default()
    })
}

/// `cuMemExportToShareableHandle` of another type: the driver's answer.
pub fn mem_export_shareable(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_export_shareable::Request = message(req)?;
    if r.kind.get() == POSIX_FD {
        return Err(INVALID_VALUE);
    }
    let real = s.tables().vmm.real(r.handle.get())?;
    let mut data = [0u8; 64];
    // SAFETY: 64 bytes, room for any handle type's handle (a fabric handle
    // is the largest).
    ok(unsafe {
        entry(s.driver.cuMemExportToShareableHandle)?(
            data.as_mut_ptr().cast::<c_void>(),
            real,
            CUmemAllocationHandleType(r.kind.get()),
            r.flags.get(),
        )
    })?;
    Ok(Reply::new(
        &mem_export_shareable::Reply { data },
        Vec::new(),
    ))
}

/// A handle the driver imported: a fresh id with one reference.
fn imported(s: &Session, real: u64) -> Reply {
    let mut t = s.tables();
    let id = t.mint(HandleKind::MemGenericAllocation);
    t.vmm.adopt(id, real);
    Reply::new(
        &mem_import_fd::Reply {
            handle: U64::new(id),
        },
        Vec::new(),
    )
}

/// `cuMemImportFromShareableHandle` of the descriptor that followed the request.
pub fn mem_import_fd(lane: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let _: &mem_import_fd::Request = message(req)?;
    let fd = lane.fd_in.take().ok_or(INVALID_VALUE)?;
    admit(s, &fd)?;
    let mut h = 0;
    let os_handle = fd.as_raw_fd() as usize as *mut c_void;
    // SAFETY: live out-pointer; the descriptor stays open for the call (it is
    // closed when `fd` drops, after the driver imported it).
    ok(unsafe {
        entry(s.driver.cuMemImportFromShareableHandle)?(
            &mut h,
            os_handle,
            CUmemAllocationHandleType(POSIX_FD),
        )
    })?;
    Ok(imported(s, h))
}

/// `cuMemImportFromShareableHandle` of another type, its bytes in the request.
pub fn mem_import_shareable(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_import_shareable::Request = message(req)?;
    if r.kind.get() == POSIX_FD {
        return Err(INVALID_VALUE);
    }
    let mut data = r.data;
    let mut h = 0;
    // SAFETY: live out-pointer; the handle's bytes are a live local.
    ok(unsafe {
        entry(s.driver.cuMemImportFromShareableHandle)?(
            &mut h,
            data.as_mut_ptr().cast::<c_void>(),
            CUmemAllocationHandleType(r.kind.get()),
        )
    })?;
    Ok(imported(s, h))
}

/// `cuMemGetHandleForAddressRange` of a range of this session, as a dma-buf
/// descriptor that follows the reply.
pub fn mem_range_handle_fd(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_range_handle_fd::Request = message(req)?;
    let (dptr, bytes) = (r.dptr.get(), r.size.get());
    s.tables().check(dptr, bytes)?;
    let mut raw: i32 = -1;
    let kind = r.kind.get();
    // SAFETY: the out-pointer is a live `int`, room for a descriptor; the
    // range is live memory of this session.
    ok(unsafe {
        entry(s.driver.cuMemGetHandleForAddressRange)?(
            (&mut raw as *mut i32).cast::<c_void>(),
            dptr,
            size(bytes)?,
            CUmemRangeHandleType(kind),
            r.flags.get(),
        )
    })?;
    if kind != DMA_BUF_FD {
        tracing::warn!(
            kind,
            "cuMemGetHandleForAddressRange: a handle type vgpu cannot carry"
        );
        return Err(NOT_SUPPORTED);
    }
    let fd = owned(raw)?;
    Ok(Reply {
        fd: Some(fd),
        ..Reply::default()
    })
}
