//! `Request::decode` on arbitrary bytes: it never panics, and a request that
//! decodes re-encodes and decodes to the same value. The ring path's
//! `decode_request_into` takes only frames that fill the input, decoded alike.
//! (Kept in step with `fuzz_check` in `crates/proto/tests/common/mod.rs`,
//! which replays this target's corpus in CI.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use vgpu_proto::Request;

fuzz_target!(|data: &[u8]| {
    let mut ring = Request::empty();
    if vgpu_proto::decode_request_into(data, &mut ring).is_ok() {
        let req = Request::decode(data).expect("a ring frame decodes as a stream");
        assert_eq!(req, ring);
        assert_eq!(req.encode().expect("re-encodes").len(), data.len());
    }
    if let Ok(req) = Request::decode(data) {
        let bytes = req.encode().expect("a decoded request re-encodes");
        let again = Request::decode(&bytes).expect("a re-encoded request decodes");
        assert_eq!(again, req);
    }
});
