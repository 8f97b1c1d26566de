//! Protocol tier 2, golden bytes: every message type of protocol v1 has a
//! fixture in `fixtures/proto/`, and the encoder must reproduce it byte for
//! byte while the decoder must read it back to the same value.
//!
//! - `request-<Op>.hex`: a request of every operation in `Op::ALL`;
//! - `response.hex`, `response-error.hex`, `response-events.hex`: a reply
//!   with a fixed part and a blob, a bare error status, and an error status
//!   with the events reply flag;
//! - `hello.hex`: the client's hello with an allowlisted environment;
//! - `welcome.hex`: the worker's welcome with two device snapshots;
//! - `status-query.hex`, `session-list.hex`: a status query and the
//!   supervisor's list of two live sessions;
//! - `schema-hash.txt`: the recorded `SCHEMA_HASH`, so that changing the op
//!   table is a conscious act.
//!
//! The `.hex` files are annotated hex: `#` lines are comments (`##` lines
//! name the section that follows), everything else is hex digits.
//!
//! After a deliberate wire change, regenerate everything (fixtures, schema
//! hash and the `ok-*`/`err-*` seeds of the fuzz corpora) and review the diff:
//!
//! ```text
//! VGPU_BLESS=1 cargo test -p vgpu-proto --test golden
//! ```

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::sync::Once;

use common::{
    blessing, corpus_dir, corpus_seeds, fixtures, fixtures_dir, parse_hex, parse_schema_hash,
    schema_hash_text, welcome_key, Sample, TARGETS,
};
use vgpu_proto::{
    DeviceSnapshot, Hello, Op, Request, Response, Welcome, HELLO_MAGIC, PROTOCOL_VERSION,
    REQUEST_MAGIC, RESPONSE_MAGIC, SCHEMA_HASH, WELCOME_MAGIC,
};

static BLESS: Once = Once::new();

/// Under `VGPU_BLESS=1`, rewrites every generated file once, before any test
/// reads them.
fn bless_once() {
    BLESS.call_once(|| {
        if blessing() {
            bless();
        }
    });
}

fn bless() {
    let dir = fixtures_dir();
    fs::create_dir_all(&dir).expect("create fixtures/proto");
    let all = fixtures();
    let keep: BTreeSet<String> = all.iter().map(|f| f.file.clone()).collect();
    for entry in fs::read_dir(&dir).expect("list fixtures/proto") {
        let name = entry
            .expect("dir entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if name.ends_with(".hex") && !keep.contains(&name) {
            fs::remove_file(dir.join(&name)).expect("remove stale fixture");
        }
    }
    for f in &all {
        fs::write(dir.join(&f.file), &f.text).expect("write fixture");
    }
    fs::write(dir.join("schema-hash.txt"), schema_hash_text()).expect("write schema-hash.txt");

    let seeds = corpus_seeds();
    for target in TARGETS {
        let dir = corpus_dir(target);
        fs::create_dir_all(&dir).expect("create corpus dir");
        let keep: BTreeSet<&str> = seeds
            .iter()
            .filter(|s| s.target == target)
            .map(|s| s.name.as_str())
            .collect();
        for entry in fs::read_dir(&dir).expect("list corpus dir") {
            let name = entry
                .expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned();
            let ours = name.starts_with("ok-") || name.starts_with("err-");
            if ours && !keep.contains(name.as_str()) {
                fs::remove_file(dir.join(&name)).expect("remove stale seed");
            }
        }
    }
    for s in &seeds {
        fs::write(corpus_dir(s.target).join(&s.name), &s.bytes).expect("write seed");
    }
}

fn read_fixture(file: &str) -> (String, Vec<u8>) {
    let path = fixtures_dir().join(file);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (new message? run VGPU_BLESS=1 cargo test -p vgpu-proto --test golden)",
            path.display()
        )
    });
    let bytes = parse_hex(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    (text, bytes)
}

fn first_difference(a: &[u8], b: &[u8]) -> usize {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()))
}

#[test]
fn every_fixture_matches_its_encoding() {
    bless_once();
    let mut failures = Vec::new();
    for f in fixtures() {
        let (text, on_disk) = read_fixture(&f.file);
        assert!(
            text.starts_with("# "),
            "{}: the first line must be a comment saying what it holds",
            f.file
        );
        if on_disk != f.bytes {
            let at = first_difference(&on_disk, &f.bytes);
            failures.push(format!(
                "{}: fixture has {} B, encoder gives {} B, first difference at byte {at}",
                f.file,
                on_disk.len(),
                f.bytes.len()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "encoding differs from the golden bytes:\n{}",
        failures.join("\n")
    );
}

#[test]
fn every_fixture_decodes_to_its_value() {
    bless_once();
    for f in fixtures() {
        let (_, bytes) = read_fixture(&f.file);
        match &f.sample {
            Sample::Request(want) => {
                let got = Request::decode(&bytes).unwrap_or_else(|e| panic!("{}: {e}", f.file));
                assert_eq!(&got, want, "{}", f.file);
                // The slice decoder and the stream reader agree.
                let streamed = vgpu_proto::read_request(&mut &bytes[..]).expect("stream read");
                assert_eq!(&streamed, want, "{}", f.file);
            }
            Sample::Response(want) => {
                let mut rest = &bytes[..];
                let got = Response::read(&mut rest).unwrap_or_else(|e| panic!("{}: {e}", f.file));
                assert_eq!(&got, want, "{}", f.file);
                assert!(
                    rest.is_empty(),
                    "{}: the frame is exactly the fixture",
                    f.file
                );
            }
            Sample::Hello(want) => {
                let mut rest = &bytes[..];
                let got = Hello::read(&mut rest).unwrap_or_else(|e| panic!("{}: {e}", f.file));
                assert_eq!(&got, want, "{}", f.file);
                assert!(
                    rest.is_empty(),
                    "{}: the frame is exactly the fixture",
                    f.file
                );
            }
            Sample::Welcome(want) => {
                let mut rest = &bytes[..];
                let got = Welcome::read(&mut rest).unwrap_or_else(|e| panic!("{}: {e}", f.file));
                assert_eq!(welcome_key(&got), welcome_key(want), "{}", f.file);
                assert!(
                    rest.is_empty(),
                    "{}: the frame is exactly the fixture",
                    f.file
                );
            }
            Sample::StatusQuery => {
                let mut rest = &bytes[..];
                vgpu_proto::sessions::read_query(&mut rest)
                    .unwrap_or_else(|e| panic!("{}: {e}", f.file));
                assert!(rest.is_empty(), "{}: exactly the fixture", f.file);
            }
            Sample::SessionList(want) => {
                let mut rest = &bytes[..];
                let got = vgpu_proto::sessions::read_list(&mut rest)
                    .unwrap_or_else(|e| panic!("{}: {e}", f.file));
                assert_eq!(&got, want, "{}", f.file);
                assert!(rest.is_empty(), "{}: exactly the fixture", f.file);
            }
        }
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().expect("2 bytes"))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn len_at(b: &[u8], at: usize) -> usize {
    usize::try_from(u32_at(b, at)).expect("u32 fits usize")
}

/// Reads the fixtures with hand-written offsets, independently of the
/// `zerocopy` heads, so that a blessed fixture cannot silently encode a
/// layout other than the documented one (docs/protocol.md, the crate docs).
#[test]
fn fixtures_follow_the_documented_layout() {
    bless_once();
    for &op in Op::ALL {
        let file = format!("request-{}.hex", op.name());
        let (_, b) = read_fixture(&file);
        assert_eq!(&b[0..4], b"VGRQ", "{file}: magic");
        assert_eq!(u32_at(&b, 0), REQUEST_MAGIC);
        assert_eq!(u16_at(&b, 4), op as u16, "{file}: wire id");
        assert_eq!(
            usize::from(u16_at(&b, 6)),
            op.request_len(),
            "{file}: fixed_len"
        );
        let blob = len_at(&b, 12);
        assert_eq!(
            b.len(),
            40 + op.request_len() + blob,
            "{file}: head + fixed part + blob"
        );
        let posted = u32_at(&b, 24) & vgpu_proto::flags::POSTED != 0;
        assert_eq!(
            posted,
            op.postable(),
            "{file}: posted exactly when postable"
        );
        assert_eq!(u32_at(&b, 24) & !vgpu_proto::flags::ALL, 0, "{file}: flags");
        let order = u32_at(&b, 28);
        assert!(
            if matches!(
                op,
                Op::OpenLane | Op::OpenCallbacks | Op::OpenOutput | Op::NvmlQuery
            ) {
                order == 0
            } else {
                order != 0
            },
            "{file}: order"
        );
        assert_eq!(
            u32_at(&b, 32) != 0,
            posted,
            "{file}: posted requests name the ticket they follow"
        );
        assert_eq!(u32_at(&b, 36), 0, "{file}: reserved");
    }
    for file in ["response.hex", "response-error.hex", "response-events.hex"] {
        let (_, b) = read_fixture(file);
        assert_eq!(&b[0..4], b"VGRS", "{file}: magic");
        assert_eq!(
            u16_at(&b, 14),
            u16::from(file == "response-events.hex"),
            "{file}: reply flags"
        );
        assert_eq!(u32_at(&b, 20), 0, "{file}: reserved2");
        assert_eq!(u32_at(&b, 0), RESPONSE_MAGIC);
        let fixed = usize::from(u16_at(&b, 12));
        assert_eq!(
            b.len(),
            24 + fixed + len_at(&b, 16),
            "{file}: head + fixed part + blob"
        );
    }
    let (_, b) = read_fixture("response.hex");
    assert!(
        u16_at(&b, 12) > 0 && len_at(&b, 16) > 0,
        "response.hex carries a fixed part and a blob"
    );

    let (_, b) = read_fixture("hello.hex");
    assert_eq!(u32_at(&b, 0), HELLO_MAGIC);
    assert_eq!(&b[0..4], b"VGHI");
    assert_eq!(u16_at(&b, 4), PROTOCOL_VERSION);
    assert_eq!(
        u64_at(&b, 8),
        SCHEMA_HASH,
        "hello.hex carries the schema hash"
    );
    let env = &b[40..];
    assert_eq!(env.len(), len_at(&b, 32));
    assert_eq!(env.last(), Some(&0), "the env block ends in NUL");
    for entry in env[..env.len() - 1].split(|&c| c == 0) {
        let entry = std::str::from_utf8(entry).expect("UTF-8 env");
        let (key, _) = entry.split_once('=').expect("KEY=VALUE");
        assert!(
            vgpu_proto::env_allowed(key),
            "hello.hex: {key} is allowlisted"
        );
    }

    let (_, b) = read_fixture("welcome.hex");
    assert_eq!(u32_at(&b, 0), WELCOME_MAGIC);
    assert_eq!(&b[0..4], b"VGWE");
    assert_eq!(u16_at(&b, 4), PROTOCOL_VERSION);
    let count = len_at(&b, 24);
    assert_eq!(count, 2, "welcome.hex describes two devices");
    assert_eq!(
        std::mem::size_of::<DeviceSnapshot>(),
        256 + 16 + 32 + 8 + 3 * 8 + 192 * 4
    );
    assert_eq!(b.len(), 32 + count * std::mem::size_of::<DeviceSnapshot>());
    assert!(
        b[32..].starts_with(b"NVIDIA H100 80GB HBM3\0"),
        "device 0 name at the start of its snapshot"
    );
}

#[test]
fn welcome_fixture_answers_device_queries() {
    bless_once();
    let (_, b) = read_fixture("welcome.hex");
    let w = Welcome::read(&mut &b[..]).expect("welcome.hex decodes");
    assert_eq!(w.driver_version, 13000);
    let names: Vec<&str> = w.devices.iter().map(DeviceSnapshot::name_str).collect();
    assert_eq!(names, ["NVIDIA H100 80GB HBM3", "NVIDIA L4"]);
    assert_eq!(w.devices[0].pci_bus_id_str(), "0000:5E:00.0");
    assert_eq!(
        w.devices[0].attr(common::attr::MULTIPROCESSOR_COUNT),
        Some(132)
    );
    assert_eq!(
        w.devices[1].attr(common::attr::COMPUTE_CAPABILITY_MINOR),
        Some(9)
    );
    assert_eq!(
        w.devices[1].attr(2),
        None,
        "an attribute the worker did not answer"
    );
    assert_ne!(w.devices[0].uuid, w.devices[1].uuid);
}

#[test]
fn one_request_fixture_per_op_and_nothing_stale() {
    bless_once();
    let on_disk: BTreeSet<String> = fs::read_dir(fixtures_dir())
        .expect("list fixtures/proto")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".hex"))
        .collect();
    let expected: BTreeSet<String> = fixtures().into_iter().map(|f| f.file).collect();
    assert_eq!(
        on_disk, expected,
        "fixtures/proto/*.hex must be exactly the generated set"
    );
    let requests = on_disk.iter().filter(|n| n.starts_with("request-")).count();
    assert_eq!(requests, Op::ALL.len(), "one request fixture per op");
}

#[test]
fn schema_hash_is_recorded() {
    bless_once();
    let path = fixtures_dir().join("schema-hash.txt");
    let text = fs::read_to_string(&path).expect("read fixtures/proto/schema-hash.txt");
    let recorded = parse_schema_hash(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(
        recorded, SCHEMA_HASH,
        "the op table changed (SCHEMA_HASH {SCHEMA_HASH:#018x}, recorded {recorded:#018x}): \
         peers built from the old table will refuse this build. If that is intended, \
         run VGPU_BLESS=1 cargo test -p vgpu-proto --test golden and commit the result"
    );
}

#[test]
fn corpus_seeds_are_current() {
    bless_once();
    for seed in corpus_seeds() {
        let path = corpus_dir(seed.target).join(&seed.name);
        let on_disk = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            on_disk == seed.bytes,
            "{} differs from its generator; bless",
            path.display()
        );
    }
}

#[test]
fn hex_format_round_trips() {
    let bytes: Vec<u8> = (0..=255).collect();
    let text = common::hex_text(&["c".into()], &[("all".into(), &bytes[..])]);
    assert_eq!(parse_hex(&text).expect("parses"), bytes);
    assert!(parse_hex("# x\nab c").is_err(), "odd digit count");
    assert!(parse_hex("zz").is_err(), "not hex");
    assert_eq!(
        parse_hex("# comment 00\n## section\n0A ff\n").expect("parses"),
        [0x0a, 0xff]
    );
}
