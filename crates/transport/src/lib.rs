//! vgpu byte channels.
//!
//! Contract: a [`Channel`] is a reliable, ordered, bidirectional byte stream
//! that can also carry file descriptors (several per message). Framing lives
//! in `vgpu-proto`; this crate only moves bytes, messages and fds.
//!
//! [`shm_ring`] is the same-host fast path: single-producer/single-consumer
//! message rings in a sealed memfd, with spin-then-futex wake-ups
//! ([`wake`]); its module header documents the memory layout, publish order
//! and wake-up protocol. [`lane`] is the one frame lane both ends use: a
//! socket, or a pair of rings with a Unix socket for oversized frames,
//! descriptors and hang-up detection (`docs/transports.md`).
//!
//! [`tcp`] carries the same frames between hosts. A TCP [`Channel`] behaves
//! as a Unix one except that it has no peer credentials and passes no
//! descriptors; its lanes are separate connections that prove themselves
//! with a token. [`tls`] puts the same connections inside TLS 1.3 (rustls,
//! record layer in user space), authenticates the server to the client and
//! the client to the mediator (a client certificate or a bearer token), and
//! hands the authenticated client to its worker with a one-time ticket.
//!
//! [`ivshmem`] carries the same frames between a VM guest and its host
//! through a QEMU ivshmem device: byte streams over these rings inside the
//! device's shared memory, one region per guest process, doorbells toward
//! the host and polling toward the guest (its module header is the
//! contract).
//!
//! [`discovery`] finds the mediator a client connects to ([`Address`] and
//! the other places it may be named); the client library and the `vgpu`
//! command share it, so `vgpu status` and `vgpu doctor` check the address
//! the client would use; [`connect`] opens a session's control connection
//! to whatever address it found.

pub mod connect;
pub mod discovery;
pub mod ivshmem;
pub mod lane;
pub mod shm_ring;
pub mod tcp;
pub mod tls;
pub mod unix;
pub mod wake;
#[cfg(test)]
mod wake_model;

use thiserror::Error;

pub use lane::{FrameLane, Incoming, LaneSocket, Split, SOCKET_SPIN};
pub use shm_ring::{Consumer, Message, Producer, Ring};
pub use unix::{Channel, Listener};
pub use wake::WaitPolicy;

/// Asks the CPU to bring the cache line holding `p` into this core's caches
/// ahead of a read or write: a hint that never faults and changes nothing,
/// whatever `p` is. A no-op on other architectures.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: PREFETCHT0 neither faults (any address, mapped or not) nor
        // changes memory; it only moves a line into the cache.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Errors of the transport layer.
#[derive(Debug, Error)]
pub enum TransportError {
    /// A socket call failed.
    #[error("socket error: {0}")]
    Io(#[from] std::io::Error),
    /// TLS failed: a handshake (a certificate the other end does not
    /// trust, a wrong host name, a peer that does not speak TLS), a record,
    /// or the TLS configuration (a certificate or key file).
    #[error("TLS: {0}")]
    Tls(String),
    /// The mediator refused to admit this client over TLS (module [`tls`]).
    #[error("the mediator refused this client: {0}")]
    Refused(String),
    /// A descriptor was expected with a message but none came.
    #[error("expected a file descriptor from the peer, got none")]
    NoFd,
    /// The address is not of a supported form.
    #[error(
        "unsupported mediator address {0:?} (expected unix:PATH, tcp://HOST:PORT or tls://HOST:PORT)"
    )]
    Address(String),
    /// The operation needs both ends on one host, and this channel is TCP.
    #[error("{0} needs a Unix socket; this channel is TCP")]
    NotLocal(&'static str),
    /// The peer closed its end of the ring (and nothing is left to read).
    #[error("the peer closed its end of the ring")]
    PeerGone,
    /// The peer did nothing within the wait policy's timeout.
    #[error("timed out waiting for the peer")]
    Timeout,
    /// The shared ring failed validation: the peer broke it or is hostile.
    #[error("corrupt shared ring: {0}")]
    Corrupt(&'static str),
    /// A message does not fit in the ring; callers chunk.
    #[error("message of {len} bytes exceeds the ring's limit of {max} bytes")]
    TooLarge { len: usize, max: usize },
    /// The requested ring capacity is not supported.
    #[error("ring capacity {0} is not a power of two in 64 B..=1 GiB")]
    Capacity(usize),
    /// This end of the ring is already bound to a producer or consumer.
    #[error("the ring's {0} end is already attached")]
    RoleTaken(&'static str),
}

/// Where a mediator listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Address {
    /// A Unix socket path.
    Unix(std::path::PathBuf),
    /// `tcp://HOST:PORT`: `host` is a name, an IPv4 address or an IPv6
    /// address (kept without its brackets); port 0 lets the kernel pick.
    Tcp { host: String, port: u16 },
    /// `tls://HOST:PORT`: TCP inside TLS 1.3 ([`tls`]), `host` as for
    /// [`Address::Tcp`]; a client checks the server's certificate against it.
    Tls { host: String, port: u16 },
}

impl std::str::FromStr for Address {
    type Err = TransportError;
    fn from_str(s: &str) -> Result<Self, TransportError> {
        let bad = || TransportError::Address(s.to_owned());
        if let Some(rest) = s.strip_prefix("tcp://") {
            let (host, port) = host_port(rest).ok_or_else(bad)?;
            return Ok(Address::Tcp { host, port });
        }
        if let Some(rest) = s.strip_prefix("tls://") {
            let (host, port) = host_port(rest).ok_or_else(bad)?;
            return Ok(Address::Tls { host, port });
        }
        match s.strip_prefix("unix:") {
            Some(path) if !path.is_empty() => Ok(Address::Unix(path.into())),
            _ if s.starts_with('/') => Ok(Address::Unix(s.into())),
            _ => Err(bad()),
        }
    }
}

/// `HOST:PORT` of a `tcp://` or `tls://` address: `HOST` a name, an IPv4
/// address or a bracketed IPv6 address (returned without its brackets).
fn host_port(rest: &str) -> Option<(String, u16)> {
    let (host, port) = rest.rsplit_once(':')?;
    let port = port.parse::<u16>().ok()?;
    let host = match host.strip_prefix('[') {
        Some(v6) => {
            let v6 = v6.strip_suffix(']')?;
            v6.parse::<std::net::Ipv6Addr>().ok()?;
            v6
        }
        None if !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-') =>
        {
            host
        }
        None => return None,
    };
    Some((host.to_owned(), port))
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Address::Unix(p) => write!(f, "unix:{}", p.display()),
            Address::Tcp { host, port } if host.contains(':') => {
                write!(f, "tcp://[{host}]:{port}")
            }
            Address::Tcp { host, port } => write!(f, "tcp://{host}:{port}"),
            Address::Tls { host, port } if host.contains(':') => {
                write!(f, "tls://[{host}]:{port}")
            }
            Address::Tls { host, port } => write!(f, "tls://{host}:{port}"),
        }
    }
}
