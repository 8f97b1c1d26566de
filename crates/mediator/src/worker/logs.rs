//! Driver logs: `cuLogsDumpToMemory` of this worker's driver, for the
//! client's `cuLogsDumpToMemory` and `cuLogsDumpToFile`.

use vgpu_abi::types::CUlogIterator;
use vgpu_proto::{logs_dump, Request};
use zerocopy::little_endian::{U32, U64};

use super::calls::{message, size, Reply};
use super::exec::Lane;
use super::status::INVALID_VALUE;
use super::Session;
use crate::driver::{entry, Status};

/// The driver's log buffer holds at most this many bytes, plus the NUL.
const MAX_DUMP: u64 = 25600 + 1;

/// `LogsDump`: the driver's status, iterator and size travel in the reply
/// (a buffer too small for any line still reports its size of 0).
pub fn logs_dump(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &logs_dump::Request = message(req)?;
    let cap = r.size.get();
    if cap > MAX_DUMP {
        return Err(INVALID_VALUE);
    }
    let mut buf = vec![0u8; size(cap)?.max(1)];
    let mut n = size(cap)?;
    let mut it: CUlogIterator = r.iterator.get();
    let it_ptr = if r.has_iterator != 0 {
        &raw mut it
    } else {
        std::ptr::null_mut()
    };
    // SAFETY: `buf` holds at least `n` bytes; the iterator is NULL or a live local.
    let st = unsafe {
        entry(s.driver.cuLogsDumpToMemory)?(it_ptr, buf.as_mut_ptr().cast(), &mut n, r.flags.get())
    };
    let written = if st.0 == 0 { n.min(buf.len()) } else { 0 };
    buf.truncate(written);
    Ok(Reply::new(
        &logs_dump::Reply {
            status: U32::new(st.0),
            iterator: U32::new(it),
            size: U64::new(written as u64),
        },
        buf,
    ))
}
