//! `Response::read` on arbitrary bytes: it never panics, and a response that
//! decodes re-encodes and decodes to the same value.
//! (Kept in step with `fuzz_check` in `crates/proto/tests/common/mod.rs`,
//! which replays this target's corpus in CI.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use vgpu_proto::Response;

fuzz_target!(|data: &[u8]| {
    if let Ok(resp) = Response::read(&mut &data[..]) {
        let bytes = resp.encode().expect("a decoded response re-encodes");
        let again = Response::read(&mut &bytes[..]).expect("a re-encoded response decodes");
        assert_eq!(again, resp);
    }
});
