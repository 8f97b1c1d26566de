//! Prometheus metrics: `--metrics ADDR:PORT` serves `GET /metrics` in the
//! Prometheus text format (`docs/metrics.md` lists the series).
//!
//! The values are read at each scrape from the census ([`Census::snapshot`]):
//! nothing is counted here. The HTTP side is a small HTTP/1.1 responder on
//! std: one thread per client, at most [`MAX_CLIENTS`] at once (more are
//! closed at once), each with [`REQUEST_DEADLINE`] to send a request head
//! of at most [`MAX_HEAD`] bytes, answered with `Connection: close`. A slow
//! or malformed client costs one of those threads for at most the deadline
//! and never reaches the supervisor's own threads.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use vgpu_proto::Op;

use crate::census::{Census, Snapshot};
use crate::sessions::{Direction, Refusal, LATENCY_BOUNDS_NS};
use crate::tenants::supervise::Tenancy;

/// Clients served at once.
pub const MAX_CLIENTS: usize = 32;
/// Time a client has to send its whole request head.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// Largest request head read.
pub const MAX_HEAD: usize = 8 << 10;

/// Binds `addr` and serves metrics on a thread of its own; returns the
/// bound address (port 0 replaced by the kernel's choice).
pub fn serve(
    addr: SocketAddr,
    census: Arc<Census>,
    tenancy: Arc<Tenancy>,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || accept_loop(&listener, &census, &tenancy))?;
    Ok(bound)
}

fn accept_loop(listener: &TcpListener, census: &Arc<Census>, tenancy: &Arc<Tenancy>) {
    let busy = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(stream) = stream else {
            // EMFILE and the like: wait instead of spinning.
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        if busy.fetch_add(1, Ordering::SeqCst) >= MAX_CLIENTS {
            busy.fetch_sub(1, Ordering::SeqCst);
            tracing::debug!("metrics: {MAX_CLIENTS} clients already; closing a new one");
            continue;
        }
        let (census, done) = (Arc::clone(census), Arc::clone(&busy));
        let tenancy = Arc::clone(tenancy);
        let spawned = std::thread::Builder::new()
            .name("metrics-client".into())
            .spawn(move || {
                if let Err(e) = answer(stream, &census, &tenancy) {
                    tracing::debug!("metrics client: {e}");
                }
                done.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            busy.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Reads one request head and answers it.
fn answer(mut stream: TcpStream, census: &Census, tenancy: &Tenancy) -> std::io::Result<()> {
    stream.set_write_timeout(Some(REQUEST_DEADLINE))?;
    let head = match read_head(&mut stream) {
        Ok(h) => h,
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return respond(
                &mut stream,
                "400 Bad Request",
                "text/plain",
                "bad request\n",
            );
        }
        Err(e) => return Err(e),
    };
    let request_line = head.lines().next().unwrap_or("");
    let mut parts = request_line.split(' ');
    let (method, target, version) = (parts.next(), parts.next(), parts.next());
    let version_ok = version.is_some_and(|v| v.starts_with("HTTP/1."));
    let path = target.map(|t| t.split('?').next().unwrap_or(t));
    match (method, path) {
        _ if !version_ok || parts.next().is_some() => respond(
            &mut stream,
            "400 Bad Request",
            "text/plain",
            "bad request\n",
        ),
        (Some("GET"), Some("/metrics")) => {
            let mut snap = census.snapshot();
            snap.tenants = tenancy.usage();
            let body = render(&snap);
            let kind = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;
            respond(&mut stream, "200 OK", kind, &body)
        }
        (Some("GET"), _) => respond(&mut stream, "404 Not Found", "text/plain", "try /metrics\n"),
        _ => respond(
            &mut stream,
            "405 Method Not Allowed",
            "text/plain",
            "GET only\n",
        ),
    }
}

/// The request head up to its blank line, within the deadline and the
/// size bound (`InvalidData` for anything that is not one).
fn read_head(stream: &mut TcpStream) -> std::io::Result<String> {
    let deadline = Instant::now() + REQUEST_DEADLINE;
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        let left = deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::TimedOut, "too slow"))?;
        stream.set_read_timeout(Some(left))?;
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "closed before the end of the head",
            ));
        }
        head.extend_from_slice(&buf[..n]);
        if head.len() > MAX_HEAD {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "request head too long",
            ));
        }
    }
    String::from_utf8(head)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8"))
}

fn respond(stream: &mut TcpStream, status: &str, kind: &str, body: &str) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}

/// The snapshot in the Prometheus text format.
pub fn render(snap: &Snapshot) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Series(snap.clone())));
    let mut out = String::new();
    if prometheus_client::encoding::prometheus_text::encode(&mut out, &registry).is_err() {
        tracing::warn!("metrics: encoding failed");
    }
    out
}

/// A sample's labels.
type Labels = Vec<(&'static str, String)>;

/// One scrape's values, encoded as the `vgpu_` series.
#[derive(Debug)]
struct Series(Snapshot);

/// Encodes one metric of `kind` with one sample per label set.
fn family<M: EncodeMetric>(
    encoder: &mut DescriptorEncoder,
    (name, help, kind): (&str, &str, MetricType),
    samples: impl IntoIterator<Item = (Labels, M)>,
) -> Result<(), std::fmt::Error> {
    let mut metric = encoder.encode_descriptor(name, help, None, kind)?;
    for (labels, value) in samples {
        if labels.is_empty() {
            value.encode(metric.encode_family(&Labels::new())?)?;
        } else {
            value.encode(metric.encode_family(&labels)?)?;
        }
    }
    Ok(())
}

fn counter(v: u64) -> ConstCounter<u64> {
    ConstCounter::new(v)
}

fn gauge(v: u64) -> ConstGauge<i64> {
    ConstGauge::new(i64::try_from(v).unwrap_or(i64::MAX))
}

impl Collector for Series {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let (snap, t) = (&self.0, &self.0.totals);
        let none = Vec::new;
        use MetricType::{Counter, Gauge};
        family(
            &mut e,
            ("vgpu_sessions_live", "Sessions being served now.", Gauge),
            [(none(), gauge(snap.live))],
        )?;
        family(
            &mut e,
            (
                "vgpu_sessions_started",
                "Sessions whose handshake completed.",
                Counter,
            ),
            [(none(), counter(t.started))],
        )?;
        family(
            &mut e,
            (
                "vgpu_sessions_refused",
                "Sessions that ended before they started, by reason.",
                Counter,
            ),
            Refusal::ALL.iter().map(|r| {
                (
                    vec![("reason", r.label().to_owned())],
                    counter(t.refused[r.index()]),
                )
            }),
        )?;
        family(
            &mut e,
            (
                "vgpu_worker_crashes",
                "Workers that ended by a signal or a panic.",
                Counter,
            ),
            [(none(), counter(t.crashes))],
        )?;
        family(
            &mut e,
            (
                "vgpu_device_memory_used_bytes",
                "Device memory held by the live sessions of each uid (tenant).",
                Gauge,
            ),
            snap.memory_by_uid
                .iter()
                .map(|&(uid, bytes)| (vec![("uid", uid.to_string())], gauge(bytes))),
        )?;
        family(
            &mut e,
            (
                "vgpu_device_memory_used_by_device_bytes",
                "Device memory held by the live sessions of each uid, on each device (by UUID).",
                Gauge,
            ),
            snap.memory_by_device.iter().map(|((uid, uuid), bytes)| {
                let labels = vec![
                    ("uid", uid.to_string()),
                    ("device", vgpu_proto::nvml::uuid_string(uuid)),
                ];
                (labels, gauge(*bytes))
            }),
        )?;
        let tenant = |name: &str| vec![("tenant", name.to_owned())];
        family(
            &mut e,
            (
                "vgpu_tenant_device_memory_used_bytes",
                "Device memory held by each tenant's live sessions, as its quota counts it.",
                Gauge,
            ),
            snap.tenants
                .iter()
                .map(|u| (tenant(&u.name), gauge(u.memory_used))),
        )?;
        family(
            &mut e,
            (
                "vgpu_tenant_device_memory_limit_bytes",
                "Each tenant's device-memory limit (tenants that have one).",
                Gauge,
            ),
            snap.tenants
                .iter()
                .filter_map(|u| Some((tenant(&u.name), gauge(u.memory_limit?)))),
        )?;
        family(
            &mut e,
            (
                "vgpu_tenant_sessions_live",
                "Each tenant's live sessions.",
                Gauge,
            ),
            snap.tenants
                .iter()
                .map(|u| (tenant(&u.name), gauge(u.sessions))),
        )?;
        let by_op = |values: &[u64]| -> Vec<(Labels, ConstCounter<u64>)> {
            Op::ALL
                .iter()
                .filter_map(|&op| {
                    let v = *values.get(op as usize)?;
                    (v != 0).then(|| (vec![("op", op.name().to_owned())], counter(v)))
                })
                .collect()
        };
        family(
            &mut e,
            (
                "vgpu_calls",
                "Requests the workers ran, by operation.",
                Counter,
            ),
            by_op(&t.calls),
        )?;
        family(
            &mut e,
            (
                "vgpu_call_errors",
                "Requests that failed, by operation.",
                Counter,
            ),
            by_op(&t.errors),
        )?;
        family(
            &mut e,
            (
                "vgpu_copied_bytes",
                "Bytes copied by the workers' copy requests, by direction.",
                Counter,
            ),
            Direction::ALL.iter().map(|&d| {
                (
                    vec![("direction", d.label().to_owned())],
                    counter(t.copied[d as usize]),
                )
            }),
        )?;
        // Per-bucket counts: the encoder makes them cumulative.
        let buckets: Vec<(f64, u64)> = t
            .latency
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let bound = LATENCY_BOUNDS_NS
                    .get(i)
                    .map_or(f64::INFINITY, |&ns| ns as f64 / 1e9);
                (bound, n)
            })
            .collect();
        let count = t.latency.iter().fold(0u64, |a, &n| a.saturating_add(n));
        let mut m = e.encode_descriptor(
            "vgpu_lane_round_trip_seconds",
            "Time from reading a synchronous lane request to writing its reply \
             (one request in 16 of each lane is timed).",
            None,
            MetricType::Histogram,
        )?;
        m.encode_histogram::<Vec<(&str, String)>>(
            t.latency_sum_ns as f64 / 1e9,
            count,
            &buckets,
            None,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_series_is_rendered() {
        let mut snap = Snapshot {
            live: 2,
            memory_by_uid: vec![(1000, 1 << 20)],
            memory_by_device: vec![((1000, [0xab; 16]), 1 << 20)],
            ..Snapshot::default()
        };
        snap.totals.started = 5;
        snap.totals.refused[Refusal::Handshake.index()] = 1;
        snap.totals.calls[Op::MemAlloc as usize] = 3;
        snap.totals.errors[Op::MemAlloc as usize] = 1;
        snap.totals.copied[Direction::DtoH as usize] = 4096;
        snap.totals.latency[0] = 2;
        snap.totals.latency[3] = 1;
        snap.totals.latency_sum_ns = 9_000;
        snap.totals.refused[Refusal::NotAllowed.index()] = 4;
        snap.tenants = vec![
            crate::tenants::supervise::TenantUsage {
                name: "small".into(),
                memory_used: 6 << 20,
                memory_limit: Some(8 << 20),
                sessions: 2,
            },
            crate::tenants::supervise::TenantUsage {
                name: "open".into(),
                ..Default::default()
            },
        ];
        let text = render(&snap);
        for line in [
            "vgpu_sessions_live 2",
            "vgpu_sessions_started_total 5",
            "vgpu_sessions_refused_total{reason=\"handshake\"} 1",
            "vgpu_sessions_refused_total{reason=\"capacity\"} 0",
            "vgpu_worker_crashes_total 0",
            "vgpu_device_memory_used_bytes{uid=\"1000\"} 1048576",
            "vgpu_device_memory_used_by_device_bytes{uid=\"1000\",\
             device=\"GPU-abababab-abab-abab-abab-abababababab\"} 1048576",
            "vgpu_calls_total{op=\"MemAlloc\"} 3",
            "vgpu_call_errors_total{op=\"MemAlloc\"} 1",
            "vgpu_copied_bytes_total{direction=\"dtoh\"} 4096",
            "vgpu_lane_round_trip_seconds_bucket{le=\"1e-06\"} 2",
            "vgpu_lane_round_trip_seconds_bucket{le=\"1e-05\"} 3",
            "vgpu_lane_round_trip_seconds_bucket{le=\"+Inf\"} 3",
            "vgpu_lane_round_trip_seconds_count 3",
            "vgpu_sessions_refused_total{reason=\"not_allowed\"} 4",
            "vgpu_sessions_refused_total{reason=\"tenant_sessions\"} 0",
            "vgpu_tenant_device_memory_used_bytes{tenant=\"small\"} 6291456",
            "vgpu_tenant_device_memory_limit_bytes{tenant=\"small\"} 8388608",
            "vgpu_tenant_sessions_live{tenant=\"small\"} 2",
            "vgpu_tenant_device_memory_used_bytes{tenant=\"open\"} 0",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line:?} missing in:\n{text}"
            );
        }
        assert!(
            !text.contains("op=\"MemFree\""),
            "operations never called are left out"
        );
        assert!(
            !text.contains("vgpu_tenant_device_memory_limit_bytes{tenant=\"open\"}"),
            "no limit, no limit series"
        );
    }
}
