//! Two processes, two rings: the parent streams 1M messages of varying sizes
//! to a child process over one ring; the child checks each against the
//! generator, folds it into a checksum and echoes it back over the other ring;
//! the parent checks every echo and, at the end, the child's checksum and
//! count. The memfds travel to the child over a Unix socket with `SCM_RIGHTS`,
//! as they will between the worker and the client.
//!
//! The child is this test binary again, run with `VGPU_RING_CHILD=<socket>` so
//! that only [`child_process_entry`] does anything.

use std::os::fd::AsFd;
use std::process::{Command, Stdio};
use std::time::Duration;

use vgpu_transport::{Channel, Consumer, Listener, Producer, Ring, WaitPolicy};

const CHILD_ENV: &str = "VGPU_RING_CHILD";
const MESSAGES: u64 = 1_000_000;
const RING_BYTES: usize = 64 << 10;

/// Generous: a wedged run fails instead of hanging the suite.
fn policy() -> WaitPolicy {
    WaitPolicy::default().with_timeout(Duration::from_secs(60))
}

/// Message `i`: its index, then 0..=199 bytes derived from it.
fn message(i: u64, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&i.to_le_bytes());
    let len = (i.wrapping_mul(0x9e37_79b9) >> 7) % 200;
    let mut x = i ^ 0x2545_f491_4f6c_dd1d;
    for _ in 0..len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.push(x.to_le_bytes()[0]);
    }
}

/// FNV-1a, folded over every message in order.
fn fold(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}
const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

#[test]
fn one_million_messages_each_way_between_processes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ring.sock");
    let listener = Listener::bind(&path).expect("bind");
    let exe = std::env::current_exe().expect("current_exe");
    let child = Command::new(exe)
        .args([
            "--exact",
            "child_process_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn child");
    let chan = listener.accept().expect("accept");

    let (to_child, fd_a) = Ring::create(RING_BYTES).expect("ring a");
    let (from_child, fd_b) = Ring::create(RING_BYTES).expect("ring b");
    chan.send_fd(fd_a.as_fd()).expect("send a");
    chan.send_fd(fd_b.as_fd()).expect("send b");
    drop((fd_a, fd_b));
    let tx: Producer = to_child.into_producer().expect("producer");
    let rx: Consumer = from_child.into_consumer().expect("consumer");

    let sender = std::thread::spawn(move || {
        let mut msg = Vec::new();
        let mut sum = FNV_START;
        for i in 0..MESSAGES {
            message(i, &mut msg);
            sum = fold(sum, &msg);
            tx.push(&[&msg], &policy()).expect("push to child");
        }
        sum
    });

    let mut got = Vec::new();
    let mut want = Vec::new();
    let mut sum = FNV_START;
    for i in 0..MESSAGES {
        rx.pop_into(&mut got, &policy()).expect("echo from child");
        message(i, &mut want);
        assert!(got == want, "echo {i} differs");
        sum = fold(sum, &got);
    }
    // The child's report: its count and checksum of what it received.
    rx.pop_into(&mut got, &policy()).expect("report");
    let sent_sum = sender.join().expect("sender");
    assert_eq!(sum, sent_sum, "echoed stream checksum");
    let mut report = MESSAGES.to_le_bytes().to_vec();
    report.extend_from_slice(&sent_sum.to_le_bytes());
    assert_eq!(got, report, "child's count and checksum");
    // Then the child closes its producer.
    assert!(matches!(
        rx.pop_into(&mut got, &policy()),
        Err(vgpu_transport::TransportError::PeerGone)
    ));

    let out = child.wait_with_output().expect("child exit");
    assert!(
        out.status.success(),
        "child failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The child's side; a no-op unless run by the test above.
#[test]
fn child_process_entry() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let chan = Channel::connect(path.as_ref()).expect("connect");
    let rx = Ring::map(chan.recv_fd().expect("fd a")).expect("map a");
    let tx = Ring::map(chan.recv_fd().expect("fd b")).expect("map b");
    let (rx, tx) = (
        rx.into_consumer().expect("consumer"),
        tx.into_producer().expect("producer"),
    );
    let mut got = Vec::new();
    let mut want = Vec::new();
    let mut sum = FNV_START;
    for i in 0..MESSAGES {
        rx.pop_into(&mut got, &policy()).expect("pop from parent");
        message(i, &mut want);
        assert!(got == want, "message {i} differs");
        sum = fold(sum, &got);
        tx.push(&[&got], &policy()).expect("echo");
    }
    tx.push(&[&MESSAGES.to_le_bytes(), &sum.to_le_bytes()], &policy())
        .expect("report");
}
