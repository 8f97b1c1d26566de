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

use crate::config::{Config, TransportChoice};
use crate::runtime::ConnectError;

/// How long a connection to the mediator or a lane may take to open.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connects the control connection of a session with the mediator at
/// `host:port` (`shown` names it in errors); with `tls`, authenticates to the
/// mediator over TLS and connects to the worker it starts
/// (`vgpu_transport::tls::admission`).
pub fn connect(
    cfg: &Config,
    host: &str,
    port: u16,
    tls: bool,
    shown: &str,
) -> Result<Channel, ConnectError> {
    if cfg.transport == TransportChoice::Rings {
        return Err(ConnectError::Lanes(format!(
            "VGPU_TRANSPORT=rings needs shared memory on one host, and {shown} is reached over \
             TCP; use VGPU_TRANSPORT=auto or socket"
        )));
    }
    let connected = match tls {
        true => cfg.tls.open_session(host, port, CONNECT_TIMEOUT),
        false => Channel::connect_tcp(host, port, CONNECT_TIMEOUT),
    };
    connected.map_err(|e| ConnectError::Transport(shown.to_owned(), e))
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
    fn rings_are_refused_over_tcp() {
        let cfg =
            Config::from_env([("VGPU_TRANSPORT".to_string(), "rings".to_string())].into_iter());
        let e = connect(&cfg, "127.0.0.1", 1, false, "tcp://127.0.0.1:1")
            .expect_err("rings over TCP")
            .to_string();
        assert!(
            e.contains("VGPU_TRANSPORT=rings") && e.contains("tcp://"),
            "{e}"
        );
    }
}
