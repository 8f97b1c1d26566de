//! Request and response frames.
//!
//! ```text
//! request  = RequestHead (32 B) | args: nargs × u64 | blob: blob_len bytes
//! response = ResponseHead (24 B) | outs: nouts × u64 | blob: blob_len bytes
//! ```
//! The receiver validates the head (magic, op, arity, bounds) before it reads
//! or allocates anything behind it.

use std::io::{IoSlice, Read, Write};

use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::{Op, ProtoError, MAX_ARGS, MAX_BLOB};

/// `"VGRQ"`, little-endian.
pub const REQUEST_MAGIC: u32 = u32::from_le_bytes(*b"VGRQ");
/// `"VGRS"`, little-endian.
pub const RESPONSE_MAGIC: u32 = u32::from_le_bytes(*b"VGRS");

/// Fixed head of a request frame.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct RequestHead {
    pub magic: U32,
    pub op: U16,
    pub nargs: U16,
    pub seq: U32,
    pub blob_len: U32,
    /// The calling thread's current context id (0: none).
    pub ctx: U64,
    pub flags: U32,
    pub reserved: U32,
}

/// Fixed head of a response frame.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct ResponseHead {
    pub magic: U32,
    /// The `CUresult` of the call.
    pub status: U32,
    pub seq: U32,
    pub nouts: U16,
    pub reserved: U16,
    pub blob_len: U32,
    pub reserved2: U32,
}

/// A decoded request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub op: Op,
    pub seq: u32,
    pub ctx: u64,
    pub flags: u32,
    pub args: Vec<u64>,
    pub blob: Vec<u8>,
}

/// A decoded response.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Response {
    pub status: u32,
    pub seq: u32,
    pub outs: Vec<u64>,
    pub blob: Vec<u8>,
}

fn check_len(what: &'static str, len: usize, max: usize) -> Result<usize, ProtoError> {
    if len > max {
        return Err(ProtoError::TooLong { what, len, max });
    }
    Ok(len)
}

fn len_u32(what: &'static str, len: usize) -> Result<U32, ProtoError> {
    let len = check_len(what, len, MAX_BLOB)?;
    Ok(U32::new(u32::try_from(len).map_err(|_| {
        ProtoError::TooLong {
            what,
            len,
            max: MAX_BLOB,
        }
    })?))
}

fn args_bytes(args: &[u64]) -> Vec<u8> {
    args.iter().flat_map(|a| a.to_le_bytes()).collect()
}

fn read_u64s(r: &mut impl Read, n: usize) -> Result<Vec<u64>, ProtoError> {
    let mut raw = vec![0u8; n * 8];
    r.read_exact(&mut raw)?;
    Ok(raw
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("chunks_exact yields 8 bytes")))
        .collect())
}

fn write_all_vectored(w: &mut impl Write, parts: &[&[u8]]) -> Result<(), ProtoError> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let mut written = 0;
    while written < total {
        // Rebuild the slices that remain after `written` bytes.
        let mut skip = written;
        let mut slices = Vec::with_capacity(parts.len());
        for p in parts {
            if skip >= p.len() {
                skip -= p.len();
                continue;
            }
            slices.push(IoSlice::new(&p[skip..]));
            skip = 0;
        }
        // Like `write_all`: a signal interrupting the call is not an error.
        let n = match w.write_vectored(&slices) {
            Ok(0) => return Err(std::io::Error::from(std::io::ErrorKind::WriteZero).into()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        written += n;
    }
    Ok(())
}

impl RequestHead {
    /// Checks magic, op, arity and bounds; returns the op.
    pub fn validate(&self) -> Result<Op, ProtoError> {
        if self.magic.get() != REQUEST_MAGIC {
            return Err(ProtoError::BadMagic {
                found: self.magic.get(),
                expected: REQUEST_MAGIC,
            });
        }
        let op = Op::try_from(self.op.get())?;
        let nargs = check_len("args", usize::from(self.nargs.get()), MAX_ARGS)?;
        if nargs != op.nargs() {
            return Err(ProtoError::Arity {
                op,
                expected: op.nargs(),
                found: nargs,
            });
        }
        check_len("blob", self.blob_len.get() as usize, MAX_BLOB)?;
        Ok(op)
    }
}

impl ResponseHead {
    /// Checks magic and bounds.
    pub fn validate(&self) -> Result<(), ProtoError> {
        if self.magic.get() != RESPONSE_MAGIC {
            return Err(ProtoError::BadMagic {
                found: self.magic.get(),
                expected: RESPONSE_MAGIC,
            });
        }
        check_len("outs", usize::from(self.nouts.get()), MAX_ARGS)?;
        check_len("blob", self.blob_len.get() as usize, MAX_BLOB)?;
        Ok(())
    }

    /// Blob length, already bounded by [`ResponseHead::validate`].
    pub fn blob_len(&self) -> usize {
        self.blob_len.get() as usize
    }
}

/// Writes one request frame (with `flags` 0).
pub fn write_request(
    w: &mut impl Write,
    op: Op,
    seq: u32,
    ctx: u64,
    args: &[u64],
    blob: &[u8],
) -> Result<(), ProtoError> {
    write_request_frame(w, op, seq, ctx, 0, args, blob)
}

fn write_request_frame(
    w: &mut impl Write,
    op: Op,
    seq: u32,
    ctx: u64,
    flags: u32,
    args: &[u64],
    blob: &[u8],
) -> Result<(), ProtoError> {
    if args.len() != op.nargs() {
        return Err(ProtoError::Arity {
            op,
            expected: op.nargs(),
            found: args.len(),
        });
    }
    let head = RequestHead {
        magic: U32::new(REQUEST_MAGIC),
        op: U16::new(op as u16),
        nargs: U16::new(u16::try_from(args.len()).expect("arity is bounded by MAX_ARGS")),
        seq: U32::new(seq),
        blob_len: len_u32("blob", blob.len())?,
        ctx: U64::new(ctx),
        flags: U32::new(flags),
        reserved: U32::new(0),
    };
    let args = args_bytes(args);
    write_all_vectored(w, &[head.as_bytes(), &args, blob])
}

/// Reads and validates one request frame.
pub fn read_request(r: &mut impl Read) -> Result<Request, ProtoError> {
    let mut head = RequestHead::default();
    r.read_exact(head.as_mut_bytes())?;
    let op = head.validate()?;
    let args = read_u64s(r, op.nargs())?;
    let mut blob = vec![0u8; head.blob_len.get() as usize];
    r.read_exact(&mut blob)?;
    Ok(Request {
        op,
        seq: head.seq.get(),
        ctx: head.ctx.get(),
        flags: head.flags.get(),
        args,
        blob,
    })
}

/// Writes one response frame.
pub fn write_response(
    w: &mut impl Write,
    status: u32,
    seq: u32,
    outs: &[u64],
    blob: &[u8],
) -> Result<(), ProtoError> {
    let nouts = check_len("outs", outs.len(), MAX_ARGS)?;
    let head = ResponseHead {
        magic: U32::new(RESPONSE_MAGIC),
        status: U32::new(status),
        seq: U32::new(seq),
        nouts: U16::new(u16::try_from(nouts).expect("bounded by MAX_ARGS")),
        reserved: U16::new(0),
        blob_len: len_u32("blob", blob.len())?,
        reserved2: U32::new(0),
    };
    let outs = args_bytes(outs);
    write_all_vectored(w, &[head.as_bytes(), &outs, blob])
}

/// Reads a response head and its scalar results, leaving the blob unread so
/// the caller can read it straight into its destination.
pub fn read_response_head(r: &mut impl Read) -> Result<(ResponseHead, Vec<u64>), ProtoError> {
    let mut head = ResponseHead::default();
    r.read_exact(head.as_mut_bytes())?;
    head.validate()?;
    let outs = read_u64s(r, usize::from(head.nouts.get()))?;
    Ok((head, outs))
}

impl Response {
    /// Reads one whole response frame, blob included.
    pub fn read(r: &mut impl Read) -> Result<Response, ProtoError> {
        let (head, outs) = read_response_head(r)?;
        let mut blob = vec![0u8; head.blob_len()];
        r.read_exact(&mut blob)?;
        Ok(Response {
            status: head.status.get(),
            seq: head.seq.get(),
            outs,
            blob,
        })
    }

    /// Encodes this response as bytes.
    pub fn encode(&self) -> Result<Vec<u8>, ProtoError> {
        let mut out = Vec::new();
        write_response(&mut out, self.status, self.seq, &self.outs, &self.blob)?;
        Ok(out)
    }
}

impl Request {
    /// Encodes this request as bytes.
    pub fn encode(&self) -> Result<Vec<u8>, ProtoError> {
        let mut out = Vec::new();
        let r = self;
        write_request_frame(&mut out, r.op, r.seq, r.ctx, r.flags, &r.args, &r.blob)?;
        Ok(out)
    }

    /// Decodes a request from a byte slice (used by fuzzing and fixtures).
    pub fn decode(mut bytes: &[u8]) -> Result<Request, ProtoError> {
        let have = bytes.len();
        read_request(&mut bytes).map_err(|e| match e {
            ProtoError::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
                ProtoError::Truncated {
                    need: have + 1,
                    have,
                }
            }
            other => other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_sizes_are_fixed() {
        assert_eq!(std::mem::size_of::<RequestHead>(), 32);
        assert_eq!(std::mem::size_of::<ResponseHead>(), 24);
    }

    #[test]
    fn oversized_blob_is_rejected_before_allocation() {
        let mut head = RequestHead {
            magic: U32::new(REQUEST_MAGIC),
            op: U16::new(Op::MemFree as u16),
            nargs: U16::new(1),
            ..Default::default()
        };
        head.blob_len = U32::new(u32::MAX);
        let bytes = head.as_bytes().to_vec();
        assert!(matches!(
            Request::decode(&bytes),
            Err(ProtoError::TooLong { .. })
        ));
    }

    #[test]
    fn wrong_arity_is_rejected() {
        let head = RequestHead {
            magic: U32::new(REQUEST_MAGIC),
            op: U16::new(Op::MemFree as u16),
            nargs: U16::new(3),
            ..Default::default()
        };
        assert!(matches!(
            Request::decode(head.as_bytes()),
            Err(ProtoError::Arity { .. })
        ));
    }
}
