//! TCP channels: the control connection and the lanes of a remote session.
//!
//! Contract:
//! - **Plain TCP.** Nothing is encrypted and nothing is authenticated beyond
//!   the lane token below; [`crate::tls`] runs the same connections inside
//!   TLS, and a mediator serves plain TCP on loopback only unless told to.
//! - **Tuning.** Every TCP connection, connected or accepted, gets
//!   `TCP_NODELAY` (a frame is written whole, and Nagle's algorithm would
//!   hold a small request back behind an unacknowledged one) and
//!   keep-alives ([`KEEPALIVE_IDLE`], then [`KEEPALIVE_PROBES`] probes
//!   [`KEEPALIVE_INTERVAL`] apart), so a peer host that vanishes without
//!   closing its connections is noticed in about two minutes.
//! - **Same behaviour as Unix sockets.** Reads, writes and
//!   [`Channel::hung_up`] behave as on a Unix socket; what needs one host
//!   (peer credentials, descriptor passing) is
//!   [`TransportError::NotLocal`].
//! - **Lanes.** A remote worker cannot pass a connected socket, so for each
//!   lane it listens ([`Listener::bind_tcp_in`]), tells the client the port
//!   and a fresh random [`Token`] on the control connection, and accepts
//!   ([`Listener::accept_lane`]) the first connection whose first
//!   [`TOKEN_LEN`] bytes are that token (compared in constant time). A
//!   connection with another token, or none within [`PER_CONNECTION`] (or
//!   the time left, if less), is reported to the caller and closed; the wait
//!   goes on until the deadline. The client side is [`Channel::connect_lane`].

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::ops::RangeInclusive;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use crate::unix::{Inner, Stream};
use crate::{Channel, Listener, TransportError};

/// Bytes of a lane token.
pub const TOKEN_LEN: usize = 16;
/// The secret a client sends first on a new TCP lane.
pub type Token = [u8; TOKEN_LEN];

/// The longest a lane connection may take to send its token (and, with
/// TLS, to finish its handshake first) in [`Listener::accept_lane`].
pub const PER_CONNECTION: Duration = Duration::from_secs(2);

/// Idle time before the first keep-alive probe.
pub const KEEPALIVE_IDLE: Duration = Duration::from_secs(60);
/// Time between keep-alive probes.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
/// Unanswered probes after which the connection is dead.
pub const KEEPALIVE_PROBES: u32 = 6;

/// A fresh random lane token, from the kernel's generator (`getrandom`).
pub fn new_token() -> Result<Token, TransportError> {
    let mut token = [0u8; TOKEN_LEN];
    let mut filled = 0;
    while filled < TOKEN_LEN {
        let rest = token.get_mut(filled..).unwrap_or_default();
        let n = rustix::rand::getrandom(rest, rustix::rand::GetRandomFlags::empty())
            .map_err(std::io::Error::from)?;
        filled += n;
    }
    Ok(token)
}

/// Compares two tokens in time that does not depend on where they differ.
pub fn same_token(a: &Token, b: &Token) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// Sets `TCP_NODELAY` and the keep-alives of the module header.
pub fn tune(s: &TcpStream) -> std::io::Result<()> {
    use rustix::net::sockopt;
    s.set_nodelay(true)?;
    sockopt::set_socket_keepalive(s, true)?;
    sockopt::set_tcp_keepidle(s, KEEPALIVE_IDLE)?;
    sockopt::set_tcp_keepintvl(s, KEEPALIVE_INTERVAL)?;
    sockopt::set_tcp_keepcnt(s, KEEPALIVE_PROBES)?;
    Ok(())
}

/// `host` without the brackets of an IPv6 literal.
pub(crate) fn bare(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

/// The addresses `host` (a name, an IPv4 address or a bracketed or bare
/// IPv6 address) resolves to, with `port`.
fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, TransportError> {
    let addrs: Vec<SocketAddr> = (bare(host), port).to_socket_addrs()?.collect();
    if addrs.is_empty() {
        return Err(TransportError::Io(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{host} has no address"),
        )));
    }
    Ok(addrs)
}

impl Channel {
    /// A channel over a connected TCP stream, tuned ([`tune`]) and blocking.
    pub fn from_tcp(s: TcpStream) -> Result<Channel, TransportError> {
        s.set_nonblocking(false)?;
        tune(&s)?;
        Ok(Channel {
            stream: Stream::Tcp(s),
        })
    }

    /// Connects to `host:port`, trying each address `host` resolves to,
    /// each for at most `timeout`.
    pub fn connect_tcp(
        host: &str,
        port: u16,
        timeout: Duration,
    ) -> Result<Channel, TransportError> {
        let mut last = None;
        for addr in resolve(host, port)? {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(s) => return Channel::from_tcp(s),
                Err(e) => last = Some(e),
            }
        }
        Err(TransportError::Io(last.unwrap_or_else(|| {
            std::io::Error::from(std::io::ErrorKind::NotFound)
        })))
    }

    /// Opens a lane: connects to `addr` within `timeout` and sends `token`.
    pub fn connect_lane(
        addr: SocketAddr,
        token: &Token,
        timeout: Duration,
    ) -> Result<Channel, TransportError> {
        let mut ch = Channel::from_tcp(TcpStream::connect_timeout(&addr, timeout)?)?;
        ch.write_all(token)?;
        Ok(ch)
    }

    /// The peer's address, on TCP.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        match &self.stream {
            Stream::Tcp(s) => s.peer_addr().ok(),
            Stream::Tls(s) => s.sock.tcp().peer_addr().ok(),
            Stream::Unix(_) | Stream::Shm(_) => None,
        }
    }

    /// This end's address, on TCP.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match &self.stream {
            Stream::Tcp(s) => s.local_addr().ok(),
            Stream::Tls(s) => s.sock.tcp().local_addr().ok(),
            Stream::Unix(_) | Stream::Shm(_) => None,
        }
    }
}

impl Listener {
    /// Listens on `host:port` (port 0: a free port the kernel picks; see
    /// [`Listener::local_addr`]), on the first address `host` resolves to
    /// that can be bound.
    pub fn bind_tcp(host: &str, port: u16) -> Result<Listener, TransportError> {
        let mut last = None;
        for addr in resolve(host, port)? {
            match TcpListener::bind(addr) {
                Ok(l) => {
                    return Ok(Listener {
                        inner: Inner::Tcp(l),
                    })
                }
                Err(e) => last = Some(e),
            }
        }
        Err(TransportError::Io(last.unwrap_or_else(|| {
            std::io::Error::from(std::io::ErrorKind::NotFound)
        })))
    }

    /// Listens on `addr`'s IP address (and IPv6 scope) at the first port
    /// of `ports` that is free (`0..=0`: one the kernel picks).
    pub fn bind_tcp_in(
        addr: SocketAddr,
        ports: RangeInclusive<u16>,
    ) -> Result<Listener, TransportError> {
        let mut last = None;
        for port in ports {
            let mut at = addr;
            at.set_port(port);
            match TcpListener::bind(at) {
                Ok(l) => {
                    return Ok(Listener {
                        inner: Inner::Tcp(l),
                    })
                }
                Err(e) => last = Some(e),
            }
        }
        Err(TransportError::Io(last.unwrap_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "an empty port range")
        })))
    }

    /// A TCP listener inherited as `fd` (a worker's, bound by its
    /// supervisor).
    pub fn from_tcp_fd(fd: std::os::fd::OwnedFd) -> Listener {
        Listener {
            inner: Inner::Tcp(TcpListener::from(fd)),
        }
    }

    /// Gives up the listening socket (to pass it to another process).
    pub fn into_fd(self) -> std::os::fd::OwnedFd {
        match self.inner {
            Inner::Tcp(l) => l.into(),
            Inner::Unix(l) => l.into(),
        }
    }

    /// The bound address of a TCP listener.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match &self.inner {
            Inner::Tcp(l) => l.local_addr().ok(),
            Inner::Unix(_) => None,
        }
    }

    /// Makes [`Listener::accept`] return `WouldBlock` instead of waiting
    /// (for a caller that polls several listeners).
    pub fn set_nonblocking(&self, on: bool) -> Result<(), TransportError> {
        match &self.inner {
            Inner::Tcp(l) => l.set_nonblocking(on)?,
            Inner::Unix(l) => l.set_nonblocking(on)?,
        }
        Ok(())
    }

    /// Accepts the lane whose client sends `token` first, waiting at most
    /// `timeout` in all (module header). With `tls`, each connection must
    /// first complete a TLS handshake (within the time left) and the token
    /// comes inside TLS. Each connection refused on the way is passed to
    /// `refused` with the reason, then closed.
    pub fn accept_lane(
        &self,
        token: &Token,
        timeout: Duration,
        tls: Option<&crate::tls::ServerTls>,
        mut refused: impl FnMut(SocketAddr, &str),
    ) -> Result<Channel, TransportError> {
        use rustix::net::sockopt;
        let Inner::Tcp(l) = &self.inner else {
            return Err(TransportError::Io(std::io::Error::other(
                "lanes are accepted on TCP listeners only",
            )));
        };
        l.set_nonblocking(true)?;
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || !readable(l, left)? {
                return Err(TransportError::Timeout);
            }
            let (s, peer) = match l.accept() {
                Ok(a) => a,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            s.set_nonblocking(false)?;
            // Each connection gets at most PER_CONNECTION of the time left
            // for its handshake and token: a stranger who connects and
            // stalls delays the real client (waiting in the backlog) by
            // that much, not by the whole wait.
            let left = deadline.saturating_duration_since(Instant::now());
            let left = left.clamp(Duration::from_millis(1), PER_CONNECTION);
            let mut ch = match tls {
                Some(tls) => match Channel::accept_tls(s, tls, left) {
                    Ok(ch) => ch,
                    Err(e) => {
                        refused(peer, &format!("no TLS ({e})"));
                        continue;
                    }
                },
                None => Channel::from_tcp(s)?,
            };
            let fd = ch.fd()?;
            let set = |t| sockopt::set_socket_timeout(fd, sockopt::Timeout::Recv, t);
            set(Some(left)).map_err(std::io::Error::from)?;
            let mut got = [0u8; TOKEN_LEN];
            match ch.read_exact(&mut got) {
                Ok(()) if same_token(&got, token) => {
                    let fd = ch.fd()?;
                    sockopt::set_socket_timeout(fd, sockopt::Timeout::Recv, None)
                        .map_err(std::io::Error::from)?;
                    return Ok(ch);
                }
                Ok(()) => refused(peer, "wrong token"),
                Err(e) => refused(peer, &format!("no token ({e})")),
            }
        }
    }
}

/// Waits up to `timeout` for `fd` to have a connection to accept.
fn readable(fd: impl AsFd, timeout: Duration) -> Result<bool, TransportError> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let ts = Timespec::try_from(timeout).unwrap_or(Timespec {
        tv_sec: i64::MAX,
        tv_nsec: 0,
    });
    let mut fds = [PollFd::new(&fd, PollFlags::IN)];
    match poll(&mut fds, Some(&ts)) {
        Ok(n) => Ok(n > 0),
        Err(rustix::io::Errno::INTR) => Ok(false),
        Err(e) => Err(TransportError::Io(e.into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn loopback() -> Listener {
        Listener::bind_tcp("127.0.0.1", 0).expect("bind")
    }

    #[test]
    fn tcp_channel_reads_writes_and_sees_hang_up() {
        let l = loopback();
        let addr = l.local_addr().expect("bound");
        assert_ne!(addr.port(), 0);
        let mut c = Channel::connect_tcp("127.0.0.1", addr.port(), Duration::from_secs(5))
            .expect("connect");
        let mut s = l.accept().expect("accept");
        assert!(c.is_tcp() && s.is_tcp());
        assert_eq!(c.peer_addr(), Some(addr));
        assert_eq!(s.local_addr(), Some(addr));
        for ch in [&c, &s] {
            let fd = ch.socket_fd().expect("a socket");
            assert!(rustix::net::sockopt::tcp_nodelay(fd).expect("nodelay"));
            assert!(rustix::net::sockopt::socket_keepalive(fd).expect("keepalive"));
        }
        c.write_all(b"ping").expect("write");
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).expect("read");
        assert_eq!(&buf, b"ping");
        // What needs one host is refused, clearly.
        assert!(matches!(
            s.peer_credentials(),
            Err(TransportError::NotLocal("peer credentials"))
        ));
        assert!(matches!(
            s.send_fd(c.fd().expect("a socket")),
            Err(TransportError::NotLocal("descriptor passing"))
        ));
        assert!(matches!(
            c.recv_fds(1),
            Err(TransportError::NotLocal("descriptor passing"))
        ));
        // Pending data is not a hang-up; a closed peer is, and writes fail.
        s.write_all(b"x").expect("write");
        std::thread::sleep(Duration::from_millis(20));
        assert!(!c.hung_up());
        drop(s);
        let deadline = Instant::now() + Duration::from_secs(5);
        while !c.hung_up() {
            assert!(Instant::now() < deadline, "no hang-up seen");
            std::thread::sleep(Duration::from_millis(5));
        }
        let e = c.write_all(b"after").expect_err("the peer is gone");
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
        // What the peer sent before it left can still be read.
        let mut one = [0u8; 1];
        c.read_exact(&mut one).expect("pending byte");
        assert_eq!(&one, b"x");
    }

    #[test]
    fn from_fd_keeps_the_kind() {
        let l = loopback();
        let port = l.local_addr().expect("bound").port();
        let c = Channel::connect_tcp("localhost", port, Duration::from_secs(5)).expect("connect");
        assert!(Channel::from_fd(c.into_fd().expect("a socket")).is_tcp());
        let (a, _b) = Channel::pair().expect("pair");
        assert!(!Channel::from_fd(a.into_fd().expect("a socket")).is_tcp());
    }

    #[test]
    fn ipv6_literals_connect() {
        let Ok(l) = Listener::bind_tcp("[::1]", 0) else {
            eprintln!("no IPv6 loopback here; skipped");
            return;
        };
        let port = l.local_addr().expect("bound").port();
        let c = Channel::connect_tcp("[::1]", port, Duration::from_secs(5)).expect("connect");
        assert!(c.peer_addr().expect("peer").is_ipv6());
    }

    #[test]
    fn connecting_to_nothing_fails() {
        let port = loopback().local_addr().expect("bound").port();
        // The listener is closed again: nothing listens there now.
        assert!(Channel::connect_tcp("127.0.0.1", port, Duration::from_secs(5)).is_err());
        assert!(Channel::connect_tcp("no-such-host.invalid", 1, Duration::from_secs(5)).is_err());
    }

    #[test]
    fn lanes_need_the_token() {
        let any = SocketAddr::from((Ipv4Addr::LOCALHOST, 9));
        let l = Listener::bind_tcp_in(any, 0..=0).expect("bind");
        assert_eq!(l.local_addr().expect("bound").ip(), any.ip());
        let addr = l.local_addr().expect("bound");
        let token = new_token().expect("token");
        assert_ne!(token, new_token().expect("token"), "tokens are fresh");
        let mut wrong = token;
        wrong[15] ^= 1;
        // A wrong token, a short one, then the right one: only the last is
        // accepted, the others are reported and closed.
        let mut bad = Channel::connect_lane(addr, &wrong, Duration::from_secs(5)).expect("connect");
        let mut short = Channel::from_tcp(TcpStream::connect(addr).expect("connect")).expect("ch");
        short.write_all(&token[..8]).expect("write");
        drop(short);
        let mut good =
            Channel::connect_lane(addr, &token, Duration::from_secs(5)).expect("connect");
        let mut seen = Vec::new();
        let mut lane = l
            .accept_lane(&token, Duration::from_secs(5), None, |peer, why| {
                seen.push((peer.ip(), why.to_owned()))
            })
            .expect("the right lane");
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert_eq!(seen[0].1, "wrong token");
        assert!(seen[1].1.starts_with("no token"), "{seen:?}");
        good.write_all(b"hi").expect("write");
        let mut buf = [0u8; 2];
        lane.read_exact(&mut buf).expect("read");
        assert_eq!(&buf, b"hi");
        // The refused connection was closed by the listener's side.
        let mut rest = Vec::new();
        let got = bad.read_to_end(&mut rest);
        assert!(
            matches!(got, Ok(0)) || got.is_err(),
            "a refused lane is closed"
        );
        // Nobody else comes: the wait ends at the deadline.
        let t = Instant::now();
        assert!(matches!(
            l.accept_lane(&token, Duration::from_millis(200), None, |_, _| {}),
            Err(TransportError::Timeout)
        ));
        assert!(t.elapsed() >= Duration::from_millis(200));
    }

    #[test]
    fn a_stalled_connection_delays_the_lane_only_briefly() {
        let l = loopback();
        let addr = l.local_addr().expect("bound");
        let token = new_token().expect("token");
        let _staller = TcpStream::connect(addr).expect("connect");
        let mut good = Channel::connect_lane(addr, &token, Duration::from_secs(5)).expect("lane");
        let started = Instant::now();
        let mut seen = Vec::new();
        let mut lane = l
            .accept_lane(&token, Duration::from_secs(10), None, |_, why| {
                seen.push(why.to_owned())
            })
            .expect("the lane behind the staller");
        let waited = started.elapsed();
        assert!(
            waited >= PER_CONNECTION && waited < PER_CONNECTION * 2,
            "{waited:?}"
        );
        assert_eq!(seen.len(), 1, "{seen:?}");
        good.write_all(b"ok").expect("write");
        let mut buf = [0u8; 2];
        lane.read_exact(&mut buf).expect("read");
    }

    #[test]
    fn port_ranges_take_the_first_free_port() {
        let taken = loopback();
        let port = taken.local_addr().expect("bound").port();
        let Some(end) = port.checked_add(20) else {
            return;
        };
        let at = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        let l = Listener::bind_tcp_in(at, port..=end).expect("a free port in the range");
        let got = l.local_addr().expect("bound").port();
        assert!(got > port && got <= end, "{got} in {port}..={end}");
        assert!(
            Listener::bind_tcp_in(at, port..=port).is_err(),
            "a range with no free port"
        );
    }

    #[test]
    fn token_comparison() {
        let a = [7u8; TOKEN_LEN];
        let mut b = a;
        assert!(same_token(&a, &b));
        b[0] = 8;
        assert!(!same_token(&a, &b));
    }
}
