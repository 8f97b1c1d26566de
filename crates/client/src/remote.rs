//! Sessions with a mediator on another host (`tcp://HOST:PORT`).
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
//! Plain TCP: for trusted networks only (nothing is encrypted).

use std::time::Duration;

use vgpu_transport::tcp::{Token, TOKEN_LEN};
use vgpu_transport::{Channel, TransportError};

use crate::config::{Config, TransportChoice};
use crate::runtime::ConnectError;

/// How long a connection to the mediator or a lane may take to open.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connects the control connection of a session with the mediator at
/// `host:port` (`shown` names it in errors).
pub fn connect(cfg: &Config, host: &str, port: u16, shown: &str) -> Result<Channel, ConnectError> {
    if cfg.transport == TransportChoice::Rings {
        return Err(ConnectError::Lanes(format!(
            "VGPU_TRANSPORT=rings needs shared memory on one host, and {shown} is reached over \
             TCP; use VGPU_TRANSPORT=auto or socket"
        )));
    }
    Channel::connect_tcp(host, port, CONNECT_TIMEOUT)
        .map_err(|e| ConnectError::Transport(shown.to_owned(), e))
}

/// The token of an `OpenLane` reply's `outs` (`[TCP, port, lo, hi]`).
pub fn lane_token(outs: &[u64]) -> Option<(u16, Token)> {
    let [_, port, lo, hi] = outs else {
        return None;
    };
    let port = u16::try_from(*port).ok().filter(|p| *p != 0)?;
    let mut token = [0u8; TOKEN_LEN];
    token[..8].copy_from_slice(&lo.to_le_bytes());
    token[8..].copy_from_slice(&hi.to_le_bytes());
    Some((port, token))
}

/// Opens the TCP lane an `OpenLane` reply announced: connects to its port
/// on the mediator's address of the control connection and sends its token.
pub fn open_lane(control: &Channel, outs: &[u64]) -> Result<Channel, TransportError> {
    let (port, token) = lane_token(outs).ok_or(TransportError::Io(std::io::Error::other(
        "a TCP lane reply without a port and a token",
    )))?;
    let mut addr = control.peer_addr().ok_or(TransportError::NotLocal(
        "a TCP lane (the control connection is not TCP)",
    ))?;
    addr.set_port(port);
    Channel::connect_lane(addr, &token, CONNECT_TIMEOUT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_replies() {
        let outs = [2, 40001, 0x0807_0605_0403_0201, 0x100f_0e0d_0c0b_0a09];
        let (port, token) = lane_token(&outs).expect("a lane reply");
        assert_eq!(port, 40001);
        assert_eq!(
            token,
            *b"\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10"
        );
        assert_eq!(lane_token(&[2, 0, 1, 2]), None, "port 0");
        assert_eq!(lane_token(&[2, 70000, 1, 2]), None, "port out of range");
        assert_eq!(lane_token(&[2, 1, 2]), None, "too short");
    }

    #[test]
    fn rings_are_refused_over_tcp() {
        let cfg =
            Config::from_env([("VGPU_TRANSPORT".to_string(), "rings".to_string())].into_iter());
        let e = connect(&cfg, "127.0.0.1", 1, "tcp://127.0.0.1:1")
            .expect_err("rings over TCP")
            .to_string();
        assert!(
            e.contains("VGPU_TRANSPORT=rings") && e.contains("tcp://"),
            "{e}"
        );
    }
}
