//! The ivshmem device header, region-table owner words, doorbell values and
//! a guest-written ring, as the host and a guest parse them
//! (`vgpu_transport::ivshmem::fuzz::fuzz_check`, which the corpus replay
//! test `cargo test -p vgpu-transport --test ivshmem_corpus` also runs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = vgpu_transport::ivshmem::fuzz::fuzz_check(data);
});
