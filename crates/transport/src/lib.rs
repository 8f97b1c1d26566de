//! vgpu byte channels.
//!
//! Contract: a [`Channel`] is a reliable, ordered, bidirectional byte stream
//! that can also carry file descriptors. Framing lives in `vgpu-proto`; this
//! crate only moves bytes and fds. Today there is the Unix socket
//! ([`unix`]); shared-memory rings and TCP+TLS slot in behind the same
//! [`Channel`] type.

pub mod unix;

use thiserror::Error;

pub use unix::{Channel, Listener};

/// Errors of the transport layer.
#[derive(Debug, Error)]
pub enum TransportError {
    /// A socket call failed.
    #[error("socket error: {0}")]
    Io(#[from] std::io::Error),
    /// A descriptor was expected with a message but none came.
    #[error("expected a file descriptor from the peer, got none")]
    NoFd,
    /// The address is not of a supported form.
    #[error("unsupported mediator address {0:?} (expected unix:PATH)")]
    Address(String),
}

/// Where a mediator listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Address {
    /// A Unix socket path.
    Unix(std::path::PathBuf),
}

impl std::str::FromStr for Address {
    type Err = TransportError;
    fn from_str(s: &str) -> Result<Self, TransportError> {
        match s.strip_prefix("unix:") {
            Some(path) if !path.is_empty() => Ok(Address::Unix(path.into())),
            _ if s.starts_with('/') => Ok(Address::Unix(s.into())),
            _ => Err(TransportError::Address(s.to_owned())),
        }
    }
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Address::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}
