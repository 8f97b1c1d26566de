//! vgpu-mediator: the supervisor and the per-session worker.
//!
//! Contract:
//! - The supervisor listens, never loads CUDA, reads and checks each
//!   connection's hello within a deadline ([`admission`]), and fork+execs one
//!   `vgpu-mediator worker` per admitted session, handing it the connection
//!   fd and the hello; as root it starts workers as an unprivileged user
//!   ([`privilege`]). It is never on the data path, so restarting it leaves
//!   sessions alone.
//!   On `ivshmem:` sockets it plays QEMU's ivshmem server ([`ivshmem`]) and
//!   starts one worker per session region a guest process claims, handing it
//!   the guest's shared memory; it only forwards doorbells to sleeping ring
//!   ends.
//! - The worker loads the driver by absolute path through [`driver::Driver`],
//!   applies the client's allowlisted environment before `cuInit`, answers the
//!   handshake with a snapshot of every device, then serves one lane thread
//!   per client thread until the client disconnects, and exits.
//! - Every session has a slot in a shared-memory table ([`sessions`]) that its
//!   worker keeps current and the supervisor frees when the worker ends
//!   ([`census`]); the supervisor answers status queries and serves
//!   Prometheus metrics ([`metrics`]) from it.
//! - The mediator file, the Unix allowlist, tenants and their quotas, and
//!   socket activation are in [`tenants`]; tenants' MPS groups, whose
//!   control daemons the supervisor runs, in [`mps`].
//! - On `tls://` listeners the supervisor authenticates each client (TLS
//!   handshake, then a client certificate or a bearer token, [`tls`])
//!   before it starts a worker, and the client then connects to its worker
//!   directly with a one-time ticket: the supervisor stays off the data
//!   path there too.

pub mod admission;
pub mod census;
pub mod config;
pub mod driver;
#[doc(hidden)]
pub mod fuzz;
pub mod identity;
pub mod ivshmem;
pub mod metrics;
pub mod mps;
pub mod privilege;
pub mod sessions;
pub mod shared;
pub mod spawn;
pub mod supervisor;
pub mod tenants;
pub mod tls;
pub mod tokens;
pub mod worker;

use thiserror::Error;

/// Errors that stop a supervisor or a worker.
#[derive(Debug, Error)]
pub enum MediatorError {
    /// The driver library could not be loaded or is not a driver.
    #[error("driver: {0}")]
    Driver(String),
    /// A socket or process call failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The transport failed.
    #[error("transport: {0}")]
    Transport(#[from] vgpu_transport::TransportError),
    /// The peer sent something the protocol forbids.
    #[error("protocol: {0}")]
    Proto(#[from] vgpu_proto::ProtoError),
    /// The configuration is invalid.
    #[error("configuration: {0}")]
    Config(String),
}
