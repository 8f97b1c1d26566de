//! Request frames run by the worker on the simulated device
//! (`vgpu_mediator::fuzz::worker_requests`, which the corpus replay test
//! `cargo test -p vgpu-mediator --test fuzz_corpus` also runs). `run.sh`
//! builds `libvgpu-sim.so` and names it in `VGPU_FUZZ_SIM`.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

fn sim() -> &'static PathBuf {
    static SIM: OnceLock<PathBuf> = OnceLock::new();
    SIM.get_or_init(|| {
        std::env::var_os("VGPU_FUZZ_SIM")
            .map(PathBuf::from)
            .expect("VGPU_FUZZ_SIM names libvgpu-sim.so (run.sh sets it)")
    })
}

fuzz_target!(|data: &[u8]| {
    vgpu_mediator::fuzz::worker_requests(sim(), data);
});
