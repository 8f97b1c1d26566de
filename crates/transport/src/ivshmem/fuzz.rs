//! The checks of the ivshmem fuzz target (`crates/transport/fuzz`), kept in
//! the library so that the corpus replay test runs exactly the code the
//! fuzzer runs.
//!
//! Input: 8 bytes of BAR size (little-endian), then a device header as a
//! guest would find it in BAR2, then any number of 8-byte owner words as a
//! guest could write them into the region table, then (whatever is left)
//! bytes written over a ring that the host then binds and reads.

use std::os::fd::AsFd;

use super::{action, doorbell_value, parse_doorbell, Action, Layout, Owner};
use crate::shm_ring::{Ring, SharedMem, HEADER_LEN};

/// Bytes of the header part of an input.
pub const HEADER_BYTES: usize = 0x30;
/// Owner words an input carries, at most.
const MAX_WORDS: usize = 64;

/// Runs every check on `data`: never panics on any input; `Err` when the
/// device header is refused (`err-*` seeds), `Ok` when it parses (`ok-*`).
pub fn fuzz_check(data: &[u8]) -> Result<(), String> {
    let (size, rest) = data.split_at(data.len().min(8));
    let mut size8 = [0u8; 8];
    size8[..size.len()].copy_from_slice(size);
    let bar_len = usize::try_from(u64::from_le_bytes(size8)).unwrap_or(usize::MAX);
    let (header, rest) = rest.split_at(rest.len().min(HEADER_BYTES));
    let parsed = Layout::parse(header, bar_len);
    if let Ok(l) = &parsed {
        check_layout(l, bar_len);
    }
    let words: Vec<u64> = rest
        .chunks_exact(8)
        .take(MAX_WORDS)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect();
    check_table(&words);
    let ring_bytes = rest.get(words.len() * 8..).unwrap_or(&[]);
    check_ring(ring_bytes);
    parsed.map(drop).map_err(|e| e.to_string())
}

/// A parsed layout keeps every ring inside the BAR and re-encodes to itself.
fn check_layout(l: &Layout, bar_len: usize) {
    assert!(l.end() <= bar_len, "regions past the BAR");
    for r in 0..l.regions {
        for s in 0..l.slots {
            for up in [true, false] {
                let off = l.ring_offset(r, s, up).expect("inside the layout");
                assert!(off.is_multiple_of(4096), "a misaligned ring");
                assert!(
                    off + HEADER_LEN + l.ring_capacity <= l.end(),
                    "a ring past the regions"
                );
            }
        }
        assert!(l.vector(r) < l.vectors);
    }
    assert_eq!(Layout::parse(&l.header(), bar_len), Ok(*l));
}

/// The host's decisions over a sequence of owner words for one region: a
/// worker starts only for a ready, claimed word and only when none runs;
/// a word is freed only when no worker runs.
fn check_table(words: &[u64]) {
    let mut served: Option<u64> = None;
    let mut worker_alive = false;
    for &w in words {
        let o = Owner::decode(w);
        assert_eq!(o.encode(), w, "owner words round-trip");
        match action(w, if worker_alive { served } else { None }) {
            Action::Serve(x) => {
                assert!(!worker_alive && o.serve() && x == w);
                served = Some(w);
                worker_alive = true;
            }
            Action::Free(x) => assert!(!worker_alive && x == w && o.pid == 0 && o.ready),
            Action::End => {
                assert!(worker_alive && served != Some(w));
                worker_alive = false; // It exits; the next word is judged afresh.
            }
            Action::Keep => {}
        }
        let (p, v) = parse_doorbell(u32::try_from(w & 0xffff_ffff).unwrap_or(0));
        assert_eq!(parse_doorbell(doorbell_value(p, v)), (p, v));
    }
}

/// A ring whose header and data a guest wrote: the host binds it (or
/// refuses it) and takes what it can, without panicking or reading
/// outside the window.
fn check_ring(bytes: &[u8]) {
    const CAP: usize = 4096;
    let len = 2 * (HEADER_LEN + CAP);
    let Ok(fd) = rustix::fs::memfd_create("fuzz", rustix::fs::MemfdFlags::CLOEXEC) else {
        return;
    };
    if rustix::fs::ftruncate(&fd, len as u64).is_err() {
        return;
    }
    let Ok(mem) = SharedMem::map(fd.as_fd(), len) else {
        return;
    };
    let Ok(fresh) = Ring::init_at(&mem, 0, CAP, None) else {
        return;
    };
    drop(fresh);
    // The guest overwrites what it likes, from the indices on (a magic it
    // breaks makes the bind fail, which is also fine).
    let at = 0x80usize.min(len);
    let n = bytes.len().min(HEADER_LEN + CAP - at);
    assert!(mem.write(at, &bytes[..n]));
    let Ok(ring) = Ring::attach_at(&mem, 0, CAP, None) else {
        return;
    };
    let Ok(c) = ring.into_consumer() else {
        return;
    };
    let mut buf = Vec::new();
    for _ in 0..64 {
        match c.try_pop_into(&mut buf) {
            Ok(true) => assert!(buf.len() <= CAP),
            _ => break,
        }
    }
}
