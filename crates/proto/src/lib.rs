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
//!   frames in order: each request is answered by one response, in turn,
//!   except requests marked [`flags::POSTED`], which are never answered (their
//!   failures are deferred to the next synchronizing request of the lane:
//!   [`Op::synchronizes`], `docs/adr/0004-async-errors.md`).
//! - Requests carry a session-wide order number ([`RequestHead::order`]): a
//!   posted request's ticket, or for any other request the count of tickets
//!   issued before it. The worker starts a request only once every ticket
//!   below its number has run, so a call never overtakes a posted call that
//!   another client thread made before it.
//!
//! Handles (contexts, streams, events, modules, functions) are ids minted by the
//! client; device pointers are the real device addresses.

mod error;
mod frame;
mod handshake;
mod ops;

pub use error::ProtoError;
pub use frame::{
    flags, order_reached, read_request, read_request_into, read_response_head, request_prefix,
    response_prefix, write_request, write_request_meta, write_response, Request, RequestHead,
    RequestMeta, Response, ResponseHead, REQUEST_MAGIC, RESPONSE_MAGIC,
};
pub use handshake::{
    env_allowed, fill_str, DeviceSnapshot, Hello, HelloHead, Welcome, WelcomeHead, ATTR_SLOTS,
    HELLO_MAGIC, WELCOME_MAGIC,
};
pub use ops::{Op, SCHEMA_HASH};

/// Protocol version spoken by this build.
pub const PROTOCOL_VERSION: u16 = 2;
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
    /// Lanes on shared-memory rings: `OpenLane` answers `outs[0] = 1` and
    /// passes three descriptors (the lane socket, the submission ring, the
    /// completion ring) instead of one socket. See `docs/transports.md`.
    pub const RINGS: u64 = 1 << 1;
    /// Everything this build understands.
    pub const ALL: u64 = LANES | RINGS;
}

/// What an `OpenLane` reply's `outs[0]` says the new lane is.
pub mod lane_kind {
    /// A socket passed by `SCM_RIGHTS` (also: no outs at all).
    pub const SOCKET: u64 = 0;
    /// A socket and two ring memfds passed by `SCM_RIGHTS` (`features::RINGS`).
    pub const RINGS: u64 = 1;
    /// A TCP connection the client makes itself: `outs = [TCP, port,
    /// token_lo, token_hi]`. The client connects to the port on the
    /// worker's host and sends the token's 16 bytes (`token_lo` then
    /// `token_hi`, each little-endian) before anything else
    /// (`docs/transports.md`).
    pub const TCP: u64 = 2;
}
