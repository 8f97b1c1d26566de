//! Sessions with a mediator on another host (`tls://HOST:PORT`, or plain
//! `tcp://HOST:PORT`).
//!
//! The control connection and every lane are TCP connections with
//! `TCP_NODELAY` (`vgpu_transport::tcp`); the handshake and the frames are
//! the same as on a Unix socket. What differs:
//! - **No rings.** Shared-memory rings need one host: `VGPU_TRANSPORT=rings`
//!   fails `cuInit`, and lanes carry their frames on the socket.
//! - **Lanes.** `OpenLane` answers with a port and a token instead of a
//!   descriptor ([`vgpu_proto::lane_kind::TCP`]): the client connects to
//!   the port on the host it reached the mediator at and sends the token.
//! - **Pinned host memory** stays in this process (`api::host_local`):
//!   copies to and from it send the bytes like any host memory, and it has
//!   no device address.
//!
//! Over `tls://` every connection is TLS 1.3: the client authenticates the
//! mediator (`VGPU_TLS_CA` or the system's roots, and the host name), proves
//! itself with a client certificate or a bearer token, and reaches its
//! worker with the one-time ticket the mediator gave it
//! (`vgpu_transport::tls`). Plain `tcp://` encrypts nothing.

use std::time::Duration;

use vgpu_proto::{lane_kind, open_lane};
use vgpu_transport::tcp::Token;
use vgpu_transport::{Channel, TransportError};

use vgpu_transport::discovery::{Found, Target};

use crate::config::{Config, TransportChoice};
use crate::runtime::ConnectError;

/// How long a connection to the mediator or a lane may take to open.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Refuses `VGPU_TRANSPORT=rings` for a mediator that is not on this host
/// (`found` is TCP or a VM guest's PCI device): rings need memory both
/// sides share.
pub fn check_transport(cfg: &Config, found: &Found) -> Result<(), ConnectError> {
    if cfg.transport != TransportChoice::Rings {
        return Ok(());
    }
    let why = match found.target {
        Target::Unix(_) => return Ok(()),
        Target::Tcp { .. } | Target::Tls { .. } => {
            format!("needs shared memory on one host, and {found} is reached over TCP")
        }
        Target::Pci(_) => {
            format!("needs memfd rings on one host, and {found} is a VM's PCI device")
        }
    };
    Err(ConnectError::Lanes(format!(
        "VGPU_TRANSPORT=rings {why}; use VGPU_TRANSPORT=auto or socket"
    )))
}

/// The port and token of an `OpenLane` reply for a TCP lane.
pub fn lane_token(reply: &open_lane::Reply) -> Option<(u16, Token)> {
    let port = reply.port.get();
    (reply.kind == lane_kind::TCP && port != 0).then_some((port, reply.token))
}

/// Opens the TCP lane an `OpenLane` reply announced: connects to its port
/// on the mediator's address of the control connection (inside TLS when the
/// control connection is TLS) and sends its token.
pub fn open_lane(control: &Channel, reply: &open_lane::Reply) -> Result<Channel, TransportError> {
    let (port, token) = lane_token(reply).ok_or(TransportError::Io(std::io::Error::other(
        "a TCP lane reply without a port",
    )))?;
    let mut addr = control.peer_addr().ok_or(TransportError::NotLocal(
        "a TCP lane (the control connection is not TCP)",
    ))?;
    addr.set_port(port);
    Channel::connect_lane_like(control, addr, &token, CONNECT_TIMEOUT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::little_endian::U16;

    #[test]
    fn lane_replies() {
        let token = *b"\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10";
        let reply = |kind, port| open_lane::Reply {
            kind,
            port: U16::new(port),
            token,
        };
        assert_eq!(
            lane_token(&reply(lane_kind::TCP, 40001)),
            Some((40001, token))
        );
        assert_eq!(lane_token(&reply(lane_kind::TCP, 0)), None, "port 0");
        assert_eq!(
            lane_token(&reply(lane_kind::RINGS, 1)),
            None,
            "not a TCP lane"
        );
    }

    #[test]
    fn rings_are_refused_off_this_host() {
        let cfg =
            Config::from_env([("VGPU_TRANSPORT".to_string(), "rings".to_string())].into_iter());
        let found = |text: &str| Found {
            target: Target::parse(text).expect("an address"),
            source: vgpu_transport::discovery::Source::Default,
        };
        for (addr, shown) in [
            ("tcp://127.0.0.1:1", "tcp://"),
            ("tls://127.0.0.1:1", "tls://"),
            ("pci:0000:00:05.0", "pci:"),
        ] {
            let e = check_transport(&cfg, &found(addr))
                .expect_err("rings off this host")
                .to_string();
            assert!(
                e.contains("VGPU_TRANSPORT=rings") && e.contains(shown),
                "{e}"
            );
        }
        assert!(check_transport(&cfg, &found("unix:/run/vgpu/m.sock")).is_ok());
        let auto = Config::from_env(std::iter::empty());
        assert!(check_transport(&auto, &found("tcp://127.0.0.1:1")).is_ok());
    }
}
