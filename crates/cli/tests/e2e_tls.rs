//! `tls://` end to end: a real mediator with a `tls://127.0.0.1:<free port>`
//! listener (the test certificates of `fixtures/tls`), the simulated device,
//! and the C driver smoke test as the client.
//!
//! Covered: the same output over TLS (bearer token, client certificate) as
//! over the Unix socket; `vgpu status` and NVML over TLS; a forked child's
//! own session beside its parent's; an admitted client that never reaches
//! its worker; and each refusal, logged by
//! the supervisor with no worker started, no descriptor left open and other
//! clients still served: a wrong or missing token, a client certificate of
//! another CA or an expired one, a server certificate for another host name
//! or an expired one, plain TCP to the TLS port, TLS to a plain port, and a
//! handshake that stalls. No token's secret ever reaches a log.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use common::{Harness, Mediator, Output};

/// The secret of the token named `alpha` in the tokens file.
const SECRET: &str = "alpha-secret-Zq81";

fn fixture(name: &str) -> String {
    common::repo_root()
        .join("fixtures/tls")
        .join(name)
        .display()
        .to_string()
}

fn sha256_hex(text: &str) -> String {
    let out = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().expect("stdin").write_all(text.as_bytes())?;
            c.wait_with_output()
        })
        .expect("sha256sum");
    String::from_utf8(out.stdout).expect("utf-8")[..64].to_owned()
}

/// A tokens file naming `alpha` (the digest of [`SECRET`]) and `beta`.
fn tokens_file(dir: &Path) -> PathBuf {
    let path = dir.join("tokens");
    let text = format!(
        "# test tokens\nalpha {}\nbeta {}\n",
        sha256_hex(SECRET),
        sha256_hex("beta-secret")
    );
    std::fs::write(&path, text).expect("tokens file");
    path
}

/// The address of the first listener of `scheme` (`tls` or `tcp`) the log names.
fn endpoint(m: &Mediator, scheme: &str) -> String {
    let needle = format!("listening on {scheme}://");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found = m.log_text().lines().find_map(|l| {
            l.split_once(&needle)
                .map(|(_, rest)| format!("{scheme}://{}", rest.trim()))
        });
        if let Some(e) = found {
            return e;
        }
        assert!(
            Instant::now() < deadline,
            "no {scheme} listener:\n{}",
            m.log_text()
        );
        thread::sleep(Duration::from_millis(10));
    }
}

/// A harness whose mediator also listens on TLS (server certificate
/// `cert`, client CA, tokens) and plain loopback TCP.
fn start(cert: &str, tokens: &Path) -> Harness {
    let mut h = Harness::without_mediator();
    let (pem, key, ca) = (
        fixture(&format!("{cert}.pem")),
        fixture(&format!("{cert}.key")),
        fixture("ca.pem"),
    );
    let tokens = tokens.display().to_string();
    let m = Mediator::start_with(
        &h.build,
        &[
            "--listen",
            "tls://127.0.0.1:0",
            "--listen",
            "tcp://127.0.0.1:0",
            "--tls-cert",
            &pem,
            "--tls-key",
            &key,
            "--tls-client-ca",
            &ca,
            "--tokens",
            &tokens,
        ],
    );
    h.mediator = Some(m);
    h
}

fn smoke(h: &Harness, exe: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = h.command(exe);
    cmd.env("VGPU_LOG", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    h.run(cmd)
}

fn count(log: &str, needle: &str) -> usize {
    log.lines().filter(|l| l.contains(needle)).count()
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

/// Waits until the supervisor holds `want` descriptors or fewer.
fn settle_fds(pid: u32, want: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n = open_fds(pid);
        if n <= want || Instant::now() > deadline {
            return n;
        }
        thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn tls_sessions_match_the_unix_socket_and_authenticate() {
    let dir = tempfile::tempdir().expect("temp dir");
    let h = start("server", &tokens_file(dir.path()));
    let exe = common::build_c(dir.path(), "driver_smoke");
    let tls = endpoint(h.mediator(), "tls");
    let ca = fixture("ca.pem");
    let unix = smoke(&h, &exe, &[]);
    unix.assert_success().assert_line("ok launch_result");

    // A bearer token, through a file (white space around it is dropped).
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{SECRET}\n")).expect("token file");
    let token_file = token_file.display().to_string();
    let by_token = smoke(
        &h,
        &exe,
        &[
            ("VGPU_MEDIATOR", &tls),
            ("VGPU_TLS_CA", &ca),
            ("VGPU_TOKEN_FILE", &token_file),
        ],
    );
    by_token.assert_success();
    assert_eq!(by_token.stdout, unix.stdout, "the same results over TLS");
    assert!(
        by_token.stderr.contains("lanes on TLS connections"),
        "{by_token}"
    );

    // A client certificate, reaching the mediator by name.
    let named = tls.replace("127.0.0.1", "localhost");
    let by_cert = smoke(
        &h,
        &exe,
        &[
            ("VGPU_MEDIATOR", &named),
            ("VGPU_TLS_CA", &ca),
            ("VGPU_TLS_CERT", &fixture("client-a.pem")),
            ("VGPU_TLS_KEY", &fixture("client-a.key")),
        ],
    );
    by_cert.assert_success();
    assert_eq!(by_cert.stdout, unix.stdout, "the same results with mTLS");

    // VGPU_TOKEN, and `vgpu status` over TLS listing the live session.
    let mut holder = h.command(&exe);
    holder
        .env("VGPU_MEDIATOR", &tls)
        .env("VGPU_TLS_CA", &ca)
        .env("VGPU_TOKEN", SECRET);
    let by_env = h.run(holder);
    by_env.assert_success();
    assert_eq!(by_env.stdout, unix.stdout);
    let status = status_over_tls(&h, &tls, &ca, "beta-secret");
    status.assert_success();
    assert!(status.stdout.contains("\"sessions\""), "{status}");

    let log = h.mediator().log_text();
    assert!(
        log.contains("TLS client authenticated") && log.contains("token_name=alpha"),
        "{log}"
    );
    assert!(log.contains("cert_name=client-a"), "{log}");
    // The worker knows whom the supervisor admitted.
    assert!(
        log.contains("identity=Some(Identity {") && log.contains("cert_name: Some(\"client-a\")"),
        "{log}"
    );
    assert!(log.contains("token_name=beta"), "the status query: {log}");
    // Three clients, and the session `vgpu status` probes the mediator with.
    assert_eq!(
        count(&log, "session starting (remote client over TLS"),
        4,
        "four TLS sessions:\n{log}"
    );
    for text in [
        &log,
        &by_token.stderr,
        &by_env.stderr,
        &status.stderr,
        &status.stdout,
    ] {
        assert!(
            !text.contains(SECRET),
            "a token's secret was printed:\n{text}"
        );
    }
}

/// The client's result for a connection that must be refused.
fn refused(h: &Harness, exe: &Path, env: &[(&str, &str)], why: &str) {
    let out = smoke(h, exe, env);
    assert!(!out.status.success(), "accepted: {out}");
    assert!(out.stdout.contains("init"), "cuInit failed: {out}");
    assert!(
        out.stderr.to_lowercase().contains(&why.to_lowercase()),
        "the client says why ({why}): {out}"
    );
    assert!(!out.stderr.contains(SECRET), "{out}");
}

#[test]
fn bad_clients_are_refused_and_logged_without_a_worker() {
    let dir = tempfile::tempdir().expect("temp dir");
    let h = start("server", &tokens_file(dir.path()));
    let exe = common::build_c(dir.path(), "driver_smoke");
    let m = h.mediator();
    let (tls, tcp) = (endpoint(m, "tls"), endpoint(m, "tcp"));
    let port = tls.rsplit_once(':').expect("port").1.to_owned();
    let ca = fixture("ca.pem");
    // One good session first, so every lazily opened descriptor is open.
    let ok = [
        ("VGPU_MEDIATOR", tls.as_str()),
        ("VGPU_TLS_CA", &ca),
        ("VGPU_TOKEN", SECRET),
    ];
    smoke(&h, &exe, &ok).assert_success();
    let pid = m.pid();
    let fds = open_fds(pid);
    let accepted = count(&m.log_text(), "session accepted");

    // A client that stalls its handshake, and one that trickles bytes: both
    // run out of time while everyone else is served.
    let stalled = TcpStream::connect(format!("127.0.0.1:{port}")).expect("connect");
    let trickle = thread::spawn({
        let port = port.clone();
        move || {
            let mut s = TcpStream::connect(format!("127.0.0.1:{port}")).expect("connect");
            for b in [0x16u8, 0x03, 0x01, 0x00, 0x10, 1, 2, 3, 4, 5, 6, 7, 8] {
                if s.write_all(&[b]).is_err() {
                    break;
                }
                thread::sleep(Duration::from_millis(600));
            }
        }
    });

    let wrong = [
        ("VGPU_MEDIATOR", tls.as_str()),
        ("VGPU_TLS_CA", &ca),
        ("VGPU_TOKEN", "guess"),
    ];
    refused(&h, &exe, &wrong, "accepted neither");
    let missing = [("VGPU_MEDIATOR", tls.as_str()), ("VGPU_TLS_CA", &ca)];
    refused(&h, &exe, &missing, "accepted neither");
    let other_ca = fixture("other-ca.pem");
    let untrusted_server = [
        ("VGPU_MEDIATOR", tls.as_str()),
        ("VGPU_TLS_CA", other_ca.as_str()),
    ];
    refused(&h, &exe, &untrusted_server, "certificate");
    for cert in ["client-other", "client-expired"] {
        let (pem, key) = (
            fixture(&format!("{cert}.pem")),
            fixture(&format!("{cert}.key")),
        );
        let env = [
            ("VGPU_MEDIATOR", tls.as_str()),
            ("VGPU_TLS_CA", &ca),
            ("VGPU_TLS_CERT", &pem),
            ("VGPU_TLS_KEY", &key),
        ];
        refused(&h, &exe, &env, "TLS");
    }
    // TLS to the plain TCP port.
    let tls_to_plain = tcp.replace("tcp://", "tls://");
    let env = [
        ("VGPU_MEDIATOR", tls_to_plain.as_str()),
        ("VGPU_TLS_CA", &ca),
        ("VGPU_TOKEN", SECRET),
    ];
    refused(&h, &exe, &env, "TLS");
    // Plain TCP (a vgpu hello) to the TLS port: closed without an answer.
    let mut plain = TcpStream::connect(format!("127.0.0.1:{port}")).expect("connect");
    plain
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    plain
        .write_all(b"VGHI\x01\x00\x00\x00 plain bytes")
        .expect("write");
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(!answer.starts_with(b"VGWE"), "no welcome over plain TCP");
    // A good client is served while the stalled ones still wait.
    smoke(&h, &exe, &ok).assert_success();
    let accepted_now = count(&m.log_text(), "session accepted");
    assert_eq!(
        accepted_now,
        accepted + 1,
        "only the good client got a worker"
    );

    trickle.join().expect("trickle");
    drop(stalled);
    let log = m.log_text();
    for why in [
        "TLS client refused: a token that matches no configured token",
        "TLS client refused: no client certificate and no token",
        "TLS handshake failed",
        "refused: a TLS handshake on a plain listener",
    ] {
        assert!(log.contains(why), "not logged: {why}\n{log}");
    }
    assert!(
        count(&log, "TLS handshake failed: timed out") >= 2,
        "the stalled and the trickling handshakes ran out of time:\n{log}"
    );
    assert_eq!(count(&log, "session accepted"), accepted + 1, "{log}");
    assert!(
        !log.contains(SECRET) && !log.contains("guess"),
        "a token was logged:\n{log}"
    );
    let left = settle_fds(pid, fds);
    assert!(
        left <= fds,
        "the supervisor holds {left} descriptors, {fds} before"
    );
}

#[test]
fn clients_refuse_servers_with_the_wrong_name_or_an_expired_certificate() {
    let dir = tempfile::tempdir().expect("temp dir");
    let tokens = tokens_file(dir.path());
    let exe = common::build_c(dir.path(), "driver_smoke");
    let ca = fixture("ca.pem");
    for (cert, why) in [
        ("server-wrong-host", "not valid for name"),
        ("server-expired", "expired"),
    ] {
        let h = start(cert, &tokens);
        let tls = endpoint(h.mediator(), "tls");
        let env = [
            ("VGPU_MEDIATOR", tls.as_str()),
            ("VGPU_TLS_CA", ca.as_str()),
            ("VGPU_TOKEN", SECRET),
        ];
        refused(&h, &exe, &env, why);
        // The client gives up first; the supervisor logs its side of the
        // failed handshake a moment later.
        let log = logged(h.mediator(), "TLS client refused: TLS handshake failed");
        assert_eq!(count(&log, "session accepted"), 0, "{log}");
    }
}

/// The mediator's log once it holds `needle`, which it must within 10 s.
fn logged(m: &Mediator, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = m.log_text();
        if log.contains(needle) {
            return log;
        }
        assert!(Instant::now() < deadline, "no {needle:?} in:\n{log}");
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_mediator_refuses_plain_tcp_off_loopback_and_tls_without_credentials() {
    let h = Harness::without_mediator();
    let run = |args: &[&str]| {
        let mut cmd = std::process::Command::new(&h.build.mediator);
        cmd.args(["--driver", "sim", "--listen"]).args(args);
        common::run(cmd, Duration::from_secs(20))
    };
    let out = run(&["tcp://0.0.0.0:0"]);
    assert_eq!(out.status.code(), Some(1), "{out}");
    assert!(
        out.stderr
            .contains("plain TCP is served on loopback addresses only")
            && out
                .stderr
                .contains("--listen tls://0.0.0.0:0 --tls-cert FILE --tls-key FILE")
            && out.stderr.contains("--insecure-tcp"),
        "{out}"
    );
    let out = run(&["tls://127.0.0.1:0"]);
    assert_eq!(out.status.code(), Some(1), "{out}");
    assert!(
        out.stderr.contains("--tls-cert FILE --tls-key FILE"),
        "{out}"
    );
    let (pem, key) = (fixture("server.pem"), fixture("server.key"));
    let out = run(&["tls://127.0.0.1:0", "--tls-cert", &pem, "--tls-key", &key]);
    assert_eq!(out.status.code(), Some(1), "{out}");
    assert!(out.stderr.contains("no way to authenticate"), "{out}");
}

/// A forked child holds a copy of its parent's TLS keys: it must never send
/// a record on the inherited connections (not even a goodbye), or the
/// parent's worker would take it as the parent's. The child opens a TLS
/// session of its own, and the parent's goes on.
#[test]
fn a_forked_child_leaves_its_parents_tls_session_alone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let h = start("server", &tokens_file(dir.path()));
    let exe = common::build_c(dir.path(), "fork_session");
    let tls = endpoint(h.mediator(), "tls");
    let ca = fixture("ca.pem");
    let out = smoke(
        &h,
        &exe,
        &[
            ("VGPU_MEDIATOR", &tls),
            ("VGPU_TLS_CA", &ca),
            ("VGPU_TOKEN", SECRET),
        ],
    );
    out.assert_success()
        .assert_line("ok child_cuinit")
        .assert_line("ok child_own_session")
        .assert_line("ok child_exited_0")
        .assert_line("ok parent_session_untouched");
    let log = h.mediator().log_text();
    assert_eq!(
        count(&log, "session starting (remote client over TLS"),
        2,
        "{log}"
    );
}

/// A client that is admitted but never comes to its worker: the worker
/// waits for the ticket only so long, then exits; nothing is left behind.
#[test]
fn an_admitted_client_that_never_comes_leaves_no_worker() {
    use vgpu_transport::tls::admission::{purpose, verdict, Admit, Auth};
    use vgpu_transport::tls::{BearerToken, ClientTls};
    let dir = tempfile::tempdir().expect("temp dir");
    let h = start("server", &tokens_file(dir.path()));
    let m = h.mediator();
    let tls = endpoint(m, "tls");
    let port: u16 = tls.rsplit_once(':').expect("port").1.parse().expect("port");
    let client = ClientTls::new(Some(Path::new(&fixture("ca.pem"))), None).expect("client TLS");
    let mut ch =
        vgpu_transport::Channel::connect_tls("127.0.0.1", port, &client, Duration::from_secs(5))
            .expect("handshake");
    Auth {
        purpose: purpose::SESSION,
        token: BearerToken::new(SECRET),
    }
    .write(&mut ch)
    .expect("auth");
    let admit = Admit::read(&mut ch).expect("admit");
    assert_eq!(admit.verdict, verdict::ADMITTED);
    assert_ne!(admit.port, 0);
    drop(ch);
    let worker = m.wait_worker(1, Duration::from_secs(10));
    // A stranger at the worker's port, without the ticket, is refused; one
    // that stalls is dropped after its own short deadline.
    let mut stranger = TcpStream::connect(("127.0.0.1", admit.port)).expect("connect");
    let _ = stranger.write_all(&[0u8; 64]);
    let _staller = TcpStream::connect(("127.0.0.1", admit.port)).expect("connect");
    assert!(
        common::wait_gone(worker, Duration::from_secs(30)),
        "the worker still runs after its admission deadline"
    );
    let log = m.log_text();
    assert!(log.contains("session connection refused"), "{log}");
    assert!(log.contains("did not connect with its ticket"), "{log}");
    // Gone, and reaped by the supervisor (its reaper may take a moment).
    let deadline = Instant::now() + Duration::from_secs(10);
    while !m.child_pids().is_empty() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    assert!(m.child_pids().is_empty(), "{:?}", m.child_pids());
}

/// NVML reaches a `tls://` mediator as the CUDA client does, and its answers
/// match the Driver API's of the same process.
#[test]
fn nvml_over_tls() {
    let dir = tempfile::tempdir().expect("temp dir");
    let h = start("server", &tokens_file(dir.path()));
    let tls = endpoint(h.mediator(), "tls");
    let mut cmd = h.command("python3");
    cmd.arg(common::repo_root().join("tests/python/nvml_ctypes.py"))
        .arg("basic")
        .env("VGPU_MEDIATOR", &tls)
        .env("VGPU_TLS_CA", fixture("ca.pem"))
        .env("VGPU_TOKEN", SECRET);
    let out = h.run(cmd);
    out.assert_success()
        .assert_line("ok name matches cuDeviceGetName")
        .assert_line("ok memory total matches cuDeviceTotalMem");
    let log = h.mediator().log_text();
    assert!(
        count(&log, "TLS client authenticated") >= 2,
        "NVML and CUDA sessions:\n{log}"
    );
}

/// `vgpu status` over TLS lists a live TLS session with transport `tls`.
#[test]
fn status_lists_a_live_tls_session() {
    let dir = tempfile::tempdir().expect("temp dir");
    let h = start("server", &tokens_file(dir.path()));
    let exe = common::build_c(dir.path(), "session_hold");
    let tls = endpoint(h.mediator(), "tls");
    let ca = fixture("ca.pem");
    let mut cmd = h.command(&exe);
    cmd.args(["4096", "1"])
        .env("VGPU_MEDIATOR", &tls)
        .env("VGPU_TLS_CA", &ca)
        .env("VGPU_TOKEN", SECRET);
    let mut holder = common::Running::spawn(cmd);
    let line = holder.expect_line("ready ", Duration::from_secs(30));
    let pid: u64 = line["ready ".len()..].trim().parse().expect("a pid");
    let out = status_over_tls(&h, &tls, &ca, SECRET);
    out.assert_success();
    let report: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    let held = listed(&report, pid);
    assert_eq!(held["transport"], "tls", "{report:#}");
    holder.send("go");
    holder.expect_line("freed", Duration::from_secs(30));
    holder.send("go");
    holder.finish(Duration::from_secs(30)).assert_success();
}

/// A token that a `[[tenant]]` of the mediator file names (no `--tokens`
/// file) admits a TLS client as that tenant: `vgpu status` shows the
/// session under the tenant's name, and the tenant's memory limit holds.
#[test]
fn a_tenants_token_admits_a_tls_client_as_that_tenant() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("mediator.toml");
    std::fs::write(
        &config,
        format!(
            "[tls]\ncert = \"{}\"\nkey = \"{}\"\n\n[[tenant]]\nname = \"remote\"\n\
             tokens = [{{ name = \"gamma\", sha256 = \"{}\" }}]\nmemory_limit = \"8MiB\"\n",
            fixture("server.pem"),
            fixture("server.key"),
            sha256_hex("gamma-secret")
        ),
    )
    .expect("mediator file");
    let mut h = Harness::without_mediator();
    let config = config.display().to_string();
    h.mediator = Some(Mediator::start_with(
        &h.build,
        &["--config", &config, "--listen", "tls://127.0.0.1:0"],
    ));
    let tls = endpoint(h.mediator(), "tls");
    let ca = fixture("ca.pem");
    let exe = common::build_c(dir.path(), "session_hold");
    let client = |bytes: &str| {
        let mut cmd = h.command(&exe);
        cmd.args([bytes, "1"])
            .env("VGPU_MEDIATOR", &tls)
            .env("VGPU_TLS_CA", &ca)
            .env("VGPU_TOKEN", "gamma-secret");
        cmd
    };
    // Past the tenant's 8 MiB: refused with OUT_OF_MEMORY by its worker.
    let over = h.run(client(&(16 << 20).to_string()));
    assert!(
        over.stdout.contains("FAIL cu.MemAlloc(&d, bytes): 2 "),
        "a 16 MiB allocation under an 8 MiB limit:\n{}\n{}",
        over.stdout,
        over.stderr
    );
    let mut holder = common::Running::spawn(client("4096"));
    let line = holder.expect_line("ready ", Duration::from_secs(30));
    let pid: u64 = line["ready ".len()..].trim().parse().expect("a pid");
    let out = status_over_tls(&h, &tls, &ca, "gamma-secret");
    out.assert_success();
    let report: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    let held = listed(&report, pid);
    assert_eq!(
        (held["transport"].as_str(), held["tenant"].as_str()),
        (Some("tls"), Some("remote")),
        "{report:#}"
    );
    holder.send("go");
    holder.expect_line("freed", Duration::from_secs(30));
    holder.send("go");
    holder.finish(Duration::from_secs(30)).assert_success();
    // A token no tenant names is refused before any worker starts.
    let mut stranger = client("4096");
    stranger.env("VGPU_TOKEN", "unknown-secret");
    assert!(!h.run(stranger).status.success());
    logged(h.mediator(), "TLS client refused");
}

/// `vgpu status --json` against the `tls://` mediator `tls`, trusting `ca`
/// and presenting `token`.
fn status_over_tls(h: &Harness, tls: &str, ca: &str, token: &str) -> Output {
    let mut status = h.command(env!("CARGO_BIN_EXE_vgpu"));
    status
        .args(["status", "--json"])
        .env("VGPU_MEDIATOR", tls)
        .env("VGPU_TLS_CA", ca)
        .env("VGPU_TOKEN", token);
    h.run(status)
}

/// The session of client `pid` in a `vgpu status --json` report.
fn listed(report: &serde_json::Value, pid: u64) -> &serde_json::Value {
    report["sessions"]
        .as_array()
        .expect("a session list")
        .iter()
        .find(|s| s["client_pid"].as_u64() == Some(pid))
        .unwrap_or_else(|| panic!("client {pid} not listed: {report:#}"))
}
