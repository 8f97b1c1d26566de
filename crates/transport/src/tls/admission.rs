//! Admission over TLS: how a client proves itself to the supervisor and
//! reaches its own worker, with the supervisor never on the data path.
//!
//! ```text
//! client                         supervisor                      worker
//!   | TCP + TLS handshake ---------> | (server certificate; a client
//!   |                                |  certificate is verified if sent)
//!   | Auth {purpose, token} -------> | checks the certificate or token
//!   |                                | binds a listener, draws a ticket,
//!   |                                | starts the worker ------------> |
//!   | <----- Admit {port, ticket}    |                                 |
//!   | TCP + TLS handshake to port ----------------------------------> |
//!   | ticket (16 bytes), Hello ...  -------------------------------> |
//! ```
//!
//! Wire (little-endian):
//! - `Auth`: magic `"VGAU"` u32, version u16 (1), purpose u16
//!   ([`purpose`]), token length u32 (at most [`MAX_TOKEN_BYTES`]; 0: no
//!   token), then the token's bytes.
//! - `Admit`: magic `"VGAD"` u32, verdict u32 ([`verdict`]), port u16,
//!   reserved u16 and u32 (zero), ticket 16 bytes: 32 bytes in all.
//!
//! The ticket is a fresh [`Token`] from the kernel's generator, good for one
//! connection to the worker within the worker's deadline. Lanes then use
//! lane tokens as over plain TCP, each given on the authenticated session's
//! control connection, so every connection of a session descends from the
//! one authentication.

use std::io::{Read, Write};
use std::time::Duration;

use super::{BearerToken, ClientTls};
use crate::tcp::{Token, TOKEN_LEN};
use crate::{Channel, TransportError};

/// `"VGAU"`, little-endian.
pub const AUTH_MAGIC: u32 = u32::from_le_bytes(*b"VGAU");
/// `"VGAD"`, little-endian.
pub const ADMIT_MAGIC: u32 = u32::from_le_bytes(*b"VGAD");
/// The version of the `Auth` message.
pub const AUTH_VERSION: u16 = 1;
/// The longest bearer token accepted.
pub const MAX_TOKEN_BYTES: usize = 4096;
/// Bytes of an `Admit` message.
pub const ADMIT_LEN: usize = 32;

/// What the client asks to be admitted for.
pub mod purpose {
    /// A session: a worker of its own.
    pub const SESSION: u16 = 1;
    /// One status query (`vgpu status`), answered by the supervisor on
    /// this connection.
    pub const STATUS: u16 = 2;
}

/// The supervisor's answer.
pub mod verdict {
    /// Admitted: for a session, connect to the port with the ticket.
    pub const ADMITTED: u32 = 0;
    /// No valid client certificate and no valid token.
    pub const BAD_CREDENTIALS: u32 = 1;
    /// Authenticated, but the mediator cannot serve a new session now.
    pub const UNAVAILABLE: u32 = 2;
}

/// A client's request to be admitted.
#[derive(Debug, PartialEq, Eq)]
pub struct Auth {
    pub purpose: u16,
    pub token: Option<BearerToken>,
}

impl Auth {
    /// Encodes the request in one write.
    pub fn write(&self, w: &mut impl Write) -> Result<(), TransportError> {
        let token = self.token.as_ref().map_or(&[][..], BearerToken::expose);
        if token.len() > MAX_TOKEN_BYTES {
            return Err(TransportError::Tls(format!(
                "the bearer token is longer than {MAX_TOKEN_BYTES} bytes"
            )));
        }
        let mut msg = Vec::with_capacity(12 + token.len());
        msg.extend_from_slice(&AUTH_MAGIC.to_le_bytes());
        msg.extend_from_slice(&AUTH_VERSION.to_le_bytes());
        msg.extend_from_slice(&self.purpose.to_le_bytes());
        let len = u32::try_from(token.len()).expect("bounded by MAX_TOKEN_BYTES");
        msg.extend_from_slice(&len.to_le_bytes());
        msg.extend_from_slice(token);
        w.write_all(&msg)?;
        w.flush()?;
        Ok(())
    }

    /// Reads and validates a request (the length is checked before
    /// anything is allocated).
    pub fn read(r: &mut impl Read) -> Result<Auth, TransportError> {
        let bad = |what: String| TransportError::Tls(format!("admission request: {what}"));
        let mut head = [0u8; 12];
        r.read_exact(&mut head)?;
        let word =
            |at: usize| u32::from_le_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
        let half = |at: usize| u16::from_le_bytes([head[at], head[at + 1]]);
        if word(0) != AUTH_MAGIC {
            return Err(bad(format!("bad magic {:#010x}", word(0))));
        }
        if half(4) != AUTH_VERSION {
            return Err(bad(format!(
                "version {} (this mediator speaks {AUTH_VERSION})",
                half(4)
            )));
        }
        let purpose = half(6);
        if ![purpose::SESSION, purpose::STATUS].contains(&purpose) {
            return Err(bad(format!("unknown purpose {purpose}")));
        }
        let len = usize::try_from(word(8)).unwrap_or(usize::MAX);
        if len > MAX_TOKEN_BYTES {
            return Err(bad(format!(
                "a token of {len} bytes (at most {MAX_TOKEN_BYTES})"
            )));
        }
        let mut token = vec![0u8; len];
        r.read_exact(&mut token)?;
        let token = match len {
            0 => None,
            _ => Some(BearerToken(
                String::from_utf8(token).map_err(|_| bad("a token that is not UTF-8".into()))?,
            )),
        };
        Ok(Auth { purpose, token })
    }
}

/// The supervisor's answer to an [`Auth`].
#[derive(Debug, PartialEq, Eq)]
pub struct Admit {
    pub verdict: u32,
    /// The worker's port (a session that was admitted), else 0.
    pub port: u16,
    /// The one-time ticket for the worker (a session that was admitted).
    pub ticket: Token,
}

impl Admit {
    /// An answer that names no worker: a refusal with `verdict`, or
    /// (`verdict::ADMITTED`) the admission of a status query.
    pub fn without_worker(verdict: u32) -> Admit {
        Admit {
            verdict,
            port: 0,
            ticket: [0; TOKEN_LEN],
        }
    }

    /// The message's bytes.
    pub fn to_bytes(&self) -> [u8; ADMIT_LEN] {
        let mut out = [0u8; ADMIT_LEN];
        out[0..4].copy_from_slice(&ADMIT_MAGIC.to_le_bytes());
        out[4..8].copy_from_slice(&self.verdict.to_le_bytes());
        out[8..10].copy_from_slice(&self.port.to_le_bytes());
        out[16..32].copy_from_slice(&self.ticket);
        out
    }

    /// Encodes the answer in one write.
    pub fn write(&self, w: &mut impl Write) -> Result<(), TransportError> {
        w.write_all(&self.to_bytes())?;
        w.flush()?;
        Ok(())
    }

    /// Reads and validates an answer.
    pub fn read(r: &mut impl Read) -> Result<Admit, TransportError> {
        let mut b = [0u8; ADMIT_LEN];
        r.read_exact(&mut b)?;
        let word = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        if word(0) != ADMIT_MAGIC || b[10..16] != [0; 6] {
            return Err(TransportError::Tls(
                "the mediator's admission answer is malformed".into(),
            ));
        }
        let mut ticket = [0u8; TOKEN_LEN];
        ticket.copy_from_slice(&b[16..32]);
        Ok(Admit {
            verdict: word(4),
            port: u16::from_le_bytes([b[8], b[9]]),
            ticket,
        })
    }

    /// `Ok` when admitted, else the refusal as an error a user can act on.
    fn check(&self, shown: &str) -> Result<(), TransportError> {
        match self.verdict {
            verdict::ADMITTED => Ok(()),
            verdict::BAD_CREDENTIALS => Err(TransportError::Refused(format!(
                "{shown} accepted neither a client certificate nor a bearer token from this \
                 client (set VGPU_TLS_CERT and VGPU_TLS_KEY, or VGPU_TOKEN or VGPU_TOKEN_FILE, \
                 as its administrator says)"
            ))),
            verdict::UNAVAILABLE => Err(TransportError::Refused(format!(
                "{shown} cannot start a session now (its log says why)"
            ))),
            other => Err(TransportError::Refused(format!(
                "{shown} answered with unknown verdict {other}"
            ))),
        }
    }
}

/// Connects to the supervisor at `host:port` over TLS and asks to be
/// admitted for `purpose` with `token`; returns the connection once
/// admitted, with the supervisor's answer.
fn admitted(
    host: &str,
    port: u16,
    tls: &ClientTls,
    token: Option<&BearerToken>,
    purpose: u16,
    timeout: Duration,
) -> Result<(Channel, Admit), TransportError> {
    let shown = crate::Address::Tls {
        host: host.to_owned(),
        port,
    }
    .to_string();
    let mut ch = Channel::connect_tls(host, port, tls, timeout)?;
    ch.set_timeout(Some(timeout))?;
    Auth {
        purpose,
        token: token.cloned(),
    }
    .write(&mut ch)?;
    let admit = Admit::read(&mut ch)?;
    admit.check(&shown)?;
    ch.set_timeout(None)?;
    Ok((ch, admit))
}

/// Opens a session with the mediator at `tls://host:port`: authenticates to
/// the supervisor (the client certificate of `tls`, if any, and `token`),
/// then connects to the worker it started and presents the ticket. The
/// returned channel is the session's control connection, ready for the
/// `Hello`. Each step waits at most `timeout`.
pub fn open_session(
    host: &str,
    port: u16,
    tls: &ClientTls,
    token: Option<&BearerToken>,
    timeout: Duration,
) -> Result<Channel, TransportError> {
    let (front, admit) = admitted(host, port, tls, token, purpose::SESSION, timeout)?;
    let mut worker = front
        .peer_addr()
        .ok_or(TransportError::NotLocal("a TLS session needs a TCP peer"))?;
    worker.set_port(admit.port);
    let control = Channel::connect_lane_like(&front, worker, &admit.ticket, timeout)?;
    drop(front);
    Ok(control)
}

/// Connects to the supervisor at `tls://host:port` for one status query:
/// the returned channel carries the query and its answer.
pub fn open_status(
    host: &str,
    port: u16,
    tls: &ClientTls,
    token: Option<&BearerToken>,
    timeout: Duration,
) -> Result<Channel, TransportError> {
    Ok(admitted(host, port, tls, token, purpose::STATUS, timeout)?.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_bytes_and_round_trip() {
        let auth = Auth {
            purpose: purpose::SESSION,
            token: BearerToken::new("s3cret\n"),
        };
        let mut bytes = Vec::new();
        auth.write(&mut bytes).expect("write");
        assert_eq!(
            bytes, b"VGAU\x01\x00\x01\x00\x06\x00\x00\x00s3cret",
            "golden bytes"
        );
        assert_eq!(Auth::read(&mut &bytes[..]).expect("read"), auth);
        let none = Auth {
            purpose: purpose::STATUS,
            token: None,
        };
        let mut bytes = Vec::new();
        none.write(&mut bytes).expect("write");
        assert_eq!(bytes, b"VGAU\x01\x00\x02\x00\x00\x00\x00\x00");
        assert_eq!(Auth::read(&mut &bytes[..]).expect("read"), none);
    }

    #[test]
    fn bad_auth_is_refused_before_allocating() {
        let good = b"VGAU\x01\x00\x01\x00\x00\x00\x00\x00".to_vec();
        let with = |at: usize, b: u8| {
            let mut m = good.clone();
            m[at] = b;
            m
        };
        for bad in [
            with(0, b'X'),
            with(4, 2),
            with(6, 9),
            // A 4 GiB token is refused from its length alone.
            [&good[..8], &[0xff, 0xff, 0xff, 0xff]].concat(),
            // A declared token that never comes.
            [&good[..8], &[4, 0, 0, 0], b"ab"].concat(),
            good[..5].to_vec(),
        ] {
            assert!(Auth::read(&mut &bad[..]).is_err(), "{bad:?}");
        }
        let long = "x".repeat(MAX_TOKEN_BYTES + 1);
        let auth = Auth {
            purpose: purpose::SESSION,
            token: BearerToken::new(&long),
        };
        assert!(auth.write(&mut Vec::new()).is_err());
    }

    #[test]
    fn admit_bytes_and_round_trip() {
        let admit = Admit {
            verdict: verdict::ADMITTED,
            port: 0x1f4b,
            ticket: [7; TOKEN_LEN],
        };
        let bytes = admit.to_bytes();
        assert_eq!(&bytes[..12], b"VGAD\x00\x00\x00\x00\x4b\x1f\x00\x00");
        assert_eq!(&bytes[16..], &[7; 16]);
        assert_eq!(Admit::read(&mut &bytes[..]).expect("read"), admit);
        let mut bad = bytes;
        bad[12] = 1;
        assert!(Admit::read(&mut &bad[..]).is_err(), "reserved bytes");
        let refused = Admit::without_worker(verdict::BAD_CREDENTIALS);
        let e = refused.check("tls://h:1").expect_err("refused").to_string();
        assert!(e.contains("VGPU_TOKEN") && e.contains("tls://h:1"), "{e}");
    }

    #[test]
    fn tokens_never_print() {
        let t = BearerToken::new("  hunter2 ").expect("a token");
        assert_eq!(t.expose(), b"hunter2");
        assert_eq!(format!("{t:?}"), "<redacted>");
        let auth = Auth {
            purpose: purpose::SESSION,
            token: Some(t),
        };
        assert!(!format!("{auth:?}").contains("hunter2"));
        assert_eq!(BearerToken::new(" \n"), None);
    }
}
