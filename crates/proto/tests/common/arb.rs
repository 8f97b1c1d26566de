//! proptest strategies for every message type, driven by the op table.

use std::mem::size_of;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use vgpu_proto::{env_allowed, DeviceSnapshot, Hello, Op, Request, Response, Welcome, MAX_FIXED};
use zerocopy::FromBytes;

/// Largest blob the round-trip strategies generate.
pub const BLOB: usize = 4 << 10;

/// A fixed part and blob of `op` that its checks accept: the op's sample,
/// with every byte that may take any value (without the checks refusing
/// it) replaced by one of `noise`, and a blob of `blob` when the op takes a
/// blob of any length.
fn message(op: Op, noise: &[u8], blob: Vec<u8>) -> (Vec<u8>, Vec<u8>) {
    let sample = super::sample_request(op);
    let mut fixed = sample.fixed;
    let blob = if op.check_request(&fixed, blob.len()).is_ok() {
        blob
    } else {
        sample.blob.into_vec()
    };
    for (i, &b) in noise.iter().enumerate().take(fixed.len()) {
        let keep = fixed[i];
        fixed[i] = b;
        if op.check_request(&fixed, blob.len()).is_err() {
            fixed[i] = keep;
        }
    }
    (fixed, blob)
}

/// Any op of `Op::ALL`, with a fixed part and blob its checks accept, and
/// flags its op allows (posted or not).
pub fn request() -> impl Strategy<Value = Request> {
    select(Op::ALL)
        .prop_flat_map(|op| {
            let noise = vec(any::<u8>(), op.request_len());
            let posted = if op.postable() {
                any::<bool>().boxed()
            } else {
                Just(false).boxed()
            };
            (
                Just(op),
                any::<u32>(),
                any::<u64>(),
                (posted, 0..3u8, any::<u32>()),
                any::<u32>(),
                noise,
                vec(any::<u8>(), 0..=BLOB),
            )
        })
        .prop_map(
            |(op, seq, ctx, (posted, wait, after), order, noise, blob)| {
                let (fixed, blob) = message(op, &noise, blob);
                use vgpu_proto::flags;
                // A posted request waits for nothing, for every lower ticket, or
                // for one ticket; any other request waits for its fence.
                let (flags, after) = match (posted, wait) {
                    (false, _) => (0, 0),
                    (true, 0) => (flags::POSTED, 0),
                    (true, 1) => (flags::POSTED | flags::AFTER_ALL, 0),
                    (true, _) => (flags::POSTED | flags::AFTER, after),
                };
                Request {
                    op,
                    seq,
                    ctx,
                    flags,
                    order,
                    after,
                    fixed,
                    blob: blob.into(),
                }
            },
        )
}

pub fn response() -> impl Strategy<Value = Response> {
    (
        any::<u32>(),
        any::<u32>(),
        any::<bool>(),
        vec(any::<u8>(), 0..=MAX_FIXED),
        vec(any::<u8>(), 0..=BLOB),
    )
        .prop_map(|(status, seq, events, fixed, blob)| Response {
            status,
            seq,
            flags: if events {
                vgpu_proto::reply_flags::EVENTS
            } else {
                0
            },
            fixed,
            blob,
        })
}

/// The allowlist as `handshake.rs` states it: three exact names and two
/// prefixes that need a suffix.
pub const EXACT_ENV: [&str; 3] = [
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_MODULE_LOADING",
];
pub const PREFIX_ENV: [&str; 2] = ["CUDA_CACHE_", "CUDA_DISABLE_"];

/// A key drawn from the allowlist.
pub fn env_key() -> impl Strategy<Value = String> {
    prop_oneof![
        select(&EXACT_ENV[..]).prop_map(str::to_owned),
        (select(&PREFIX_ENV[..]), "[A-Z0-9_]{1,24}").prop_map(|(p, s)| format!("{p}{s}")),
    ]
    .prop_map(|k| {
        assert!(
            env_allowed(&k),
            "{k} should be allowlisted: keep EXACT_ENV/PREFIX_ENV in step with handshake.rs"
        );
        k
    })
}

/// Any text without NUL (which ends an entry on the wire); `=` is fine.
pub fn env_value() -> impl Strategy<Value = String> {
    any::<String>().prop_map(|s| s.replace('\0', ""))
}

pub fn hello() -> impl Strategy<Value = Hello> {
    (
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
        vec((env_key(), env_value()), 0..8),
    )
        .prop_map(|(features, pid, uid, env)| Hello {
            features,
            pid,
            uid,
            env,
        })
}

/// A snapshot from arbitrary bytes: every bit pattern is a valid snapshot.
pub fn device() -> impl Strategy<Value = DeviceSnapshot> {
    vec(any::<u8>(), size_of::<DeviceSnapshot>())
        .prop_map(|b| DeviceSnapshot::read_from_bytes(&b).expect("exactly one snapshot of bytes"))
}

pub fn welcome() -> impl Strategy<Value = Welcome> {
    (
        any::<u32>(),
        any::<i32>(),
        any::<u64>(),
        vec(device(), 0..=3),
    )
        .prop_map(|(init_status, driver_version, features, devices)| Welcome {
            init_status,
            driver_version,
            features,
            devices,
        })
}
