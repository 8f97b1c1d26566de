//! GPU core dump attributes of this worker's driver (see
//! `client/src/api/coredump.rs`): dumps are the worker's, and file and pipe
//! names are paths on its host.

use vgpu_proto::{coredump_attribute, Request};
use zerocopy::little_endian::U64;

use super::calls::{message, ok, size, Reply};
use super::exec::Lane;
use super::status::INVALID_VALUE;
use super::Session;
use crate::driver::{entry, Status};

/// Largest attribute value carried.
const MAX_VALUE: u64 = 4096;

/// `CoredumpAttribute`: get or set, for the current context or the process.
pub fn coredump_attribute(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &coredump_attribute::Request = message(req)?;
    let len = r.size.get();
    if len > MAX_VALUE {
        return Err(INVALID_VALUE);
    }
    let set = r.set != 0;
    let mut value = if set {
        if req.blob.len() as u64 != len {
            return Err(INVALID_VALUE);
        }
        req.blob.to_vec()
    } else {
        vec![0u8; size(len)?]
    };
    let mut n = size(len)?;
    let attrib = vgpu_abi::types::CUcoredumpSettings(r.attrib.get());
    let d = &s.driver;
    let f = match (set, r.global != 0) {
        (false, false) => entry(d.cuCoredumpGetAttribute)?,
        (false, true) => entry(d.cuCoredumpGetAttributeGlobal)?,
        (true, false) => entry(d.cuCoredumpSetAttribute)?,
        (true, true) => entry(d.cuCoredumpSetAttributeGlobal)?,
    };
    // SAFETY: `value` holds `n` bytes; the driver writes at most `n` of
    // them (get) or reads them (set), and writes `n`.
    ok(unsafe { f(attrib, value.as_mut_ptr().cast(), &mut n) })?;
    let blob = if set {
        Vec::new()
    } else {
        value.truncate(n.min(value.len()));
        value
    };
    Ok(Reply::new(
        &coredump_attribute::Reply {
            size: U64::new(n as u64),
        },
        blob,
    ))
}
