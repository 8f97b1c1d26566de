//! Lanes of a session whose control connection is TCP.
//!
//! A descriptor cannot cross machines, so the worker cannot hand the client
//! a connected lane socket. Instead, on the first `OpenLane`, it listens on
//! the control connection's local address (the address the client
//! reached), at a port the kernel picks or the first free one of
//! `--lane-ports`, and keeps that listener for the session. For each
//! `OpenLane` it draws a fresh 16-byte token, answers
//! `kind = lane_kind::TCP` with the port and the token, and then waits up to
//! [`ACCEPT_TIMEOUT`] for a connection that sends that token first
//! ([`vgpu_transport::Listener::accept_lane`]). Connections with a wrong
//! token, or none, are logged and closed while the wait goes on. The lane
//! accepted is served like a socket lane ([`super::lane`]).
//!
//! The control thread opens lanes one at a time, so at most one token is
//! live. When no lane comes in time the listener is closed (a connection
//! that arrives later is reset, and that client loses its session instead
//! of waiting for ever) and the next `OpenLane` binds a new one.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use vgpu_proto::{lane_kind, open_lane, write_response};
use vgpu_transport::tcp::new_token;
use vgpu_transport::tls::ServerTls;
use vgpu_transport::{Channel, Listener};
use zerocopy::little_endian::U16;
use zerocopy::IntoBytes;

use super::status;
use super::Session;
use crate::config::PortRange;
use crate::MediatorError;

/// How long the worker waits for a lane's connection after its reply:
/// longer than the client's own connect timeout (5 s), so a client whose
/// connect succeeded is always accepted.
pub const ACCEPT_TIMEOUT: Duration = Duration::from_secs(10);

/// The lane listener of one TCP session, bound on first use.
pub struct TcpLanes {
    /// The control connection's local address; its port is not used.
    local: SocketAddr,
    ports: Option<PortRange>,
    listener: Option<Listener>,
    /// A TLS session's settings: every lane is TLS too.
    tls: Option<ServerTls>,
}

impl TcpLanes {
    /// Lanes for the session on `control`; `None` unless it is TCP. A TLS
    /// session's lanes start on the listener its control connection came
    /// through, and each is TLS.
    pub fn new(
        control: &Channel,
        ports: Option<PortRange>,
        tls: Option<super::tls::TlsSession>,
    ) -> Option<TcpLanes> {
        let (listener, tls) = tls.map(|t| (t.listener, t.tls)).unzip();
        Some(TcpLanes {
            local: control.local_addr()?,
            ports,
            listener,
            tls,
        })
    }

    /// The listener, bound now if this is the session's first lane.
    fn listener(&mut self) -> Result<&Listener, MediatorError> {
        if self.listener.is_none() {
            let range = self.ports.map_or(0..=0, |r| r.low..=r.high);
            let l = Listener::bind_tcp_in(self.local, range).map_err(|e| {
                let ports = self.ports.map_or("a free port".into(), |r| r.to_string());
                MediatorError::Config(format!(
                    "cannot listen for lanes on {} ({ports}): {e}",
                    self.local.ip()
                ))
            })?;
            if let Some(a) = l.local_addr() {
                tracing::info!(lanes = %a, "listening for this session's lanes");
            }
            self.listener = Some(l);
        }
        self.listener
            .as_ref()
            .ok_or_else(|| MediatorError::Config("no lane listener".into()))
    }

    /// Answers the `OpenLane` request `seq` and accepts the lane's
    /// connection. `false`: the control connection failed.
    pub fn open(&mut self, session: &Arc<Session>, control: &mut Channel, seq: u32) -> bool {
        let prepared = self.listener().and_then(|l| {
            let port = l
                .local_addr()
                .map(|a| a.port())
                .ok_or_else(|| MediatorError::Config("the lane listener has no port".into()))?;
            Ok((port, new_token()?))
        });
        let (port, token) = match prepared {
            Ok(p) => p,
            Err(e) => {
                tracing::error!("cannot open a TCP lane: {e}");
                return write_response(control, status::INVALID_VALUE.0, seq, &[], &[]).is_ok();
            }
        };
        let reply = open_lane::Reply {
            kind: lane_kind::TCP,
            port: U16::new(port),
            token,
        };
        if write_response(control, status::SUCCESS.0, seq, reply.as_bytes(), &[]).is_err() {
            return false;
        }
        let Some(listener) = self.listener.as_ref() else {
            return true;
        };
        let refused = |peer: std::net::SocketAddr, why: &str| {
            tracing::warn!(%peer, "lane connection refused: {why}");
        };
        match listener.accept_lane(&token, ACCEPT_TIMEOUT, self.tls.as_ref(), refused) {
            Ok(ch) => {
                if let Some(peer) = ch.peer_addr() {
                    tracing::debug!(%peer, "TCP lane opened");
                }
                if let Err(e) = super::lane::start_socket(session, ch) {
                    tracing::error!("cannot start a lane thread: {e}");
                }
            }
            Err(e) => {
                tracing::warn!(
                    "no lane connection with the token within {ACCEPT_TIMEOUT:?} ({e}); \
                     the client thread that asked gets no lane"
                );
                // A connection that comes later must not wait unaccepted for
                // ever: closing the listener resets it. The next lane binds anew.
                self.listener = None;
            }
        }
        true
    }
}
