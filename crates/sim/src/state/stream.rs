//! Streams: the created streams, what the implicit streams keep in their context, and the
//! attributes of both.

use std::collections::BTreeMap;
use std::fmt;

use crate::cu::CUstreamAttrValue;

/// One created stream.
#[derive(Debug)]
pub(crate) struct Stream {
    pub ctx: usize,
    pub flags: u32,
    pub priority: i32,
    /// Attributes other than the priority, by `CUstreamAttrID`.
    pub attrs: Attrs,
    /// A wait-value whose condition was not met holds the stream until its
    /// condition is met (see `crate::memop`).
    pub stalled: Option<crate::memop::MemOp>,
}

/// What an implicit stream (legacy or per-thread) keeps, in its context.
#[derive(Debug, Default)]
pub(crate) struct Implicit {
    /// Its `cuStreamGetId`, minted on first request; 0 until then.
    pub id: u64,
    pub priority: i32,
    pub attrs: Attrs,
}

/// One stream attribute's 64-byte value, holding only the field its id selects (the rest
/// zero).
#[derive(Clone, Copy)]
pub(crate) struct AttrValue(pub CUstreamAttrValue);

// SAFETY: the value is plain data; its pointer fields (an access policy window's base,
// event and node handles) are never dereferenced, and all access goes through the state
// mutex.
unsafe impl Send for AttrValue {}

impl fmt::Debug for AttrValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CUstreamAttrValue")
    }
}

/// A stream's attributes other than the priority, by `CUstreamAttrID`.
pub(crate) type Attrs = BTreeMap<u32, AttrValue>;
