//! Admission under attack, end to end: a real mediator on the simulated
//! device, and connections that stay silent, trickle, connect and drop by
//! the thousand, send garbage or oversized lengths, or declare a blob they
//! never send. Each is refused or ended and logged, no worker starts for a
//! connection that never completed its hello, no descriptor leaks, and a
//! real client is still served quickly.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{is_child, Harness, Mediator};
use vgpu_proto::{features, request_prefix, Hello, Op, RequestMeta, Welcome};
use vgpu_transport::Channel;

const WAIT: Duration = Duration::from_secs(20);

/// A harness whose mediator runs with `flags` (and a TCP listener on a
/// free loopback port).
fn harness(flags: &[&str]) -> Harness {
    let mut h = Harness::without_mediator();
    let mut all = vec!["--listen", "tcp://127.0.0.1:0"];
    all.extend_from_slice(flags);
    h.mediator = Some(Mediator::start_with(&h.build, &all));
    h
}

fn socket_path(m: &Mediator) -> PathBuf {
    PathBuf::from(&m.endpoint()["unix:".len()..])
}

fn tcp_addr(m: &Mediator) -> String {
    m.tcp_endpoint()["tcp://".len()..].to_owned()
}

/// Open descriptors of process `pid`.
fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

/// Polls `f` until it is true; false after `timeout`.
fn eventually(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

/// Waits until the supervisor's descriptors are back to `baseline` (a few
/// more are allowed for threads' transient work).
#[track_caller]
fn assert_no_fd_leak(m: &Mediator, baseline: usize) {
    let pid = m.pid();
    assert!(
        eventually(WAIT, || fd_count(pid) <= baseline + 2),
        "the supervisor holds {} descriptors, {baseline} before:\n{}",
        fd_count(pid),
        m.log_text()
    );
}

/// Whether the server closed `s` (EOF or reset) within `timeout`.
fn closed_by_server(s: &mut UnixStream, timeout: Duration) -> bool {
    s.set_read_timeout(Some(timeout)).expect("timeout");
    let mut buf = [0u8; 64];
    match s.read(&mut buf) {
        Ok(n) => n == 0,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

/// A valid hello's bytes.
fn hello_bytes(features: u64) -> Vec<u8> {
    let mut bytes = Vec::new();
    Hello {
        features,
        pid: std::process::id(),
        uid: 0,
        env: Vec::new(),
    }
    .write(&mut bytes)
    .expect("encodes");
    bytes
}

/// A client child: `cuInit` and a context, timed; prints `cuInit ms=N`.
fn client_child() {
    let start = Instant::now();
    common::cu::init_context();
    println!("cuInit ms={}", start.elapsed().as_millis());
    println!("done");
}

/// Runs [`client_child`] as test `name`; returns how long its cuInit took.
fn run_client(h: &Harness, name: &str) -> Duration {
    let out = h.run(h.self_test(name));
    out.assert_success().assert_line("done");
    let ms = out
        .stdout
        .lines()
        .find_map(|l| common::strip_libtest(l).trim().strip_prefix("cuInit ms="))
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("no cuInit time:\n{out}"));
    Duration::from_millis(ms)
}

#[test]
fn silent_connections_start_no_worker_and_are_closed_at_the_deadline() {
    if is_child() {
        return client_child();
    }
    let h = harness(&["--handshake-timeout-ms", "1500"]);
    let m = h.mediator();
    let path = socket_path(m);
    let baseline = fd_count(m.pid());
    let mut silent: Vec<UnixStream> = (0..200)
        .map(|_| UnixStream::connect(&path).expect("connect"))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        m.child_pids().is_empty(),
        "a silent connection started a worker"
    );
    let held = fd_count(m.pid());
    assert!(
        held <= baseline + 64 + 4,
        "at most 64 handshakes are pending: {held} descriptors, {baseline} before"
    );
    let start = Instant::now();
    for s in &mut silent {
        assert!(
            closed_by_server(s, Duration::from_secs(5)),
            "a silent connection stayed open"
        );
    }
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
    drop(silent);
    assert!(m.child_pids().is_empty());
    assert_no_fd_leak(m, baseline);
    let log = m.log_text();
    assert!(log.contains("no whole hello within"), "{log}");
    assert!(log.contains("handshake") && log.contains("busy"), "{log}");
    assert!(
        log.contains("uid=") && log.contains("pid="),
        "refusals name the peer:\n{log}"
    );
    let took = run_client(
        &h,
        "silent_connections_start_no_worker_and_are_closed_at_the_deadline",
    );
    assert!(took < Duration::from_secs(2), "{took:?}");
}

#[test]
fn one_peers_silent_connections_leave_room_for_the_others() {
    if is_child() {
        return client_child();
    }
    // Long enough that the silent connections hold their places throughout.
    let h = harness(&["--handshake-timeout-ms", "20000"]);
    let m = h.mediator();
    let silent: Vec<UnixStream> = (0..100)
        .map(|_| UnixStream::connect(socket_path(m)).expect("connect"))
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // Another peer (over TCP) is served at once: this uid holds only its
    // quarter (16) of the 64 places.
    let mut cmd = h.self_test("one_peers_silent_connections_leave_room_for_the_others");
    cmd.env("VGPU_MEDIATOR", m.tcp_endpoint());
    let out = h.run(cmd);
    out.assert_success().assert_line("done");
    let log = m.log_text();
    assert!(log.contains("the most one peer may hold"), "{log}");
    drop(silent);
}

#[test]
fn two_thousand_connect_and_drops_leave_a_real_client_served_quickly() {
    if is_child() {
        return client_child();
    }
    let h = harness(&[]);
    let m = h.mediator();
    let path = socket_path(m);
    let baseline = fd_count(m.pid());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (stop_flood, counted) = (stop.clone(), count.clone());
    // Connects and drops until told to stop, 2,000 times at least.
    let flood = std::thread::spawn(move || {
        use std::sync::atomic::Ordering::SeqCst;
        while counted.load(SeqCst) < 2000 || !stop_flood.load(SeqCst) {
            // Refused at once when too many are pending: that is fine.
            drop(UnixStream::connect(&path));
            counted.fetch_add(1, SeqCst);
        }
    });
    assert!(eventually(WAIT, || count
        .load(std::sync::atomic::Ordering::SeqCst)
        >= 500));
    let took = run_client(
        &h,
        "two_thousand_connect_and_drops_leave_a_real_client_served_quickly",
    );
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    flood.join().expect("flood");
    let during = count.load(std::sync::atomic::Ordering::SeqCst);
    assert!(during >= 2000, "{during} connections");
    assert!(
        took < Duration::from_secs(2),
        "cuInit took {took:?} under the flood"
    );
    assert!(
        eventually(WAIT, || m.child_pids().is_empty()),
        "workers left after the client ended"
    );
    assert_eq!(
        m.worker_pids().len(),
        1,
        "only the real client got a worker"
    );
    assert_no_fd_leak(m, baseline);
}

#[test]
fn a_slowloris_handshake_is_cut_at_the_deadline() {
    let h = harness(&["--handshake-timeout-ms", "1000"]);
    let m = h.mediator();
    let baseline = fd_count(m.pid());
    let bytes = hello_bytes(features::ALL);
    let mut s = UnixStream::connect(socket_path(m)).expect("connect");
    let start = Instant::now();
    let mut sent = 0;
    for b in &bytes {
        if s.write_all(&[*b]).is_err() {
            break;
        }
        sent += 1;
        std::thread::sleep(Duration::from_millis(100));
        if start.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    assert!(
        sent < bytes.len(),
        "the whole hello went through a byte at a time"
    );
    assert!(
        start.elapsed() < Duration::from_millis(2500),
        "{:?}",
        start.elapsed()
    );
    assert!(m.child_pids().is_empty(), "a slowloris got a worker");
    assert!(
        m.log_text().contains("no whole hello within 1s"),
        "{}",
        m.log_text()
    );
    assert_no_fd_leak(m, baseline);
}

#[test]
fn garbage_and_oversized_lengths_on_the_control_connection_are_refused() {
    if is_child() {
        return client_child();
    }
    let h = harness(&["--handshake-timeout-ms", "2000"]);
    let m = h.mediator();
    let baseline = fd_count(m.pid());
    let mut oversized = hello_bytes(features::ALL);
    oversized[32..36].copy_from_slice(&u32::MAX.to_le_bytes());
    let mut foreign = hello_bytes(features::ALL);
    foreign[4..6].copy_from_slice(&999u16.to_le_bytes());
    let mut random = vec![0u8; 4096];
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for b in &mut random {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x.to_le_bytes()[0];
    }
    for (what, bytes) in [
        ("random bytes", &random),
        ("an oversized env length", &oversized),
        ("another protocol version", &foreign),
    ] {
        let mut s = UnixStream::connect(socket_path(m)).expect("connect");
        let _ = s.write_all(bytes);
        assert!(
            closed_by_server(&mut s, Duration::from_secs(5)),
            "{what}: not closed"
        );
        let mut t = TcpStream::connect(tcp_addr(m)).expect("connect tcp");
        let _ = t.write_all(bytes);
        t.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        assert!(
            matches!(t.read(&mut [0u8; 64]), Ok(0) | Err(_)),
            "{what} over TCP: not closed"
        );
    }
    assert!(m.child_pids().is_empty(), "garbage started a worker");
    let log = m.log_text();
    assert!(log.contains("bad handshake"), "{log}");
    assert!(
        log.contains("peer=127.0.0.1"),
        "TCP refusals name the peer:\n{log}"
    );
    assert_no_fd_leak(m, baseline);
    let took = run_client(
        &h,
        "garbage_and_oversized_lengths_on_the_control_connection_are_refused",
    );
    assert!(took < Duration::from_secs(2), "{took:?}");
}

/// A raw session on the Unix socket: the control channel after the
/// welcome, and the worker's pid.
fn raw_session(m: &Mediator, nth: usize) -> (Channel, u32) {
    let mut control = Channel::connect(&socket_path(m)).expect("connect");
    control
        .write_all(&hello_bytes(features::LANES))
        .expect("hello");
    let welcome = Welcome::read(&mut control).expect("welcome");
    assert_eq!(welcome.features & features::RINGS, 0);
    (control, m.wait_worker(nth, WAIT))
}

/// The head and fixed part of a 64 MiB host-to-device copy whose blob
/// never follows.
fn stalled_copy() -> Vec<u8> {
    let meta = RequestMeta {
        op: Op::MemcpyHtoD,
        seq: 1,
        ctx: 0,
        flags: 0,
        order: 0,
        after: 0,
    };
    request_prefix(&meta, &[0u8; 17], 64 << 20).expect("a valid prefix")
}

/// A socket lane opened on `control` (socket lanes: rings not offered).
fn open_lane(control: &mut Channel) -> Channel {
    vgpu_proto::write_request(control, Op::OpenLane, 1, 0, &[0u8; 0], &[]).expect("OpenLane");
    let (head, _) = vgpu_proto::read_response_head(control).expect("reply");
    assert_eq!(head.status.get(), 0, "OpenLane failed");
    let fd = control.recv_fd().expect("the lane's descriptor");
    Channel::from_fd(fd)
}

#[test]
fn a_blob_that_never_comes_ends_its_session() {
    let h = harness(&["--frame-timeout-ms", "500"]);
    let m = h.mediator();
    // On the control connection.
    let (mut control, worker) = raw_session(m, 1);
    std::thread::sleep(Duration::from_millis(800));
    assert!(common::is_alive(worker), "an idle session must stay");
    control.write_all(&stalled_copy()).expect("send the head");
    assert!(
        common::wait_gone(worker, Duration::from_secs(5)),
        "the worker waits forever"
    );
    // On a lane.
    let (mut control, worker) = raw_session(m, 2);
    let mut lane = open_lane(&mut control);
    std::thread::sleep(Duration::from_millis(800));
    assert!(common::is_alive(worker), "an idle lane must stay");
    lane.write_all(&stalled_copy()).expect("send the head");
    let start = Instant::now();
    assert!(
        common::wait_gone(worker, Duration::from_secs(5)),
        "the worker waits forever"
    );
    assert!(
        start.elapsed() >= Duration::from_millis(400),
        "{:?}",
        start.elapsed()
    );
    let log = m.log_text();
    assert!(log.contains("did not arrive whole within"), "{log}");
    assert!(log.contains("ending the session"), "{log}");
    assert!(
        !log.contains("abnormally"),
        "the worker ended cleanly:\n{log}"
    );
}

#[test]
fn garbage_and_oversized_lengths_on_a_lane_close_it_and_nothing_else() {
    let h = harness(&[]);
    let m = h.mediator();
    let (mut control, worker) = raw_session(m, 1);
    let mut lane = open_lane(&mut control);
    lane.write_all(&[0x5Au8; 256]).expect("garbage");
    let mut buf = [0u8; 16];
    assert!(
        matches!(lane.read(&mut buf), Ok(0) | Err(_)),
        "the lane stays open"
    );
    let mut lane = open_lane(&mut control);
    let mut big = stalled_copy();
    // blob_len, the head's 32-bit word at offset 12, beyond MAX_BLOB.
    big[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    lane.write_all(&big).expect("oversized");
    assert!(
        matches!(lane.read(&mut buf), Ok(0) | Err(_)),
        "the lane stays open"
    );
    assert!(common::is_alive(worker), "bad lanes end only themselves");
    let log = m.log_text();
    assert!(log.contains("closing it"), "{log}");
    drop((lane, control));
    assert!(
        common::wait_gone(worker, WAIT),
        "the worker outlives its client"
    );
    assert!(!m.log_text().contains("abnormally"), "{}", m.log_text());
}

/// A client child that holds nine tenths of the simulated device's memory
/// in one allocation, checks that an allocation past the budget fails
/// cleanly, and waits for a line on stdin before it ends.
fn hold_most_memory_child() {
    use cudarc::driver::sys;
    common::cu::init_context();
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: the out-pointers are valid locals.
    common::cu::ok(
        unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) },
        "cuMemGetInfo_v2",
    );
    let held = total / 10 * 9;
    common::cu::alloc(held);
    println!("total={total} held={held}");
    // SAFETY: the out-pointers are valid locals.
    common::cu::ok(
        unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) },
        "cuMemGetInfo_v2",
    );
    let mut d: sys::CUdeviceptr = 0;
    // SAFETY: the out-pointer is a valid local.
    let past = unsafe { sys::cuMemAlloc_v2(&mut d, free + 4096) };
    println!("past the budget: {}", common::cu::code(past));
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    println!("done");
}

/// `MemAvailable` of this host, in bytes.
fn mem_available() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").expect("meminfo");
    text.lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .expect("MemAvailable")
        * 1024
}

#[test]
fn simulated_memory_is_reserved_lazily_and_bounded_by_the_host() {
    const NAME: &str = "simulated_memory_is_reserved_lazily_and_bounded_by_the_host";
    if is_child() {
        return hold_most_memory_child();
    }
    let mut h = Harness::without_mediator();
    // Far more than any host has: the simulator bounds it by the host.
    let m = Mediator::start_env(&h.build, &[("VGPU_SIM_MEMORY_MB", "16777216")]);
    h.mediator = Some(m);
    let available = mem_available();
    let mut clients = Vec::new();
    let mut held_total = 0u64;
    for _ in 0..2 {
        let mut c = common::Running::spawn(h.self_test(NAME));
        let line = c.expect_line("total=", WAIT);
        let field = |name: &str| -> u64 {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(name))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} in {line:?}"))
        };
        let (total, held) = (field("total="), field("held="));
        assert!(
            total <= available + available / 10,
            "the budget {total} is bounded by what the host has ({available} available)"
        );
        held_total += held;
        let past = c.expect_line("past the budget: ", WAIT);
        assert!(
            past.ends_with(": 2"),
            "CUDA_ERROR_OUT_OF_MEMORY past the budget: {past}"
        );
        clients.push(c);
    }
    assert!(
        held_total > available,
        "two clients hold {held_total} bytes, more than the {available} available: \
         only a lazy reservation allows it"
    );
    for mut c in clients {
        c.send("go");
        c.finish(WAIT).assert_success().assert_line("done");
    }
    let log = h.mediator().log_text();
    assert!(!log.contains("abnormally"), "no worker was killed:\n{log}");
}

/// A raw session whose hello carries `env`; returns its worker's pid.
fn raw_session_with_env(m: &Mediator, nth: usize, env: &[(&str, &str)]) -> (Channel, u32) {
    let mut control = Channel::connect(&socket_path(m)).expect("connect");
    let hello = Hello {
        features: features::LANES,
        pid: std::process::id(),
        uid: 0,
        env: env
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect(),
    };
    hello.write(&mut control).expect("hello");
    Welcome::read(&mut control).expect("welcome");
    (control, m.wait_worker(nth, WAIT))
}

/// A `Key:` line of `/proc/PID/status`, its fields split.
fn status_field(pid: u32, key: &str) -> Vec<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"))
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// The uid of user `name`, if it exists.
fn user_uid(name: &str) -> Option<u32> {
    let c = std::ffi::CString::new(name).expect("name");
    // SAFETY: getpwnam reads a NUL-terminated name; the entry it returns is
    // read at once, before any other passwd call on this thread.
    unsafe {
        let pw = libc::getpwnam(c.as_ptr());
        (!pw.is_null()).then(|| (*pw).pw_uid)
    }
}

#[test]
fn workers_run_unprivileged_and_apply_only_writable_paths() {
    let h = harness(&[]);
    let m = h.mediator();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let want_uid = if root {
        user_uid("vgpu-worker")
            .or_else(|| user_uid("nobody"))
            .expect("a vgpu-worker or nobody user")
    } else {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() }
    };
    let (control, worker) = raw_session_with_env(m, 1, &[("CUDA_CACHE_PATH", "/root/vgpu-cache")]);
    let uids = status_field(worker, "Uid:");
    assert!(
        uids.iter().all(|u| *u == want_uid.to_string()),
        "real, effective, saved and fs uid of the worker: {uids:?}, want {want_uid}"
    );
    assert_eq!(status_field(worker, "CapEff:"), ["0000000000000000"]);
    assert_eq!(
        status_field(worker, "NoNewPrivs:"),
        [if root { "1" } else { "0" }]
    );
    let log = m.log_text();
    if root {
        assert!(
            log.contains("CUDA_CACHE_PATH from the client ignored"),
            "a path under /root is refused:\n{log}"
        );
    }
    drop(control);
    assert!(common::wait_gone(worker, WAIT));
    // A directory the worker's uid owns is accepted.
    let dir = tempfile::Builder::new()
        .prefix("vgpu-worker-cache")
        .tempdir_in("/tmp")
        .expect("tempdir");
    let cache = dir.path().join("cache");
    std::fs::create_dir(&cache).expect("cache dir");
    std::os::unix::fs::chown(&cache, Some(want_uid), None).expect("chown");
    let before = m.log_text().matches("ignored").count();
    let cache_text = cache.to_str().expect("utf-8").to_owned();
    let (control, worker) = raw_session_with_env(m, 2, &[("CUDA_CACHE_PATH", &cache_text)]);
    assert_eq!(
        m.log_text().matches("ignored").count(),
        before,
        "a path the worker may write is applied:\n{}",
        m.log_text()
    );
    drop(control);
    assert!(common::wait_gone(worker, WAIT));
}

#[test]
fn the_worker_limit_refuses_more_sessions_until_one_ends() {
    let h = harness(&["--max-workers", "1"]);
    let m = h.mediator();
    let (control, worker) = raw_session(m, 1);
    let mut second = Channel::connect(&socket_path(m)).expect("connect");
    second
        .write_all(&hello_bytes(features::LANES))
        .expect("hello");
    assert!(
        Welcome::read(&mut second).is_err(),
        "a second session at the limit"
    );
    assert_eq!(m.child_pids(), [worker], "no second worker");
    assert!(
        m.log_text().contains("1 workers are live"),
        "{}",
        m.log_text()
    );
    drop(control);
    let ended = format!("session ended worker={worker}");
    assert!(
        eventually(WAIT, || m.log_text().contains(&ended)),
        "{}",
        m.log_text()
    );
    let (_control, next) = raw_session(m, 2);
    assert_ne!(next, worker, "a new session once the first ended");
}

/// An `OpenLane` on a TCP session's control connection: the lane port and
/// token the worker answers with.
fn open_tcp_lane(control: &mut TcpStream) -> (u16, [u8; 16]) {
    vgpu_proto::write_request(control, Op::OpenLane, 1, 0, &[], &[]).expect("OpenLane");
    let (head, fixed) = vgpu_proto::read_response_head(control).expect("reply");
    assert_eq!(head.status.get(), 0, "OpenLane failed");
    assert_eq!(fixed.len(), 19, "kind, port, token");
    let port = u16::from_le_bytes([fixed[1], fixed[2]]);
    let token: [u8; 16] = fixed[3..19].try_into().expect("16 bytes");
    (port, token)
}

#[test]
fn garbage_on_tcp_lane_connections_is_refused_and_the_session_goes_on() {
    let h = harness(&[]);
    let m = h.mediator();
    let mut control = TcpStream::connect(tcp_addr(m)).expect("connect");
    control
        .write_all(&hello_bytes(features::LANES))
        .expect("hello");
    Welcome::read(&mut control).expect("welcome");
    let worker = m.wait_worker(1, WAIT);
    // The worker waits for the lane on its port: a stranger's random bytes
    // come first and are refused; then the client's token and a bad frame.
    let (port, token) = open_tcp_lane(&mut control);
    let mut stranger = TcpStream::connect(("127.0.0.1", port)).expect("lane port");
    stranger.write_all(&[0x3Cu8; 64]).expect("garbage");
    stranger
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    assert!(
        matches!(stranger.read(&mut [0u8; 8]), Ok(0) | Err(_)),
        "the stranger stays"
    );
    let mut lane = TcpStream::connect(("127.0.0.1", port)).expect("lane port");
    lane.write_all(&token).expect("token");
    let mut oversized = stalled_copy();
    oversized[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    lane.write_all(&oversized).expect("an oversized frame");
    lane.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    assert!(
        matches!(lane.read(&mut [0u8; 8]), Ok(0) | Err(_)),
        "the bad lane stays"
    );
    // The session goes on: another lane opens and serves.
    let (port, token) = open_tcp_lane(&mut control);
    let mut lane = TcpStream::connect(("127.0.0.1", port)).expect("lane port");
    lane.write_all(&token).expect("token");
    vgpu_proto::write_request(&mut lane, Op::CtxSynchronize, 7, 0, &[], &[]).expect("request");
    let (head, _) = vgpu_proto::read_response_head(&mut lane).expect("a reply on the new lane");
    assert_eq!(head.seq.get(), 7);
    assert!(common::is_alive(worker));
    let log = m.log_text();
    assert!(
        log.contains("lane connection refused: wrong token"),
        "{log}"
    );
    assert!(log.contains("closing it"), "{log}");
    drop((lane, control));
    assert!(common::wait_gone(worker, WAIT));
    assert!(!m.log_text().contains("abnormally"), "{}", m.log_text());
}
