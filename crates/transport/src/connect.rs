//! Opens the control connection of a session with the mediator that
//! [`crate::discovery`] found, whatever the address: a Unix socket, TCP,
//! TLS ([`crate::tls::admission`]: authenticated by the mediator, then
//! connected to the worker it starts), or a region of a VM guest's vgpu PCI
//! device ([`crate::ivshmem::guest`]).
//! The CUDA client and the NVML library open their sessions here.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::discovery::{Found, Target};
use crate::ivshmem::guest::{Device, GuestError, Region};
use crate::{Channel, TransportError, WaitPolicy};

/// How to connect.
#[derive(Clone, Copy, Debug)]
pub struct Options<'a> {
    /// How long a TCP connection (or a TLS admission) may take to open.
    pub tcp_timeout: Duration,
    /// The client's TLS settings, for `tls://` mediators.
    pub tls: &'a crate::tls::TlsSettings,
    /// Where sysfs is (`VGPU_SYSFS_ROOT`): the PCI device's BARs are there.
    pub sysfs_root: &'a Path,
    /// How the streams of a guest's region wait; its timeout is how often
    /// a waiting stream checks that the region is still the session's.
    pub guest_policy: WaitPolicy,
}

/// A control connection, and in a VM guest the region it runs in.
#[derive(Debug)]
pub struct Connected {
    pub channel: Channel,
    /// The region of the guest's device this session holds; give it back
    /// ([`Region::release`]) when the session ends.
    pub region: Option<Arc<Region>>,
}

/// Why the connection did not open.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// Nothing answered at the address.
    #[error("cannot reach the mediator at {0}: {1}")]
    Transport(String, TransportError),
    /// The VM's vgpu PCI device could not be used.
    #[error("cannot use the vgpu PCI device {0}: {1}")]
    Guest(String, GuestError),
}

/// Connects to the mediator `found` names.
pub fn connect(found: &Found, opts: &Options<'_>) -> Result<Connected, ConnectError> {
    let shown = || found.to_string();
    let channel = match &found.target {
        Target::Unix(path) => Channel::connect(path),
        Target::Tcp { host, port } => Channel::connect_tcp(host, *port, opts.tcp_timeout),
        Target::Tls { host, port } => opts.tls.open_session(host, *port, opts.tcp_timeout),
        Target::Pci(bdf) => {
            let dev = Device::open(opts.sysfs_root, &bdf.to_string())
                .map_err(|e| ConnectError::Guest(shown(), e))?;
            let (region, control) = Arc::new(dev)
                .claim(opts.guest_policy)
                .map_err(|e| ConnectError::Guest(shown(), e))?;
            return Ok(Connected {
                channel: Channel::from_shm(control),
                region: Some(Arc::new(region)),
            });
        }
    };
    Ok(Connected {
        channel: channel.map_err(|e| ConnectError::Transport(shown(), e))?,
        region: None,
    })
}
