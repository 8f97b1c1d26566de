//! The raw TCP link that `--transports tcp` runs over, measured in the same
//! run: issue 15 asks bulk copies over TCP to reach 0.9× of it.
//!
//! Two threads of this process stream [`BYTES`] through a loopback TCP
//! connection, the bench's own path to its mediator, with large writes and
//! reads and no protocol: the most a vgpu copy over that link could move.
//! They stream it twice over:
//! - **as a copy moves it** ([`Link::copy`], the yardstick): from a source
//!   of [`BYTES`] into a destination of [`BYTES`], as the 256 MiB copy
//!   benchmark's bytes leave and reach memory;
//! - **through one buffer of [`PIECE`] each side** ([`Link::cached`]): the
//!   same bytes, with both ends' buffers staying in the CPU's caches. On
//!   an H100 host this ran 1.3× faster than the copy-sized stream (5.1
//!   against 3.9 GB/s): the kernel's two copies of each byte are cheaper
//!   between cached buffers than between memory. A copy's bytes come from
//!   and go to memory, so it is measured against the first; the second is
//!   printed beside it.

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
/// from a source of `buffer` bytes into a destination of as many (each
/// walked through [`PIECE`] at a time, from its start again at its end),
/// timed from the first write to the receiver's acknowledgement.
pub fn stream_once(bytes: usize, buffer: usize) -> std::io::Result<f64> {
    let buffer = buffer.max(PIECE);
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let addr = listener.local_addr()?;
    // Touched before the clock starts, as a copy's destination is.
    let mut dst = vec![1u8; buffer];
    let receiver = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut conn, _) = listener.accept()?;
        let mut got = 0;
        while got < bytes {
            let at = got % buffer;
            let n = conn.read(&mut dst[at..(at + PIECE).min(buffer)])?;
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
    let src = vec![0x5a_u8; buffer];
    let start = Instant::now();
    let mut sent = 0;
    while sent < bytes {
        let at = sent % buffer;
        let n = PIECE.min(bytes - sent).min(buffer - at);
        conn.write_all(&src[at..at + n])?;
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

/// A median of rounds and every round's GB/s.
pub type Rounds = (f64, Vec<f64>);

/// The link, measured both ways (module documentation).
pub struct Link {
    /// From a [`BYTES`] source into a [`BYTES`] destination: the yardstick.
    pub copy: Rounds,
    /// Through one [`PIECE`] buffer each side.
    pub cached: Rounds,
}

/// The link over `rounds` rounds each way, the two ways taking turns.
pub fn stream(rounds: usize) -> std::io::Result<Link> {
    let (mut copy, mut cached) = (Vec::new(), Vec::new());
    for _ in 0..rounds.max(1) {
        copy.push(stream_once(BYTES, BYTES)?);
        cached.push(stream_once(BYTES, PIECE)?);
    }
    let median = |runs: Vec<f64>| (super::median(&mut runs.clone()), runs);
    Ok(Link {
        copy: median(copy),
        cached: median(cached),
    })
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
pub fn lines(link: &Link, rows: &[Row]) -> Vec<String> {
    let each = |runs: &[f64]| {
        let v: Vec<String> = runs.iter().map(|v| format!("{v:.2}")).collect();
        v.join(", ")
    };
    let ((raw, runs), (cached, cached_runs)) = (&link.copy, &link.cached);
    let mut out = vec![
        format!(
            "raw loopback TCP (the tcp transport's link), {} MiB from one buffer into another \
             as a copy moves them: {raw:.2} GB/s, median of [{}]",
            BYTES >> 20,
            each(runs)
        ),
        format!(
            "  the same bytes through one {} MiB buffer each side, which stay in the CPU's \
             caches: {cached:.2} GB/s, median of [{}]",
            PIECE >> 20,
            each(cached_runs)
        ),
    ];
    for (name, v, ratio) in against(rows, *raw) {
        let verdict = if ratio >= TARGET { "met" } else { "MISSED" };
        out.push(format!(
            "  {name:<27} over tcp {v:>6.2} GB/s = {ratio:.3}x raw TCP \
             (target >= {TARGET}x: {verdict}); {:.3}x the cached stream",
            v / cached
        ));
    }
    out
}

/// The link's entry in the JSON report.
pub fn json(link: &Link, rows: &[Row]) -> Value {
    let ((raw, runs), (cached, cached_runs)) = (&link.copy, &link.cached);
    json!({
        "raw_tcp_gbps": raw,
        "raw_tcp_runs": runs,
        "raw_tcp_buffer_bytes": BYTES,
        "cached_tcp_gbps": cached,
        "cached_tcp_runs": cached_runs,
        "cached_tcp_buffer_bytes": PIECE,
        "target_ratio": TARGET,
        "copies": against(rows, *raw)
            .into_iter()
            .map(|(name, v, ratio)| json!({
                "figure": name,
                "gbps": v,
                "ratio": ratio,
                "ratio_to_cached": v / cached,
            }))
            .collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_through_loopback() {
        for buffer in [PIECE, 3 * PIECE / 2, 8 << 20] {
            let gbps = stream_once(10 << 20, buffer).expect("loopback TCP");
            assert!(gbps > 0.0 && gbps.is_finite(), "{gbps}");
        }
    }
}
