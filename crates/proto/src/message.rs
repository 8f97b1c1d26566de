//! Typed messages: every request and reply has a fixed part, a
//! `#[repr(C)]` struct of little-endian fields with alignment 1 (so decoding
//! is a bounds-checked cast), followed by a blob whose length the fixed part
//! determines or bounds.
//!
//! The structs are generated from the remoting table
//! (`crates/abi/src/remote/table.rs`, `cargo xtask gen-calls`); each checks
//! itself ([`Message::check`]), and the receive path calls that check before
//! it reads or allocates the blob.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::{Op, ProtoError, MAX_BLOB};

/// Longest string (a name, a PCI bus id) a request may carry.
pub const MAX_STRING: u64 = 1 << 16;

/// The fixed part of a request or reply of one operation.
pub trait Message: FromBytes + IntoBytes + Immutable + KnownLayout + Unaligned + Copy {
    /// The operation it belongs to.
    const OP: Op;
    /// Checks every field and the length of the blob that follows.
    fn check(&self, blob_len: usize) -> Result<(), ProtoError>;
}

/// A request's fixed part, and the type of its reply's.
pub trait RequestMessage: Message {
    type Reply: Message;
}

/// Reads message `M` from `fixed` and checks it against its blob's length.
pub fn decode<M: Message>(fixed: &[u8], blob_len: usize) -> Result<&M, ProtoError> {
    let m = M::ref_from_bytes(fixed).map_err(|_| ProtoError::FixedLen {
        op: M::OP,
        expected: core::mem::size_of::<M>(),
        found: fixed.len(),
    })?;
    m.check(blob_len)?;
    Ok(m)
}

/// [`decode`], for the generated per-operation checks.
pub fn check<M: Message>(fixed: &[u8], blob_len: usize) -> Result<(), ProtoError> {
    decode::<M>(fixed, blob_len).map(drop)
}

/// A bool field is 0 or 1.
pub fn check_bool(op: Op, field: &'static str, v: u8) -> Result<(), ProtoError> {
    if v > 1 {
        return Err(ProtoError::Field {
            op,
            field,
            why: "a bool must be 0 or 1",
        });
    }
    Ok(())
}

/// A message without a blob.
pub fn no_blob(op: Op, blob_len: usize) -> Result<(), ProtoError> {
    blob_is(op, blob_len, 0)
}

/// A message whose blob may be any length the frame allows.
pub fn any_blob(_op: Op, blob_len: usize) -> Result<(), ProtoError> {
    if blob_len > MAX_BLOB {
        return Err(ProtoError::TooLong {
            what: "blob",
            len: blob_len,
            max: MAX_BLOB,
        });
    }
    Ok(())
}

/// A blob of exactly `want` bytes.
pub fn blob_is(op: Op, blob_len: usize, want: u64) -> Result<(), ProtoError> {
    if u64::try_from(blob_len).ok() != Some(want) {
        return Err(ProtoError::BlobLen {
            op,
            expected: want,
            found: blob_len,
        });
    }
    Ok(())
}

/// `a + b`, refused past the largest blob.
pub fn add(op: Op, a: u64, b: u64) -> Result<u64, ProtoError> {
    a.checked_add(b)
        .filter(|&n| n <= MAX_BLOB as u64)
        .ok_or(ProtoError::Field {
            op,
            field: "blob",
            why: "its parts add up past the largest blob",
        })
}

/// The bytes of `count` elements of `elem` bytes, refused past the largest blob.
pub fn array_len(op: Op, count: u64, elem: usize) -> Result<u64, ProtoError> {
    count
        .checked_mul(elem as u64)
        .filter(|&n| n <= MAX_BLOB as u64)
        .ok_or(ProtoError::Field {
            op,
            field: "array",
            why: "more elements than the largest blob holds",
        })
}

/// A string's length, at most [`MAX_STRING`].
pub fn string_len(op: Op, field: &'static str, len: u32) -> Result<u64, ProtoError> {
    let len = u64::from(len);
    if len > MAX_STRING {
        return Err(ProtoError::Field {
            op,
            field,
            why: "a string longer than MAX_STRING",
        });
    }
    Ok(len)
}

/// FNV-1a, for the schema hash.
pub const fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    h
}

/// The hash of every operation's id, name, options and message layouts:
/// peers built from different tables refuse each other at the handshake.
pub const SCHEMA_HASH: u64 = fnv(0xcbf2_9ce4_8422_2325, crate::generated::SCHEMA.as_bytes());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_decodes_from_its_own_size_only() {
        for &op in Op::ALL {
            let fixed = vec![0u8; op.request_len()];
            // All-zero fields are valid for every request of a call without a
            // blob; a longer or shorter fixed part never is.
            let mut longer = fixed.clone();
            longer.push(0);
            assert!(op.check_request(&longer, 0).is_err(), "{op:?}");
            if !fixed.is_empty() {
                assert!(op.check_request(&fixed[1..], 0).is_err(), "{op:?}");
            }
        }
    }

    #[test]
    fn bools_and_blob_lengths_are_checked() {
        assert!(check_bool(Op::MemcpyHtoD, "is_async", 1).is_ok());
        assert!(check_bool(Op::MemcpyHtoD, "is_async", 2).is_err());
        assert!(no_blob(Op::MemAlloc, 1).is_err());
        assert!(blob_is(Op::MemAlloc, 4, 4).is_ok());
        assert!(add(Op::MemAlloc, u64::MAX, 1).is_err());
        assert!(array_len(Op::MemAlloc, u64::MAX / 2, 4).is_err());
        assert!(string_len(Op::MemAlloc, "name", u32::MAX).is_err());
    }

    #[test]
    fn the_schema_names_every_operation_once() {
        assert_eq!(crate::generated::SCHEMA.lines().count(), Op::ALL.len());
    }
}
