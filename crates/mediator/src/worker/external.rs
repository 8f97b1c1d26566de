//! External memory: `cuImportExternalMemory`, `cuExternalMemoryGetMappedBuffer`
//! and `cuDestroyExternalMemory`. An external memory object is an id of the
//! session's tables (`HandleKind::ExternalMemory`).
//!
//! A POSIX file descriptor (`CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD`)
//! comes after the request by SCM_RIGHTS; the driver owns the worker's copy
//! once the import succeeds, and the worker closes it when the import fails.
//! A descriptor another uid's session exported (the host's IPC registry) is
//! refused with `CUDA_ERROR_INVALID_VALUE`, as for VMM imports. A mapped
//! buffer joins the session's live allocations: copies and memsets reach
//! it, and `cuMemFree` frees it. External semaphores
//! (`HandleKind::ExternalSemaphore`) import the same way; signalling and
//! waiting pass their parameter structs through to the driver.

use std::os::fd::IntoRawFd;

use vgpu_abi::types::{
    CUDA_EXTERNAL_MEMORY_BUFFER_DESC, CUDA_EXTERNAL_MEMORY_HANDLE_DESC,
    CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC,
};
use vgpu_abi::HandleKind;
use vgpu_proto::{
    destroy_external_memory, destroy_external_semaphore, external_memory_mapped_buffer,
    external_semaphores, import_external_memory, import_external_memory_fd,
    import_external_semaphore, import_external_semaphore_fd, Request,
};
use zerocopy::little_endian::U64;

use super::calls::{as_ptr, message, ok, record, Reply};
use super::exec::Lane;
use super::status::INVALID_VALUE;
use super::tables::as_handle;
use super::vmm::share;
use super::Session;
use crate::driver::{entry, DevPtr, Status};

/// `CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD`.
const OPAQUE_FD: u32 = 1;
/// Where the handle union lies in the descriptor.
const HANDLE: std::ops::Range<usize> = 8..24;

/// Imports `desc` on the driver; the new object's id.
fn import(s: &Session, desc: &[u8; 104], ctx: u64) -> Result<u64, Status> {
    // SAFETY: a C struct of integers, a union of an int and pointers (zero
    // or a descriptor here) and reserved words: valid for any bytes.
    let d: CUDA_EXTERNAL_MEMORY_HANDLE_DESC = unsafe { record(desc) };
    let mut m = std::ptr::null_mut();
    // SAFETY: live out-pointer and descriptor.
    ok(unsafe { entry(s.driver.cuImportExternalMemory)?(&mut m, &d) })?;
    Ok(s.tables()
        .id_of(HandleKind::ExternalMemory, m as usize, ctx))
}

/// `cuImportExternalMemory` of the descriptor that followed the request.
pub fn import_external_memory_fd(
    lane: &mut Lane,
    s: &Session,
    req: &Request,
) -> Result<Reply, Status> {
    let r: &import_external_memory_fd::Request = message(req)?;
    let fd = lane.fd_in.take().ok_or(INVALID_VALUE)?;
    if u32::from_le_bytes([r.desc[0], r.desc[1], r.desc[2], r.desc[3]]) != OPAQUE_FD {
        return Err(INVALID_VALUE);
    }
    share::admit(s, &fd)?;
    let mut desc = r.desc;
    let raw = fd.into_raw_fd();
    desc[HANDLE].fill(0);
    desc[HANDLE.start..HANDLE.start + 4].copy_from_slice(&raw.to_le_bytes());
    match import(s, &desc, req.ctx) {
        Ok(id) => Ok(Reply::new(
            &import_external_memory_fd::Reply { mem: U64::new(id) },
            Vec::new(),
        )),
        Err(st) => {
            // SAFETY: the import failed, so the descriptor is still ours.
            unsafe { libc::close(raw) };
            Err(st)
        }
    }
}

/// `cuImportExternalMemory` of another type: the driver's answer.
pub fn import_external_memory(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &import_external_memory::Request = message(req)?;
    let mut desc = r.desc;
    if u32::from_le_bytes([desc[0], desc[1], desc[2], desc[3]]) == OPAQUE_FD {
        return Err(INVALID_VALUE);
    }
    desc[HANDLE].fill(0);
    let id = import(s, &desc, req.ctx)?;
    Ok(Reply::new(
        &import_external_memory::Reply { mem: U64::new(id) },
        Vec::new(),
    ))
}

/// `cuExternalMemoryGetMappedBuffer`; the buffer joins the live allocations.
pub fn external_memory_mapped_buffer(
    _: &mut Lane,
    s: &Session,
    req: &Request,
) -> Result<Reply, Status> {
    let r: &external_memory_mapped_buffer::Request = message(req)?;
    let m = s.tables().handle(HandleKind::ExternalMemory, r.mem.get())?;
    let desc = CUDA_EXTERNAL_MEMORY_BUFFER_DESC {
        offset: r.offset.get(),
        size: r.size.get(),
        flags: r.flags.get(),
        reserved: [0; 16],
    };
    let mut p: DevPtr = 0;
    // SAFETY: live out-pointer and descriptor; a live object of this session.
    ok(unsafe { entry(s.driver.cuExternalMemoryGetMappedBuffer)?(&mut p, as_ptr(m), &desc) })?;
    let device = super::held::device_of(s, p);
    s.tables().insert_alloc(p, desc.size, req.ctx, device);
    Ok(Reply::new(
        &external_memory_mapped_buffer::Reply { dptr: U64::new(p) },
        Vec::new(),
    ))
}

/// `cuDestroyExternalMemory`; the id is forgotten once the driver destroyed it.
pub fn destroy_external_memory(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &destroy_external_memory::Request = message(req)?;
    let id = r.mem.get();
    let m = s.tables().handle(HandleKind::ExternalMemory, id)?;
    // SAFETY: a live object of this session.
    ok(unsafe { entry(s.driver.cuDestroyExternalMemory)?(as_ptr(m)) })?;
    s.tables().forget_other(HandleKind::ExternalMemory, id);
    Ok(Reply::default())
}

/// `CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD` and `…_TIMELINE_SEMAPHORE_FD`.
const SEMAPHORE_FDS: [u32; 2] = [1, 9];
/// Bytes of a signal or wait parameter struct.
const PARAMS: usize = 144;
/// Most semaphores one signal or wait may name.
const MAX_SEMAPHORES: usize = 1024;

/// Imports semaphore `desc` on the driver; the new object's id.
fn import_semaphore(s: &Session, desc: &[u8; 96], ctx: u64) -> Result<u64, Status> {
    // SAFETY: integers, a union of an int and pointers (zero or a
    // descriptor here) and reserved words: valid for any bytes.
    let d: CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC = unsafe { record(desc) };
    let mut m = std::ptr::null_mut();
    // SAFETY: live out-pointer and descriptor.
    ok(unsafe { entry(s.driver.cuImportExternalSemaphore)?(&mut m, &d) })?;
    Ok(s.tables()
        .id_of(HandleKind::ExternalSemaphore, m as usize, ctx))
}

/// `cuImportExternalSemaphore` of the descriptor that followed the request.
pub fn import_external_semaphore_fd(
    lane: &mut Lane,
    s: &Session,
    req: &Request,
) -> Result<Reply, Status> {
    let r: &import_external_semaphore_fd::Request = message(req)?;
    let fd = lane.fd_in.take().ok_or(INVALID_VALUE)?;
    let kind = u32::from_le_bytes([r.desc[0], r.desc[1], r.desc[2], r.desc[3]]);
    if !SEMAPHORE_FDS.contains(&kind) {
        return Err(INVALID_VALUE);
    }
    let mut desc = r.desc;
    let raw = fd.into_raw_fd();
    desc[HANDLE].fill(0);
    desc[HANDLE.start..HANDLE.start + 4].copy_from_slice(&raw.to_le_bytes());
    match import_semaphore(s, &desc, req.ctx) {
        Ok(id) => Ok(Reply::new(
            &import_external_semaphore_fd::Reply { sem: U64::new(id) },
            Vec::new(),
        )),
        Err(st) => {
            // SAFETY: the import failed, so the descriptor is still ours.
            unsafe { libc::close(raw) };
            Err(st)
        }
    }
}

/// `cuImportExternalSemaphore` of another type: the driver's answer.
pub fn import_external_semaphore(
    _: &mut Lane,
    s: &Session,
    req: &Request,
) -> Result<Reply, Status> {
    let r: &import_external_semaphore::Request = message(req)?;
    let mut desc = r.desc;
    if SEMAPHORE_FDS.contains(&u32::from_le_bytes([desc[0], desc[1], desc[2], desc[3]])) {
        return Err(INVALID_VALUE);
    }
    desc[HANDLE].fill(0);
    let id = import_semaphore(s, &desc, req.ctx)?;
    Ok(Reply::new(
        &import_external_semaphore::Reply { sem: U64::new(id) },
        Vec::new(),
    ))
}

/// `cuSignalExternalSemaphoresAsync` or `cuWaitExternalSemaphoresAsync`.
pub fn external_semaphores(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &external_semaphores::Request = message(req)?;
    let n = usize::try_from(r.count.get()).map_err(|_| INVALID_VALUE)?;
    if n == 0 || n > MAX_SEMAPHORES || req.blob.len() != n * (8 + PARAMS) {
        return Err(INVALID_VALUE);
    }
    let (ids, params) = req.blob.split_at(n * 8);
    let (sems, stream) = {
        let t = s.tables();
        let sems = ids
            .chunks_exact(8)
            .map(|c| {
                let id = u64::from_le_bytes(c.try_into().expect("8 bytes"));
                t.handle(HandleKind::ExternalSemaphore, id)
                    .map(as_ptr::<vgpu_abi::types::CUextSemaphore_st>)
            })
            .collect::<Result<Vec<_>, _>>()?;
        (sems, as_handle(t.stream(r.stream.get())?))
    };
    let (ptr, args, count) = (sems.as_ptr(), params.as_ptr(), r.count.get());
    // `n` live semaphores of this session and `n` parameter structs of 144
    // bytes (plain values; a NvSciSync fence pointer matters only to
    // NvSciSync semaphores, which cannot be imported here); a live stream of
    // this session or a sentinel.
    let st = if r.wait != 0 {
        let f = entry(s.driver.cuWaitExternalSemaphoresAsync)?;
        // SAFETY: as said above.
        unsafe { f(ptr, args.cast(), count, stream.cast()) }
    } else {
        let f = entry(s.driver.cuSignalExternalSemaphoresAsync)?;
        // SAFETY: as said above.
        unsafe { f(ptr, args.cast(), count, stream.cast()) }
    };
    ok(st)?;
    Ok(Reply::default())
}

/// `cuDestroyExternalSemaphore`; the id is forgotten once destroyed.
pub fn destroy_external_semaphore(
    _: &mut Lane,
    s: &Session,
    req: &Request,
) -> Result<Reply, Status> {
    let r: &destroy_external_semaphore::Request = message(req)?;
    let id = r.sem.get();
    let m = s.tables().handle(HandleKind::ExternalSemaphore, id)?;
    // SAFETY: a live semaphore of this session.
    ok(unsafe { entry(s.driver.cuDestroyExternalSemaphore)?(as_ptr(m)) })?;
    s.tables().forget_other(HandleKind::ExternalSemaphore, id);
    Ok(Reply::default())
}

/// Refuses a mipmapped array of no levels on external memory with
/// `CUDA_ERROR_INVALID_VALUE` before the driver sees it: driver 580
/// corrupts its process's heap on one (an H200 run aborted in `malloc`).
pub fn check_external_memory_get_mapped_mipmapped_array(
    _: &Session,
    req: &Request,
) -> Result<(), Status> {
    let r: &vgpu_proto::external_memory_get_mapped_mipmapped_array::Request = message(req)?;
    // SAFETY: the descriptor is a C struct of integers, valid for any bytes.
    let desc: vgpu_abi::types::CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC_v1 =
        unsafe { record(&r.mipmap_desc) };
    if desc.numLevels == 0 {
        tracing::warn!("a mipmapped array of no levels on external memory: refused");
        return Err(INVALID_VALUE);
    }
    Ok(())
}
