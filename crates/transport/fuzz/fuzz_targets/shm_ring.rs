//! Both ends of a shared-memory ring while a hostile peer overwrites its
//! indices, record words and states
//! (`vgpu_transport::shm_ring::fuzz::fuzz_check`, which the corpus replay
//! test `cargo test -p vgpu-transport --test ring_corpus` also runs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    vgpu_transport::shm_ring::fuzz::fuzz_check(data);
});
