//! Shared-memory ring benchmarks (CPU only; both ends are threads of this
//! process on two mappings of the same memfds, exactly as two processes would
//! map them).
//!
//! - `rtt_64B/*`: a 64-byte request over one ring, echoed back over a second,
//!   with busy polling, with futex sleeps only (spin 0), and, for comparison in
//!   the same run, over a Unix socket pair and as a bare one-cache-line
//!   ping-pong (the hardware floor for any shared-memory channel).
//! - `pipelined_64B`: 64-byte messages with no reply awaited.
//! - `throughput_1MiB`: 1 MiB messages through a 4 MiB ring.
//!
//! Short by default (about 15 s): `cargo bench -p vgpu-transport --bench ring`.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use vgpu_transport::{Channel, Consumer, Producer, Ring, TransportError, WaitPolicy};

fn ring(cap: usize) -> (Producer, Consumer) {
    let (a, fd) = Ring::create(cap).expect("create");
    let b = Ring::map(&fd).expect("map");
    (
        a.into_producer().expect("producer"),
        b.into_consumer().expect("consumer"),
    )
}

/// An echo thread: returns every message of the request ring on the response
/// ring until the request producer is dropped.
fn echo(policy: WaitPolicy) -> (Producer, Consumer, JoinHandle<()>) {
    let (req_tx, req_rx) = ring(4096);
    let (resp_tx, resp_rx) = ring(4096);
    let t = std::thread::spawn(move || {
        let mut buf = Vec::with_capacity(64);
        loop {
            match req_rx.pop_into(&mut buf, &policy) {
                Ok(()) => resp_tx.push(&[&buf], &policy).expect("echo"),
                Err(TransportError::PeerGone) => return,
                Err(e) => panic!("echo: {e}"),
            }
        }
    });
    (req_tx, resp_rx, t)
}

fn rtt(c: &mut Criterion) {
    let mut g = c.benchmark_group("rtt_64B");
    let msg = [0x5au8; 64];
    for (name, policy) in [
        ("ring_busy", WaitPolicy::busy()),
        ("ring_futex", WaitPolicy::sleep()),
    ] {
        let (tx, rx, t) = echo(policy);
        let mut buf = Vec::with_capacity(64);
        g.bench_function(name, |b| {
            b.iter(|| {
                tx.push(&[&msg], &policy).expect("push");
                rx.pop_into(&mut buf, &policy).expect("pop");
            })
        });
        drop(tx);
        t.join().expect("echo thread");
    }
    // The hardware floor, in the same run: one cache line each way.
    let ping = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let pong = Arc::clone(&ping);
    let t = std::thread::spawn(move || {
        let mut seen = 0;
        loop {
            let v = pong[0].load(Ordering::Acquire);
            if v == u64::MAX {
                return;
            }
            if v != seen {
                seen = v;
                pong[1].store(v, Ordering::Release);
            }
            std::hint::spin_loop();
        }
    });
    let mut n = 0u64;
    g.bench_function("one_line_floor", |b| {
        b.iter(|| {
            n += 1;
            ping[0].store(n, Ordering::Release);
            while ping[1].load(Ordering::Acquire) != n {
                std::hint::spin_loop();
            }
        })
    });
    ping[0].store(u64::MAX, Ordering::Release);
    t.join().expect("ping thread");

    let (mut a, mut b) = Channel::pair().expect("socketpair");
    let t = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        while b.read_exact(&mut buf).is_ok() {
            b.write_all(&buf).expect("echo");
        }
    });
    let mut buf = [0u8; 64];
    g.bench_function("unix_socket", |bench| {
        bench.iter(|| {
            a.write_all(&msg).expect("write");
            a.read_exact(&mut buf).expect("read");
        })
    });
    drop(a);
    t.join().expect("socket echo thread");
    g.finish();
}

/// A sink thread that pops until the producer is dropped, counting messages.
fn sink(cap: usize) -> (Producer, Arc<AtomicU64>, JoinHandle<()>) {
    let (tx, rx) = ring(cap);
    let count = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&count);
    let t = std::thread::spawn(move || {
        let mut buf = Vec::new();
        loop {
            match rx.pop_into(&mut buf, &WaitPolicy::default()) {
                Ok(()) => {
                    seen.fetch_add(1, Ordering::Release);
                }
                Err(TransportError::PeerGone) => return,
                Err(e) => panic!("sink: {e}"),
            }
        }
    });
    (tx, count, t)
}

/// Pushes `iters` copies of `msg` and waits until the sink has taken them all.
fn stream(tx: &Producer, count: &AtomicU64, msg: &[u8], iters: u64) -> Duration {
    let start = Instant::now();
    let target = count.load(Ordering::Acquire) + iters;
    for _ in 0..iters {
        tx.push(&[msg], &WaitPolicy::default()).expect("push");
    }
    while count.load(Ordering::Acquire) < target {
        std::hint::spin_loop();
    }
    start.elapsed()
}

fn throughput(c: &mut Criterion) {
    let mut g = c.benchmark_group("stream");
    let small = [0xa5u8; 64];
    let (tx, count, t) = sink(64 << 10);
    g.throughput(Throughput::Elements(1));
    g.bench_function("pipelined_64B", |b| {
        b.iter_custom(|n| stream(&tx, &count, &small, n))
    });
    drop(tx);
    t.join().expect("sink");

    let big = vec![0x3cu8; 1 << 20];
    let (tx, count, t) = sink(4 << 20);
    g.throughput(Throughput::Bytes(1 << 20));
    g.bench_function("throughput_1MiB", |b| {
        b.iter_custom(|n| stream(&tx, &count, &big, n))
    });
    drop(tx);
    t.join().expect("sink");
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
}

criterion_group! { name = benches; config = config(); targets = rtt, throughput }
criterion_main!(benches);
