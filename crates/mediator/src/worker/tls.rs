//! The worker's half of a TLS session's admission (`crate::tls`).
//!
//! The supervisor started this worker with two inherited descriptors: a
//! listener bound on the address the client reached, and a pipe that gives
//! the one-time ticket and the server's certificate and key (a worker never
//! reads the key file). The worker accepts connections on the listener for
//! up to [`ADMISSION_TIMEOUT`] until one completes a TLS handshake and sends
//! the ticket first; that is the session's control connection. The pipe
//! also names the client as the supervisor authenticated it ([`Identity`]). Others are
//! logged and closed. When none comes in time the worker exits. The same
//! listener then takes the session's lanes, each inside TLS with a lane
//! token of its own (`super::remote`).

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::time::Duration;

use vgpu_transport::tcp::{Token, TOKEN_LEN};
use vgpu_transport::tls::ServerTls;
use vgpu_transport::{Channel, Listener};

use crate::identity::Identity;
use crate::MediatorError;

/// How long the client has to reach its worker after it was admitted:
/// longer than the client's own connect and handshake timeouts (5 s each).
pub const ADMISSION_TIMEOUT: Duration = Duration::from_secs(12);
/// The largest certificate chain or key a supervisor passes.
const MAX_PEM: usize = 1 << 20;

/// What a TLS session's worker keeps: its listener and TLS settings, and
/// who the supervisor authenticated.
pub struct TlsSession {
    pub listener: Listener,
    pub tls: ServerTls,
    pub identity: Identity,
}

/// Reads one length-prefixed part of the admission pipe.
fn part(pipe: &mut impl Read, what: &str) -> Result<Vec<u8>, MediatorError> {
    let mut len = [0u8; 4];
    pipe.read_exact(&mut len)?;
    let len = usize::try_from(u32::from_le_bytes(len)).unwrap_or(usize::MAX);
    if len > MAX_PEM {
        return Err(MediatorError::Config(format!(
            "a {what} of {len} bytes in the admission"
        )));
    }
    let mut out = vec![0u8; len];
    pipe.read_exact(&mut out)?;
    Ok(out)
}

/// Takes the inherited listener `fd` and admission pipe `pipe`, then
/// accepts the ticket holder's connection (module header).
pub fn admit(fd: i32, pipe: i32) -> Result<(Channel, TlsSession), MediatorError> {
    if fd < 3 || pipe < 3 || fd == pipe {
        return Err(MediatorError::Config(format!(
            "--fd {fd} --tls-admission {pipe}: not inherited descriptors"
        )));
    }
    // SAFETY: the supervisor started this process with both descriptors
    // open, inherited for exactly this purpose; nothing else owns them.
    let (fd, pipe) = unsafe { (OwnedFd::from_raw_fd(fd), OwnedFd::from_raw_fd(pipe)) };
    for d in [&fd, &pipe] {
        rustix::io::fcntl_setfd(d, rustix::io::FdFlags::CLOEXEC).map_err(std::io::Error::from)?;
    }
    let listener = Listener::from_tcp_fd(fd);
    let mut pipe = std::fs::File::from(pipe);
    let mut ticket: Token = [0; TOKEN_LEN];
    pipe.read_exact(&mut ticket)?;
    let cert = part(&mut pipe, "certificate chain")?;
    let key = part(&mut pipe, "private key")?;
    let name = |pipe: &mut std::fs::File, what| -> Result<Option<String>, MediatorError> {
        let bytes = part(pipe, what)?;
        let text = String::from_utf8(bytes)
            .map_err(|_| MediatorError::Config(format!("a {what} that is not UTF-8")))?;
        Ok((!text.is_empty()).then_some(text))
    };
    let cert_name = name(&mut pipe, "certificate name")?;
    let token_name = name(&mut pipe, "token name")?;
    drop(pipe);
    let tls = ServerTls::from_pem(&cert, &key, None)?;
    let refused = |peer: std::net::SocketAddr, why: &str| {
        tracing::warn!(%peer, "session connection refused: {why}");
    };
    let control = listener
        .accept_lane(&ticket, ADMISSION_TIMEOUT, Some(&tls), refused)
        .map_err(|e| {
            MediatorError::Config(format!(
                "the admitted client did not connect with its ticket within \
                 {ADMISSION_TIMEOUT:?} ({e})"
            ))
        })?;
    let identity = Identity {
        cert_name,
        token_name,
        peer: control.peer_addr(),
        ..Identity::default()
    };
    Ok((
        control,
        TlsSession {
            listener,
            tls,
            identity,
        },
    ))
}
