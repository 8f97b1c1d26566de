//! External memory (`cuImportExternalMemory`, …). A POSIX file descriptor
//! (`CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD`) goes to the worker by
//! SCM_RIGHTS after the request; as with the driver, the application's
//! descriptor belongs to CUDA once the import succeeds, so the client closes
//! it then. Other handle types carry pointers into this process that the
//! worker cannot follow: they travel with those pointers zero and get the
//! driver's answer. External memory handles are worker ids.

use std::os::fd::BorrowedFd;

use vgpu_abi::types::{
    CUdeviceptr, CUexternalMemory, CUDA_EXTERNAL_MEMORY_BUFFER_DESC,
    CUDA_EXTERNAL_MEMORY_HANDLE_DESC,
};
use vgpu_proto::{
    destroy_external_memory, external_memory_mapped_buffer, import_external_memory,
    import_external_memory_fd,
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
