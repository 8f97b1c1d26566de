//! Replays the committed fuzz corpora (`crates/mediator/fuzz/corpus/`)
//! through the fuzz targets' checks on the stable toolchain: nothing
//! panics, and the seeds named `ok-*` are accepted openings.

use std::fs;
use std::path::PathBuf;

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut seeds: Vec<(String, Vec<u8>)> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let path = e.expect("corpus entry").path();
            let name = path
                .file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned();
            (name, fs::read(&path).expect("seed"))
        })
        .collect();
    seeds.sort();
    assert!(!seeds.is_empty(), "no seeds in {}", dir.display());
    seeds
}

#[test]
fn handshake_corpus() {
    for (name, data) in corpus("handshake") {
        vgpu_mediator::fuzz::handshake(&data);
        assert_eq!(
            name.starts_with("ok-"),
            vgpu_mediator::fuzz::handshake_accepts(&data),
            "{name}"
        );
    }
}

/// The simulated device built beside this test (`target/<profile>/`).
fn sim_library() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>");
    let sim = dir.join("libvgpu_sim.so");
    assert!(
        sim.is_file(),
        "{} is missing: run `cargo build --workspace` first",
        sim.display()
    );
    sim
}

/// `VGPU_BLESS=1` writes the worker's seeds again.
#[test]
fn worker_requests_corpus() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/worker_requests");
    if std::env::var_os("VGPU_BLESS").is_some() {
        fs::create_dir_all(&dir).expect("corpus dir");
        for (name, bytes) in vgpu_mediator::fuzz::worker_seeds() {
            fs::write(dir.join(name), bytes).expect("write seed");
        }
    }
    let sim = sim_library();
    for (name, data) in corpus("worker_requests") {
        eprintln!("{name}");
        vgpu_mediator::fuzz::worker_requests(&sim, &data);
    }
}
