//! `VGPU_TRACE=FILE`: one line per CUDA call (name, result, microseconds,
//! thread, and the round trips it made when any), appended as it happens,
//! and a per-function summary at exit, so a user whose program fails can
//! see the first unsupported or failing call, and one whose program is slow
//! which calls wait for the worker. The summary ends with the session's
//! lane counts: lanes opened, calls that waited for a reply (round trips)
//! and calls posted without waiting.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::sync::Mutex;
use std::time::Instant;

use crate::runtime::runtime;

/// The open trace file and the per-function counts.
pub struct Trace {
    file: Mutex<File>,
    /// Per function: calls, failures, round trips.
    counts: Mutex<BTreeMap<&'static str, [u64; 3]>>,
}

thread_local! {
    /// Round trips the calling thread made since its traced call began.
    static WAITED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts `n` round trips of the calling thread's traced call.
pub fn waited(n: u64) {
    let _ = WAITED.try_with(|w| w.set(w.get() + n));
}

impl Trace {
    /// Opens the trace file and arranges the summary at exit.
    pub fn open(path: &std::path::Path) -> Option<Trace> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok()?;
        // SAFETY: `summary_at_exit` is an `extern "C" fn()` that only reads the
        // runtime, which lives for the whole process.
        unsafe { libc::atexit(summary_at_exit) };
        Some(Trace {
            file: Mutex::new(file),
            counts: Mutex::new(BTreeMap::new()),
        })
    }

    fn record(&self, name: &'static str, args: &str, result: u32, micros: u128, trips: u64) {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let what = vgpu_abi::errors::name(vgpu_abi::types::CUresult(result))
            .map_or("?".into(), |c| c.to_string_lossy());
        let waited = if trips > 0 {
            format!(" trips={trips}")
        } else {
            String::new()
        };
        let line =
            format!("{name} -> {result} {what} {micros}us tid={tid}{waited} args=({args})\n");
        if let Ok(mut f) = self.file.lock() {
            let _ = f.write_all(line.as_bytes());
        }
        if let Ok(mut c) = self.counts.lock() {
            let e = c.entry(name).or_default();
            e[0] += 1;
            e[1] += u64::from(result != 0);
            e[2] += trips;
        }
    }
}

/// Runs `body` and records it when tracing is on.
pub fn traced(
    name: &'static str,
    args: impl FnOnce() -> String,
    body: impl FnOnce() -> vgpu_abi::types::CUresult,
) -> vgpu_abi::types::CUresult {
    let Some(t) = runtime().trace.as_ref() else {
        return body();
    };
    let args = args();
    // A call made inside another traced call counts its own round trips
    // and leaves the outer one's.
    let outer = WAITED.try_with(|w| w.replace(0)).unwrap_or(0);
    let start = Instant::now();
    let r = body();
    let micros = start.elapsed().as_micros();
    let trips = WAITED.try_with(|w| w.replace(outer)).unwrap_or(0);
    t.record(name, &args, r.0, micros, trips);
    r
}

extern "C" fn summary_at_exit() {
    let Some(t) = runtime().trace.as_ref() else {
        return;
    };
    let mut out = String::from("== vgpu call summary: calls failures round-trips function\n");
    if let Ok(c) = t.counts.lock() {
        for (name, [calls, failures, trips]) in c.iter() {
            out.push_str(&format!("{calls:>8} {failures:>8} {trips:>8} {name}\n"));
        }
    }
    if let Ok(s) = runtime().session() {
        let l = &s.lanes;
        let n = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
        out.push_str(&format!(
            "== vgpu lanes: {} opened on {}, {} round trips, {} posted, {} staged\n",
            n(&l.opened),
            if l.rings() {
                "rings"
            } else if s.remote {
                "TCP"
            } else {
                "sockets"
            },
            n(&l.round_trips),
            n(&l.posted),
            n(&s.staging.staged)
        ));
    }
    if let Ok(mut f) = t.file.lock() {
        let _ = f.write_all(out.as_bytes());
    }
}

/// One argument for the trace: integers, handles and pointers (every value of
/// 1, 2, 4 or 8 bytes) in hex; anything larger by its size only.
pub fn describe<T>(v: &T) -> String {
    let p = (v as *const T).cast::<u8>();
    // SAFETY: `v` is a live value of `size_of::<T>()` bytes; scalar argument
    // types of those sizes have no padding, so every byte is initialised.
    unsafe {
        match std::mem::size_of::<T>() {
            1 => format!("{:#x}", p.read()),
            2 => format!("{:#x}", p.cast::<u16>().read_unaligned()),
            4 => format!("{:#x}", p.cast::<u32>().read_unaligned()),
            8 => format!("{:#x}", p.cast::<u64>().read_unaligned()),
            n => format!("<{n} bytes>"),
        }
    }
}
