//! Replays the shared-memory ring fuzz corpus
//! (`crates/transport/fuzz/corpus/shm_ring/`) through the fuzz target's
//! check on the stable toolchain: neither end of the ring panics or
//! misbehaves under a peer that forges its indices.

use std::fs;
use std::path::PathBuf;

use vgpu_transport::shm_ring::fuzz::fuzz_check;

#[test]
fn ring_corpus() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/shm_ring");
    let mut n = 0;
    for e in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let data = fs::read(e.expect("entry").path()).expect("seed");
        fuzz_check(&data);
        n += 1;
    }
    assert!(n > 0, "no seeds in {}", dir.display());
}
