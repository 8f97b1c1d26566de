//! The supervisor's handshake reader on whatever a peer sends, however it
//! trickles or stalls (`vgpu_mediator::fuzz::handshake`, which the corpus
//! replay test `cargo test -p vgpu-mediator --test fuzz_corpus` also runs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    vgpu_mediator::fuzz::handshake(data);
});
