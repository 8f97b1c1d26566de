//! The check the `shm_ring` fuzz target (`crates/transport/fuzz`) runs on
//! each input, kept here so that the corpus replay test (`cargo test -p
//! vgpu-transport --test ring_corpus`) runs it on the stable toolchain.
//!
//! Both ends of one ring live in this process, and a third party plays the
//! hostile peer: between pushes and pops it overwrites the indices, the
//! record words and the states with values from the input. Neither end may
//! panic, read or write outside the ring, hand out a message longer than
//! the ring allows, or loop.

use std::os::fd::AsFd;
use std::sync::atomic::Ordering;

use super::{Ring, SharedMem, HEADER_LEN};

/// Data-area bytes of the fuzzed ring: small, so the counters lap often.
const CAPACITY: usize = 256;
/// Offsets of the words a peer can write: tail, head, the wake words and
/// the states (see the layout in the module documentation).
const WORDS: [usize; 8] = [0x80, 0x100, 0x180, 0x184, 0x200, 0x204, 0x280, 0x284];

/// Runs the operations `data` encodes, two bytes each: an operation and
/// its argument (with eight more bytes for a forged value).
pub fn fuzz_check(data: &[u8]) {
    let Ok((ring, fd)) = Ring::create(CAPACITY) else {
        return;
    };
    let Ok(peer) = SharedMem::map(fd.as_fd(), HEADER_LEN + CAPACITY) else {
        return;
    };
    let (Ok(producer), Ok(consumer)) = (
        ring.into_producer(),
        Ring::map(&fd).and_then(Ring::into_consumer),
    ) else {
        return;
    };
    let max = consumer.max_message();
    let payload = [0xA5u8; CAPACITY];
    let mut buf = Vec::new();
    let mut rest = data;
    while let [op, arg, tail @ ..] = rest {
        rest = tail;
        let arg = usize::from(*arg);
        match op % 5 {
            0 => {
                let len = arg % (CAPACITY + 8);
                let _ = producer.try_push(&[&payload[..len.min(payload.len())]]);
            }
            1 => {
                if let Ok(true) = consumer.try_pop_into(&mut buf) {
                    assert!(buf.len() <= max, "a message longer than the ring allows");
                }
            }
            2 | 3 => {
                let (value, tail) = take_u64(rest);
                rest = tail;
                let off = WORDS[arg % WORDS.len()];
                if off >= 0x180 {
                    if let Some(w) = peer.u32_at(off) {
                        w.store(
                            u32::try_from(value & 0xffff_ffff).unwrap_or(0),
                            Ordering::Release,
                        );
                    }
                } else if let Some(w) = peer.u64_at(off) {
                    w.store(value, Ordering::Release);
                }
            }
            _ => {
                // A forged record word in the data area.
                let (value, tail) = take_u64(rest);
                rest = tail;
                let off = HEADER_LEN + (arg * 8) % CAPACITY;
                assert!(peer.write(off, &value.to_le_bytes()));
            }
        }
    }
}

/// The next eight bytes as a little-endian word (zero-padded), and the rest.
fn take_u64(data: &[u8]) -> (u64, &[u8]) {
    let n = data.len().min(8);
    let mut word = [0u8; 8];
    word[..n].copy_from_slice(&data[..n]);
    (u64::from_le_bytes(word), &data[n..])
}
