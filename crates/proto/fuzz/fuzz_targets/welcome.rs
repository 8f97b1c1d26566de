//! `Welcome::read` on arbitrary bytes: it never panics, and a welcome that
//! decodes re-encodes and decodes to the same value.
//! (Kept in step with `fuzz_check` in `crates/proto/tests/common/mod.rs`,
//! which replays this target's corpus in CI.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use vgpu_proto::Welcome;
use zerocopy::IntoBytes;

fn key(w: &Welcome) -> (u32, i32, u64, Vec<&[u8]>) {
    let devices = w.devices.iter().map(|d| d.as_bytes()).collect();
    (w.init_status, w.driver_version, w.features, devices)
}

fuzz_target!(|data: &[u8]| {
    if let Ok(welcome) = Welcome::read(&mut &data[..]) {
        let mut bytes = Vec::new();
        welcome
            .write(&mut bytes)
            .expect("a decoded welcome re-encodes");
        let again = Welcome::read(&mut &bytes[..]).expect("a re-encoded welcome decodes");
        assert_eq!(key(&again), key(&welcome));
    }
});
