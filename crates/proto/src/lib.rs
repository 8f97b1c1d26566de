//! vgpu wire protocol, version 1.
//!
//! Contract:
//! - Every integer on the wire is little-endian; every header is a fixed-layout
//!   `zerocopy` struct, so encoding is a byte copy and decoding cannot misread.
//! - Wire ids ([`Op`]) are explicit, append-only and never reused.
//! - Every length is checked against a bound ([`MAX_ARGS`], [`MAX_BLOB`],
//!   [`MAX_ENV_BYTES`], [`MAX_DEVICES`]) *before* anything is allocated.
//! - A session starts with [`Hello`] / [`Welcome`] on the control connection,
//!   which carry the protocol version, the schema hash of the op table and the
//!   feature bits. After that every lane carries [`Request`] / [`Response`]
//!   frames strictly in turn.
//!
//! Handles (contexts, streams, events, modules, functions) are ids minted by the
//! client; device pointers are the real device addresses.

mod error;
mod frame;
mod handshake;
mod ops;

pub use error::ProtoError;
pub use frame::{
    read_request, read_response_head, write_request, write_response, Request, RequestHead,
    Response, ResponseHead, REQUEST_MAGIC, RESPONSE_MAGIC,
};
pub use handshake::{
    env_allowed, fill_str, DeviceSnapshot, Hello, HelloHead, Welcome, WelcomeHead, ATTR_SLOTS,
    HELLO_MAGIC, WELCOME_MAGIC,
};
pub use ops::{Op, SCHEMA_HASH};

/// Protocol version spoken by this build.
pub const PROTOCOL_VERSION: u16 = 1;
/// Most scalar arguments (or results) one frame may carry.
pub const MAX_ARGS: usize = 16;
/// Largest blob one frame may carry. Larger copies are split by the sender.
pub const MAX_BLOB: usize = 64 << 20;
/// Largest environment block a [`Hello`] may carry.
pub const MAX_ENV_BYTES: usize = 64 << 10;
/// Most devices a [`Welcome`] may describe.
pub const MAX_DEVICES: usize = 64;

/// Feature bits negotiated in the handshake.
pub mod features {
    /// Lanes: one worker thread per client thread, opened on the control connection.
    pub const LANES: u64 = 1 << 0;
    /// Everything this build understands.
    pub const ALL: u64 = LANES;
}
