//! Request and response frames.
//!
//! ```text
//! request  = RequestHead (40 B) | fixed: the op's Request struct | blob: blob_len bytes
//! response = ResponseHead (24 B) | fixed: the op's Reply struct, or nothing on failure | blob
//! ```
//! The receiver validates the head (magic, op, fixed length, flags, bounds)
//! and the fixed part (every field, and the blob length it implies) before it
//! reads or allocates the blob ([`crate::message`]).
//!
//! # Request flags ([`flags`])
//!
//! - [`flags::POSTED`]: the sender does not wait for a reply and the worker
//!   sends none. Only operations marked `posted` in the op table
//!   ([`Op::postable`]) may carry it. The worker runs a posted request in
//!   order on its lane; if it fails, the lane keeps the first such failure
//!   and returns it as the status of the lane's next synchronizing request
//!   ([`Op::synchronizes`]), which is then not run
//!   (`docs/adr/0004-async-errors.md`).
//! - [`flags::AFTER_ALL`] and [`flags::AFTER`] (posted requests only, at
//!   most one of them): what the request waits for (below).
//! - Every other bit is reserved and must be zero.
//!
//! # Reply flags ([`reply_flags`])
//!
//! - [`reply_flags::EVENTS`]: while the request ran, the worker's driver
//!   called a log callback on the lane's thread (inside the call, as driver
//!   580 does); the lane holds those events until the client takes them with
//!   `TakeEvents` on the same lane, and runs the application's functions
//!   before the call returns (`docs/protocol.md`, "Events").
//! - Every other bit, and [`ResponseHead::reserved2`], must be zero.
//!
//! # Order ([`RequestHead::order`], [`RequestHead::after`])
//!
//! Order numbers are session-wide `u32`s compared with wrap-around
//! ([`order_reached`]). The client numbers its posted requests 0, 1, 2, …
//! across all its threads (a *ticket* each, in `order`); a posted request's
//! run completes its ticket. What a request waits for before it starts:
//!
//! - a posted request with [`flags::AFTER_ALL`]: every lower ticket;
//! - a posted request with [`flags::AFTER`]: the one ticket in `after` (the
//!   previous posted request on its stream, or the last request that every
//!   later one follows);
//! - a posted request with neither: nothing;
//! - any other request: every ticket below its `order`, which holds the
//!   number of tickets issued before it was sent (a *fence*).
//!
//! The client chooses these so that posted requests on one stream run in
//! the order it issued them, work on different streams runs in parallel, and
//! no request overtakes a posted request it must follow
//! (`docs/adr/0004-async-errors.md`, "Order across threads").

use std::io::{IoSlice, IoSliceMut, Read, Write};

use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::{Blob, Op, ProtoError, MAX_BLOB, MAX_FIXED};

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
    /// Bytes of the fixed part: the op's request struct.
    pub fixed_len: U16,
    pub seq: U32,
    pub blob_len: U32,
    /// The calling thread's current context id (0: none).
    pub ctx: U64,
    /// [`flags`] bits.
    pub flags: U32,
    /// A posted request's ticket, or another request's fence (see the
    /// module documentation).
    pub order: U32,
    /// The ticket a posted request with [`flags::AFTER`] waits for; zero
    /// otherwise.
    pub after: U32,
    /// Zero.
    pub reserved: U32,
}

/// Request flag bits.
pub mod flags {
    /// No reply is sent; a failure is deferred to the lane's next
    /// synchronizing request.
    pub const POSTED: u32 = 1 << 0;
    /// A posted request that starts only after every lower ticket has run.
    pub const AFTER_ALL: u32 = 1 << 1;
    /// A posted request that starts only after the ticket in
    /// [`RequestHead::after`](super::RequestHead::after) has run.
    pub const AFTER: u32 = 1 << 2;
    /// Every defined bit.
    pub const ALL: u32 = POSTED | AFTER_ALL | AFTER;
}

/// Whether an order counter that has reached `done` has passed `order`:
/// `done >= order` in wrap-around (serial number) arithmetic.
pub const fn order_reached(done: u32, order: u32) -> bool {
    done.wrapping_sub(order) < 1 << 31
}

/// Fixed head of a response frame.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct ResponseHead {
    pub magic: U32,
    /// The `CUresult` of the call.
    pub status: U32,
    pub seq: U32,
    /// Bytes of the fixed part: the op's reply struct on success, else 0.
    pub fixed_len: U16,
    /// [`reply_flags`] bits.
    pub flags: U16,
    pub blob_len: U32,
    /// Zero.
    pub reserved2: U32,
}

/// Reply flag bits, in [`ResponseHead::flags`].
pub mod reply_flags {
    /// The lane holds events raised inside this request (or an earlier one
    /// whose events were not taken yet), for `TakeEvents`.
    pub const EVENTS: u16 = 1 << 0;
    /// Every defined bit.
    pub const ALL: u16 = EVENTS;
}

/// A decoded request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub op: Op,
    pub seq: u32,
    pub ctx: u64,
    pub flags: u32,
    pub order: u32,
    pub after: u32,
    /// The op's request struct, as bytes ([`Request::message`]).
    pub fixed: Vec<u8>,
    /// The bytes after the fixed part ([`Blob`]: reused frame to frame).
    pub blob: Blob,
}

impl Request {
    /// A request with no arguments and no blob, to read into
    /// ([`read_request_into`]).
    pub fn empty() -> Request {
        Request {
            op: Op::ALL[0],
            seq: 0,
            ctx: 0,
            flags: 0,
            order: 0,
            after: 0,
            fixed: Vec::new(),
            blob: Blob::new(),
        }
    }

    /// Whether the sender waits for no reply ([`flags::POSTED`]).
    pub fn posted(&self) -> bool {
        self.flags & flags::POSTED != 0
    }

    /// The typed fixed part, checked on receipt (a mismatch is refused).
    pub fn message<M: crate::Message>(&self) -> Result<&M, ProtoError> {
        if M::OP != self.op {
            return Err(ProtoError::Field {
                op: self.op,
                field: "op",
                why: "read as another operation's message",
            });
        }
        crate::message::decode(&self.fixed, self.blob.len())
    }

    /// Whether this request is a synchronizing call ([`Op::synchronizes`]).
    pub fn synchronizes(&self) -> bool {
        self.op.synchronizes(&self.fixed)
    }
}

/// Everything in a request head but the lengths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestMeta {
    pub op: Op,
    pub seq: u32,
    pub ctx: u64,
    pub flags: u32,
    pub order: u32,
    pub after: u32,
}

/// A decoded response.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Response {
    pub status: u32,
    pub seq: u32,
    /// [`reply_flags`] bits.
    pub flags: u16,
    /// The op's reply struct as bytes, on success.
    pub fixed: Vec<u8>,
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
    /// Checks magic, op, arity, flags and bounds; returns the op.
    pub fn validate(&self) -> Result<Op, ProtoError> {
        if self.magic.get() != REQUEST_MAGIC {
            return Err(ProtoError::BadMagic {
                found: self.magic.get(),
                expected: REQUEST_MAGIC,
            });
        }
        let op = Op::try_from(self.op.get())?;
        let fixed = usize::from(self.fixed_len.get());
        if fixed != op.request_len() {
            return Err(ProtoError::FixedLen {
                op,
                expected: op.request_len(),
                found: fixed,
            });
        }
        let f = self.flags.get();
        if f & !flags::ALL != 0 {
            return Err(ProtoError::Flags(f));
        }
        if f & flags::POSTED != 0 && !op.postable() {
            return Err(ProtoError::NotPostable(op));
        }
        let waits = f & (flags::AFTER_ALL | flags::AFTER);
        let bad_wait = waits == flags::AFTER_ALL | flags::AFTER
            || (waits != 0 && f & flags::POSTED == 0)
            || (f & flags::AFTER == 0 && self.after.get() != 0);
        if bad_wait || self.reserved.get() != 0 {
            return Err(ProtoError::Flags(f));
        }
        check_len("blob", self.blob_len.get() as usize, MAX_BLOB)?;
        Ok(op)
    }
}

impl ResponseHead {
    /// Checks magic, flags and bounds.
    pub fn validate(&self) -> Result<(), ProtoError> {
        if self.magic.get() != RESPONSE_MAGIC {
            return Err(ProtoError::BadMagic {
                found: self.magic.get(),
                expected: RESPONSE_MAGIC,
            });
        }
        let f = self.flags.get();
        if f & !reply_flags::ALL != 0 || self.reserved2.get() != 0 {
            return Err(ProtoError::Flags(u32::from(f)));
        }
        check_len("fixed part", usize::from(self.fixed_len.get()), MAX_FIXED)?;
        check_len("blob", self.blob_len.get() as usize, MAX_BLOB)?;
        Ok(())
    }

    /// Blob length, already bounded by [`ResponseHead::validate`].
    pub fn blob_len(&self) -> usize {
        self.blob_len.get() as usize
    }

    /// Whether the lane holds events for `TakeEvents`
    /// ([`reply_flags::EVENTS`]).
    pub fn events(&self) -> bool {
        self.flags.get() & reply_flags::EVENTS != 0
    }
}

/// Writes one request frame (with `flags`, `order` and `after` 0).
pub fn write_request(
    w: &mut impl Write,
    op: Op,
    seq: u32,
    ctx: u64,
    fixed: &[u8],
    blob: &[u8],
) -> Result<(), ProtoError> {
    let meta = RequestMeta {
        op,
        seq,
        ctx,
        flags: 0,
        order: 0,
        after: 0,
    };
    write_request_meta(w, &meta, fixed, blob)
}

/// Writes one request frame with every head field given.
pub fn write_request_meta(
    w: &mut impl Write,
    meta: &RequestMeta,
    fixed: &[u8],
    blob: &[u8],
) -> Result<(), ProtoError> {
    let prefix = request_prefix(meta, fixed, blob.len())?;
    write_all_vectored(w, &[&prefix, blob])
}

/// The head and fixed part of a request whose blob is `blob_len` bytes: the
/// frame is this prefix followed by the blob, so a sender can hand the two
/// to a vectored write or a ring as separate parts. Checks the head, the
/// fixed part and the blob length as the receiver will.
pub fn request_prefix(
    meta: &RequestMeta,
    fixed: &[u8],
    blob_len: usize,
) -> Result<Vec<u8>, ProtoError> {
    let mut out = Vec::with_capacity(std::mem::size_of::<RequestHead>() + fixed.len());
    request_prefix_into(&mut out, meta, fixed, blob_len)?;
    Ok(out)
}

/// [`request_prefix`] into `out` (replacing its contents), so that a sender
/// that keeps one buffer allocates nothing per request.
pub fn request_prefix_into(
    out: &mut Vec<u8>,
    meta: &RequestMeta,
    fixed: &[u8],
    blob_len: usize,
) -> Result<(), ProtoError> {
    let op = meta.op;
    op.check_request(fixed, blob_len)?;
    let head = RequestHead {
        magic: U32::new(REQUEST_MAGIC),
        op: U16::new(op as u16),
        fixed_len: U16::new(u16::try_from(fixed.len()).map_err(|_| ProtoError::TooLong {
            what: "fixed part",
            len: fixed.len(),
            max: MAX_FIXED,
        })?),
        seq: U32::new(meta.seq),
        blob_len: len_u32("blob", blob_len)?,
        ctx: U64::new(meta.ctx),
        flags: U32::new(meta.flags),
        order: U32::new(meta.order),
        after: U32::new(meta.after),
        reserved: U32::new(0),
    };
    head.validate()?;
    out.clear();
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(fixed);
    Ok(())
}

/// Reads and validates one request frame.
pub fn read_request(r: &mut impl Read) -> Result<Request, ProtoError> {
    let mut req = Request::empty();
    read_request_into(r, &mut req)?;
    Ok(req)
}

/// Blobs up to this size are read with the request's fixed part, in one
/// vectored read ([`read_request_into`]).
const SMALL_BLOB: usize = 4 << 10;

/// Fills `a` then `b` from `r` with vectored reads: on a socket, one
/// system call where the bytes are there.
fn read_exact_both(r: &mut impl Read, a: &mut [u8], b: &mut [u8]) -> std::io::Result<()> {
    let mut bufs = [IoSliceMut::new(a), IoSliceMut::new(b)];
    let mut rest = &mut bufs[..];
    IoSliceMut::advance_slices(&mut rest, 0);
    while !rest.is_empty() {
        match r.read_vectored(rest) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => IoSliceMut::advance_slices(&mut rest, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads and validates one request frame into `req`, reusing its buffers:
/// a lane that keeps one `Request` allocates nothing per request once its
/// buffers have grown. On error `req` holds nothing meaningful.
pub fn read_request_into(r: &mut impl Read, req: &mut Request) -> Result<(), ProtoError> {
    let mut head = RequestHead::default();
    r.read_exact(head.as_mut_bytes())?;
    let op = head.validate()?;
    req.fixed.clear();
    req.fixed.resize(op.request_len(), 0);
    let blob_len = head.blob_len.get() as usize;
    if blob_len <= SMALL_BLOB {
        // One read for both (a launch's parameters), checked after.
        read_exact_both(r, &mut req.fixed, req.blob.overwrite(blob_len))?;
        op.check_request(&req.fixed, blob_len)?;
    } else {
        // A large blob is read only once the fixed part allows it.
        r.read_exact(&mut req.fixed)?;
        op.check_request(&req.fixed, blob_len)?;
        r.read_exact(req.blob.overwrite(blob_len))?;
    }
    req.op = op;
    req.seq = head.seq.get();
    req.ctx = head.ctx.get();
    req.flags = head.flags.get();
    req.order = head.order.get();
    req.after = head.after.get();
    Ok(())
}

/// Decodes into `req` the one request frame that fills `bytes` (a ring
/// message), reusing `req`'s buffers as [`read_request_into`] does, and
/// checking the same. Bytes beyond the frame are an error.
pub fn decode_request_into(bytes: &[u8], req: &mut Request) -> Result<(), ProtoError> {
    let short = || ProtoError::Io(std::io::ErrorKind::UnexpectedEof.into());
    let (head, rest) = RequestHead::read_from_prefix(bytes).map_err(|_| short())?;
    let op = head.validate()?;
    let blob_len = head.blob_len.get() as usize;
    let fixed = rest.get(..op.request_len()).ok_or_else(short)?;
    let blob = &rest[fixed.len()..];
    if blob.len() != blob_len {
        if blob.len() < blob_len {
            return Err(short());
        }
        return Err(ProtoError::TooLong {
            what: "ring message beyond its frame",
            len: bytes.len(),
            max: bytes.len() - (blob.len() - blob_len),
        });
    }
    op.check_request(fixed, blob_len)?;
    req.fixed.clear();
    req.fixed.extend_from_slice(fixed);
    req.blob.copy_from(blob);
    req.op = op;
    req.seq = head.seq.get();
    req.ctx = head.ctx.get();
    req.flags = head.flags.get();
    req.order = head.order.get();
    req.after = head.after.get();
    Ok(())
}

/// Writes one response frame.
pub fn write_response(
    w: &mut impl Write,
    status: u32,
    seq: u32,
    fixed: &[u8],
    blob: &[u8],
) -> Result<(), ProtoError> {
    write_response_flagged(w, status, seq, 0, fixed, blob)
}

/// Writes one response frame with reply `flags` ([`reply_flags`]).
pub fn write_response_flagged(
    w: &mut impl Write,
    status: u32,
    seq: u32,
    flags: u16,
    fixed: &[u8],
    blob: &[u8],
) -> Result<(), ProtoError> {
    let mut prefix = Vec::new();
    response_prefix_into(&mut prefix, status, seq, flags, fixed, blob.len())?;
    write_all_vectored(w, &[&prefix, blob])
}

/// The head and fixed part of a response whose blob is `blob_len` bytes,
/// as [`request_prefix`] is for requests.
pub fn response_prefix(
    status: u32,
    seq: u32,
    fixed: &[u8],
    blob_len: usize,
) -> Result<Vec<u8>, ProtoError> {
    let mut out = Vec::with_capacity(std::mem::size_of::<ResponseHead>() + fixed.len());
    response_prefix_into(&mut out, status, seq, 0, fixed, blob_len)?;
    Ok(out)
}

/// [`response_prefix`] with reply `flags` ([`reply_flags`]) into `out`
/// (replacing its contents): a lane that keeps one buffer allocates nothing
/// per reply. Checks the head as the receiver will.
pub fn response_prefix_into(
    out: &mut Vec<u8>,
    status: u32,
    seq: u32,
    flags: u16,
    fixed: &[u8],
    blob_len: usize,
) -> Result<(), ProtoError> {
    let fixed_len = check_len("fixed part", fixed.len(), MAX_FIXED)?;
    let head = ResponseHead {
        magic: U32::new(RESPONSE_MAGIC),
        status: U32::new(status),
        seq: U32::new(seq),
        fixed_len: U16::new(u16::try_from(fixed_len).expect("bounded by MAX_FIXED")),
        flags: U16::new(flags),
        blob_len: len_u32("blob", blob_len)?,
        reserved2: U32::new(0),
    };
    head.validate()?;
    out.clear();
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(fixed);
    Ok(())
}

/// Reads a response head and its fixed part, leaving the blob unread so
/// the caller can read it straight into its destination. The caller, who
/// knows the operation, checks the fixed part ([`crate::message::decode`]).
pub fn read_response_head(r: &mut impl Read) -> Result<(ResponseHead, Vec<u8>), ProtoError> {
    let mut head = ResponseHead::default();
    r.read_exact(head.as_mut_bytes())?;
    head.validate()?;
    let mut fixed = vec![0u8; usize::from(head.fixed_len.get())];
    r.read_exact(&mut fixed)?;
    Ok((head, fixed))
}

impl Response {
    /// Reads one whole response frame, blob included.
    pub fn read(r: &mut impl Read) -> Result<Response, ProtoError> {
        let (head, fixed) = read_response_head(r)?;
        let mut blob = vec![0u8; head.blob_len()];
        r.read_exact(&mut blob)?;
        Ok(Response {
            status: head.status.get(),
            seq: head.seq.get(),
            flags: head.flags.get(),
            fixed,
            blob,
        })
    }

    /// Encodes this response as bytes.
    pub fn encode(&self) -> Result<Vec<u8>, ProtoError> {
        let mut out = Vec::new();
        write_response_flagged(
            &mut out,
            self.status,
            self.seq,
            self.flags,
            &self.fixed,
            &self.blob,
        )?;
        Ok(out)
    }
}

impl Request {
    /// Encodes this request as bytes.
    pub fn encode(&self) -> Result<Vec<u8>, ProtoError> {
        let mut out = Vec::new();
        write_request_meta(&mut out, &self.meta(), &self.fixed, &self.blob)?;
        Ok(out)
    }

    /// The head fields of this request.
    pub fn meta(&self) -> RequestMeta {
        RequestMeta {
            op: self.op,
            seq: self.seq,
            ctx: self.ctx,
            flags: self.flags,
            order: self.order,
            after: self.after,
        }
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
    use crate::{mem_free, mem_get_info_v2, memcpy_htod};

    fn htod(dst: u64, is_async: u8) -> Vec<u8> {
        memcpy_htod::Request {
            dst: U64::new(dst),
            stream: U64::new(0),
            is_async,
        }
        .as_bytes()
        .to_vec()
    }

    #[test]
    fn head_sizes_are_fixed() {
        assert_eq!(std::mem::size_of::<RequestHead>(), 40);
        assert_eq!(std::mem::size_of::<ResponseHead>(), 24);
    }

    #[test]
    fn oversized_blob_is_rejected_before_allocation() {
        let mut head = RequestHead {
            magic: U32::new(REQUEST_MAGIC),
            op: U16::new(Op::MemFree as u16),
            fixed_len: U16::new(8),
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
    fn flags_are_checked() {
        let head = |op: Op, flags: u32| RequestHead {
            magic: U32::new(REQUEST_MAGIC),
            op: U16::new(op as u16),
            fixed_len: U16::new(u16::try_from(op.request_len()).expect("small")),
            flags: U32::new(flags),
            ..Default::default()
        };
        assert!(head(Op::LaunchKernel, flags::POSTED).validate().is_ok());
        assert!(matches!(
            head(Op::MemAlloc, flags::POSTED).validate(),
            Err(ProtoError::NotPostable(Op::MemAlloc))
        ));
        assert!(matches!(
            head(Op::LaunchKernel, 1 << 7).validate(),
            Err(ProtoError::Flags(0x80))
        ));
        let meta = RequestMeta {
            op: Op::MemFree,
            seq: 1,
            ctx: 0,
            flags: flags::POSTED,
            order: 0,
            after: 0,
        };
        let free = mem_free::Request { dptr: U64::new(1) };
        assert!(
            request_prefix(&meta, free.as_bytes(), 0).is_err(),
            "the sender checks too"
        );
        let launch = |flags: u32, after: u32| {
            let mut h = head(Op::LaunchKernel, flags);
            h.after = U32::new(after);
            h.validate()
        };
        assert!(launch(flags::POSTED | flags::AFTER, 7).is_ok());
        assert!(launch(flags::POSTED | flags::AFTER_ALL, 0).is_ok());
        assert!(
            launch(flags::POSTED | flags::AFTER | flags::AFTER_ALL, 7).is_err(),
            "one kind of wait"
        );
        assert!(
            launch(flags::AFTER, 7).is_err(),
            "only posted requests wait so"
        );
        assert!(launch(flags::POSTED, 7).is_err(), "`after` without AFTER");
    }

    #[test]
    fn reply_flags_are_checked() {
        let mut out = Vec::new();
        response_prefix_into(&mut out, 200, 4, reply_flags::EVENTS, &[], 0).expect("a known flag");
        let (head, _) = read_response_head(&mut &out[..]).expect("reads");
        assert!(head.events());
        assert!(
            response_prefix_into(&mut out, 0, 4, 1 << 3, &[], 0).is_err(),
            "the sender checks unknown bits"
        );
        let mut bad = ResponseHead {
            magic: U32::new(RESPONSE_MAGIC),
            flags: U16::new(1 << 3),
            ..Default::default()
        };
        assert!(matches!(bad.validate(), Err(ProtoError::Flags(8))));
        bad.flags = U16::new(0);
        bad.reserved2 = U32::new(1);
        assert!(bad.validate().is_err(), "reserved2 must be zero");
        bad.reserved2 = U32::new(0);
        assert!(bad.validate().is_ok() && !bad.events());
    }

    #[test]
    fn order_wraps() {
        assert!(order_reached(5, 5));
        assert!(order_reached(6, 5));
        assert!(!order_reached(4, 5));
        assert!(order_reached(2, u32::MAX - 1), "past the wrap");
        assert!(!order_reached(u32::MAX - 1, 2));
    }

    #[test]
    fn prefixes_are_frames_without_their_blob() {
        let req = Request {
            op: Op::MemcpyHtoD,
            seq: 9,
            ctx: 3,
            flags: flags::POSTED | flags::AFTER,
            order: 77,
            after: 75,
            fixed: htod(0x1000, 1),
            blob: b"bytes".to_vec().into(),
        };
        let mut joined = request_prefix(&req.meta(), &req.fixed, req.blob.len()).expect("prefix");
        joined.extend_from_slice(&req.blob);
        assert_eq!(joined, req.encode().expect("encodes"));
        assert_eq!(Request::decode(&joined).expect("decodes"), req);
        let info = mem_get_info_v2::Reply {
            free: U64::new(1),
            total: U64::new(2),
        };
        let resp = Response {
            status: 0,
            seq: 9,
            flags: 0,
            fixed: info.as_bytes().to_vec(),
            blob: b"xy".to_vec(),
        };
        let mut joined = response_prefix(0, 9, &resp.fixed, 2).expect("prefix");
        joined.extend_from_slice(&resp.blob);
        assert_eq!(joined, resp.encode().expect("encodes"));
    }

    #[test]
    fn reading_into_a_request_reuses_it_and_leaves_nothing_behind() {
        let big = Request {
            op: Op::MemcpyHtoD,
            seq: 1,
            ctx: 2,
            flags: flags::POSTED | flags::AFTER,
            order: 9,
            after: 4,
            fixed: htod(0x1000, 1),
            blob: vec![7; 300].into(),
        };
        let small = Request {
            op: Op::MemFree,
            seq: 2,
            ctx: 0,
            flags: 0,
            order: 10,
            after: 0,
            fixed: mem_free::Request {
                dptr: U64::new(0x2000),
            }
            .as_bytes()
            .to_vec(),
            blob: Blob::new(),
        };
        let mut req = Request::empty();
        for want in [&big, &small, &big] {
            let bytes = want.encode().expect("encodes");
            read_request_into(&mut &bytes[..], &mut req).expect("reads");
            assert_eq!(&req, want);
        }
    }

    #[test]
    fn wrong_fixed_length_is_rejected() {
        let head = RequestHead {
            magic: U32::new(REQUEST_MAGIC),
            op: U16::new(Op::MemFree as u16),
            fixed_len: U16::new(3),
            ..Default::default()
        };
        assert!(matches!(
            Request::decode(head.as_bytes()),
            Err(ProtoError::FixedLen { .. })
        ));
    }

    #[test]
    fn fields_are_checked_before_the_blob_is_read() {
        let meta = RequestMeta {
            op: Op::MemcpyHtoD,
            seq: 1,
            ctx: 0,
            flags: 0,
            order: 0,
            after: 0,
        };
        let bad = htod(0x1000, 2);
        assert!(matches!(
            request_prefix(&meta, &bad, 0),
            Err(ProtoError::Field { .. })
        ));
        // The receiver refuses it too, with only the head and fixed part read.
        let mut head = RequestHead {
            magic: U32::new(REQUEST_MAGIC),
            op: U16::new(Op::MemcpyHtoD as u16),
            fixed_len: U16::new(u16::try_from(bad.len()).expect("small")),
            ..Default::default()
        };
        head.blob_len = U32::new(1 << 20);
        let mut frame = head.as_bytes().to_vec();
        frame.extend_from_slice(&bad);
        assert!(matches!(
            Request::decode(&frame),
            Err(ProtoError::Field { .. })
        ));
    }
}
