//! Live sessions and metrics, end to end: a real mediator on the simulated
//! device with `--metrics`, C clients (`tests/c/session_hold.c`) that hold
//! sessions in known states, `vgpu status --json`, and `/metrics` scraped
//! and checked series by series while sessions come and go.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Harness, Mediator, Running};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(20);

/// A harness whose mediator serves metrics on a free loopback port.
fn harness_with_metrics() -> (Harness, String) {
    let mut h = Harness::without_mediator();
    let m = Mediator::start_with(&h.build, &["--metrics", "127.0.0.1:0"]);
    let addr = wait_for(WAIT, || {
        m.log_text().lines().find_map(|l| {
            l.split_once("metrics on http://")
                .and_then(|(_, rest)| rest.split_once("/metrics"))
                .map(|(addr, _)| addr.to_owned())
        })
    })
    .unwrap_or_else(|| panic!("no metrics address logged:\n{}", m.log_text()));
    h.mediator = Some(m);
    (h, addr)
}

/// Polls `f` until it gives a value, or `None` after `timeout`.
fn wait_for<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One `GET` of `path`: the status line and the body.
fn http_get(addr: &str, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).expect("connect to the metrics port");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").expect("send");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read the answer");
    let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
    (
        head.lines().next().unwrap_or("").to_owned(),
        body.to_owned(),
    )
}

fn scrape(addr: &str) -> String {
    let (status, body) = http_get(addr, "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    body
}

/// The value of the sample `name` (with its labels, as printed), if any.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

/// Waits until every `(sample, value)` holds in a scrape; panics with the
/// last scrape otherwise.
#[track_caller]
fn expect_metrics(addr: &str, want: &[(&str, f64)]) {
    let mut last = String::new();
    let ok = wait_for(WAIT, || {
        last = scrape(addr);
        want.iter()
            .all(|(name, v)| sample(&last, name) == Some(*v))
            .then_some(())
    });
    if ok.is_none() {
        let wrong: Vec<_> = want
            .iter()
            .filter(|(n, v)| sample(&last, n) != Some(*v))
            .map(|(n, v)| format!("{n}: want {v}, got {:?}", sample(&last, n)))
            .collect();
        panic!("metrics never matched: {wrong:?}\n{last}");
    }
}

/// `vgpu status --json` against the harness's mediator.
fn status_json(h: &Harness) -> Value {
    let mut cmd = Command::new(h.build.dir.join("vgpu"));
    cmd.args(["status", "--json", "--mediator", &h.mediator().endpoint()]);
    let out = common::run(cmd, Duration::from_secs(60));
    out.assert_success();
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
}

/// The session of client `pid` in `vgpu status --json`, once it is listed
/// with `memory` bytes held (`None` in `memory`: listed at all).
#[track_caller]
fn wait_session(h: &Harness, pid: u32, memory: Option<u64>) -> Value {
    let mut last = Value::Null;
    wait_for(WAIT, || {
        last = status_json(h);
        last["sessions"].as_array()?.iter().find_map(|s| {
            let mine = s["client_pid"] == pid;
            let held = memory.is_none_or(|m| s["device_memory"] == m);
            (mine && held).then(|| s.clone())
        })
    })
    .unwrap_or_else(|| panic!("client {pid} not listed as wanted ({memory:?}):\n{last:#}"))
}

#[track_caller]
fn wait_unlisted(h: &Harness, pid: u32) {
    let mut last = Value::Null;
    let gone = wait_for(WAIT, || {
        last = status_json(h);
        let list = last["sessions"].as_array()?;
        (!list.iter().any(|s| s["client_pid"] == pid)).then_some(())
    });
    assert!(gone.is_some(), "client {pid} is still listed:\n{last:#}");
}

/// Starts `session_hold BYTES COPIES`; returns it with its pid once ready.
fn hold(h: &Harness, exe: &Path, bytes: u64, copies: u32) -> (Running, u32) {
    let mut cmd = h.command(exe);
    cmd.arg(bytes.to_string()).arg(copies.to_string());
    let mut c = Running::spawn(cmd);
    let line = c.expect_line("ready ", WAIT);
    let pid = line["ready ".len()..].trim().parse().expect("a pid");
    (c, pid)
}

fn uid() -> u32 {
    // SAFETY: getuid cannot fail and touches no memory.
    unsafe { libc::getuid() }
}

#[test]
fn sessions_are_listed_and_counted_while_they_come_and_go() {
    let (h, addr) = harness_with_metrics();
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = common::build_c(dir.path(), "session_hold");
    let mem = format!("vgpu_device_memory_used_bytes{{uid=\"{}\"}}", uid());
    // The simulated device's UUID: "vgpu-sim" and its ordinal.
    let on_device = format!(
        "vgpu_device_memory_used_by_device_bytes{{uid=\"{}\",\
         device=\"GPU-76677075-2d73-696d-0000-000000000000\"}}",
        uid()
    );
    expect_metrics(
        &addr,
        &[
            ("vgpu_sessions_live", 0.0),
            ("vgpu_sessions_started_total", 0.0),
            ("vgpu_worker_crashes_total", 0.0),
        ],
    );

    // A: 1 MiB, five round trips of 4096 bytes, one failed cuMemFree.
    let (mut a, a_pid) = hold(&h, &exe, 1 << 20, 5);
    let s = wait_session(&h, a_pid, Some(1 << 20));
    assert_eq!(s["uid"], uid(), "{s:#}");
    assert_eq!(s["transport"], "unix+rings", "{s:#}");
    let worker = s["worker_pid"].as_u64().and_then(|p| u32::try_from(p).ok());
    let worker = worker.expect("a worker pid");
    assert!(
        h.mediator().worker_pids().contains(&worker),
        "{worker} is one of the mediator's workers"
    );
    expect_metrics(
        &addr,
        &[
            ("vgpu_sessions_live", 1.0),
            (&mem, f64::from(1u32 << 20)),
            ("vgpu_calls_total{op=\"MemAlloc\"}", 1.0),
            ("vgpu_calls_total{op=\"MemcpyHtoD\"}", 5.0),
            ("vgpu_calls_total{op=\"MemcpyDtoH\"}", 5.0),
            ("vgpu_call_errors_total{op=\"MemFree\"}", 1.0),
            ("vgpu_copied_bytes_total{direction=\"htod\"}", 5.0 * 4096.0),
            ("vgpu_copied_bytes_total{direction=\"dtoh\"}", 5.0 * 4096.0),
        ],
    );
    let text = scrape(&addr);
    assert!(
        sample(&text, "vgpu_lane_round_trip_seconds_count").is_some_and(|n| n >= 1.0),
        "{text}"
    );

    // B: 2 MiB more for the same uid, listed beside A.
    let (mut b, b_pid) = hold(&h, &exe, 2 << 20, 0);
    wait_session(&h, b_pid, Some(2 << 20));
    expect_metrics(
        &addr,
        &[
            ("vgpu_sessions_live", 2.0),
            (&mem, f64::from(3u32 << 20)),
            (&on_device, f64::from(3u32 << 20)),
        ],
    );

    // The plain report has a line per session.
    let mut cmd = Command::new(h.build.dir.join("vgpu"));
    cmd.args(["status", "--mediator", &h.mediator().endpoint()]);
    let out = common::run(cmd, Duration::from_secs(60));
    out.assert_success();
    assert!(out.stdout.contains("sessions"), "{out}");
    assert!(
        out.stdout
            .lines()
            .any(|l| l.split_whitespace().nth(1) == Some(&a_pid.to_string())),
        "{out}"
    );

    // A frees its memory: its session holds none.
    a.send("go");
    a.expect_line("freed", WAIT);
    wait_session(&h, a_pid, Some(0));
    expect_metrics(&addr, &[(&mem, f64::from(2u32 << 20))]);

    // B is killed: its session disappears, and its memory with it.
    b.kill();
    wait_unlisted(&h, b_pid);
    expect_metrics(&addr, &[("vgpu_sessions_live", 1.0), (&mem, 0.0)]);

    // A ends: nothing is live, and the counters of both stay.
    a.send("go");
    a.finish(WAIT).assert_success().assert_line("done");
    wait_unlisted(&h, a_pid);
    expect_metrics(
        &addr,
        &[
            ("vgpu_sessions_live", 0.0),
            ("vgpu_calls_total{op=\"MemcpyHtoD\"}", 5.0),
            ("vgpu_calls_total{op=\"MemAlloc\"}", 2.0),
            ("vgpu_copied_bytes_total{direction=\"htod\"}", 5.0 * 4096.0),
            ("vgpu_worker_crashes_total", 0.0),
        ],
    );
    let started = sample(&scrape(&addr), "vgpu_sessions_started_total").expect("started");
    assert!(started >= 2.0, "A, B and the status probes: {started}");
}

#[test]
fn refused_sessions_and_crashed_workers_are_counted() {
    let (h, addr) = harness_with_metrics();
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = common::build_c(dir.path(), "session_hold");
    // A hello of another protocol version: the worker refuses it.
    let socket = h.mediator().endpoint()["unix:".len()..].to_owned();
    let mut s = UnixStream::connect(&socket).expect("connect");
    let mut hello = [0u8; 40];
    hello[..4].copy_from_slice(b"VGHI");
    hello[4..6].copy_from_slice(&999u16.to_le_bytes());
    s.write_all(&hello).expect("send");
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(rest.is_empty(), "no welcome for a foreign version");
    expect_metrics(
        &addr,
        &[
            ("vgpu_sessions_refused_total{reason=\"handshake\"}", 1.0),
            ("vgpu_sessions_started_total", 0.0),
            ("vgpu_sessions_live", 0.0),
        ],
    );

    // A worker killed under its client is a crash, and its session goes.
    let (mut c, pid) = hold(&h, &exe, 1 << 20, 1);
    let s = wait_session(&h, pid, None);
    let worker = u32::try_from(s["worker_pid"].as_u64().expect("pid")).expect("pid");
    assert!(common::is_mediator_process(worker), "{worker}");
    common::sigkill(worker);
    wait_unlisted(&h, pid);
    expect_metrics(
        &addr,
        &[
            ("vgpu_worker_crashes_total", 1.0),
            ("vgpu_sessions_live", 0.0),
        ],
    );
    c.kill();
}

#[test]
fn the_metrics_endpoint_survives_slow_and_malformed_clients() {
    let (_h, addr) = harness_with_metrics();
    let connect = || TcpStream::connect(&addr).expect("connect");
    // Clients that stall: one says nothing, one stops mid-head.
    let silent = connect();
    let mut halfway = connect();
    halfway
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        .expect("send");
    // Clients that send nonsense, or too much.
    let answer = |bytes: &[u8]| {
        let mut s = connect();
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let _ = s.write_all(bytes);
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        text.lines().next().unwrap_or("").to_owned()
    };
    assert_eq!(
        answer(b"\x00\xff\x13garbage\r\n\r\n"),
        "HTTP/1.1 400 Bad Request"
    );
    assert_eq!(answer(b"GET /metrics\r\n\r\n"), "HTTP/1.1 400 Bad Request");
    assert_eq!(
        answer(b"POST /metrics HTTP/1.1\r\n\r\n"),
        "HTTP/1.1 405 Method Not Allowed"
    );
    assert_eq!(
        answer(b"GET /elsewhere HTTP/1.1\r\n\r\n"),
        "HTTP/1.1 404 Not Found"
    );
    let mut huge = b"GET /metrics HTTP/1.1\r\nX: ".to_vec();
    huge.resize(64 << 10, b'a');
    assert_eq!(answer(&huge), "HTTP/1.1 400 Bad Request");

    // Meanwhile a good scrape is answered at once.
    let t = Instant::now();
    let text = scrape(&addr);
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(sample(&text, "vgpu_sessions_live"), Some(0.0));

    // The stalled clients are dropped after the deadline.
    for mut s in [silent, halfway] {
        s.set_read_timeout(Some(Duration::from_secs(15)))
            .expect("timeout");
        let t = Instant::now();
        let mut buf = Vec::new();
        let _ = s.read_to_end(&mut buf);
        assert!(
            t.elapsed() < Duration::from_secs(14),
            "closed by the server"
        );
    }

    // More clients at once than are served: the extra ones are closed,
    // and scraping works again once they are gone.
    let crowd: Vec<TcpStream> = (0..64).map(|_| connect()).collect();
    std::thread::sleep(Duration::from_millis(300));
    let closed = crowd
        .iter()
        .filter(|s| {
            s.set_read_timeout(Some(Duration::from_millis(50)))
                .expect("timeout");
            let mut s: &TcpStream = s;
            matches!(s.read(&mut [0u8; 16]), Ok(0))
        })
        .count();
    assert!(closed >= 64 - 32, "only {closed} of 64 were turned away");
    drop(crowd);
    let back = wait_for(WAIT, || std::panic::catch_unwind(|| scrape(&addr)).ok());
    assert!(back.is_some(), "scraping works after the crowd left");
}

#[test]
fn a_tcp_session_is_listed_as_tcp() {
    let mut h = Harness::without_mediator();
    let m = Mediator::start_with(&h.build, &["--listen", "tcp://127.0.0.1:0"]);
    let endpoint = m.tcp_endpoint();
    h.mediator = Some(m);
    h.env("VGPU_MEDIATOR", &endpoint);
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = common::build_c(dir.path(), "session_hold");
    let (mut c, pid) = hold(&h, &exe, 1 << 16, 1);
    // Listed through the Unix socket: over TCP, pid and uid are what the
    // client states, which for this client are its own.
    let s = wait_session(&h, pid, Some(1 << 16));
    assert_eq!(s["transport"], "tcp", "{s:#}");
    assert_eq!(s["uid"], uid(), "{s:#}");
    c.send("go");
    c.send("go");
    c.finish(WAIT).assert_success().assert_line("done");
    wait_unlisted(&h, pid);
}

/// A "mediator" that answers the status query with a list claiming more
/// sessions than any mediator serves: `vgpu status` reports the refusal
/// instead of believing it (and the handshake that follows finds nobody).
#[test]
fn a_hostile_session_list_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("fake.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        let mut query = [0u8; 8];
        s.read_exact(&mut query).expect("the query");
        assert_eq!(&query[..4], b"VGSQ");
        let mut head = b"VGSL".to_vec();
        head.extend_from_slice(&vgpu_proto::PROTOCOL_VERSION.to_le_bytes());
        head.extend_from_slice(&[0, 0]);
        head.extend_from_slice(&u32::MAX.to_le_bytes());
        head.extend_from_slice(&[0; 4]);
        s.write_all(&head).expect("the hostile head");
    });
    let mut cmd = Command::new(common::build().dir.join("vgpu"));
    cmd.args(["status", "--json", "--mediator"])
        .arg(format!("unix:{}", path.display()));
    let out = common::run(cmd, Duration::from_secs(60));
    server.join().expect("the fake mediator");
    let report: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}:\n{out}"));
    let why = report["sessions"]["error"].as_str().unwrap_or_default();
    assert!(why.contains("sessions"), "{report:#}");
    assert_eq!(out.status.code(), Some(1), "no handshake answered:\n{out}");
}
