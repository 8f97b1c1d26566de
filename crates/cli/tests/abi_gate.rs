//! ABI gate: the built client exports exactly the real driver's symbols
//! (`fixtures/libcuda-580-exports.txt`) plus vgpu's marker, and its SONAME is
//! `libcuda.so.1`, so the loader takes it for NVIDIA's library.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Runs a binutils tool on `lib` (60 s at most); returns its stdout.
fn tool(program: &str, args: &[&str], lib: &Path) -> String {
    let mut cmd = Command::new(program);
    cmd.args(args).arg(lib);
    let out = common::run(cmd, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{program} {args:?} {} failed (binutils must be installed):\n{out}",
        lib.display()
    );
    out.stdout
}

fn fixture() -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/libcuda-580-exports.txt");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let set: BTreeSet<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    assert_eq!(set.len(), 707, "the fixture lists the 707 driver exports");
    set
}

#[test]
fn exports_are_exactly_the_drivers_plus_the_marker() {
    let build = common::build();
    let nm = tool("nm", &["-D", "--defined-only"], &build.client);
    // Lines are `ADDRESS TYPE NAME`; versioned names (`name@@VER`) would be
    // a difference too, so they are kept whole.
    let exported: BTreeSet<String> = nm
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .map(String::from)
        .collect();
    let mut want = fixture();
    want.insert("vgpu_shim_marker".into());
    let missing: Vec<_> = want.difference(&exported).collect();
    let extra: Vec<_> = exported.difference(&want).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{}: {} missing exports {missing:?}; {} extra exports {extra:?}",
        build.client.display(),
        missing.len(),
        extra.len()
    );
}

#[test]
fn soname_is_libcuda_so_1() {
    let build = common::build();
    let dynamic = tool("readelf", &["-d", "-W"], &build.client);
    let sonames: Vec<&str> = dynamic
        .lines()
        .filter(|l| l.contains("(SONAME)"))
        .filter_map(|l| l.split_once('[').and_then(|(_, r)| r.split_once(']')))
        .map(|(name, _)| name)
        .collect();
    assert_eq!(sonames, ["libcuda.so.1"], "readelf -d:\n{dynamic}");
}

#[test]
fn elf_reader_agrees_with_binutils() {
    // `vgpu doctor` classifies libraries with this reader: it must see the
    // client as the gate does.
    let build = common::build();
    let info = vgpu_cli::elf::read_dyn_info(&build.client).expect("read ELF dynamic info");
    assert_eq!(info.soname.as_deref(), Some("libcuda.so.1"));
    let exported: BTreeSet<String> = info.exports.iter().cloned().collect();
    let mut want = fixture();
    want.insert("vgpu_shim_marker".into());
    assert!(exported == want, "the ELF reader sees other exports");
}
