//! `tls://` listeners: the supervisor authenticates a client, then hands it
//! to a worker that the client reaches directly.
//!
//! For each accepted connection (`docs/adr/0009-tls-admission.md`):
//! 1. The TLS 1.3 handshake must finish within [`HANDSHAKE_TIMEOUT`], and
//!    the client's `Auth` message ([`vgpu_transport::tls::admission`]) must
//!    come within the same deadline. A client certificate is verified in
//!    the handshake when `--tls-client-ca` is given.
//! 2. The client is authenticated by a verified certificate (its subject
//!    common name) or a bearer token that matches a configured digest
//!    ([`crate::tokens`]); otherwise it is refused with
//!    `verdict::BAD_CREDENTIALS`, and the refusal is logged with the peer's
//!    address and the reason, never the token. No worker has been started.
//! 3. An authenticated session gets a listener bound on the address the
//!    client reached (a port of `--lane-ports`, or one the kernel picks)
//!    and a fresh 16-byte ticket. A worker is started with the listener as
//!    its connection and an inherited pipe that gives it the ticket and the
//!    server's certificate and key and the client's identity
//!    ([`write_admission`]), so a worker never reads the key file. The client is told the port and ticket, and
//!    connects to the worker over TLS ([`crate::worker`]'s TLS admission);
//!    the supervisor's connection then closes. The data never passes
//!    through the supervisor.
//!
//! A status query (`vgpu status` over `tls://`) is authenticated the same
//! way and answered on the connection.

use std::io::Write;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use vgpu_transport::tcp::new_token;
use vgpu_transport::tls::admission::{purpose, verdict, Admit, Auth};
use vgpu_transport::tls::ServerTls;
use vgpu_transport::{Channel, Listener};

use crate::admission::PendingTicket;
use crate::config::ServeArgs;
use crate::identity::Identity;
use crate::sessions::Refusal;
use crate::supervisor::Gate;
use crate::tenants::supervise::Tenancy;
use crate::tokens::{TokenEntry, Tokens};
use crate::MediatorError;

/// How long a client has to finish its TLS handshake and send its `Auth`.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// What a `tls://` listener needs: the server's TLS settings, the PEM text
/// it passes to workers, and the accepted tokens.
pub struct FrontDoor {
    tls: ServerTls,
    cert_pem: Vec<u8>,
    key_pem: Vec<u8>,
    tokens: Tokens,
}

impl std::fmt::Debug for FrontDoor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrontDoor")
            .field("tls", &self.tls)
            .field("tokens", &self.tokens)
            .finish_non_exhaustive()
    }
}

impl FrontDoor {
    /// Loads the certificate, key, client CA and tokens that `args` names
    /// for the listener `listen`; refuses a listener at which no client
    /// could authenticate.
    pub fn load(
        args: &ServeArgs,
        listen: &str,
        tenancy: &Tenancy,
    ) -> Result<FrontDoor, MediatorError> {
        let cannot = |why: String| MediatorError::Config(format!("--listen {listen}: {why}"));
        let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) else {
            return Err(cannot(
                "a tls:// listener needs the server's certificate and key: \
                 --tls-cert FILE --tls-key FILE"
                    .into(),
            ));
        };
        let read =
            |p: &PathBuf| std::fs::read(p).map_err(|e| cannot(format!("{}: {e}", p.display())));
        let (cert_pem, key_pem) = (read(cert)?, read(key)?);
        let client_ca = args.tls_client_ca.as_deref();
        let tls = ServerTls::from_files(cert, key, client_ca)
            .map_err(|e| cannot(e.to_string()))?
            .without_tickets();
        let mut tokens = match &args.tokens {
            Some(path) => Tokens::load(path)?,
            None => Tokens::default(),
        };
        // The tenants' tokens (`[[tenant]] tokens` in the mediator file).
        tokens.extend(tenancy.policy.tenants.iter().flat_map(|t| {
            t.token_digests.iter().map(|(name, sha256)| TokenEntry {
                name: name.clone(),
                sha256: *sha256,
            })
        }));
        if !tls.verifies_clients() && tokens.is_empty() {
            return Err(cannot(
                "clients would have no way to authenticate: give --tls-client-ca FILE \
                 (client certificates) or --tokens FILE (bearer tokens)"
                    .into(),
            ));
        }
        Ok(FrontDoor {
            tls,
            cert_pem,
            key_pem,
            tokens,
        })
    }
}

/// Serves one connection accepted on a `tls://` listener (module header).
/// `ticket` is the connection's place among the pending handshakes: it is
/// given back once the client has authenticated or failed to.
pub(crate) fn serve(gate: &Gate, door: &FrontDoor, conn: Channel, ticket: PendingTicket) {
    let (census, tenancy) = (&*gate.census, &*gate.tenancy);
    let peer = conn.peer_addr();
    let shown = peer.map_or_else(|| "?".to_owned(), |p| p.to_string());
    let refused = |why: &dyn std::fmt::Display| {
        tracing::warn!(peer = %shown, "TLS client refused: {why}");
    };
    let Some(sock) = conn.into_fd().map(TcpStream::from) else {
        return refused(&"not a TCP connection");
    };
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    let mut ch = match Channel::accept_tls(sock, &door.tls, HANDSHAKE_TIMEOUT) {
        Ok(ch) => ch,
        Err(e) => return refused(&format_args!("TLS handshake failed: {e}")),
    };
    let auth = read_auth(&mut ch, deadline);
    drop(ticket);
    let auth = match auth {
        Ok(a) => a,
        Err(e) => return refused(&format_args!("no admission request: {e}")),
    };
    let cert_name = ch.tls_client_name();
    let token_name = auth
        .token
        .as_ref()
        .and_then(|t| door.tokens.check(t))
        .map(str::to_owned);
    let identity = Identity {
        cert_name,
        token_name,
        peer,
        ..Identity::default()
    };
    if identity.cert_name.is_none() && identity.token_name.is_none() {
        let why = match (&auth.token, door.tls.verifies_clients()) {
            (Some(_), _) => "a token that matches no configured token",
            (None, true) => "no client certificate and no token",
            (None, false) => "no token",
        };
        refused(&why);
        let _ = Admit::without_worker(verdict::BAD_CREDENTIALS).write(&mut ch);
        return;
    }
    tracing::info!(
        peer = %shown,
        cert_name = %identity.cert_name.as_deref().unwrap_or("-"),
        token_name = %identity.token_name.as_deref().unwrap_or("-"),
        "TLS client authenticated"
    );
    // The tenants' policy: which tenant, and whether it may start another
    // session (refusals are logged there).
    let session = auth.purpose != purpose::STATUS;
    let tenant = match tenancy.decide_identity(identity.clone(), &[], session) {
        Ok(admission) => admission.tenant,
        Err(why) => {
            if session {
                census.refused(why);
            }
            let _ = Admit::without_worker(verdict::BAD_CREDENTIALS).write(&mut ch);
            return;
        }
    };
    if auth.purpose == purpose::STATUS {
        let admitted = Admit::without_worker(verdict::ADMITTED).write(&mut ch);
        if let Err(e) = admitted
            .map_err(MediatorError::from)
            .and_then(|()| vgpu_proto::sessions::read_query(&mut ch).map_err(MediatorError::from))
            .and_then(|()| crate::supervisor::answer_query(ch, census, tenancy))
        {
            tracing::info!("status query over TLS: {e}");
        }
        return;
    }
    start_session(gate, tenant, door, ch, &identity);
}

/// Reads the client's `Auth`, which must arrive by `deadline`.
fn read_auth(ch: &mut Channel, deadline: Instant) -> Result<Auth, MediatorError> {
    let left = deadline.saturating_duration_since(Instant::now());
    ch.set_timeout(Some(left.max(Duration::from_millis(1))))?;
    let auth = Auth::read(ch)?;
    ch.set_timeout(Some(HANDSHAKE_TIMEOUT))?;
    Ok(auth)
}

/// Starts the worker of an authenticated session and tells the client
/// where it waits.
fn start_session(
    gate: &Gate,
    tenant: Option<usize>,
    door: &FrontDoor,
    mut ch: Channel,
    identity: &Identity,
) {
    let (args, tenancy) = (&gate.args, &*gate.tenancy);
    let limit = args.limits.worker_limit();
    let Some(reservation) = gate.census.reserve_within(limit) else {
        tenancy.not_started(tenant);
        let why = format!("{limit} workers are live, the most this mediator runs");
        crate::supervisor::log_refusal(gate, identity, Refusal::Workers, &why);
        let _ = Admit::without_worker(verdict::UNAVAILABLE).write(&mut ch);
        return;
    };
    let started = bind_for(&ch, args).and_then(|(listener, port)| {
        let ticket = new_token()?;
        let (reader, writer) = std::io::pipe()?;
        let reader = OwnedFd::from(reader);
        let (mut extra, tenant_fds) = tenancy.worker_args(tenant);
        extra.extend(["--tls-admission".to_owned(), reader.as_raw_fd().to_string()]);
        let mut inherit = vec![listener.into_fd(), reader];
        inherit.extend(tenant_fds);
        let pid = crate::supervisor::start_worker(gate, inherit, &extra, tenant, reservation.slot)?;
        Ok((pid, port, ticket, writer))
    });
    let (pid, port, ticket, writer) = match started {
        Ok(s) => s,
        Err(e) => {
            tenancy.not_started(tenant);
            reservation.failed();
            tracing::error!("could not start a worker: {e}");
            let _ = Admit::without_worker(verdict::UNAVAILABLE).write(&mut ch);
            return;
        }
    };
    reservation.started(pid);
    let peer = identity
        .peer
        .map_or_else(|| "?".to_owned(), |p| p.to_string());
    tracing::info!(worker = pid, %peer, "session accepted");
    if let Err(e) = write_admission(writer, &ticket, door, identity) {
        // The worker gives up without its admission; the client is told.
        tracing::error!(worker = pid, "cannot hand the session to its worker: {e}");
        let _ = Admit::without_worker(verdict::UNAVAILABLE).write(&mut ch);
        return;
    }
    let admit = Admit {
        verdict: verdict::ADMITTED,
        port,
        ticket,
    };
    if let Err(e) = admit.write(&mut ch) {
        tracing::warn!(worker = pid, "the client left before it was admitted: {e}");
    }
}

/// A listener for the session's worker on the address the client reached,
/// and its port.
fn bind_for(ch: &Channel, args: &ServeArgs) -> Result<(Listener, u16), MediatorError> {
    let local = ch
        .local_addr()
        .ok_or_else(|| MediatorError::Config("a TLS connection without an address".into()))?;
    let range = args.lane_ports.map_or(0..=0, |r| r.low..=r.high);
    let listener = Listener::bind_tcp_in(local, range)?;
    let port = listener
        .local_addr()
        .map(|a| a.port())
        .ok_or_else(|| MediatorError::Config("the worker's listener has no port".into()))?;
    Ok((listener, port))
}

/// Writes a worker's admission to its pipe: the ticket (16 bytes), then the
/// server's certificate chain and private key (PEM) and the client's
/// certificate name and token name (UTF-8, empty when none), each as a
/// little-endian u32 length and the bytes. Closing the pipe ends it.
pub fn write_admission(
    mut pipe: impl Write,
    ticket: &[u8; 16],
    door: &FrontDoor,
    identity: &Identity,
) -> std::io::Result<()> {
    let mut msg = Vec::with_capacity(256 + door.cert_pem.len() + door.key_pem.len());
    msg.extend_from_slice(ticket);
    let name = |n: &Option<String>| n.as_deref().unwrap_or_default().as_bytes().to_vec();
    let parts = [
        door.cert_pem.clone(),
        door.key_pem.clone(),
        name(&identity.cert_name),
        name(&identity.token_name),
    ];
    for part in &parts {
        let len = u32::try_from(part.len()).map_err(|_| std::io::Error::other("PEM too large"))?;
        msg.extend_from_slice(&len.to_le_bytes());
        msg.extend_from_slice(part);
    }
    pipe.write_all(&msg)
}
