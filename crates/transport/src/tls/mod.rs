//! TLS 1.3 channels for `tls://HOST:PORT` mediators.
//!
//! Contract:
//! - **Protocol.** TLS 1.3 only, with rustls and its `ring` provider; the
//!   ALPN protocol is [`ALPN`] on both ends (a peer that offers another is
//!   refused in the handshake). The record layer runs in user space in both
//!   processes (no kTLS). Underneath is a tuned TCP connection
//!   ([`crate::tcp::tune`]); writes use `MSG_NOSIGNAL`, as every channel
//!   does, so a vanished peer is an error and never a `SIGPIPE`.
//! - **Server authentication.** A client ([`ClientTls`]) trusts the
//!   certificates of one CA file (`VGPU_TLS_CA`) or else the system's roots,
//!   and checks the server's certificate against the host name (or IP
//!   address) of the `tls://` address.
//! - **Client authentication.** A server with a client CA ([`ServerTls`]
//!   with `client_ca`) verifies a certificate the client presents; a client
//!   may present none (it may prove itself with a bearer token instead,
//!   [`admission`]). The subject common name of a verified certificate is
//!   [`Channel::tls_client_name`].
//! - **Deadlines.** A handshake that does not finish by its deadline fails
//!   with [`TransportError::Timeout`], however slowly the peer trickles bytes.
//! - **Channels.** A TLS [`Channel`] behaves as a TCP one: no credentials,
//!   no descriptors, [`Channel::is_tcp`] is true, and [`Channel::hung_up`]
//!   looks at the TCP socket. A client's channel remembers its
//!   configuration and server name, so the lanes of its session
//!   ([`Channel::connect_lane_like`]) are TLS connections to the same name.
//! - **Secrets.** A bearer token is a [`BearerToken`], whose `Debug` prints
//!   `<redacted>` and which has no `Display`; errors about a token file
//!   name the file, never what it holds.

pub mod admission;
mod names;
mod settings;

pub use settings::TlsSettings;

use std::io::{IoSlice, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, Connection, RootCertStore, ServerConfig};

use crate::unix::Stream;
use crate::{Channel, TransportError};

/// The ALPN protocol name both ends announce.
pub const ALPN: &[u8] = b"vgpu/1";

/// Plaintext that one write may queue for encryption before it is sent:
/// large enough that a 16 MiB copy piece takes few rounds of encrypting and
/// sending, small enough to bound each connection's buffer.
const BUFFER_LIMIT: usize = 1 << 20;

/// A bearer token (`VGPU_TOKEN`, `VGPU_TOKEN_FILE`). It never appears in a
/// log or an error: `Debug` prints `<redacted>` and there is no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken(String);

impl BearerToken {
    /// A token from its text, without surrounding white space; `None` when
    /// nothing is left.
    pub fn new(text: &str) -> Option<BearerToken> {
        let t = text.trim();
        (!t.is_empty()).then(|| BearerToken(t.to_owned()))
    }

    /// The secret's bytes, to send or to hash.
    pub fn expose(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

fn tls_error(what: &str, e: impl std::fmt::Display) -> TransportError {
    TransportError::Tls(format!("{what}: {e}"))
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Every certificate of the PEM file `path`; none is an error.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TransportError> {
    let what = || format!("certificates in {}", path.display());
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| tls_error(&what(), e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| tls_error(&what(), e))?;
    if certs.is_empty() {
        return Err(TransportError::Tls(format!(
            "{} holds no certificate",
            what()
        )));
    }
    Ok(certs)
}

/// A store holding every certificate of the PEM file `path`.
fn roots_from(path: &Path) -> Result<RootCertStore, TransportError> {
    let mut roots = RootCertStore::empty();
    for cert in certificates(path)? {
        roots
            .add(cert)
            .map_err(|e| tls_error(&format!("CA certificate in {}", path.display()), e))?;
    }
    Ok(roots)
}

/// The system's trusted roots (`rustls-native-certs`: the distribution's CA
/// bundle, or `SSL_CERT_FILE`/`SSL_CERT_DIR`).
fn system_roots() -> Result<RootCertStore, TransportError> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err(TransportError::Tls(
            "no trusted root certificate found on this system; set VGPU_TLS_CA to the \
             mediator's CA file"
                .into(),
        ));
    }
    Ok(roots)
}

/// A client's TLS settings: whom it trusts, and its own certificate if it
/// has one.
#[derive(Clone)]
pub struct ClientTls {
    config: Arc<ClientConfig>,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientTls { .. }")
    }
}

impl ClientTls {
    /// Trusts the CA certificates in `ca` (PEM), or the system's roots when
    /// `None`; presents the certificate chain and key of `identity` (PEM
    /// files) when given (mTLS).
    pub fn new(
        ca: Option<&Path>,
        identity: Option<(&Path, &Path)>,
    ) -> Result<Self, TransportError> {
        let roots = match ca {
            Some(path) => roots_from(path)?,
            None => system_roots()?,
        };
        let builder = ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| tls_error("client configuration", e))?
            .with_root_certificates(roots);
        let mut config = match identity {
            Some((cert, key)) => {
                let chain = certificates(cert)?;
                let key = PrivateKeyDer::from_pem_file(key)
                    .map_err(|e| tls_error(&format!("private key in {}", key.display()), e))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| tls_error("client certificate", e))?
            }
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = vec![ALPN.to_vec()];
        Ok(ClientTls {
            config: Arc::new(config),
        })
    }
}

/// A server's TLS settings: its certificate and key, and the CA its
/// clients' certificates are checked against, if any.
#[derive(Clone)]
pub struct ServerTls {
    config: Arc<ServerConfig>,
    verifies_clients: bool,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ServerTls {{ verifies_clients: {} }}",
            self.verifies_clients
        )
    }
}

impl ServerTls {
    /// The server's certificate chain and key from PEM files, and a CA file
    /// whose certificates sign the clients' certificates (optional: a
    /// client may also come without one).
    pub fn from_files(
        cert: &Path,
        key: &Path,
        client_ca: Option<&Path>,
    ) -> Result<Self, TransportError> {
        let cert = std::fs::read(cert).map_err(|e| tls_error(&cert.display().to_string(), e))?;
        let key = std::fs::read(key).map_err(|e| tls_error(&key.display().to_string(), e))?;
        let roots = client_ca.map(roots_from).transpose()?;
        ServerTls::from_pem(&cert, &key, roots)
    }

    /// The server's certificate chain and key from PEM text (a worker gets
    /// them from its supervisor); clients are verified against `client_ca`
    /// when given.
    pub fn from_pem(
        cert: &[u8],
        key: &[u8],
        client_ca: Option<RootCertStore>,
    ) -> Result<Self, TransportError> {
        let chain = CertificateDer::pem_slice_iter(cert)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| tls_error("server certificate", e))?;
        if chain.is_empty() {
            return Err(TransportError::Tls("no server certificate".into()));
        }
        let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| tls_error("server key", e))?;
        let builder = ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| tls_error("server configuration", e))?;
        let verifies_clients = client_ca.is_some();
        let builder = match client_ca {
            Some(roots) => {
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider(),
                )
                .allow_unauthenticated()
                .build()
                .map_err(|e| tls_error("client CA", e))?;
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let mut config = builder
            .with_single_cert(chain, key)
            .map_err(|e| tls_error("server certificate and key", e))?;
        config.alpn_protocols = vec![ALPN.to_vec()];
        Ok(ServerTls {
            config: Arc::new(config),
            verifies_clients,
        })
    }

    /// The same settings without session tickets: for a server whose
    /// clients never come back to it (the supervisor: they go on to their
    /// worker, and a ticket of the supervisor's would only be offered to
    /// the worker in vain).
    pub fn without_tickets(mut self) -> Self {
        Arc::make_mut(&mut self.config).send_tls13_tickets = 0;
        self
    }

    /// Whether client certificates are verified (a client CA was given).
    pub fn verifies_clients(&self) -> bool {
        self.verifies_clients
    }
}

/// Bytes read from the socket at once. rustls asks for at most 4 KiB per
/// read; a buffer below it turns the many small reads of a large frame into
/// few system calls.
const READ_BUFFER: usize = 256 << 10;

/// The TCP socket under a TLS connection: reads are buffered
/// ([`READ_BUFFER`]), writes use `MSG_NOSIGNAL`.
#[derive(Debug)]
pub(crate) struct Sock(std::io::BufReader<TcpStream>);

impl Sock {
    fn new(tcp: TcpStream) -> Sock {
        Sock(std::io::BufReader::with_capacity(READ_BUFFER, tcp))
    }

    /// The TCP connection.
    pub(crate) fn tcp(&self) -> &TcpStream {
        self.0.get_ref()
    }
}

impl Read for Sock {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for Sock {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let sent = rustix::net::send(self.tcp(), buf, rustix::net::SendFlags::NOSIGNAL)?;
        Ok(sent)
    }
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
        let mut none = rustix::net::SendAncillaryBuffer::default();
        Ok(rustix::net::sendmsg(
            self.tcp(),
            bufs,
            &mut none,
            rustix::net::SendFlags::NOSIGNAL,
        )?)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One end of a TLS connection over TCP.
pub(crate) struct TlsStream {
    conn: Connection,
    pub(crate) sock: Sock,
    /// A client's configuration and the server's name, for its lanes.
    origin: Option<(ClientTls, ServerName<'static>)>,
    /// The process that made the connection. A forked child holds a copy of
    /// the same keys and sequence numbers: a record it sent would be valid
    /// to the peer, so it never sends one (not even the goodbye on drop).
    pid: u32,
}

impl std::fmt::Debug for TlsStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsStream")
            .field("sock", &self.sock)
            .field("client", &self.origin.is_some())
            .finish()
    }
}

impl TlsStream {
    /// Runs the handshake of `conn` over `sock` until it completes or
    /// `deadline` passes (each read waits only for the time left).
    fn handshake(
        mut conn: Connection,
        sock: TcpStream,
        deadline: Instant,
        origin: Option<(ClientTls, ServerName<'static>)>,
    ) -> Result<TlsStream, TransportError> {
        conn.set_buffer_limit(Some(BUFFER_LIMIT));
        let mut sock = Sock::new(sock);
        let timed = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                TransportError::Timeout
            }
            _ => TransportError::Io(e),
        };
        while conn.is_handshaking() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(TransportError::Timeout);
            }
            sock.tcp().set_read_timeout(Some(left))?;
            sock.tcp().set_write_timeout(Some(left))?;
            while conn.wants_write() {
                conn.write_tls(&mut sock).map_err(timed)?;
            }
            if !conn.is_handshaking() {
                break;
            }
            if conn.read_tls(&mut sock).map_err(timed)? == 0 {
                return Err(TransportError::Tls(
                    "the peer closed the connection during the TLS handshake".into(),
                ));
            }
            if let Err(e) = conn.process_new_packets() {
                // Tell the peer why (an alert), then give up.
                while conn.wants_write() && conn.write_tls(&mut sock).is_ok() {}
                return Err(tls_error("handshake", e));
            }
        }
        while conn.wants_write() {
            conn.write_tls(&mut sock).map_err(timed)?;
        }
        sock.tcp().set_read_timeout(None)?;
        sock.tcp().set_write_timeout(None)?;
        Ok(TlsStream {
            conn,
            sock,
            origin,
            pid: std::process::id(),
        })
    }

    /// Sends every TLS record queued so far.
    fn send_queued(&mut self) -> std::io::Result<()> {
        while self.conn.wants_write() {
            self.conn.write_tls(&mut self.sock)?;
        }
        Ok(())
    }
}

impl Read for TlsStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match self.conn.reader().read(buf) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                done => return done,
            }
            self.send_queued()?;
            // At EOF the reader reports it next: `Ok(0)` after the peer's
            // close_notify, `UnexpectedEof` without one.
            self.conn.read_tls(&mut self.sock)?;
            if let Err(e) = self.conn.process_new_packets() {
                let _ = self.send_queued();
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, e));
            }
        }
    }
}

impl Write for TlsStream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_vectored(&[IoSlice::new(buf)])
    }
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
        if self.pid != std::process::id() {
            return Err(std::io::Error::other(
                "a TLS connection inherited across fork is its parent's",
            ));
        }
        self.send_queued()?;
        let n = self.conn.writer().write_vectored(bufs)?;
        self.send_queued()?;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.send_queued()
    }
}

impl Drop for TlsStream {
    /// Says goodbye properly (a close_notify), if the socket takes it now;
    /// in a forked child, only closes its descriptor.
    fn drop(&mut self) {
        if self.pid != std::process::id() {
            return;
        }
        self.conn.send_close_notify();
        let _ = self
            .sock
            .tcp()
            .set_write_timeout(Some(Duration::from_millis(100)));
        let _ = self.send_queued();
    }
}

/// The name a client checks the server's certificate against.
fn server_name(host: &str) -> Result<ServerName<'static>, TransportError> {
    ServerName::try_from(host.to_owned())
        .map_err(|e| TransportError::Tls(format!("{host:?} is not a valid server name: {e}")))
}

impl Channel {
    /// Connects to `host:port` and runs a client handshake that checks the
    /// server's certificate against `host`; connecting and the handshake
    /// each take at most `timeout`.
    pub fn connect_tls(
        host: &str,
        port: u16,
        tls: &ClientTls,
        timeout: Duration,
    ) -> Result<Channel, TransportError> {
        let tcp = Channel::connect_tcp(host, port, timeout)?;
        let Stream::Tcp(sock) = tcp.stream else {
            return Err(TransportError::Tls("not a TCP connection".into()));
        };
        Channel::tls_client(sock, tls, server_name(crate::tcp::bare(host))?, timeout)
    }

    /// Runs a client handshake on the connected `sock`.
    fn tls_client(
        sock: TcpStream,
        tls: &ClientTls,
        name: ServerName<'static>,
        timeout: Duration,
    ) -> Result<Channel, TransportError> {
        let conn = ClientConnection::new(Arc::clone(&tls.config), name.clone())
            .map_err(|e| tls_error("client", e))?;
        let stream = TlsStream::handshake(
            Connection::Client(conn),
            sock,
            Instant::now() + timeout,
            Some((tls.clone(), name)),
        )?;
        Ok(Channel {
            stream: Stream::Tls(Box::new(stream)),
        })
    }

    /// Runs a server handshake on the accepted `sock` (tuned here), which
    /// must finish within `timeout`.
    pub fn accept_tls(
        sock: TcpStream,
        tls: &ServerTls,
        timeout: Duration,
    ) -> Result<Channel, TransportError> {
        sock.set_nonblocking(false)?;
        crate::tcp::tune(&sock)?;
        let conn = rustls::ServerConnection::new(Arc::clone(&tls.config))
            .map_err(|e| tls_error("server", e))?;
        let stream = TlsStream::handshake(
            Connection::Server(conn),
            sock,
            Instant::now() + timeout,
            None,
        )?;
        Ok(Channel {
            stream: Stream::Tls(Box::new(stream)),
        })
    }

    /// Whether this TLS channel's handshake resumed an earlier session
    /// (a lane of a session whose control connection reached the same
    /// worker).
    pub fn tls_resumed(&self) -> bool {
        match &self.stream {
            Stream::Tls(s) => s.conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
            _ => false,
        }
    }

    /// Whether this channel is a TLS connection.
    pub fn is_tls(&self) -> bool {
        matches!(self.stream, Stream::Tls(_))
    }

    /// On a server's TLS channel, the subject common name of the
    /// certificate the client presented and the handshake verified.
    pub fn tls_client_name(&self) -> Option<String> {
        let Stream::Tls(s) = &self.stream else {
            return None;
        };
        if s.origin.is_some() {
            return None;
        }
        let cert = s.conn.peer_certificates()?.first()?;
        names::common_name(cert.as_ref())
    }

    /// Opens a lane to `addr` the way `control` reached its worker: TLS to
    /// the same server name with the same configuration when `control` is
    /// a TLS client channel, plain TCP otherwise; then sends `token`.
    pub fn connect_lane_like(
        control: &Channel,
        addr: std::net::SocketAddr,
        token: &crate::tcp::Token,
        timeout: Duration,
    ) -> Result<Channel, TransportError> {
        let Stream::Tls(s) = &control.stream else {
            return Channel::connect_lane(addr, token, timeout);
        };
        let (tls, name) = s.origin.clone().ok_or_else(|| {
            TransportError::Tls("a lane is opened from a client's connection".into())
        })?;
        let sock = TcpStream::connect_timeout(&addr, timeout)?;
        crate::tcp::tune(&sock)?;
        let mut ch = Channel::tls_client(sock, &tls, name, timeout)?;
        ch.write_all(token)?;
        Ok(ch)
    }
}

#[cfg(test)]
mod tests;
