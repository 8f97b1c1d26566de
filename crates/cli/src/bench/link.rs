//! The raw TCP link that `--transports tcp` runs over, measured in the same
//! run: issue 15 asks bulk copies over TCP to reach 0.9× of it.
//!
//! Two threads of this process stream [`BYTES`] through a loopback TCP
//! connection, the bench's own path to its mediator, with large writes and
//! reads and no protocol: the most a vgpu copy over that link could move.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::time::Instant;

use serde_json::{json, Value};

use super::catalog::Figure;
use super::report::Row;

/// Bytes streamed per round, as the 256 MiB copy benchmark moves.
pub const BYTES: usize = 256 << 20;
/// Bytes per write and per read.
const PIECE: usize = 4 << 20;
/// vgpu's copies over TCP must reach this fraction of the raw link.
pub const TARGET: f64 = 0.9;

/// GB/s of one round: `bytes` from one thread to another over loopback TCP,
/// timed from the first write to the receiver's acknowledgement.
pub fn stream_once(bytes: usize) -> std::io::Result<f64> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let addr = listener.local_addr()?;
    let receiver = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut conn, _) = listener.accept()?;
        let mut buf = vec![0u8; PIECE];
        let mut got = 0;
        while got < bytes {
            let n = conn.read(&mut buf)?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            got += n;
        }
        conn.write_all(&[1])
    });
    let mut conn = TcpStream::connect(addr)?;
    conn.set_nodelay(true)?;
    // Touched before the clock starts, as a copy's source is.
    let buf = vec![0x5a_u8; PIECE];
    let start = Instant::now();
    let mut sent = 0;
    while sent < bytes {
        let n = PIECE.min(bytes - sent);
        conn.write_all(&buf[..n])?;
        sent += n;
    }
    let mut ack = [0u8; 1];
    conn.read_exact(&mut ack)?;
    let took = start.elapsed().as_secs_f64();
    receiver
        .join()
        .map_err(|_| std::io::Error::other("the receiving thread panicked"))??;
    Ok(bytes as f64 / took / 1e9)
}

/// The median GB/s of `rounds` rounds.
pub fn stream(bytes: usize, rounds: usize) -> std::io::Result<(f64, Vec<f64>)> {
    let mut runs = (0..rounds.max(1))
        .map(|_| stream_once(bytes))
        .collect::<std::io::Result<Vec<f64>>>()?;
    let each = runs.clone();
    Ok((super::median(&mut runs), each))
}

/// Whether `figure` is a bulk copy that the link bounds.
fn bulk(figure: &Figure) -> bool {
    figure.name.starts_with("memcpy_256mb_") && figure.unit == "GB/s"
}

/// The TCP rows' bulk copies against the raw link: `(figure, vgpu GB/s,
/// ratio)` for each measured one.
pub fn against(rows: &[Row], raw: f64) -> Vec<(&'static str, f64, f64)> {
    rows.iter()
        .filter(|r| r.transport == super::TCP && bulk(&r.figure))
        .filter_map(|r| {
            let v = r.vgpu.value()?;
            Some((r.figure.name, v, v / raw))
        })
        .collect()
}

/// The lines printed under the table.
pub fn lines(raw: f64, runs: &[f64], rows: &[Row]) -> Vec<String> {
    let each: Vec<String> = runs.iter().map(|v| format!("{v:.2}")).collect();
    let mut out = vec![format!(
        "raw loopback TCP (the tcp transport's link): {raw:.2} GB/s, median of [{}]",
        each.join(", ")
    )];
    for (name, v, ratio) in against(rows, raw) {
        let verdict = if ratio >= TARGET { "met" } else { "MISSED" };
        out.push(format!(
            "  {name:<27} over tcp {v:>6.2} GB/s = {ratio:.3}x raw TCP \
             (target >= {TARGET}x: {verdict})"
        ));
    }
    out
}

/// The link's entry in the JSON report.
pub fn json(raw: f64, runs: &[f64], rows: &[Row]) -> Value {
    json!({
        "raw_tcp_gbps": raw,
        "raw_tcp_runs": runs,
        "target_ratio": TARGET,
        "copies": against(rows, raw)
            .into_iter()
            .map(|(name, v, ratio)| json!({"figure": name, "gbps": v, "ratio": ratio}))
            .collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_through_loopback() {
        let gbps = stream_once(8 << 20).expect("loopback TCP");
        assert!(gbps > 0.0 && gbps.is_finite(), "{gbps}");
    }
}
