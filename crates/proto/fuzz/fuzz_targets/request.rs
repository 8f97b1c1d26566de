//! `Request::decode` on arbitrary bytes: it never panics, and a request that
//! decodes re-encodes and decodes to the same value.
//! (Kept in step with `fuzz_check` in `crates/proto/tests/common/mod.rs`,
//! which replays this target's corpus in CI.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use vgpu_proto::Request;

fuzz_target!(|data: &[u8]| {
    if let Ok(req) = Request::decode(data) {
        let bytes = req.encode().expect("a decoded request re-encodes");
        let again = Request::decode(&bytes).expect("a re-encoded request decodes");
        assert_eq!(again, req);
    }
});
