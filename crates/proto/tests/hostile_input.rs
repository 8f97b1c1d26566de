//! Protocol tier 2, hostile input: the decoders take arbitrary bytes from a
//! peer that may be malicious. None of them panics, and none allocates more
//! than its bound, whatever the lengths in the head claim:
//!
//! | decoder          | bound on what one decode may hold at once          |
//! |------------------|----------------------------------------------------|
//! | `Request`        | `MAX_BLOB` + the fixed part (+ slack)              |
//! | `Response`       | `MAX_BLOB` + the fixed part (+ slack)              |
//! | `Hello`          | a small multiple of `MAX_ENV_BYTES` (raw + parsed) |
//! | `Welcome`        | `MAX_DEVICES` snapshots (+ slack)                  |
//!
//! A length over its bound is refused before anything is allocated for it.
//! This binary counts allocations with its own global allocator, per thread,
//! so the measurements are not disturbed by tests running beside them.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::mem::size_of;

use common::{fuzz_check, TARGETS};
use proptest::collection::vec;
use proptest::prelude::*;
use vgpu_proto::sessions;
use vgpu_proto::{
    DeviceSnapshot, Hello, HelloHead, Op, ProtoError, Request, RequestHead, Response, ResponseHead,
    Welcome, WelcomeHead, HELLO_MAGIC, MAX_BLOB, MAX_DEVICES, MAX_ENV_BYTES, MAX_FIXED,
    PROTOCOL_VERSION, REQUEST_MAGIC, RESPONSE_MAGIC, SCHEMA_HASH, WELCOME_MAGIC,
};
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::IntoBytes;

// ---- a per-thread counting allocator --------------------------------------

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(grow: usize, shrink: usize) {
    // `try_with`: allocation may happen while a thread is being torn down.
    let _ = LIVE.try_with(|live| {
        let grow = isize::try_from(grow).unwrap_or(isize::MAX);
        let shrink = isize::try_from(shrink).unwrap_or(isize::MAX);
        let now = live.get().saturating_add(grow).saturating_sub(shrink);
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
    let _ = LARGEST.try_with(|largest| largest.set(largest.get().max(grow)));
}

struct Counting;

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged; the bookkeeping touches only const-initialised thread-locals,
// which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size(), 0);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract for `layout`.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size(), 0);
        // SAFETY: as for `alloc`; forwarding keeps large zeroed blocks lazy (calloc).
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(0, layout.size());
        // SAFETY: `ptr` was allocated by `System` (through us) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size, layout.size());
        // SAFETY: `ptr` was allocated by `System` (through us) with `layout`;
        // the caller upholds `realloc`'s contract for `new_size`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// What one call allocated on this thread.
#[derive(Debug)]
struct Usage {
    /// Most bytes held at once, beyond what was held before the call.
    peak: usize,
    /// The largest single allocation.
    largest: usize,
}

fn measure<R>(f: impl FnOnce() -> R) -> (R, Usage) {
    LIVE.with(|c| c.set(0));
    PEAK.with(|c| c.set(0));
    LARGEST.with(|c| c.set(0));
    let out = f();
    let peak = usize::try_from(PEAK.with(Cell::get)).unwrap_or(0);
    (
        out,
        Usage {
            peak,
            largest: LARGEST.with(Cell::get),
        },
    )
}

const SLACK: usize = 4 << 10;
const REQUEST_BOUND: usize = MAX_BLOB + 8 * MAX_FIXED + SLACK;
const RESPONSE_BOUND: usize = MAX_BLOB + 8 * MAX_FIXED + SLACK;
const HELLO_BOUND: usize = 16 * MAX_ENV_BYTES;
const WELCOME_BOUND: usize = MAX_DEVICES * size_of::<DeviceSnapshot>() + SLACK;
const LIST_BOUND: usize = sessions::MAX_SESSIONS * size_of::<sessions::SessionRecord>() + SLACK;

/// Runs every decoder on `data` and checks each stays within its bound.
fn decode_all_bounded(data: &[u8]) {
    let (_, u) = measure(|| Request::decode(data));
    assert!(u.peak <= REQUEST_BOUND, "Request::decode held {u:?}");
    let (_, u) = measure(|| Response::read(&mut &data[..]));
    assert!(u.peak <= RESPONSE_BOUND, "Response::read held {u:?}");
    let (_, u) = measure(|| Hello::read(&mut &data[..]));
    assert!(u.peak <= HELLO_BOUND, "Hello::read held {u:?}");
    let (_, u) = measure(|| Welcome::read(&mut &data[..]));
    assert!(u.peak <= WELCOME_BOUND, "Welcome::read held {u:?}");
    let (_, u) = measure(|| sessions::read_list(&mut &data[..]));
    assert!(u.peak <= LIST_BOUND, "sessions::read_list held {u:?}");
    let (_, u) = measure(|| sessions::read_query(&mut &data[..]));
    assert!(u.peak < SLACK, "sessions::read_query held {u:?}");
}

/// A session list head that passes the magic and version checks.
fn list_head(count: u32) -> Vec<u8> {
    let mut h = b"VGSL".to_vec();
    h.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    h.extend_from_slice(&[0, 0]);
    h.extend_from_slice(&count.to_le_bytes());
    let record = u32::try_from(std::mem::size_of::<sessions::SessionRecord>()).expect("small");
    h.extend_from_slice(&record.to_le_bytes());
    h
}

// ---- heads that pass the magic check --------------------------------------

fn request_head(op: u16, fixed_len: u16, blob_len: u32) -> Vec<u8> {
    let head = RequestHead {
        magic: U32::new(REQUEST_MAGIC),
        op: U16::new(op),
        fixed_len: U16::new(fixed_len),
        blob_len: U32::new(blob_len),
        ..Default::default()
    };
    head.as_bytes().to_vec()
}

fn response_head(fixed_len: u16, blob_len: u32) -> Vec<u8> {
    let head = ResponseHead {
        magic: U32::new(RESPONSE_MAGIC),
        fixed_len: U16::new(fixed_len),
        blob_len: U32::new(blob_len),
        ..Default::default()
    };
    head.as_bytes().to_vec()
}

fn hello_head(env_len: u32) -> Vec<u8> {
    let head = HelloHead {
        magic: U32::new(HELLO_MAGIC),
        version: U16::new(PROTOCOL_VERSION),
        schema: U64::new(SCHEMA_HASH),
        env_len: U32::new(env_len),
        ..Default::default()
    };
    head.as_bytes().to_vec()
}

fn welcome_head(device_count: u32) -> Vec<u8> {
    let head = WelcomeHead {
        magic: U32::new(WELCOME_MAGIC),
        version: U16::new(PROTOCOL_VERSION),
        device_count: U32::new(device_count),
        ..Default::default()
    };
    head.as_bytes().to_vec()
}

fn max_fixed_u16() -> u16 {
    u16::try_from(MAX_FIXED).expect("MAX_FIXED fits the u16 length field")
}

fn bound_u32(n: usize) -> u32 {
    u32::try_from(n).expect("protocol bounds fit u32")
}

/// A length field: small, near its bound, or anything at all.
fn claimed_len(bound: usize) -> impl Strategy<Value = u32> {
    let b = bound_u32(bound);
    prop_oneof![0..=64u32, b - 2..=b + 2, any::<u32>()]
}

/// Text made of env-like pieces, so that the parser gets past its first check.
fn envish() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"CUDA_VISIBLE_DEVICES".to_vec()),
        Just(b"CUDA_CACHE_".to_vec()),
        Just(b"LD_PRELOAD".to_vec()),
        Just(b"=".to_vec()),
        Just(b"\0".to_vec()),
        vec(any::<u8>(), 0..4),
    ];
    vec(piece, 0..12).prop_map(|p| p.concat())
}

// ---- properties ------------------------------------------------------------

proptest! {
    /// Arbitrary bytes: no decoder panics, none exceeds its bound, and the
    /// fuzz targets' round-trip checks hold for whatever happens to decode.
    #[test]
    fn arbitrary_bytes_never_panic(data in vec(any::<u8>(), 0..2048)) {
        decode_all_bounded(&data);
        for target in TARGETS {
            let _ = fuzz_check(target, &data);
        }
    }

    /// Arbitrary tails behind a real magic, so the length checks and the body
    /// readers are exercised, not just the magic check.
    #[test]
    fn request_lengths_are_bounded(
        op in prop_oneof![proptest::sample::select(Op::ALL).prop_map(|op| op as u16), any::<u16>()],
        fixed_len in prop_oneof![0..=max_fixed_u16() + 1, any::<u16>()],
        blob_len in claimed_len(MAX_BLOB),
        tail in vec(any::<u8>(), 0..512),
    ) {
        let data = [request_head(op, fixed_len, blob_len), tail].concat();
        let (result, u) = measure(|| Request::decode(&data));
        prop_assert!(u.peak <= REQUEST_BOUND, "{u:?}");
        let claimed = usize::try_from(blob_len).expect("u32 fits usize");
        if claimed > MAX_BLOB {
            prop_assert!(result.is_err());
            prop_assert!(u.largest < SLACK, "refused, yet allocated {u:?} for a claimed {claimed} B blob");
        } else {
            prop_assert!(u.largest <= claimed.max(MAX_FIXED), "{u:?} for a claimed {claimed} B blob");
        }
        if let Ok(req) = result {
            prop_assert_eq!(req.op as u16, op);
            prop_assert_eq!(req.fixed.len(), usize::from(fixed_len));
            prop_assert_eq!(req.blob.len(), claimed);
        }
    }

    #[test]
    fn response_lengths_are_bounded(
        fixed_len in prop_oneof![0..=max_fixed_u16() + 1, any::<u16>()],
        blob_len in claimed_len(MAX_BLOB),
        tail in vec(any::<u8>(), 0..512),
    ) {
        let data = [response_head(fixed_len, blob_len), tail].concat();
        let (result, u) = measure(|| Response::read(&mut &data[..]));
        prop_assert!(u.peak <= RESPONSE_BOUND, "{u:?}");
        let claimed = usize::try_from(blob_len).expect("u32 fits usize");
        if claimed > MAX_BLOB || usize::from(fixed_len) > MAX_FIXED {
            prop_assert!(matches!(result, Err(ProtoError::TooLong { .. })), "{:?}", result);
            prop_assert!(u.largest < SLACK, "refused, yet allocated {u:?}");
        }
    }

    #[test]
    fn hello_lengths_are_bounded(env_len in claimed_len(MAX_ENV_BYTES), env in envish()) {
        let exact = [hello_head(bound_u32(env.len())), env.clone()].concat();
        let (_, u) = measure(|| Hello::read(&mut &exact[..]));
        prop_assert!(u.peak <= HELLO_BOUND, "{u:?}");

        let claimed = usize::try_from(env_len).expect("u32 fits usize");
        let lying = [hello_head(env_len), env].concat();
        let (result, u) = measure(|| Hello::read(&mut &lying[..]));
        prop_assert!(u.peak <= HELLO_BOUND, "{u:?}");
        if claimed > MAX_ENV_BYTES {
            prop_assert!(matches!(result, Err(ProtoError::TooLong { what: "env", .. })), "{:?}", result);
            prop_assert!(u.largest < SLACK, "refused, yet allocated {u:?}");
        }
        if let Ok(hello) = result {
            prop_assert!(hello.env.iter().all(|(k, _)| vgpu_proto::env_allowed(k)));
        }
    }

    #[test]
    fn welcome_lengths_are_bounded(count in claimed_len(MAX_DEVICES), tail in vec(any::<u8>(), 0..4096)) {
        let data = [welcome_head(count), tail].concat();
        let (result, u) = measure(|| Welcome::read(&mut &data[..]));
        prop_assert!(u.peak <= WELCOME_BOUND, "{u:?}");
        let claimed = usize::try_from(count).expect("u32 fits usize");
        if claimed > MAX_DEVICES {
            prop_assert!(matches!(result, Err(ProtoError::TooLong { what: "devices", .. })), "{:?}", result);
            prop_assert!(u.largest < SLACK, "refused, yet allocated {u:?}");
        }
    }

    #[test]
    fn session_list_lengths_are_bounded(count in claimed_len(sessions::MAX_SESSIONS), tail in vec(any::<u8>(), 0..4096)) {
        let data = [list_head(count), tail].concat();
        let (result, u) = measure(|| sessions::read_list(&mut &data[..]));
        prop_assert!(u.peak <= LIST_BOUND, "{u:?}");
        let claimed = usize::try_from(count).expect("u32 fits usize");
        if claimed > sessions::MAX_SESSIONS {
            prop_assert!(matches!(result, Err(ProtoError::TooLong { what: "sessions", .. })), "{:?}", result);
            prop_assert!(u.largest < SLACK, "refused, yet allocated {u:?}");
        }
    }

    /// Flipping any one byte of a golden message never panics.
    #[test]
    fn mutated_golden_messages_never_panic(
        which in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let seeds = common::corpus_seeds();
        let seed = which.get(&seeds);
        let mut data = seed.bytes.clone();
        if !data.is_empty() {
            let i = at.index(data.len());
            data[i] = byte;
        }
        decode_all_bounded(&data);
        let _ = fuzz_check(seed.target, &data);
    }
}

/// The largest claims of all are refused with nothing allocated for them.
#[test]
fn maximal_claims_are_refused_before_allocation() {
    let claims: [(&str, Vec<u8>); 6] = [
        (
            "request blob",
            request_head(Op::MemFree as u16, 8, u32::MAX),
        ),
        (
            "request fixed part",
            request_head(Op::MemFree as u16, u16::MAX, 0),
        ),
        ("response blob", response_head(0, u32::MAX)),
        ("response fixed part", response_head(u16::MAX, 0)),
        ("hello env", hello_head(u32::MAX)),
        ("welcome devices", welcome_head(u32::MAX)),
    ];
    for (what, data) in claims {
        let (results, u) = measure(|| {
            [
                Request::decode(&data).is_err(),
                Response::read(&mut &data[..]).is_err(),
                Hello::read(&mut &data[..]).is_err(),
                Welcome::read(&mut &data[..]).is_err(),
            ]
        });
        assert_eq!(results, [true; 4], "{what}: every decoder refuses");
        assert!(u.largest < 256, "{what}: refused, yet allocated {u:?}");
    }
}

/// The counting allocator sees what it should, or the bounds above prove nothing.
#[test]
fn the_allocation_counter_counts() {
    let (v, u) = measure(|| vec![0u8; 1 << 20]);
    assert_eq!(u.largest, 1 << 20);
    assert!(u.peak >= 1 << 20);
    drop(v);
    let fixed = u16::try_from(Op::MemcpyHtoD.request_len()).expect("small");
    let data = [
        request_head(Op::MemcpyHtoD as u16, fixed, 1 << 20),
        vec![0; usize::from(fixed)],
    ]
    .concat();
    let (result, u) = measure(|| Request::decode(&data));
    assert!(matches!(result, Err(ProtoError::Truncated { .. })));
    assert_eq!(
        u.largest,
        1 << 20,
        "a claimed 1 MiB blob within bounds is allocated, then found missing"
    );
}
