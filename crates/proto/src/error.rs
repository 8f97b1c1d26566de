use thiserror::Error;

/// Errors met while encoding or decoding vgpu frames.
#[derive(Debug, Error)]
pub enum ProtoError {
    /// The peer closed the connection or an I/O call failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// A frame did not start with the expected magic number.
    #[error("bad magic {found:#010x} (expected {expected:#010x})")]
    BadMagic { found: u32, expected: u32 },
    /// The wire id names no operation this build knows.
    #[error("unknown operation id {0}")]
    UnknownOp(u16),
    /// A length field is larger than the protocol allows.
    #[error("{what} length {len} exceeds the bound {max}")]
    TooLong {
        what: &'static str,
        len: usize,
        max: usize,
    },
    /// The frame is shorter than its header says.
    #[error("truncated frame: need {need} bytes, have {have}")]
    Truncated { need: usize, have: usize },
    /// The peer speaks another protocol version.
    #[error("protocol version {peer} is not supported (this build speaks {ours})")]
    Version { peer: u16, ours: u16 },
    /// The peer was built from another op table.
    #[error("schema hash {peer:#018x} differs from ours {ours:#018x}")]
    Schema { peer: u64, ours: u64 },
    /// The frame's fixed part is not the size of its operation's message.
    #[error("operation {op:?} has a {expected}-byte fixed part, frame has {found}")]
    FixedLen {
        op: crate::Op,
        expected: usize,
        found: usize,
    },
    /// The blob is not as long as the fixed part says.
    #[error("operation {op:?} needs a {expected}-byte blob, frame has {found}")]
    BlobLen {
        op: crate::Op,
        expected: u64,
        found: usize,
    },
    /// A field holds a value its message does not allow.
    #[error("operation {op:?}: field {field}: {why}")]
    Field {
        op: crate::Op,
        field: &'static str,
        why: &'static str,
    },
    /// The request head sets flag bits this build does not define.
    #[error("request flags {0:#x} set undefined bits")]
    Flags(u32),
    /// A request marked posted (no reply) names an operation that must be answered.
    #[error("operation {0:?} cannot be posted: it must be answered")]
    NotPostable(crate::Op),
    /// An environment entry is malformed or not on the allowlist.
    #[error("environment entry rejected: {0}")]
    Env(String),
    /// A status list whose records have another size than this build's.
    #[error("status records of {found} bytes, where this build reads {expected}")]
    RecordSize { found: u32, expected: u32 },
}
