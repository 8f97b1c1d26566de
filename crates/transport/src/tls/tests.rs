//! TLS channels over loopback with the test certificates of `fixtures/tls`.

use super::*;
use crate::tcp::new_token;
use crate::Listener;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/tls")
        .join(name)
}

fn server(cert: &str, mtls: bool) -> ServerTls {
    let ca = fixture("ca.pem");
    ServerTls::from_files(
        &fixture(&format!("{cert}.pem")),
        &fixture(&format!("{cert}.key")),
        mtls.then_some(ca.as_path()),
    )
    .expect("server TLS")
}

fn client(ca: &str, identity: Option<&str>) -> ClientTls {
    let (cert, key) = identity
        .map(|n| (fixture(&format!("{n}.pem")), fixture(&format!("{n}.key"))))
        .unzip();
    ClientTls::new(Some(&fixture(ca)), cert.as_deref().zip(key.as_deref())).expect("client TLS")
}

/// Serves one connection on a loopback listener with `tls` in a thread:
/// the handshake's outcome, the client's certificate name and the bytes
/// it sent before closing (echoed back).
fn serve_one(
    tls: ServerTls,
    timeout: Duration,
) -> (
    u16,
    std::thread::JoinHandle<Result<Option<String>, TransportError>>,
) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("bound").port();
    let t = std::thread::spawn(move || {
        let (s, _) = l.accept()?;
        let mut ch = Channel::accept_tls(s, &tls, timeout)?;
        let name = ch.tls_client_name();
        let mut buf = [0u8; 5];
        ch.read_exact(&mut buf)?;
        ch.write_all(&buf)?;
        Ok(name)
    });
    (port, t)
}

#[test]
fn a_verified_server_carries_bytes_both_ways() {
    let (port, t) = serve_one(server("server", false), Duration::from_secs(5));
    let mut c = Channel::connect_tls(
        "localhost",
        port,
        &client("ca.pem", None),
        Duration::from_secs(5),
    )
    .expect("handshake");
    assert!(c.is_tls() && c.is_tcp());
    c.write_all(b"hello").expect("write");
    let mut buf = [0u8; 5];
    c.read_exact(&mut buf).expect("read");
    assert_eq!(&buf, b"hello");
    assert_eq!(
        t.join().expect("thread").expect("served"),
        None,
        "no client certificate"
    );
    // The server closed with a close_notify: a clean end of stream.
    assert_eq!(c.read(&mut buf).expect("clean close"), 0);
}

#[test]
fn an_ip_literal_is_checked_too() {
    let (port, t) = serve_one(server("server", false), Duration::from_secs(5));
    let mut c = Channel::connect_tls(
        "127.0.0.1",
        port,
        &client("ca.pem", None),
        Duration::from_secs(5),
    )
    .expect("127.0.0.1 is in the certificate");
    c.write_all(b"12345").expect("write");
    t.join().expect("thread").expect("served");
}

#[test]
fn big_writes_arrive_whole() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("bound").port();
    let tls = server("server", false);
    let len = (5 << 20) + 17;
    let t = std::thread::spawn(move || {
        let (s, _) = l.accept().expect("accept");
        let mut ch = Channel::accept_tls(s, &tls, Duration::from_secs(5)).expect("handshake");
        let mut got = vec![0u8; len];
        ch.read_exact(&mut got).expect("read");
        got
    });
    let data: Vec<u8> = (0..len)
        .map(|i| u8::try_from(i % 251).expect("below 251"))
        .collect();
    let mut c = Channel::connect_tls(
        "localhost",
        port,
        &client("ca.pem", None),
        Duration::from_secs(5),
    )
    .expect("handshake");
    let (a, b) = data.split_at(1000);
    let mut bufs = [IoSlice::new(a), IoSlice::new(b)];
    let mut bufs = &mut bufs[..];
    while !bufs.is_empty() {
        let n = c.write_vectored(bufs).expect("write");
        IoSlice::advance_slices(&mut bufs, n);
    }
    assert!(
        t.join().expect("thread") == data,
        "the bytes arrive in order"
    );
}

#[test]
fn the_client_refuses_servers_it_cannot_trust() {
    for (cert, ca, host, why) in [
        ("server", "other-ca.pem", "localhost", "issuer"),
        ("server-expired", "ca.pem", "localhost", "expired"),
        (
            "server-wrong-host",
            "ca.pem",
            "localhost",
            "not valid for name",
        ),
    ] {
        let (port, t) = serve_one(server(cert, false), Duration::from_secs(5));
        let e = Channel::connect_tls(host, port, &client(ca, None), Duration::from_secs(5))
            .expect_err(cert)
            .to_string();
        assert!(e.to_lowercase().contains(why), "{cert}: {e}");
        assert!(
            t.join().expect("thread").is_err(),
            "{cert}: the server fails too"
        );
    }
}

#[test]
fn client_certificates_are_verified_and_named() {
    let (port, t) = serve_one(server("server", true), Duration::from_secs(5));
    let mut c = Channel::connect_tls(
        "localhost",
        port,
        &client("ca.pem", Some("client-a")),
        Duration::from_secs(5),
    )
    .expect("handshake");
    c.write_all(b"hello").expect("write");
    let mut buf = [0u8; 5];
    c.read_exact(&mut buf).expect("read");
    assert_eq!(
        t.join().expect("thread").expect("served").as_deref(),
        Some("client-a")
    );
    // A certificate of another CA, or an expired one, fails the handshake
    // on the server (TLS 1.3: the client sees it at its first read).
    for bad in ["client-other", "client-expired"] {
        let (port, t) = serve_one(server("server", true), Duration::from_secs(5));
        let c = Channel::connect_tls(
            "localhost",
            port,
            &client("ca.pem", Some(bad)),
            Duration::from_secs(5),
        );
        if let Ok(mut c) = c {
            let _ = c.write_all(b"hello");
            assert!(c.read_exact(&mut buf).is_err(), "{bad}");
        }
        let e = t.join().expect("thread").expect_err(bad).to_string();
        assert!(e.contains("certificate"), "{bad}: {e}");
    }
}

#[test]
fn plain_bytes_and_silence_fail_the_handshake() {
    let (port, t) = serve_one(server("server", false), Duration::from_secs(5));
    let mut plain = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    plain
        .write_all(b"VGHI not a TLS client hello at all")
        .expect("write");
    let e = t.join().expect("thread").expect_err("not TLS").to_string();
    assert!(e.contains("TLS"), "{e}");
    // A client that connects and says nothing: the deadline ends it.
    let (port, t) = serve_one(server("server", false), Duration::from_millis(300));
    let _silent = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let started = Instant::now();
    assert!(matches!(
        t.join().expect("thread"),
        Err(TransportError::Timeout)
    ));
    assert!(started.elapsed() < Duration::from_secs(3));
    // A TLS client that reaches a plain server fails instead of hanging.
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("bound").port();
    let t = std::thread::spawn(move || {
        let (mut s, _) = l.accept().expect("accept");
        let mut b = [0u8; 64];
        let _ = s.read(&mut b);
        let _ = s.write_all(b"VGWE garbage");
    });
    let e = Channel::connect_tls(
        "localhost",
        port,
        &client("ca.pem", None),
        Duration::from_secs(5),
    )
    .expect_err("not a TLS server");
    assert!(matches!(e, TransportError::Tls(_)), "{e}");
    t.join().expect("thread");
}

#[test]
fn tls_lanes_need_the_token_inside_tls() {
    let l = Listener::bind_tcp("127.0.0.1", 0).expect("bind");
    let addr = l.local_addr().expect("bound");
    let tls = server("server", false);
    let token = new_token().expect("token");
    let ctls = client("ca.pem", None);
    let control = Channel::connect_tls(
        "localhost",
        {
            // Any TLS client channel carries the configuration lanes reuse; a
            // throwaway server gives one.
            let (port, t) = serve_one(server("server", false), Duration::from_secs(5));
            std::mem::forget(t);
            port
        },
        &ctls,
        Duration::from_secs(5),
    )
    .expect("a TLS client channel");
    // A plain connection with the right token is refused: the token must
    // come inside TLS.
    let mut plain = std::net::TcpStream::connect(addr).expect("connect");
    plain.write_all(&token).expect("write");
    let good = std::thread::spawn(move || {
        let mut lane = Channel::connect_lane_like(&control, addr, &token, Duration::from_secs(5))
            .expect("lane");
        lane.write_all(b"hi").expect("write");
        lane
    });
    let mut seen = Vec::new();
    let mut lane = l
        .accept_lane(&token, Duration::from_secs(5), Some(&tls), |_, why| {
            seen.push(why.to_owned())
        })
        .expect("the TLS lane");
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].starts_with("no TLS"), "{seen:?}");
    let _good = good.join().expect("thread");
    let mut buf = [0u8; 2];
    lane.read_exact(&mut buf).expect("read");
    assert_eq!(&buf, b"hi");
}

#[test]
fn a_second_connection_resumes_and_a_ticketless_server_is_not_resumed() {
    for (tls, resumes) in [
        (server("server", false), true),
        (server("server", false).without_tickets(), false),
    ] {
        let ctls = client("ca.pem", None);
        let mut resumed = Vec::new();
        for _ in 0..2 {
            let (port, t) = serve_one(tls.clone(), Duration::from_secs(5));
            let mut c = Channel::connect_tls("localhost", port, &ctls, Duration::from_secs(5))
                .expect("handshake");
            c.write_all(b"hello").expect("write");
            let mut buf = [0u8; 5];
            // The tickets come after the handshake: read them with the echo.
            c.read_exact(&mut buf).expect("read");
            t.join().expect("thread").expect("served");
            resumed.push(c.tls_resumed());
        }
        assert_eq!(resumed, [false, resumes]);
    }
}
