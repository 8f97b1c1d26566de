//! `vgpu bench` end to end without a GPU: both sides on the simulated device
//! (`--driver sim` for the mediator, `--native-driver sim` for the native
//! side, which then `dlopen`s libvgpu-sim.so directly through
//! VGPU_BENCH_LIBCUDA). The figures mean nothing here; the harness is what is
//! tested: the mediator, the C program compiled at run time, the table, the
//! JSON report, FAIL rows, deadlines and exit codes.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::Output;

const DEADLINE: Duration = Duration::from_secs(180);

/// `vgpu bench --driver sim --native-driver sim ARGS` with a private TMPDIR
/// and no VGPU_* or LD_LIBRARY_PATH from the test runner.
fn bench(tmp: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    common::build(); // the mediator, client and sim libraries beside vgpu
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vgpu"));
    cmd.args(["bench", "--driver", "sim", "--native-driver", "sim"])
        .args(args)
        .env("TMPDIR", tmp)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("VGPU_MEDIATOR")
        .env_remove("VGPU_TRANSPORT")
        .env_remove("VGPU_BENCH_LIBCUDA")
        .env_remove("VGPU_SIM_MEMORY_MB")
        .envs(env.iter().copied());
    common::run(cmd, DEADLINE)
}

/// The table rows of `figure` (lines whose first word is it).
fn rows<'a>(out: &'a Output, figure: &str) -> Vec<Vec<&'a str>> {
    out.stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.first() == Some(&figure))
        .collect()
}

fn number(s: &str, what: &str, out: &Output) -> f64 {
    let v: f64 = s
        .parse()
        .unwrap_or_else(|_| panic!("{what}: {s:?} is not a number\n{out}"));
    assert!(v.is_finite() && v > 0.0, "{what}: {v}\n{out}");
    v
}

#[test]
fn quick_run_prints_every_row_with_numbers_and_writes_json() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let json = tmp.path().join("bench.json");
    let logs = tmp.path().join("logs");
    let out = bench(
        tmp.path(),
        &[
            "--quick",
            "--only",
            "launch_sync,memcpy_8b",
            "--transports",
            "socket",
            "--rounds",
            "2",
            "--json",
            json.to_str().expect("utf-8 path"),
            "--log-dir",
            logs.to_str().expect("utf-8 path"),
        ],
        &[],
    );
    out.assert_success();

    let figures = [
        ("launch_sync", "us"),
        ("memcpy_8b_pinned_h2d", "us"),
        ("memcpy_8b_pinned_d2h", "us"),
        ("memcpy_8b_pageable_h2d", "us"),
        ("memcpy_8b_pageable_d2h", "us"),
    ];
    let header = out
        .stdout
        .lines()
        .find(|l| l.starts_with("figure"))
        .unwrap_or_else(|| panic!("no table header\n{out}"));
    let header: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        header[..6],
        [
            "figure",
            "transport",
            "vgpu",
            "native",
            "vgpu/native",
            "unit"
        ]
    );
    for (figure, unit) in figures {
        let r = rows(&out, figure);
        assert_eq!(r.len(), 1, "{figure}: one row per transport\n{out}");
        let r = &r[0];
        assert_eq!(r[1], "socket", "{figure}\n{out}");
        let vgpu = number(r[2], "vgpu", &out);
        let native = number(r[3], "native", &out);
        let ratio = number(r[4], "ratio", &out);
        assert_eq!(r[5], unit, "{figure}\n{out}");
        // The printed ratio is vgpu/native of the printed values, to rounding.
        let want = vgpu / native;
        assert!(
            (ratio - want).abs() <= want * 0.02 + 0.002,
            "{figure}: ratio {ratio}, values give {want}\n{out}"
        );
    }
    assert!(!out.stdout.contains("FAIL"), "{out}");
    // The header names both sides' libraries: the sim directly, vgpu's client.
    assert!(out.stdout.contains("libvgpu_sim.so"), "{out}");
    assert!(out.stdout.contains("libvgpu_cuda.so"), "{out}");
    // A progress line per (benchmark, round, side), in order: each round
    // runs native, then every transport.
    let progress: Vec<String> = out
        .stderr
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    let mut after = 0;
    for line in [
        "[1/8] launch_sync 1/2 native",
        "[2/8] launch_sync 1/2 vgpu/socket",
        "[3/8] launch_sync 2/2 native",
        "[4/8] launch_sync 2/2 vgpu/socket",
        "[5/8] memcpy_8b 1/2 native",
        "[6/8] memcpy_8b 1/2 vgpu/socket",
        "[7/8] memcpy_8b 2/2 native",
        "[8/8] memcpy_8b 2/2 vgpu/socket",
    ] {
        let at = progress[after..]
            .iter()
            .position(|l| l.starts_with(line))
            .unwrap_or_else(|| panic!("no progress line {line:?} in order\n{out}"));
        after += at + 1;
    }

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON written"))
            .expect("valid JSON");
    assert_eq!(report["quick"], true);
    assert_eq!(report["failed"], 0);
    assert_eq!(report["transports"], serde_json::json!(["socket"]));
    assert_eq!(report["rounds"], 2);
    assert_eq!(report["model_rounds"], 1);
    let rows = report["figures"].as_array().expect("figures");
    assert_eq!(rows.len(), figures.len());
    for (row, (figure, unit)) in rows.iter().zip(figures) {
        assert_eq!(row["figure"], figure);
        assert_eq!(row["unit"], unit);
        assert_eq!(row["transport"], "socket");
        assert_eq!(row["vgpu_status"], "ok");
        assert_eq!(row["native_status"], "ok");
        for k in ["vgpu", "native", "ratio"] {
            assert!(row[k].as_f64().is_some_and(|v| v > 0.0), "{k}: {row}");
        }
        // The figure is the median (here: the mean) of the two rounds.
        for side in ["vgpu", "native"] {
            let runs: Vec<f64> = row[format!("{side}_runs")]
                .as_array()
                .expect("runs")
                .iter()
                .map(|v| v.as_f64().expect("number"))
                .collect();
            assert_eq!(runs.len(), 2, "{side}: {row}");
            let mid = row[side].as_f64().expect("value");
            assert!(
                (mid - (runs[0] + runs[1]) / 2.0).abs() <= 1e-9 * mid,
                "{side}: {row}"
            );
        }
    }
    assert!(report["native"]["library"]
        .as_str()
        .is_some_and(|l| l.ends_with("libvgpu_sim.so")));

    let runs = std::fs::read_to_string(logs.join("runs.log")).expect("runs.log");
    assert!(runs.contains("=== launch_sync on vgpu/socket"), "{runs}");
    assert!(runs.contains("VGPU_TRANSPORT"), "{runs}");
    assert!(logs.join("mediator.log").exists());
}

#[test]
fn tcp_is_measured_over_a_loopback_connection_to_the_same_mediator() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let logs = tmp.path().join("logs");
    let out = bench(
        tmp.path(),
        &[
            "--quick",
            "--only",
            "launch_sync,memcpy_8b,cold_start",
            "--transports",
            "tcp,socket",
            "--log-dir",
            logs.to_str().expect("utf-8 path"),
        ],
        &[],
    );
    out.assert_success();
    for figure in ["launch_sync", "cold_start"] {
        let r = rows(&out, figure);
        assert_eq!(r.len(), 2, "{figure}: one row per transport\n{out}");
        assert_eq!((r[0][1], r[1][1]), ("tcp", "socket"), "{out}");
        for row in &r {
            number(row[2], "vgpu", &out);
            number(row[3], "native", &out);
        }
    }
    assert!(
        out.stdout.contains("and tcp://127.0.0.1:"),
        "the header names the TCP address\n{out}"
    );
    // The tcp runs' sessions came in over TCP (the supervisor logs the peer).
    let log = std::fs::read_to_string(logs.join("mediator.log")).expect("mediator.log");
    assert!(
        log.lines()
            .any(|l| l.contains("session accepted") && l.contains("127.0.0.1")),
        "{log}"
    );
}

#[test]
fn tls_is_measured_beside_tcp_over_loopback() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let logs = tmp.path().join("logs");
    let out = bench(
        tmp.path(),
        &[
            "--quick",
            "--only",
            "launch_sync,memcpy_8b,cold_start",
            "--transports",
            "tls,tcp",
            "--log-dir",
            logs.to_str().expect("utf-8 path"),
        ],
        &[],
    );
    out.assert_success();
    for figure in ["launch_sync", "cold_start"] {
        let r = rows(&out, figure);
        assert_eq!(r.len(), 2, "{figure}: one row per transport\n{out}");
        assert_eq!((r[0][1], r[1][1]), ("tls", "tcp"), "{out}");
        for row in &r {
            number(row[2], "vgpu", &out);
        }
    }
    assert!(out.stdout.contains("and tls://127.0.0.1:"), "{out}");
    // The tls runs authenticated with the run's client certificate and
    // reached their workers over TLS.
    let log = std::fs::read_to_string(logs.join("mediator.log")).expect("mediator.log");
    assert!(
        log.contains("TLS client authenticated") && log.contains("cert_name=vgpu-bench"),
        "{log}"
    );
    assert!(
        log.contains("session starting (remote client over TLS"),
        "{log}"
    );
}

#[test]
fn ivshmem_is_measured_through_a_stand_in_for_qemu() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let logs = tmp.path().join("logs");
    let out = bench(
        tmp.path(),
        &[
            "--quick",
            "--only",
            "launch_sync,memcpy_8b",
            "--transports",
            "ivshmem,rings",
            "--log-dir",
            logs.to_str().expect("utf-8 path"),
        ],
        &[],
    );
    out.assert_success();
    let r = rows(&out, "launch_sync");
    assert_eq!(r.len(), 2, "one row per transport\n{out}");
    assert_eq!((r[0][1], r[1][1]), ("ivshmem", "rings"), "{out}");
    for row in &r {
        number(row[2], "vgpu", &out);
    }
    // The ivshmem runs were guest sessions of the stand-in's device.
    let log = std::fs::read_to_string(logs.join("mediator.log")).expect("mediator.log");
    assert!(
        log.contains("ivshmem guest connected")
            && log.contains("session starting (process in a VM guest over ivshmem"),
        "{log}"
    );
}

#[test]
fn a_failing_figure_is_a_fail_row_and_the_run_goes_on() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // A 512 MiB simulated device cannot allocate 1 GiB, on either side.
    let out = bench(
        tmp.path(),
        &[
            "--quick",
            "--only",
            "alloc_1gb,sync_idle",
            "--transports",
            "socket",
        ],
        &[("VGPU_SIM_MEMORY_MB", "512")],
    );
    assert_eq!(out.status.code(), Some(1), "{out}");
    for figure in ["alloc_1gb", "free_1gb"] {
        let r = rows(&out, figure);
        assert_eq!(r.len(), 1, "{out}");
        assert_eq!(r[0][2..5], ["FAIL", "FAIL", "-"], "{out}");
        let line = out
            .stdout
            .lines()
            .find(|l| l.starts_with(figure))
            .unwrap_or_default();
        assert!(
            line.contains("FAIL native: ") && line.contains("CUDA_ERROR_OUT_OF_MEMORY"),
            "{line}"
        );
    }
    // sync_idle runs first and alloc_1gb after it; both are reported.
    let r = rows(&out, "sync_idle");
    number(r[0][2], "vgpu", &out);
    number(r[0][3], "native", &out);
    assert!(out.stderr.contains("2 of 3 figures failed"), "{out}");
}

#[test]
fn a_run_past_its_deadline_is_stopped_and_reported() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // A full memcpy_256mb run takes many seconds on the simulated device
    // over TCP.
    let out = bench(
        tmp.path(),
        &[
            "--only",
            "memcpy_256mb",
            "--transports",
            "tcp",
            "--timeout",
            "1",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{out}");
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("memcpy_256mb"))
        .unwrap_or_else(|| panic!("no memcpy_256mb row\n{out}"));
    // Over loopback TCP it takes several seconds, far longer than the
    // second it is given (natively it may fit).
    assert!(line.contains("FAIL vgpu: timed out after 1 s"), "{line}");
    assert!(out.elapsed < Duration::from_secs(60), "{out}");
}

#[test]
fn list_names_every_benchmark() {
    let out = common::run(
        {
            let mut c = Command::new(env!("CARGO_BIN_EXE_vgpu"));
            c.args(["bench", "--list"]);
            c
        },
        DEADLINE,
    );
    out.assert_success();
    for name in [
        "launch_1t",
        "launch_4t",
        "launch_sync",
        "graph_100",
        "sync_idle",
        "memcpy_8b",
        "memcpy_256mb",
        "alloc_4kb",
        "alloc_1mb",
        "alloc_1gb",
        "cold_start",
        "resnet50",
        "gpt2",
    ] {
        assert!(
            out.stdout.lines().any(|l| l.trim_start().starts_with(name)),
            "{name} missing\n{out}"
        );
    }
}
