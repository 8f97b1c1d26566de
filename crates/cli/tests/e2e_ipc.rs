//! Who may open an inter-process handle, through real mediators and two
//! client processes (`tests/python/ipc_peer.py`): a session of the
//! exporter's uid (here through a second mediator that shares the registry
//! directory), never one whose uid differs (the registry entry is rewritten
//! to another uid, as another tenant's export would read), never a TCP
//! session; what an importer opened outlives its exporter; and a killed
//! importer costs the exporter nothing.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Harness, Mediator};

fn peer_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/python/ipc_peer.py")
}

/// A peer process driven line by line.
struct Peer {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Peer {
    fn spawn(mut cmd: Command) -> Peer {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn python3");
        let input = child.stdin.take().expect("stdin");
        let output = BufReader::new(child.stdout.take().expect("stdout"));
        Peer {
            child,
            input,
            output,
        }
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.output.read_line(&mut l).expect("read a line");
        l.trim_end().to_owned()
    }

    /// Lets the peer go on past its wait.
    fn go_on(&mut self) {
        self.input.write_all(b"\n").expect("write a line");
        self.input.flush().expect("flush");
    }

    fn finish(mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(st) = self.child.try_wait().expect("wait") {
                assert!(st.success(), "peer failed: {st}");
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        panic!("peer did not exit");
    }
}

fn peer(h: &Harness, endpoint: &str, args: &[&str]) -> Peer {
    let mut cmd = h.command("python3");
    cmd.arg(peer_script())
        .args(args)
        .env("VGPU_MEDIATOR", endpoint);
    Peer::spawn(cmd)
}

/// Starts an exporter on `endpoint`; gives it and its handle's hex.
fn exporter(h: &Harness, endpoint: &str) -> (Peer, String) {
    let mut p = peer(h, endpoint, &["export"]);
    let line = p.line();
    let hex = line
        .strip_prefix("handle ")
        .unwrap_or_else(|| panic!("exporter said {line:?}"))
        .to_owned();
    (p, hex)
}

/// A harness whose mediator keeps its IPC registry in `dir`. The tests
/// read and rewrite the registry in a private temporary directory of
/// their own uid, which an unprivileged worker user could not reach: the
/// workers keep the test's uid (`--worker-user=`).
fn with_registry(dir: &Path, extra: &[&str]) -> Harness {
    let mut h = Harness::without_mediator();
    let mut args = vec![
        "--worker-user=",
        "--ipc-dir",
        dir.to_str().expect("utf-8 path"),
    ];
    args.extend_from_slice(extra);
    h.mediator = Some(Mediator::start_with(&h.build, &args));
    h
}

/// The registry's entries, rewritten as if another uid had exported them.
fn as_other_uid(dir: &Path) {
    for e in std::fs::read_dir(dir).expect("registry dir") {
        let path = e.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("entry text");
        let (uid, rest) = text.split_once(' ').expect("uid first");
        let other = uid.parse::<u32>().expect("uid") ^ 1;
        std::fs::write(&path, format!("{other} {rest}")).expect("rewrite");
    }
}

/// Two mediators of the host share one registry: memory exported in a
/// session of one opens in a session of the other, reads the exporter's
/// bytes, and stays readable after the exporter has exited.
#[test]
fn opens_across_mediators_and_outlives_its_exporter() {
    let dir = tempfile::tempdir().expect("temp dir");
    let registry = dir.path().join("ipc");
    let h = with_registry(&registry, &[]);
    let second = Mediator::start_with(
        &h.build,
        &[
            "--worker-user=",
            "--ipc-dir",
            registry.to_str().expect("utf-8"),
        ],
    );
    let (mut exp, hex) = exporter(&h, &h.mediator().endpoint());
    let mut imp = peer(&h, &second.endpoint(), &["open", &hex]);
    assert_eq!(imp.line(), "open 0");
    exp.go_on();
    exp.finish();
    imp.go_on();
    assert_eq!(imp.line(), "byte 0x5a", "the pages outlive the exporter");
    assert_eq!(imp.line(), "close 0");
    imp.finish();
    // The exporter's session ended: its handle no longer opens.
    let mut late = peer(&h, &second.endpoint(), &["open", &hex]);
    assert_eq!(late.line(), "open 1", "CUDA_ERROR_INVALID_VALUE");
    late.finish();
}

/// An importer killed while it holds the exporter's memory costs the
/// exporter nothing: its session carries on, another process opens the same
/// handle and reads the bytes, and the exporter still frees and exits
/// cleanly.
#[test]
fn a_killed_importer_leaves_the_exporter_whole() {
    let dir = tempfile::tempdir().expect("temp dir");
    let registry = dir.path().join("ipc");
    let h = with_registry(&registry, &[]);
    let endpoint = h.mediator().endpoint();
    let (mut exp, hex) = exporter(&h, &endpoint);
    let mut doomed = peer(&h, &endpoint, &["open", &hex]);
    assert_eq!(doomed.line(), "open 0");
    doomed.child.kill().expect("kill the importer");
    doomed.child.wait().expect("reap the importer");
    let mut next = peer(&h, &endpoint, &["open", &hex]);
    assert_eq!(next.line(), "open 0", "the handle still opens");
    next.go_on();
    assert_eq!(next.line(), "byte 0x5a");
    assert_eq!(next.line(), "close 0");
    next.finish();
    exp.go_on();
    exp.finish();
}

/// A handle of another tenant (uid) is refused with
/// `CUDA_ERROR_INVALID_VALUE` before the driver sees it, and the worker's log
/// line names both sessions.
#[test]
fn another_uid_is_refused_and_logged() {
    let dir = tempfile::tempdir().expect("temp dir");
    let registry = dir.path().join("ipc");
    let h = with_registry(&registry, &[]);
    let endpoint = h.mediator().endpoint();
    let (mut exp, hex) = exporter(&h, &endpoint);
    as_other_uid(&registry);
    let mut imp = peer(&h, &endpoint, &["open", &hex]);
    assert_eq!(imp.line(), "open 1", "CUDA_ERROR_INVALID_VALUE");
    imp.finish();
    exp.go_on();
    exp.finish();
    let log = h.mediator().log_text();
    let line = log
        .lines()
        .find(|l| l.contains("belongs to another tenant's session"))
        .unwrap_or_else(|| panic!("no refusal logged:\n{log}"));
    let workers = h.mediator().worker_pids();
    assert_eq!(workers.len(), 2, "{log}");
    for w in workers {
        assert!(
            line.contains(&format!("worker {w} ")),
            "{w} not named: {line}"
        );
    }
}

/// A TCP session cannot reach the host's handles: the driver's answer for a
/// handle it cannot open, and a log line that says why.
#[test]
fn a_tcp_session_cannot_open() {
    let dir = tempfile::tempdir().expect("temp dir");
    let registry = dir.path().join("ipc");
    let h = with_registry(&registry, &["--listen", "tcp://127.0.0.1:0"]);
    let (mut exp, hex) = exporter(&h, &h.mediator().endpoint());
    let mut imp = peer(&h, &h.mediator().tcp_endpoint(), &["open", &hex]);
    assert_eq!(imp.line(), "open 1", "CUDA_ERROR_INVALID_VALUE");
    imp.finish();
    exp.go_on();
    exp.finish();
    let log = h.mediator().log_text();
    assert!(
        log.contains("a TCP session cannot reach inter-process handles"),
        "{log}"
    );
}
