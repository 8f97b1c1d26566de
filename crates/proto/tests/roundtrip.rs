//! Protocol tier 2, property round trips driven by the op table: every
//! message that encodes decodes to itself, encodings are canonical, every
//! strict prefix of a valid frame is an error, and frames survive short and
//! interrupted reads and writes. `PROPTEST_CASES` scales the case count.

mod common;

use std::io::{self, IoSlice, Read, Write};

use common::{arb, encode_hello, encode_welcome, welcome_key};
use proptest::prelude::*;
use vgpu_proto::{
    decode_request_into, read_request, read_response_head, write_request, write_response_flagged,
    DeviceSnapshot, Hello, Op, ProtoError, Request, RequestHead, Response, ResponseHead, Welcome,
    MAX_BLOB, MAX_DEVICES, MAX_ENV_BYTES, MAX_FIXED,
};

fn is_eof(e: &ProtoError) -> bool {
    matches!(e, ProtoError::Io(io) if io.kind() == io::ErrorKind::UnexpectedEof)
}

/// A peer that moves at most `step` bytes per call and is interrupted by a
/// signal on every third call.
struct Choppy<T> {
    inner: T,
    step: usize,
    calls: usize,
}

impl<T> Choppy<T> {
    fn new(inner: T, step: usize) -> Self {
        Choppy {
            inner,
            step,
            calls: 0,
        }
    }

    fn interrupted(&mut self) -> bool {
        self.calls += 1;
        self.calls.is_multiple_of(3)
    }
}

impl Write for Choppy<Vec<u8>> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        if self.interrupted() {
            return Err(io::ErrorKind::Interrupted.into());
        }
        let mut budget = self.step;
        for b in bufs {
            let n = b.len().min(budget);
            self.inner.extend_from_slice(&b[..n]);
            budget -= n;
        }
        Ok(self.step - budget)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Read for Choppy<&[u8]> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.interrupted() {
            return Err(io::ErrorKind::Interrupted.into());
        }
        let n = buf.len().min(self.step).min(self.inner.len());
        buf[..n].copy_from_slice(&self.inner[..n]);
        self.inner = &self.inner[n..];
        Ok(n)
    }
}

proptest! {
    #[test]
    fn request_round_trips(req in arb::request()) {
        let bytes = req.encode().expect("a request of the op's arity encodes");
        prop_assert_eq!(bytes.len(), std::mem::size_of::<RequestHead>() + req.fixed.len() + req.blob.len());
        prop_assert_eq!(Request::decode(&bytes).expect("decodes"), req.clone());
        let mut rest = &bytes[..];
        prop_assert_eq!(read_request(&mut rest).expect("reads"), req);
        prop_assert!(rest.is_empty(), "the reader consumes exactly one frame");
    }

    #[test]
    fn request_without_flags_matches_write_request(mut req in arb::request()) {
        req.flags = 0;
        req.order = 0;
        req.after = 0;
        let mut written = Vec::new();
        write_request(&mut written, req.op, req.seq, req.ctx, &req.fixed, &req.blob).expect("writes");
        prop_assert_eq!(written, req.encode().expect("encodes"));
    }

    #[test]
    fn response_round_trips(resp in arb::response()) {
        let bytes = resp.encode().expect("a response within bounds encodes");
        prop_assert_eq!(bytes.len(), std::mem::size_of::<ResponseHead>() + resp.fixed.len() + resp.blob.len());
        let mut rest = &bytes[..];
        prop_assert_eq!(Response::read(&mut rest).expect("reads"), resp.clone());
        prop_assert!(rest.is_empty());

        // The head reader leaves exactly the blob for the caller.
        let mut rest = &bytes[..];
        let (head, outs) = read_response_head(&mut rest).expect("reads the head");
        prop_assert_eq!(outs, resp.fixed.clone());
        prop_assert_eq!(head.blob_len(), resp.blob.len());
        prop_assert_eq!(rest, &resp.blob[..]);

        let mut written = Vec::new();
        write_response_flagged(&mut written, resp.status, resp.seq, resp.flags, &resp.fixed, &resp.blob).expect("writes");
        prop_assert_eq!(written, bytes);
    }

    #[test]
    fn hello_round_trips(hello in arb::hello()) {
        let bytes = encode_hello(&hello);
        let mut rest = &bytes[..];
        prop_assert_eq!(Hello::read(&mut rest).expect("reads"), hello);
        prop_assert!(rest.is_empty());
    }

    #[test]
    fn hello_sends_exactly_the_allowlist(
        key in prop_oneof![arb::env_key(), any::<String>(), arb::env_key().prop_map(|k| format!("{k}=x"))],
        value in any::<String>(),
    ) {
        let hello = Hello { features: 0, pid: 1, uid: 2, env: vec![(key.clone(), value.clone())] };
        let sendable = vgpu_proto::env_allowed(&key) && !key.contains(['=', '\0']) && !value.contains('\0');
        let mut bytes = Vec::new();
        match hello.write(&mut bytes) {
            Ok(()) => {
                prop_assert!(sendable, "{:?}={:?} must be refused", key, value);
                prop_assert_eq!(Hello::read(&mut &bytes[..]).expect("reads"), hello);
            }
            Err(e) => {
                prop_assert!(!sendable, "{:?}={:?} must be sent, got {}", key, value, e);
                prop_assert!(matches!(e, ProtoError::Env(_)), "{e}");
            }
        }
    }

    #[test]
    fn welcome_round_trips(welcome in arb::welcome()) {
        let bytes = encode_welcome(&welcome);
        prop_assert_eq!(bytes.len(), 32 + welcome.devices.len() * std::mem::size_of::<DeviceSnapshot>());
        let mut rest = &bytes[..];
        let got = Welcome::read(&mut rest).expect("reads");
        prop_assert_eq!(welcome_key(&got), welcome_key(&welcome));
        prop_assert!(rest.is_empty());
    }

    /// Decoding then encoding gives back the same bytes: one value, one encoding.
    #[test]
    fn encodings_are_canonical(req in arb::request(), resp in arb::response(), hello in arb::hello()) {
        let bytes = req.encode().expect("encodes");
        prop_assert_eq!(Request::decode(&bytes).expect("decodes").encode().expect("re-encodes"), bytes);
        let bytes = resp.encode().expect("encodes");
        prop_assert_eq!(Response::read(&mut &bytes[..]).expect("decodes").encode().expect("re-encodes"), bytes);
        let bytes = encode_hello(&hello);
        prop_assert_eq!(encode_hello(&Hello::read(&mut &bytes[..]).expect("decodes")), bytes);
    }

    #[test]
    fn truncated_request_is_an_error(req in arb::request(), cut in any::<prop::sample::Index>()) {
        let bytes = req.encode().expect("encodes");
        let cut = cut.index(bytes.len());
        let err = Request::decode(&bytes[..cut]).expect_err("a strict prefix is not a frame");
        prop_assert!(matches!(err, ProtoError::Truncated { have, .. } if have == cut), "{err}");
        prop_assert!(is_eof(&read_request(&mut &bytes[..cut]).expect_err("stream reader too")));
    }

    #[test]
    fn truncated_response_is_an_error(resp in arb::response(), cut in any::<prop::sample::Index>()) {
        let bytes = resp.encode().expect("encodes");
        let err = Response::read(&mut &bytes[..cut.index(bytes.len())]).expect_err("a strict prefix is not a frame");
        prop_assert!(is_eof(&err), "{err}");
    }

    #[test]
    fn truncated_handshake_is_an_error(
        hello in arb::hello(),
        welcome in arb::welcome(),
        cut in any::<prop::sample::Index>(),
    ) {
        let bytes = encode_hello(&hello);
        let err = Hello::read(&mut &bytes[..cut.index(bytes.len())]).expect_err("a strict prefix is not a hello");
        prop_assert!(is_eof(&err), "{err}");
        let bytes = encode_welcome(&welcome);
        let err = Welcome::read(&mut &bytes[..cut.index(bytes.len())]).expect_err("a strict prefix is not a welcome");
        prop_assert!(is_eof(&err), "{err}");
    }

    /// Sockets deliver short reads and writes and `EINTR`; frames survive them.
    #[test]
    fn frames_survive_short_and_interrupted_io(
        req in arb::request(),
        resp in arb::response(),
        hello in arb::hello(),
        welcome in arb::welcome(),
        step in 1usize..64,
    ) {
        let mut w = Choppy::new(Vec::new(), step);
        write_request(&mut w, req.op, req.seq, req.ctx, &req.fixed, &req.blob).expect("writes through EINTR");
        write_response_flagged(&mut w, resp.status, resp.seq, resp.flags, &resp.fixed, &resp.blob).expect("writes through EINTR");
        hello.write(&mut w).expect("writes through EINTR");
        welcome.write(&mut w).expect("writes through EINTR");
        let mut whole = Vec::new();
        write_request(&mut whole, req.op, req.seq, req.ctx, &req.fixed, &req.blob).expect("writes");
        whole.extend(resp.encode().expect("encodes"));
        whole.extend(encode_hello(&hello));
        whole.extend(encode_welcome(&welcome));
        prop_assert_eq!(&w.inner, &whole);

        let mut r = Choppy::new(&whole[..], step);
        let got = read_request(&mut r).expect("reads through EINTR");
        prop_assert_eq!((got.op, got.seq, got.ctx, &got.fixed, &got.blob), (req.op, req.seq, req.ctx, &req.fixed, &req.blob));
        prop_assert_eq!(Response::read(&mut r).expect("reads through EINTR"), resp);
        prop_assert_eq!(Hello::read(&mut r).expect("reads through EINTR"), hello);
        prop_assert_eq!(welcome_key(&Welcome::read(&mut r).expect("reads through EINTR")), welcome_key(&welcome));
        prop_assert!(r.inner.is_empty(), "four frames, nothing left over");
    }
}

/// Every strict prefix of every golden message is refused.
#[test]
fn every_prefix_of_every_golden_message_is_an_error() {
    for f in common::fixtures() {
        for cut in 0..f.bytes.len() {
            let prefix = &f.bytes[..cut];
            let refused = match f.sample {
                common::Sample::Request(_) => {
                    matches!(Request::decode(prefix), Err(ProtoError::Truncated { have, .. }) if have == cut)
                }
                common::Sample::Response(_) => {
                    Response::read(&mut &prefix[..]).is_err_and(|e| is_eof(&e))
                }
                common::Sample::Hello(_) => {
                    Hello::read(&mut &prefix[..]).is_err_and(|e| is_eof(&e))
                }
                common::Sample::Welcome(_) => {
                    Welcome::read(&mut &prefix[..]).is_err_and(|e| is_eof(&e))
                }
                common::Sample::StatusQuery => {
                    vgpu_proto::sessions::read_query(&mut &prefix[..]).is_err_and(|e| is_eof(&e))
                }
                common::Sample::SessionList(_) => {
                    vgpu_proto::sessions::read_list(&mut &prefix[..]).is_err_and(|e| is_eof(&e))
                }
            };
            assert!(
                refused,
                "{}: the {cut}-byte prefix must be a truncation error",
                f.file
            );
        }
    }
}

/// The ring path's decoder (a frame that fills a message) agrees with the
/// stream decoder on every golden request, refuses every strict prefix and
/// a trailing byte, and leaves nothing of an earlier request behind.
#[test]
fn ring_messages_decode_as_streams_do() {
    let mut req = Request::empty();
    let mut seen = 0;
    for f in common::fixtures() {
        let common::Sample::Request(want) = &f.sample else {
            continue;
        };
        seen += 1;
        decode_request_into(&f.bytes, &mut req).unwrap_or_else(|e| panic!("{}: {e}", f.file));
        assert_eq!(&req, want, "{}", f.file);
        assert_eq!(
            Request::decode(&f.bytes).ok().as_ref(),
            Some(want),
            "{}",
            f.file
        );
        for cut in 0..f.bytes.len() {
            assert!(
                decode_request_into(&f.bytes[..cut], &mut req).is_err(),
                "{}: the {cut}-byte prefix must be refused",
                f.file
            );
        }
        let mut longer = f.bytes.clone();
        longer.push(0);
        assert!(
            decode_request_into(&longer, &mut req).is_err(),
            "{}: a trailing byte must be refused",
            f.file
        );
    }
    assert!(seen > 100, "only {seen} request fixtures");
}

#[test]
fn writer_that_accepts_nothing_is_an_error() {
    struct Full;
    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Ok(0)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let free = vgpu_proto::mem_free::Request {
        dptr: zerocopy::little_endian::U64::new(0x1000),
    };
    let err = write_request(
        &mut Full,
        Op::MemFree,
        1,
        1,
        zerocopy::IntoBytes::as_bytes(&free),
        &[],
    )
    .expect_err("no progress");
    assert!(
        matches!(err, ProtoError::Io(ref e) if e.kind() == io::ErrorKind::WriteZero),
        "{err}"
    );
}

#[test]
fn encoders_refuse_what_decoders_would_refuse() {
    for &op in Op::ALL {
        let mut req = common::sample_request(op);
        req.fixed.push(0);
        let err = req.encode().expect_err("one byte too many");
        assert!(
            matches!(err, ProtoError::FixedLen { op: o, expected, found } if o == op && expected == op.request_len() && found == op.request_len() + 1),
            "{}: {err}",
            op.name()
        );
    }

    let mut resp = Response {
        fixed: vec![7; MAX_FIXED],
        ..Default::default()
    };
    let bytes = resp.encode().expect("MAX_FIXED bytes are allowed");
    assert_eq!(
        Response::read(&mut &bytes[..]).expect("reads").fixed.len(),
        MAX_FIXED
    );
    resp.fixed.push(7);
    assert!(matches!(
        resp.encode(),
        Err(ProtoError::TooLong {
            what: "fixed part",
            ..
        })
    ));

    let mut welcome = common::sample_welcome();
    welcome.devices = vec![welcome.devices[0].clone(); MAX_DEVICES];
    let bytes = encode_welcome(&welcome);
    assert_eq!(
        Welcome::read(&mut &bytes[..]).expect("reads").devices.len(),
        MAX_DEVICES
    );
    welcome.devices.push(welcome.devices[0].clone());
    assert!(matches!(
        welcome.write(&mut Vec::new()),
        Err(ProtoError::TooLong {
            what: "devices",
            ..
        })
    ));
}

#[test]
fn env_block_bound_is_exact() {
    // One entry "CUDA_CACHE_PATH=<value>\0" of exactly MAX_ENV_BYTES bytes.
    let key = "CUDA_CACHE_PATH";
    let value = "v".repeat(MAX_ENV_BYTES - key.len() - 2);
    let mut hello = Hello {
        features: 0,
        pid: 1,
        uid: 2,
        env: vec![(key.into(), value)],
    };
    let bytes = encode_hello(&hello);
    assert_eq!(bytes.len(), 40 + MAX_ENV_BYTES);
    assert_eq!(Hello::read(&mut &bytes[..]).expect("reads"), hello);
    hello.env[0].1.push('v');
    assert!(matches!(
        hello.write(&mut Vec::new()),
        Err(ProtoError::TooLong { what: "env", .. })
    ));
}

#[test]
fn blob_bound_is_exact() {
    let mut req = common::sample_request(Op::MemcpyHtoD);
    req.blob = vec![0x5a; MAX_BLOB].into();
    let bytes = req.encode().expect("a MAX_BLOB blob is allowed");
    assert_eq!(
        Request::decode(&bytes).expect("decodes").blob.len(),
        MAX_BLOB
    );
    drop(bytes);
    req.blob = vec![0x5a; MAX_BLOB + 1].into();
    assert!(matches!(
        req.encode(),
        Err(ProtoError::TooLong { what: "blob", .. })
    ));
    let resp = Response {
        blob: req.blob.into_vec(),
        ..Default::default()
    };
    assert!(matches!(
        resp.encode(),
        Err(ProtoError::TooLong { what: "blob", .. })
    ));
}
