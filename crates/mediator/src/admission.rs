//! Admission: what the supervisor checks before it starts a worker.
//!
//! A connection goes through these steps, and any of them may close it,
//! logged (with its peer, uid and pid) and counted as a
//! [`Refusal`](crate::sessions::Refusal); nothing of it reaches a worker
//! until the last one:
//!
//! 1. **Pending handshakes.** At most `--max-pending-handshakes`
//!    connections are between their accept and their last hello byte at
//!    once ([`Pending`]); one more is closed at once.
//! 2. **The opening, within a deadline.** The client's whole hello (or a
//!    status query) must arrive within `--handshake-timeout-ms` of the
//!    accept ([`read_opening`]): nothing, too little, garbage or an
//!    oversized length closes the connection. The reader works on any byte
//!    stream with a read timeout ([`DeadlineRead`]), a TLS session's
//!    included, so it runs after whatever authenticated the transport.
//! 3. **The decision**: the tenants' policy ([`crate::tenants`]) says from
//!    the identity the transport proved ([`crate::tenants::supervise::identify`], or a TLS
//!    authentication) whether the session may start, and for which tenant
//!    within its session limit.
//! 4. **Worker limits**: at most `--max-workers` live workers (and never
//!    more than the session table holds).
//!
//! The supervisor then hands the decoded hello to the worker in a sealed
//! memfd ([`hello_memfd`]): the worker reads the hello from it instead of
//! the connection, whose hello bytes the supervisor has consumed.

use std::collections::HashMap;
use std::io::{Read, Seek, Write};
use std::net::IpAddr;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use vgpu_proto::{Hello, ProtoError};
use vgpu_transport::Channel;

use crate::identity::Identity;
use crate::sessions::{Refusal, MAX_SESSIONS};

/// The admission limits (`[limits]` in the config file); flags override it.
#[derive(Debug, Args, Clone)]
pub struct LimitArgs {
    /// Most connections in their handshake at once, and a quarter of that
    /// (one at least) from one peer (a uid, or an address over TCP); one
    /// more is closed at once (counted as refused, reason `busy`).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_pending_handshakes: u32,
    /// How long a new connection has to send its whole hello (or status
    /// query), in milliseconds, before it is closed unserved.
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..))]
    pub handshake_timeout_ms: u64,
    /// Most live workers (sessions) at once; the session table's own
    /// maximum (256) applies when it is smaller.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_workers: u32,
    /// How long the rest of a request may take to arrive once its first
    /// bytes came, in milliseconds; past it the worker ends the session. A
    /// client may stay idle between requests as long as it likes.
    #[arg(long, default_value_t = 60_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub frame_timeout_ms: u64,
    /// The user workers run as when the supervisor runs as root: a name or
    /// a numeric uid; by default `vgpu-worker` if that user exists, else
    /// `nobody`. An empty value keeps the supervisor's uid (loudly logged:
    /// for test environments only). Given twice, the last one counts.
    #[arg(long, overrides_with = "worker_user")]
    pub worker_user: Option<String>,
}

impl LimitArgs {
    /// The handshake deadline.
    pub fn handshake_timeout(&self) -> Duration {
        Duration::from_millis(self.handshake_timeout_ms)
    }

    /// The deadline of a request's rest once its first bytes came.
    pub fn frame_timeout(&self) -> Duration {
        Duration::from_millis(self.frame_timeout_ms)
    }

    /// The live-worker limit: `--max-workers`, at most the session table's.
    pub fn worker_limit(&self) -> usize {
        usize::try_from(self.max_workers).map_or(MAX_SESSIONS, |n| n.min(MAX_SESSIONS))
    }

    /// The flags that give a worker the same limits (the supervisor passes them on).
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            format!("--max-pending-handshakes={}", self.max_pending_handshakes),
            format!("--handshake-timeout-ms={}", self.handshake_timeout_ms),
            format!("--max-workers={}", self.max_workers),
            format!("--frame-timeout-ms={}", self.frame_timeout_ms),
        ];
        if let Some(user) = &self.worker_user {
            args.push(format!("--worker-user={user}"));
        }
        args
    }
}

/// Why a connection is refused: the reason counted, and the log's words.
#[derive(Debug)]
pub struct Refused {
    pub reason: Refusal,
    pub why: String,
}

/// A byte stream whose reads can be given a time limit: a socket, or a
/// TLS session over one (which sets it on its socket).
pub trait DeadlineRead: Read {
    /// Makes a read that waits longer than `timeout` fail (with
    /// `WouldBlock` or `TimedOut`); `None` waits without limit.
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> std::io::Result<()>;
}

impl DeadlineRead for Channel {
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> std::io::Result<()> {
        use rustix::net::sockopt::{set_socket_timeout, Timeout};
        let fd = self.fd().map_err(std::io::Error::other)?;
        set_socket_timeout(fd, Timeout::Recv, timeout).map_err(std::io::Error::from)
    }
}

/// Reads from a [`DeadlineRead`] stream until a fixed instant: every read
/// gets only the time left, and none starts after it (`TimedOut`). A peer
/// that sends a byte at a time cannot stretch it.
pub struct Deadline<'a, S: DeadlineRead> {
    stream: &'a mut S,
    until: Instant,
}

impl<'a, S: DeadlineRead> Deadline<'a, S> {
    pub fn new(stream: &'a mut S, until: Instant) -> Self {
        Deadline { stream, until }
    }
}

impl<S: DeadlineRead> Read for Deadline<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let timed_out = || std::io::Error::from(std::io::ErrorKind::TimedOut);
        let left = self
            .until
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(timed_out)?;
        self.stream.set_read_timeout(Some(left))?;
        match self.stream.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Err(timed_out()),
            other => other,
        }
    }
}

/// What a new connection opened with.
#[derive(Debug)]
pub enum Opening {
    /// A whole, valid status query ([`vgpu_proto::sessions`]).
    Query,
    /// A whole, valid hello: the connection wants a session.
    Hello(Hello),
}

/// Reads what a new connection opens with, all of it before `timeout`
/// has passed, and validates it; on success the stream's read timeout is
/// cleared. Nothing beyond the opening is read.
pub fn read_opening(
    stream: &mut impl DeadlineRead,
    timeout: Duration,
) -> Result<Opening, ProtoError> {
    let mut reader = Deadline::new(stream, Instant::now() + timeout);
    let mut magic = [0u8; 4];
    reader.read_exact(&mut magic)?;
    let mut rest = (&magic[..]).chain(&mut reader);
    let opening = if u32::from_le_bytes(magic) == vgpu_proto::sessions::QUERY_MAGIC {
        vgpu_proto::sessions::read_query(&mut rest)?;
        Opening::Query
    } else {
        Opening::Hello(Hello::read(&mut rest)?)
    };
    stream.set_read_timeout(None)?;
    Ok(opening)
}

/// The hello, encoded again into a sealed memfd positioned at its start,
/// for the worker to read (`worker --hello FD`).
pub fn hello_memfd(hello: &Hello) -> Result<OwnedFd, ProtoError> {
    use rustix::fs::{fcntl_add_seals, memfd_create, MemfdFlags, SealFlags};
    let fd = memfd_create(
        "vgpu-hello",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )
    .map_err(std::io::Error::from)?;
    let mut file = std::fs::File::from(fd);
    hello.write(&mut file)?;
    file.rewind()?;
    file.flush()?;
    let fd = OwnedFd::from(file);
    fcntl_add_seals(
        &fd,
        SealFlags::WRITE | SealFlags::GROW | SealFlags::SHRINK | SealFlags::SEAL,
    )
    .map_err(std::io::Error::from)?;
    Ok(fd)
}

/// The connections in their handshake: at most a fixed number at once,
/// and at most a quarter of them (one at least) from one source (a uid on
/// a Unix socket, an address over TCP), so that one local user or host
/// holding silent connections cannot keep everyone else out until its
/// connections time out.
#[derive(Debug)]
pub struct Pending {
    places: Mutex<Places>,
    max: usize,
    per_source: usize,
}

#[derive(Debug, Default)]
struct Places {
    total: usize,
    by_source: HashMap<Source, usize>,
}

/// Where a connection comes from, for [`Pending`]'s share per source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    Uid(u32),
    Address(IpAddr),
    /// Neither is known (one share for all such connections).
    Unknown,
}

impl Source {
    /// The source of a connection whose peer is `who`.
    pub fn of(who: &Identity) -> Source {
        match (who.uid, who.peer) {
            (Some(uid), _) => Source::Uid(uid),
            (None, Some(addr)) => Source::Address(addr.ip()),
            (None, None) => Source::Unknown,
        }
    }
}

/// Why [`Pending::enter`] found no place.
#[derive(Debug, PartialEq, Eq)]
pub enum NoPlace {
    /// Every place is taken.
    All(usize),
    /// This source holds its share.
    Source(usize),
}

/// One connection's place among the pending handshakes; dropping it frees it.
#[derive(Debug)]
pub struct PendingTicket(Arc<Pending>, Source);

impl Pending {
    pub fn new(max: usize) -> Arc<Pending> {
        Arc::new(Pending {
            places: Mutex::new(Places::default()),
            max,
            per_source: (max / 4).max(1),
        })
    }

    /// A place for one more connection from `source`.
    pub fn enter(self: &Arc<Self>, source: Source) -> Result<PendingTicket, NoPlace> {
        let mut p = self.lock();
        if p.total >= self.max {
            return Err(NoPlace::All(p.total));
        }
        let mine = p.by_source.entry(source).or_default();
        if *mine >= self.per_source {
            return Err(NoPlace::Source(*mine));
        }
        *mine += 1;
        p.total += 1;
        Ok(PendingTicket(Arc::clone(self), source))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Places> {
        self.places.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for PendingTicket {
    fn drop(&mut self) {
        let mut p = self.0.lock();
        p.total = p.total.saturating_sub(1);
        if let Some(n) = p.by_source.get_mut(&self.1) {
            *n -= 1;
            if *n == 0 {
                p.by_source.remove(&self.1);
            }
        }
    }
}

/// Log lines about refused connections, at most [`Throttle::PER_SECOND`]
/// a second: a flood of bad connections cannot flood the log. The lines
/// left out are counted in the next one written.
#[derive(Debug, Default)]
pub struct Throttle {
    inner: Mutex<ThrottleState>,
}

#[derive(Debug, Default)]
struct ThrottleState {
    second: Option<Instant>,
    written: u32,
    left_out: u64,
}

impl Throttle {
    pub const PER_SECOND: u32 = 10;

    /// Whether to write a line now, and how many were left out before it.
    pub fn allow(&self) -> Option<u64> {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if s.second
            .is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1))
        {
            s.second = Some(now);
            s.written = 0;
        }
        if s.written >= Self::PER_SECOND {
            s.left_out += 1;
            return None;
        }
        s.written += 1;
        Some(std::mem::take(&mut s.left_out))
    }
}

/// How a log line names a peer: its address, uid and pid, as known.
pub fn describe(id: &Identity) -> String {
    let mut parts = Vec::new();
    if let Some(peer) = id.peer {
        parts.push(format!("peer={peer}"));
    }
    if let Some(uid) = id.uid {
        parts.push(format!("uid={uid}"));
    }
    if let Some(pid) = id.pid {
        parts.push(format!("pid={pid}"));
    }
    if let Some(name) = &id.cert_name {
        parts.push(format!("cert={name}"));
    }
    if let Some(name) = &id.token_name {
        parts.push(format!("token={name}"));
    }
    if parts.is_empty() {
        "an unknown peer".into()
    } else {
        parts.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello() -> Hello {
        Hello {
            features: 3,
            pid: 42,
            uid: 1000,
            env: vec![("CUDA_VISIBLE_DEVICES".into(), "0".into())],
        }
    }

    #[test]
    fn a_whole_hello_is_read_and_nothing_after_it() {
        let (mut a, mut b) = Channel::pair().expect("pair");
        let mut bytes = Vec::new();
        hello().write(&mut bytes).expect("encodes");
        bytes.extend_from_slice(b"next");
        b.write_all(&bytes).expect("send");
        match read_opening(&mut a, Duration::from_secs(5)).expect("reads") {
            Opening::Hello(h) => assert_eq!(h, hello()),
            Opening::Query => panic!("a hello read as a query"),
        }
        let mut next = [0u8; 4];
        a.read_exact(&mut next).expect("the rest stays");
        assert_eq!(&next, b"next");
    }

    #[test]
    fn a_status_query_is_recognised() {
        let (mut a, mut b) = Channel::pair().expect("pair");
        vgpu_proto::sessions::write_query(&mut b).expect("send");
        assert!(matches!(
            read_opening(&mut a, Duration::from_secs(5)),
            Ok(Opening::Query)
        ));
    }

    #[test]
    fn silence_and_a_trickle_end_at_the_deadline() {
        let (mut a, mut b) = Channel::pair().expect("pair");
        let start = Instant::now();
        let silent = read_opening(&mut a, Duration::from_millis(200));
        assert!(
            matches!(&silent, Err(ProtoError::Io(e)) if e.kind() == std::io::ErrorKind::TimedOut),
            "{silent:?}"
        );
        assert!(start.elapsed() < Duration::from_secs(2));
        // A byte every 50 ms never finishes a 40-byte head in 300 ms.
        let trickle = std::thread::spawn(move || {
            for byte in b"VGHI\x03\x00\x00\x00" {
                if b.write_all(&[*byte]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let start = Instant::now();
        let slow = read_opening(&mut a, Duration::from_millis(300));
        let took = start.elapsed();
        assert!(matches!(&slow, Err(ProtoError::Io(_))), "{slow:?}");
        assert!(took < Duration::from_millis(1000), "{took:?}");
        trickle.join().expect("trickle");
    }

    #[test]
    fn garbage_and_oversized_lengths_are_refused() {
        let (mut a, mut b) = Channel::pair().expect("pair");
        b.write_all(&[0xAB; 64]).expect("send");
        assert!(matches!(
            read_opening(&mut a, Duration::from_secs(5)),
            Err(ProtoError::BadMagic { .. })
        ));
        let (mut a, mut b) = Channel::pair().expect("pair");
        let mut bytes = Vec::new();
        hello().write(&mut bytes).expect("encodes");
        // env_len is the 32-bit word at offset 32.
        bytes[32..36].copy_from_slice(&u32::MAX.to_le_bytes());
        b.write_all(&bytes[..40]).expect("send");
        assert!(matches!(
            read_opening(&mut a, Duration::from_secs(5)),
            Err(ProtoError::TooLong { .. })
        ));
    }

    #[test]
    fn the_memfd_holds_the_hello() {
        let fd = hello_memfd(&hello()).expect("memfd");
        let mut file = std::fs::File::from(fd);
        assert_eq!(Hello::read(&mut file).expect("decodes"), hello());
        assert!(file.write_all(b"x").is_err(), "sealed against writes");
    }

    #[test]
    fn pending_places_are_limited_and_given_back() {
        let pending = Pending::new(2);
        let a = pending.enter(Source::Uid(1)).expect("first");
        let _b = pending.enter(Source::Uid(2)).expect("second");
        assert_eq!(pending.enter(Source::Uid(3)).err(), Some(NoPlace::All(2)));
        drop(a);
        assert!(pending.enter(Source::Uid(3)).is_ok());
    }

    #[test]
    fn one_source_holds_a_quarter_of_the_places() {
        let pending = Pending::new(8);
        let local = Source::Address(std::net::Ipv4Addr::LOCALHOST.into());
        let held: Vec<_> = (0..2)
            .map(|_| pending.enter(local).expect("a place"))
            .collect();
        assert_eq!(pending.enter(local).err(), Some(NoPlace::Source(2)));
        assert!(
            pending.enter(Source::Uid(0)).is_ok(),
            "another source still enters"
        );
        drop(held);
        assert!(pending.enter(local).is_ok());
    }

    #[test]
    fn limit_flags_parse() {
        use clap::Parser;
        let cli = crate::config::Cli::parse_from(["m", "--worker-user=a", "--worker-user="]);
        assert_eq!(cli.serve.limits.worker_user.as_deref(), Some(""));
        assert_eq!(cli.serve.limits.worker_limit(), MAX_SESSIONS);
        let cli = crate::config::Cli::parse_from(["m", "--max-workers", "9999"]);
        assert_eq!(
            cli.serve.limits.worker_limit(),
            MAX_SESSIONS,
            "the table's maximum"
        );
        assert!(crate::config::Cli::try_parse_from(["m", "--handshake-timeout-ms", "0"]).is_err());
    }

    #[test]
    fn the_throttle_counts_what_it_leaves_out() {
        let t = Throttle::default();
        for _ in 0..Throttle::PER_SECOND {
            assert_eq!(t.allow(), Some(0));
        }
        assert_eq!(t.allow(), None);
        assert_eq!(t.allow(), None);
    }
}
