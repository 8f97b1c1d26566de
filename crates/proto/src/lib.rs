//! vgpu wire protocol, version 3.
//!
//! Contract:
//! - Every integer on the wire is little-endian; every header and every
//!   operation's request and reply is a fixed-layout `zerocopy` struct
//!   ([`message`]), so encoding is a byte copy and decoding cannot misread.
//!   The operations and their messages are generated from the remoting table
//!   (`crates/abi/src/remote/table.rs`, `cargo xtask gen-calls`).
//! - Wire ids ([`Op`]) are explicit, append-only and never reused.
//! - Every length is checked against a bound ([`MAX_FIXED`], [`MAX_BLOB`],
//!   [`MAX_ENV_BYTES`], [`MAX_DEVICES`]) *before* anything is allocated.
//! - A session starts with [`Hello`] / [`Welcome`] on the control connection,
//!   which carry the protocol version, the schema hash of the op table (its
//!   ids, names, options and message layouts) and the feature bits. After that every lane carries [`Request`] / [`Response`]
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
//! - A connection may instead carry one status query ([`sessions`]), which
//!   the supervisor answers with the list of live sessions.
//!
//! Handles (contexts, streams, events, modules, functions) are ids minted by the
//! client; device pointers are the real device addresses.

mod blob;
mod error;
mod frame;
mod generated;
mod handshake;
pub mod message;
pub mod nvml;
pub mod sessions;
pub mod span;
pub mod vmm;

pub use blob::Blob;
pub use error::ProtoError;
pub use frame::{
    decode_request_into, flags, order_reached, read_request, read_request_into, read_response_head,
    reply_flags, request_prefix, request_prefix_into, response_prefix, response_prefix_into,
    write_request, write_request_meta, write_response, write_response_flagged, Request,
    RequestHead, RequestMeta, Response, ResponseHead, REQUEST_MAGIC, RESPONSE_MAGIC,
};
pub use generated::*;
pub use handshake::{
    env_allowed, fill_str, DeviceSnapshot, Hello, HelloHead, Welcome, WelcomeHead, ATTR_SLOTS,
    HELLO_MAGIC, WELCOME_MAGIC,
};
pub use message::{Message, RequestMessage, SCHEMA_HASH};

/// Protocol version spoken by this build. 4: the status list's records
/// carry the tenant's name (64 bytes, was 32) and its head their size.
pub const PROTOCOL_VERSION: u16 = 4;
/// Largest fixed part (an operation's request or reply struct) one frame may carry.
pub const MAX_FIXED: usize = 1024;
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
    /// Lanes on shared-memory rings: `OpenLane` answers `kind = RINGS` and
    /// passes three descriptors (the lane socket, the submission ring, the
    /// completion ring) instead of one socket. See `docs/transports.md`.
    pub const RINGS: u64 = 1 << 1;
    /// Everything this build understands.
    pub const ALL: u64 = LANES | RINGS;
}

/// The output channel (`OpenOutput`, `docs/protocol.md`).
pub mod output {
    /// Bytes of each output file that the client maps, and the size the
    /// worker gives the sparse file: new bytes within it are seen without
    /// a system call. Output past it is still read, with one.
    pub const WINDOW: u64 = 256 << 20;
}

/// Bits of a `MemHostAlloc` request's `flags` beyond `CU_MEMHOSTALLOC_*`.
pub mod host_alloc {
    /// Staging memory the client takes for itself (for a copy captured from
    /// pageable memory): the worker registers it under the relaxed capture
    /// mode, so an open capture of the application's does not forbid it.
    pub const STAGING: u32 = 1 << 31;
}

/// What an `OpenLane` reply's `kind` says the new lane is.
pub mod lane_kind {
    /// A socket passed by `SCM_RIGHTS`.
    pub const SOCKET: u8 = 0;
    /// A socket and two ring memfds passed by `SCM_RIGHTS` (`features::RINGS`).
    pub const RINGS: u8 = 1;
    /// A TCP connection the client makes itself: the reply gives the port
    /// and the token. The client connects to the port on the worker's host
    /// and sends the token's 16 bytes before anything else
    /// (`docs/transports.md`).
    pub const TCP: u8 = 2;
    /// Two rings in the session's region of an ivshmem BAR (a VM guest):
    /// the reply's `port` is the lane's slot in the region, which the
    /// worker has just laid out (`docs/vm.md`).
    pub const IVSHMEM: u8 = 3;
}

/// Handle ids. The client mints the ids of what it creates; the worker mints
/// ids for handles the driver hands out that the client never saw (the
/// context of a stream, a module's texture reference), with [`ids::WORKER`]
/// set so the two never collide. The kind sits in the top byte, bit 63 stays
/// clear, and bits 47..62 are never all equal, so an id is a non-canonical
/// address that faults if an application dereferences it.
pub mod ids {
    use vgpu_abi::HandleKind;

    /// Set in every id the worker mints.
    pub const WORKER: u64 = 1 << 47;

    /// The kind tag in the top byte of an id of `kind`. Kernels share the
    /// functions' tag: a kernel id is launchable like a function id.
    pub const fn tag(kind: HandleKind) -> u8 {
        match kind {
            HandleKind::Context => 0x41,
            HandleKind::Stream => 0x42,
            HandleKind::Event => 0x43,
            HandleKind::Module => 0x44,
            HandleKind::Function | HandleKind::Kernel => 0x45,
            HandleKind::Library => 0x46,
            HandleKind::GreenCtx => 0x47,
            HandleKind::TexRef => 0x48,
            HandleKind::SurfRef => 0x49,
            _ => 0x4f,
        }
    }

    /// The `serial`-th id the worker mints for `kind`.
    pub const fn worker(kind: HandleKind, serial: u64) -> u64 {
        ((tag(kind) as u64) << 56) | WORKER | (serial & (WORKER - 1))
    }
}
