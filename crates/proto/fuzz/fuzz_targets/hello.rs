//! `Hello::read` on arbitrary bytes: it never panics, and a hello that
//! decodes (so its environment is allowlisted) re-encodes and decodes to the
//! same value.
//! (Kept in step with `fuzz_check` in `crates/proto/tests/common/mod.rs`,
//! which replays this target's corpus in CI.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use vgpu_proto::Hello;

fuzz_target!(|data: &[u8]| {
    if let Ok(hello) = Hello::read(&mut &data[..]) {
        let mut bytes = Vec::new();
        hello.write(&mut bytes).expect("a decoded hello re-encodes");
        let again = Hello::read(&mut &bytes[..]).expect("a re-encoded hello decodes");
        assert_eq!(again, hello);
    }
});
