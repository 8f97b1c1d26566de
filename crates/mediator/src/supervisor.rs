//! The supervisor: accepts connections and starts one worker per session.
//!
//! Each accepted connection is looked at by a thread of its own, which
//! reads what it opens with before anything else happens
//! ([`crate::admission`]): a status query ([`vgpu_proto::sessions`]) is
//! answered there with the live sessions; a valid hello from a client the
//! tenants' policy admits ([`crate::tenants`]) is a session, handed to a new
//! worker with a slot of the session table ([`crate::sessions`],
//! [`crate::census`]) and the hello in a memfd. Anything else is closed
//! without a worker. A `tls://` listener's connections are authenticated
//! by [`crate::tls`] instead, within the same limits.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use vgpu_proto::Hello;
use vgpu_transport::{Address, Channel, Listener, TransportError};

use crate::admission::{self, NoPlace, Opening, Pending, PendingTicket, Refused, Source, Throttle};
use crate::census::Census;
use crate::config::ServeArgs;
use crate::identity::Identity;
use crate::sessions::{self, Refusal, Table};
use crate::tenants::supervise::Tenancy;
use crate::tenants::Settings;
use crate::MediatorError;

/// How long sending the answer to a status query may take.
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// Listens on every `args.listen` address (or on the sockets a service
/// manager passed, [`crate::tenants::activation`]) and serves until killed.
pub fn run(args: &ServeArgs, settings: Settings) -> Result<(), MediatorError> {
    crate::privilege::init(&args.limits)?;
    let inherited = crate::tenants::activation::take().map_err(MediatorError::Config)?;
    let exe = std::env::current_exe()?;
    let sim = args.sim_library();
    let driver = match &args.driver {
        crate::config::DriverChoice::Path(p) => Some(p.clone()),
        crate::config::DriverChoice::Sim => sim,
        crate::config::DriverChoice::Auto => None,
    };
    crate::privilege::check_reachable(
        &exe,
        &driver.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
    )?;
    let mut listeners = Vec::new();
    let mut sockets = Vec::new();
    let mut doors = Vec::new();
    let table = sessions::install(Table::create()?)
        .ok_or_else(|| MediatorError::Config("a session table exists already".into()))?;
    let census = Arc::new(Census::new(table));
    let unix = (settings.unix_mode, settings.unix_group);
    let run_as = crate::privilege::worker(None);
    let mps = crate::mps::Mps::new(&settings.mps, &settings.policy.tenants, run_as)?;
    let tenancy = Arc::new(Tenancy::new(settings.policy)?);
    tenancy.log_gate();
    for socket in inherited {
        let name = socket.name.unwrap_or_else(|| "unnamed".into());
        let listener = Listener::from_listening_fd(socket.fd)?;
        listener.set_nonblocking(true)?;
        let shown = listener
            .local_addr()
            .map_or_else(|| "a Unix socket".to_owned(), |a| format!("tcp://{a}"));
        tracing::info!("listening on {shown} (inherited from the service manager, {name})");
        listeners.push(listener);
        doors.push(None);
    }
    let listen = if listeners.is_empty() {
        &args.listen[..]
    } else {
        &[]
    };
    for text in listen {
        if let Some(path) = text.strip_prefix("ivshmem:") {
            let listener = crate::ivshmem::bind(Path::new(path))
                .map_err(|e| MediatorError::Config(format!("--listen {text}: {e}")))?;
            tracing::info!("listening on {text} (QEMU ivshmem-doorbell devices)");
            sockets.push(PathBuf::from(path));
            let (args, exe, census) = (args.clone(), exe.clone(), Arc::clone(&census));
            std::thread::Builder::new()
                .name("ivshmem".into())
                .spawn(move || crate::ivshmem::serve(&listener, &args, &exe, &census))?;
            continue;
        }
        // TLS: the certificate, key and client credentials, checked before binding.
        let door = match text.starts_with("tls://") {
            true => Some(Arc::new(crate::tls::FrontDoor::load(args, text, &tenancy)?)),
            false => None,
        };
        let (listener, bound, socket) = bind(text, unix)?;
        if let Some(path) = socket {
            sockets.push(path);
        } else if door.is_none() {
            plain_tcp_allowed(text, &listener, args.insecure_tcp)?;
        }
        tracing::info!("listening on {bound}");
        listeners.push(listener);
        doors.push(door);
    }
    let signals = crate::spawn::shutdown_signals();
    // Block them in every thread; one thread waits for them. Workers get the
    // default mask back before exec (see `crate::spawn::detach_in_child`).
    // SAFETY: `signals` is an initialised set; the old mask is not needed.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &signals, std::ptr::null_mut()) };
    let stopping = mps.clone();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || wait_for_shutdown(signals, &sockets, stopping.as_deref()))?;
    tracing::info!(
        listen = ?args.listen,
        driver = %args.driver,
        version = env!("CARGO_PKG_VERSION"),
        "vgpu-mediator supervisor ready"
    );
    let (reaper, ended, daemons) = (Arc::clone(&census), Arc::clone(&tenancy), mps.clone());
    std::thread::Builder::new()
        .name("reaper".into())
        .spawn(move || reap_workers(&reaper, &ended, daemons.as_deref()))?;
    if let Some(m) = &mps {
        m.watch()?;
    }
    if let Some(addr) = args.metrics {
        let bound = crate::metrics::serve(addr, Arc::clone(&census), Arc::clone(&tenancy))?;
        tracing::info!("metrics on http://{bound}/metrics");
    }
    let pending = Pending::new(args.limits.max_pending_handshakes as usize);
    let gate = Arc::new(Gate {
        exe,
        args: args.clone(),
        census: Arc::clone(&census),
        tenancy,
        mps,
        throttle: Throttle::default(),
    });
    loop {
        for i in ready(&listeners) {
            let conn = match listeners[i].accept() {
                Ok(c) => c,
                Err(TransportError::Io(e)) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    continue
                }
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    continue;
                }
            };
            let (who, groups) = crate::tenants::supervise::identify(&conn);
            if conn.hung_up() {
                // Connected and gone before it was accepted: no thread, no place.
                let why = "closed before it sent a hello".to_owned();
                let reason = Refusal::Handshake;
                refuse(&gate, &who, Refused { reason, why });
                continue;
            }
            let ticket = match pending.enter(Source::of(&who)) {
                Ok(ticket) => ticket,
                Err(full) => {
                    drop(conn);
                    let why = match full {
                        NoPlace::All(n) => format!("{n} connections are in their handshake"),
                        NoPlace::Source(n) => format!(
                            "{n} connections from this peer are in their handshake, the most \
                             one peer may hold"
                        ),
                    };
                    let reason = Refusal::Busy;
                    refuse(&gate, &who, Refused { reason, why });
                    continue;
                }
            };
            let gate = Arc::clone(&gate);
            let door = doors[i].clone();
            let started = std::thread::Builder::new()
                .name("accepted".into())
                .spawn(move || match door {
                    Some(door) => crate::tls::serve(&gate, &door, conn, ticket),
                    None => triage(&gate, conn, (who, groups), ticket),
                });
            if let Err(e) = started {
                tracing::error!("cannot start a thread for a new connection: {e}");
            }
        }
    }
}

/// What the supervisor shares between the threads of new connections.
pub(crate) struct Gate {
    pub exe: PathBuf,
    pub args: ServeArgs,
    pub census: Arc<Census>,
    pub tenancy: Arc<Tenancy>,
    /// The MPS groups, when tenants name any ([`crate::mps`]).
    pub mps: Option<Arc<crate::mps::Mps>>,
    /// Log lines about refused connections.
    throttle: Throttle,
}

/// Handles one accepted connection from `identity` (with supplementary
/// `groups`, [`crate::tenants::supervise::identify`]), within its
/// pending-handshake place `ticket`: answers a status query, or admits the
/// session and starts its worker ([`crate::admission`], [`crate::tenants`]).
/// A connection refused at any step is closed, logged (throttled) and
/// counted.
fn triage(
    gate: &Gate,
    mut conn: Channel,
    (identity, groups): (Identity, Vec<u32>),
    ticket: PendingTicket,
) {
    let opening = admission::read_opening(&mut conn, gate.args.limits.handshake_timeout());
    drop(ticket);
    let hello = match opening {
        Ok(Opening::Hello(hello)) => hello,
        Ok(Opening::Query) => {
            // Refused queries are logged, not counted: they are not sessions.
            if gate
                .tenancy
                .decide_identity(identity, &groups, false)
                .is_err()
            {
                return;
            }
            if let Err(e) = answer_query(conn, &gate.census, &gate.tenancy) {
                tracing::info!("status query: {e}");
            }
            return;
        }
        Err(e) => {
            let why = match e {
                vgpu_proto::ProtoError::Io(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    format!(
                        "no whole hello within {:?}",
                        gate.args.limits.handshake_timeout()
                    )
                }
                // A TLS handshake record (content type 22, version 3.x): a
                // client configured for tls:// at a plain listener.
                vgpu_proto::ProtoError::BadMagic { found, .. }
                    if found.to_le_bytes()[..2] == [0x16, 0x03] =>
                {
                    "refused: a TLS handshake on a plain listener (this address is not tls://)"
                        .to_owned()
                }
                e => format!("bad handshake: {e}"),
            };
            return refuse(
                gate,
                &identity,
                Refused {
                    reason: Refusal::Handshake,
                    why,
                },
            );
        }
    };
    // The tenants' policy (it logs its refusals with the uid and pid).
    let tenant = match gate
        .tenancy
        .decide_identity(identity.clone(), &groups, true)
    {
        Ok(admission) => admission.tenant,
        Err(why) => return gate.census.refused(why),
    };
    let limit = gate.args.limits.worker_limit();
    let Some(reservation) = gate.census.reserve_within(limit) else {
        gate.tenancy.not_started(tenant);
        // Counted by the census (`workers`, or `capacity` for a full table).
        let why = format!("{limit} workers are live, the most this mediator runs");
        return log_refusal(gate, &identity, Refusal::Workers, &why);
    };
    let slot = reservation.slot;
    match spawn_worker(gate, conn, &hello, tenant, slot) {
        Ok(pid) => {
            reservation.started(pid);
            let from = admission::describe(&identity);
            tracing::info!(worker = pid, from, "session accepted");
        }
        Err(e) => {
            gate.tenancy.not_started(tenant);
            reservation.failed();
            tracing::error!("could not start a worker: {e}");
        }
    }
}

/// Closes a refused connection: counted, and logged unless too many were
/// refused this second.
pub(crate) fn refuse(gate: &Gate, identity: &Identity, refused: Refused) {
    gate.census.refused(refused.reason);
    log_refusal(gate, identity, refused.reason, &refused.why);
}

/// The log line of a refusal, unless too many were written this second.
pub(crate) fn log_refusal(gate: &Gate, identity: &Identity, reason: Refusal, why: &str) {
    if let Some(left_out) = gate.throttle.allow() {
        let who = admission::describe(identity);
        let reason = reason.label();
        if left_out > 0 {
            tracing::warn!(
                reason,
                "refused {who}: {why} ({left_out} refusals not logged before this one)"
            );
        } else {
            tracing::warn!(reason, "refused {who}: {why}");
        }
    }
}

/// Answers a status query (read whole by [`admission::read_opening`], or
/// admitted over TLS) with the live sessions, each with its tenant.
pub(crate) fn answer_query(
    mut conn: Channel,
    census: &Census,
    tenancy: &Tenancy,
) -> Result<(), MediatorError> {
    use rustix::net::sockopt::{set_socket_timeout, Timeout};
    let fd = conn.fd()?;
    set_socket_timeout(fd, Timeout::Send, Some(QUERY_TIMEOUT)).map_err(std::io::Error::from)?;
    let mut records = census.records();
    for r in &mut records {
        if let Some(name) = tenancy.tenant_of_worker(r.worker_pid.get()) {
            r.set_tenant(name);
        }
    }
    vgpu_proto::sessions::write_list(&mut conn, &records)?;
    Ok(())
}

/// Binds one `--listen` address, non-blocking (the accept loop polls every
/// listener); returns it with the address it is bound to (a TCP port 0
/// replaced by the port the kernel picked) and a Unix socket's path. A Unix
/// socket gets file mode and group `unix` (`[unix] mode`, `group`).
fn bind(
    text: &str,
    unix: (u32, Option<u32>),
) -> Result<(Listener, String, Option<PathBuf>), MediatorError> {
    let cannot = |e: &dyn std::fmt::Display| MediatorError::Config(format!("--listen {text}: {e}"));
    let addr: Address = text.parse().map_err(|e| cannot(&e))?;
    let listener = match &addr {
        Address::Unix(path) => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| cannot(&e))?;
            }
            // Owner-only while it is made; then the configured mode.
            let old = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o177));
            let bound = Listener::bind(path);
            rustix::process::umask(old);
            bound.and_then(|l| {
                crate::tenants::unix::set_mode_and_group(path, unix.0, unix.1)?;
                Ok(l)
            })
        }
        Address::Tcp { host, port } | Address::Tls { host, port } => {
            Listener::bind_tcp(host, *port)
        }
    }
    .map_err(|e| cannot(&e))?;
    listener.set_nonblocking(true)?;
    let bound = match (listener.local_addr(), &addr) {
        (Some(a), Address::Tls { .. }) => format!("tls://{a}"),
        (Some(a), _) => format!("tcp://{a}"),
        (None, _) => addr.to_string(),
    };
    let socket = match addr {
        Address::Unix(path) => Some(path),
        Address::Tcp { .. } | Address::Tls { .. } => None,
    };
    Ok((listener, bound, socket))
}

/// Plain TCP is served on loopback only, unless `--insecure-tcp`: anywhere
/// else nothing would be encrypted and anyone who reaches the port would
/// get a session.
fn plain_tcp_allowed(text: &str, l: &Listener, insecure: bool) -> Result<(), MediatorError> {
    let loopback = l.local_addr().is_some_and(|a| a.ip().is_loopback());
    if loopback {
        return Ok(());
    }
    if insecure {
        tracing::warn!(
            "{text} is plain TCP off loopback (--insecure-tcp): nothing is encrypted and any \
             host that reaches it can start a session"
        );
        return Ok(());
    }
    let tls = text.replacen("tcp://", "tls://", 1);
    Err(MediatorError::Config(format!(
        "--listen {text}: plain TCP is served on loopback addresses only, since nothing on it \
         is encrypted or authenticated. Serve TLS instead: --listen {tls} --tls-cert FILE \
         --tls-key FILE, with --tls-client-ca FILE or --tokens FILE to authenticate clients; \
         or pass --insecure-tcp (insecure_tcp = true) to serve plain TCP anyway"
    )))
}

/// The listeners with a connection waiting (poll(2), without a time limit).
fn ready(listeners: &[Listener]) -> Vec<usize> {
    use rustix::event::{poll, PollFd, PollFlags};
    let mut fds: Vec<PollFd<'_>> = listeners
        .iter()
        .map(|l| PollFd::new(l, PollFlags::IN))
        .collect();
    match poll(&mut fds, None) {
        Ok(_) => fds
            .iter()
            .enumerate()
            .filter(|(_, f)| !f.revents().is_empty())
            .map(|(i, _)| i)
            .collect(),
        Err(rustix::io::Errno::INTR) => Vec::new(),
        Err(e) => {
            tracing::warn!("poll failed: {e}");
            std::thread::sleep(std::time::Duration::from_millis(100));
            Vec::new()
        }
    }
}

/// Starts a worker for `conn` with session slot `slot`.
/// The worker gets the connection, in a memfd the hello the supervisor read
/// from it, and its tenant's arguments and counters.
fn spawn_worker(
    gate: &Gate,
    conn: Channel,
    hello: &Hello,
    tenant: Option<usize>,
    slot: usize,
) -> Result<u32, MediatorError> {
    let fd = conn.into_fd().ok_or(MediatorError::Config(
        "an accepted connection without a socket".into(),
    ))?;
    let memfd = admission::hello_memfd(hello)?;
    let (mut extra, tenant_fds) = gate.tenancy.worker_args(tenant);
    extra.extend(["--hello".to_owned(), memfd.as_raw_fd().to_string()]);
    let mut inherit = vec![fd, memfd];
    inherit.extend(tenant_fds);
    start_worker(gate, inherit, &extra, tenant, slot)
}

/// Starts a session's worker ([`crate::spawn::spawn`]) as the worker user, in its
/// tenant's MPS group if it has one, and records it with its tenant.
pub(crate) fn start_worker(
    gate: &Gate,
    inherit: Vec<OwnedFd>,
    extra: &[String],
    tenant: Option<usize>,
    slot: usize,
) -> Result<u32, MediatorError> {
    let settings = tenant.and_then(|i| {
        let t = gate.tenancy.policy.tenants.get(i)?;
        Some((t.mps.as_ref()?, t.devices.as_ref().map(Vec::len)))
    });
    let (env, group) = match (settings, &gate.mps) {
        (Some((t, devices)), Some(mps)) => {
            let devices = devices.unwrap_or_else(crate::mps::host_devices);
            let (env, group) = mps.session_env(t, devices).map_err(MediatorError::Config)?;
            (env, Some((mps, group)))
        }
        _ => (Vec::new(), None),
    };
    let run_as = crate::privilege::worker(None);
    let pid = crate::spawn::spawn(
        &gate.exe,
        &gate.args,
        inherit,
        extra,
        &env,
        (Some(slot), run_as),
    )?;
    gate.tenancy.started(pid, tenant, slot);
    if let Some((mps, group)) = group {
        mps.joined(pid, group, slot);
    }
    Ok(pid)
}

/// Collects exited workers so none linger as zombies, logs how they ended
/// and frees their session slots. A worker that ended by a signal or with
/// a status other than 0 (session over) and 1 (an error it reported) crashed.
/// MPS control daemons, children too, are handed to `mps`.
fn reap_workers(census: &Census, tenancy: &Tenancy, mps: Option<&crate::mps::Mps>) {
    loop {
        match rustix::process::wait(rustix::process::WaitOptions::empty()) {
            Ok(Some((pid, status))) => {
                let pid = pid.as_raw_nonzero().get().unsigned_abs();
                if mps.is_some_and(|m| m.reaped(pid, status)) {
                    continue;
                }
                let code = status.exit_status();
                if status.exited() && code == Some(0) {
                    tracing::info!(worker = pid, "session ended");
                } else {
                    tracing::warn!(worker = pid, ?status, "worker ended abnormally");
                }
                let crashed = !(status.exited() && matches!(code, Some(0 | 1)));
                census.ended_with(pid, crashed, || tenancy.ended(pid));
            }
            _ => std::thread::sleep(std::time::Duration::from_millis(200)),
        }
    }
}

/// Waits for a shutdown signal, removes the Unix sockets, tells the MPS
/// control daemons to quit once their clients are gone, and exits 0.
/// Workers are separate processes and keep serving their sessions.
fn wait_for_shutdown(signals: libc::sigset_t, sockets: &[PathBuf], mps: Option<&crate::mps::Mps>) {
    let mut sig: libc::c_int = 0;
    // SAFETY: `signals` is initialised and blocked in every thread; `sig` is a live local.
    if unsafe { libc::sigwait(&signals, &mut sig) } == 0 {
        tracing::info!(
            signal = sig,
            "shutting down; live sessions keep their workers"
        );
        for socket in sockets {
            let _ = std::fs::remove_file(socket);
        }
        if let Some(m) = mps {
            m.stop();
        }
        std::process::exit(0);
    }
}
