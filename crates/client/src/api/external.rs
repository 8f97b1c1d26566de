//! External memory (`cuImportExternalMemory`, …). A POSIX file descriptor
//! (`CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD`) goes to the worker by
//! SCM_RIGHTS after the request; as with the driver, the application's
//! descriptor belongs to CUDA once the import succeeds, so the client closes
//! it then. Other handle types carry pointers into this process that the
//! worker cannot follow: they travel with those pointers zero and get the
//! driver's answer. External semaphores travel the same way; signalling and
//! waiting carry their parameter structs as bytes. External memory and
//! semaphore handles are worker ids.

use std::ffi::c_uint;
use std::os::fd::BorrowedFd;

use vgpu_abi::types::{
    CUdeviceptr, CUexternalMemory, CUexternalSemaphore, CUDA_EXTERNAL_MEMORY_BUFFER_DESC,
    CUDA_EXTERNAL_MEMORY_HANDLE_DESC, CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC,
};
use vgpu_proto::{
    destroy_external_memory, destroy_external_semaphore, external_memory_mapped_buffer,
    external_semaphores, import_external_memory, import_external_memory_fd,
    import_external_semaphore, import_external_semaphore_fd,
};
use zerocopy::little_endian::{U32, U64};

use crate::call::record_bytes_at;
use crate::edge::{non_null, wire, write_out, CuError, CuResult};
use crate::runtime::runtime;

/// `CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD`.
const OPAQUE_FD: u32 = 1;
/// Where the handle union lies in the descriptor, and how long it is.
const HANDLE: std::ops::Range<usize> = 8..24;

/// `cuImportExternalMemory`.
///
/// # Safety
/// `out` must be NULL or writable, `desc` NULL or readable.
pub unsafe fn import(
    out: *mut CUexternalMemory,
    desc: *const CUDA_EXTERNAL_MEMORY_HANDLE_DESC,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(out)?;
    non_null(desc)?;
    // SAFETY: checked non-NULL; readable by contract.
    let mut bytes: [u8; 104] = unsafe { record_bytes_at(desc) };
    // SAFETY: as above.
    let d = unsafe { desc.read_unaligned() };
    let id = if d.type_.0 == OPAQUE_FD {
        // SAFETY: the union's `fd` member, for this handle type.
        let raw = unsafe { d.handle.fd };
        // SAFETY: fcntl(F_GETFD) only asks whether `raw` is an open descriptor.
        if s.remote || unsafe { libc::fcntl(raw, libc::F_GETFD) } < 0 {
            return Err(CuError::INVALID_VALUE);
        }
        bytes[HANDLE].fill(0);
        // SAFETY: `raw` is open (checked above) and stays open for the call.
        let fd = unsafe { BorrowedFd::borrow_raw(raw) };
        let id = s
            .request_passing(&import_external_memory_fd::Request { desc: bytes }, fd)?
            .mem
            .get();
        // The driver owns the descriptor now; the worker holds its copy.
        // SAFETY: the application gave up `raw` with the successful import.
        unsafe { libc::close(raw) };
        id
    } else {
        bytes[HANDLE].fill(0);
        let r = import_external_memory::Request { desc: bytes };
        s.request(&r, &[])?.0.mem.get()
    };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(out, wire::handle(id)) }
}

/// `cuExternalMemoryGetMappedBuffer`: the buffer is device memory of this
/// session until `cuMemFree`.
///
/// # Safety
/// `dptr` must be NULL or writable, `desc` NULL or readable.
pub unsafe fn mapped_buffer(
    dptr: *mut CUdeviceptr,
    mem: CUexternalMemory,
    desc: *const CUDA_EXTERNAL_MEMORY_BUFFER_DESC,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(dptr)?;
    non_null(desc)?;
    // SAFETY: checked non-NULL; readable by contract.
    let d = unsafe { desc.read_unaligned() };
    let r = external_memory_mapped_buffer::Request {
        mem: U64::new(mem as usize as u64),
        offset: U64::new(d.offset),
        size: U64::new(d.size),
        flags: U32::new(d.flags),
    };
    let (rep, _) = s.request(&r, &[])?;
    let p = rep.dptr.get();
    s.objects().device_ranges.insert(p, d.size);
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(dptr, p) }
}

/// `cuDestroyExternalMemory`.
pub fn destroy(mem: CUexternalMemory) -> CuResult<()> {
    let s = runtime().session()?;
    let r = destroy_external_memory::Request {
        mem: U64::new(mem as usize as u64),
    };
    s.request(&r, &[]).map(drop)
}

/// `CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD` and
/// `…_TIMELINE_SEMAPHORE_FD`: the types whose handle is a file descriptor.
const SEMAPHORE_FDS: [u32; 2] = [1, 9];
/// Most semaphores one signal or wait may name.
pub(crate) const MAX_SEMAPHORES: u32 = 1024;

/// `cuImportExternalSemaphore`: a file descriptor goes to the worker as for
/// external memory, and belongs to CUDA once imported.
///
/// # Safety
/// `out` must be NULL or writable, `desc` NULL or readable.
pub unsafe fn import_semaphore(
    out: *mut CUexternalSemaphore,
    desc: *const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(out)?;
    non_null(desc)?;
    // SAFETY: checked non-NULL; readable by contract.
    let mut bytes: [u8; 96] = unsafe { record_bytes_at(desc) };
    // SAFETY: as above.
    let d = unsafe { desc.read_unaligned() };
    bytes[HANDLE].fill(0);
    let id = if SEMAPHORE_FDS.contains(&d.type_.0) {
        // SAFETY: the union's `fd` member, for these handle types.
        let raw = unsafe { d.handle.fd };
        // SAFETY: fcntl(F_GETFD) only asks whether `raw` is an open descriptor.
        if s.remote || unsafe { libc::fcntl(raw, libc::F_GETFD) } < 0 {
            return Err(CuError::INVALID_VALUE);
        }
        // SAFETY: `raw` is open (checked above) and stays open for the call.
        let fd = unsafe { BorrowedFd::borrow_raw(raw) };
        let r = import_external_semaphore_fd::Request { desc: bytes };
        let id = s.request_passing(&r, fd)?.sem.get();
        // SAFETY: the application gave up `raw` with the successful import.
        unsafe { libc::close(raw) };
        id
    } else {
        let r = import_external_semaphore::Request { desc: bytes };
        s.request(&r, &[])?.0.sem.get()
    };
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(out, wire::handle(id)) }
}

/// `cuSignalExternalSemaphoresAsync` and `cuWaitExternalSemaphoresAsync`
/// (`wait`) on wire stream `stream`. `params` points to `count` signal or
/// wait parameter structs, both 144 bytes.
///
/// # Safety
/// `sems` must be NULL or readable for `count` handles, `params` NULL or
/// readable for `count` structs.
pub unsafe fn semaphores(
    sems: *const CUexternalSemaphore,
    params: *const u8,
    count: c_uint,
    stream: u64,
    wait: bool,
) -> CuResult<()> {
    let s = runtime().session()?;
    if count == 0 {
        return Ok(());
    }
    non_null(sems)?;
    non_null(params)?;
    if count > MAX_SEMAPHORES {
        return Err(CuError::INVALID_VALUE);
    }
    let n = count as usize;
    let mut blob = Vec::with_capacity(n * (8 + PARAMS));
    for i in 0..n {
        // SAFETY: readable for `count` handles by contract.
        let h = unsafe { sems.add(i).read_unaligned() };
        blob.extend_from_slice(&(h as usize as u64).to_le_bytes());
    }
    // SAFETY: readable for `count` structs of PARAMS bytes by contract.
    blob.extend_from_slice(unsafe { std::slice::from_raw_parts(params, n * PARAMS) });
    let r = external_semaphores::Request {
        stream: U64::new(stream),
        count: U32::new(count),
        wait: u8::from(wait),
    };
    s.request(&r, &blob).map(drop)
}

/// Bytes of a `CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS` or `…_WAIT_PARAMS`.
pub const PARAMS: usize = 144;

/// `cuDestroyExternalSemaphore`.
pub fn destroy_semaphore(sem: CUexternalSemaphore) -> CuResult<()> {
    let s = runtime().session()?;
    let r = destroy_external_semaphore::Request {
        sem: U64::new(sem as usize as u64),
    };
    s.request(&r, &[]).map(drop)
}
