//! Replays the ivshmem fuzz corpus (`crates/transport/fuzz/corpus/ivshmem/`)
//! through the fuzz target's checks, on the stable toolchain: nothing
//! panics; `ok-*` seeds carry a header the guest accepts, `err-*` seeds one
//! it refuses. `VGPU_BLESS=1` writes the seeds again from the layout code.

use std::fs;
use std::path::PathBuf;

use vgpu_transport::ivshmem::fuzz::fuzz_check;
use vgpu_transport::ivshmem::{self, Layout, Owner};

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/ivshmem")
}

/// The seeds: (name, bytes).
fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let size = ivshmem::DEFAULT_SIZE;
    let l = Layout::for_size(size, ivshmem::DEFAULT_SLOTS, ivshmem::DEFAULT_RING, 0, 1)
        .expect("layout");
    let words =
        |ws: &[Owner]| -> Vec<u8> { ws.iter().flat_map(|o| o.encode().to_le_bytes()).collect() };
    let with = |bar: usize, header: &[u8], tail: &[u8]| -> Vec<u8> {
        let mut v = (bar as u64).to_le_bytes().to_vec();
        v.extend_from_slice(header);
        v.extend_from_slice(tail);
        v
    };
    let claim = |g, ready, pid| Owner {
        generation: g,
        ready,
        pid,
    };
    let life = words(&[
        claim(1, false, 0),
        claim(2, false, 77),
        claim(2, true, 77),
        claim(3, true, 0),
        claim(4, false, 0),
        claim(5, true, 78),
    ]);
    let mut bad_magic = l.header();
    bad_magic[0] ^= 0xff;
    let mut bad_ring = l.header();
    bad_ring[0x24] = 3;
    let mut garbage_ring = vec![0xa5u8; 64];
    garbage_ring.extend_from_slice(&(!0u64).to_le_bytes());
    vec![
        ("ok-default", with(size, &l.header(), &life)),
        (
            "ok-ring-garbage",
            with(size, &l.header(), &[life.clone(), garbage_ring].concat()),
        ),
        ("err-bad-magic", with(size, &bad_magic, &life)),
        ("err-bar-too-small", with(l.end() - 1, &l.header(), &[])),
        ("err-ring-capacity", with(size, &bad_ring, &[])),
        ("err-truncated", with(size, &l.header()[..0x20], &[])),
        ("err-empty", Vec::new()),
    ]
}

#[test]
fn ivshmem_corpus() {
    let dir = corpus();
    if std::env::var_os("VGPU_BLESS").is_some() {
        fs::create_dir_all(&dir).expect("corpus dir");
        for (name, bytes) in seeds() {
            fs::write(dir.join(name), bytes).expect("write seed");
        }
    }
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e} (VGPU_BLESS=1 writes it)", dir.display()))
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    let (mut ok, mut err) = (0, 0);
    for path in &files {
        let name = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let data = fs::read(path).expect("read seed");
        let verdict = fuzz_check(&data);
        if name.starts_with("ok-") {
            assert!(verdict.is_ok(), "{name}: {verdict:?}");
            ok += 1;
        } else if name.starts_with("err-") {
            assert!(verdict.is_err(), "{name} was accepted");
            err += 1;
        }
    }
    assert!(ok > 0 && err > 0, "the corpus needs ok-* and err-* seeds");
    // The committed seeds are the ones the layout code makes today.
    for (name, bytes) in seeds() {
        assert_eq!(
            fs::read(dir.join(name)).ok(),
            Some(bytes),
            "{name} is stale: VGPU_BLESS=1"
        );
    }
}
