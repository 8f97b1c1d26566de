//! `resolve` against every `cuGetProcAddress_v2` request that libcudart 13 made on the
//! real 580 driver, and against the rules' edge cases.

use vgpu_abi::{resolve, ProcResolution};

const CAPTURE: &str = include_str!("../../../fixtures/cudart13-getprocaddress.txt");

/// Expected answer of one capture line.
enum Expect {
    Found(String),
    NotFound,
    VersionNotSufficient,
}

/// Parses one capture line. Two formats are accepted:
/// * `SYMBOL VERSION FLAGS EXPORT` (found, the form of the checked-in capture);
/// * `GPA2 SYMBOL VERSION FLAGS -> CURESULT STATUS EXPORT LIB` (STATUS 0 found, 1 symbol
///   not found, 2 version not sufficient).
///
/// Returns `None` for the capture's empty header line (`0 0 -> `).
fn parse(line: &str) -> Option<(String, i32, u64, Expect)> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() == 3 && f == ["0", "0", "->"] {
        return None;
    }
    if f.first() == Some(&"GPA2") {
        assert!(f.len() >= 7 && f[4] == "->", "bad line {line:?}");
        let expect = match f[6] {
            "0" => Expect::Found(f.get(7).expect("export name").to_string()),
            "1" => Expect::NotFound,
            "2" => Expect::VersionNotSufficient,
            s => panic!("bad status {s} in {line:?}"),
        };
        return Some((
            f[1].into(),
            f[2].parse().expect("version"),
            f[3].parse().expect("flags"),
            expect,
        ));
    }
    assert_eq!(f.len(), 4, "bad line {line:?}");
    Some((
        f[0].into(),
        f[1].parse().expect("version"),
        f[2].parse().expect("flags"),
        Expect::Found(f[3].into()),
    ))
}

#[test]
fn reproduces_every_captured_answer() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for line in CAPTURE.lines() {
        let Some((symbol, version, flags, expect)) = parse(line) else {
            continue;
        };
        checked += 1;
        let got = resolve(&symbol, version, flags);
        let ok = match (&expect, got) {
            (Expect::Found(name), ProcResolution::Found(f)) => f.name == name,
            (Expect::NotFound, ProcResolution::SymbolNotFound) => true,
            (Expect::VersionNotSufficient, ProcResolution::VersionNotSufficient) => true,
            _ => false,
        };
        if !ok {
            failures.push(format!("{line:?} -> {got:?}"));
        }
    }
    assert_eq!(checked, 439);
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn name(r: ProcResolution) -> Option<&'static str> {
    match r {
        ProcResolution::Found(f) => Some(f.name),
        _ => None,
    }
}

#[test]
fn rules() {
    assert_eq!(
        resolve("cuNoSuchFunction", 13000, 0),
        ProcResolution::SymbolNotFound
    );
    // Export names are not API names.
    assert_eq!(
        resolve("cuMemAlloc_v2", 13000, 0),
        ProcResolution::SymbolNotFound
    );
    // No typedef, not handed out.
    assert_eq!(
        resolve("cudbgApiInit", 13000, 0),
        ProcResolution::SymbolNotFound
    );
    assert_eq!(
        resolve("cuMemAlloc", 1000, 0),
        ProcResolution::VersionNotSufficient
    );
    assert_eq!(
        resolve("cuMemAlloc", -1, 0),
        ProcResolution::VersionNotSufficient
    );
    assert_eq!(
        resolve("cuDeviceGetHostAtomicCapabilities", 12090, 0),
        ProcResolution::VersionNotSufficient
    );
    assert_eq!(name(resolve("cuMemAlloc", 2000, 0)), Some("cuMemAlloc"));
    assert_eq!(name(resolve("cuMemAlloc", 3020, 0)), Some("cuMemAlloc_v2"));
    assert_eq!(name(resolve("cuMemAlloc", 13000, 2)), Some("cuMemAlloc_v2"));
    assert_eq!(
        name(resolve("cuMemcpyHtoD", 13000, 1)),
        Some("cuMemcpyHtoD_v2")
    );
    assert_eq!(
        name(resolve("cuMemcpyHtoD", 13000, 2)),
        Some("cuMemcpyHtoD_v2_ptds")
    );
    // Below its first per-thread variant (7000), an API with such variants
    // is not handed out for per-thread requests: the real driver 580 answers
    // VERSION_NOT_SUFFICIENT (gpu/procaddr.sh compares every boundary).
    assert_eq!(
        resolve("cuMemcpyHtoD", 3020, 2),
        ProcResolution::VersionNotSufficient
    );
    assert_eq!(
        name(resolve("cuMemcpyHtoD", 3020, 0)),
        Some("cuMemcpyHtoD_v2")
    );
    assert_eq!(
        name(resolve("cuMemcpyBatchAsync", 12090, 2)),
        Some("cuMemcpyBatchAsync_ptsz")
    );
    assert_eq!(
        name(resolve("cuMemcpyBatchAsync", 13000, 0)),
        Some("cuMemcpyBatchAsync_v2")
    );
}
