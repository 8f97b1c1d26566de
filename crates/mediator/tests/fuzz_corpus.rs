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
