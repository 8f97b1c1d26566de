//! Checks that need a C compiler (`cc`; CI installs gcc): the ELF reader and
//! driver classification on real shared libraries, and the demo's embedded
//! example program.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use vgpu_cli::driver::{self, Candidate};
use vgpu_cli::elf;
use vgpu_cli::privdir::TempDir;

fn scratch(name: &str) -> TempDir {
    TempDir::new(&std::env::temp_dir(), &format!("test-{name}")).expect("temp dir")
}

fn cc(args: &[&str], dir: &Path) {
    let out = Command::new("cc")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("cc must be installed");
    assert!(
        out.status.success(),
        "cc {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds a shared library from `source` with the given SONAME.
fn shared_lib(dir: &Path, name: &str, soname: &str, source: &str) -> PathBuf {
    fs::write(dir.join(format!("{name}.c")), source).expect("write source");
    let so = format!("{name}.so");
    cc(
        &[
            "-shared",
            "-fPIC",
            "-o",
            &so,
            &format!("-Wl,-soname,{soname}"),
            &format!("{name}.c"),
        ],
        dir,
    );
    dir.join(so)
}

#[test]
fn elf_reader_finds_soname_and_exports() {
    let t = scratch("elf");
    let lib = shared_lib(
        t.path(),
        "fake",
        "libcuda.so.1",
        "int cuInit(unsigned f) { return (int)f; }\nstatic int hidden(void) { return 1; }\nint (*keep)(void) = hidden;\n",
    );
    let info = elf::read_dyn_info(&lib).expect("reads");
    assert_eq!(info.soname.as_deref(), Some("libcuda.so.1"));
    assert!(info.exports("cuInit"));
    assert!(!info.exports("hidden"));
}

#[test]
fn classification_tells_vgpu_from_a_driver() {
    let t = scratch("classify");
    let driver_like = shared_lib(
        t.path(),
        "drv",
        "libcuda.so.1",
        "int cuInit(unsigned f) { return (int)f; }\n",
    );
    let vgpu_like = shared_lib(
        t.path(),
        "shim",
        "libcuda.so.1",
        "int cuInit(unsigned f) { return (int)f; }\nconst char vgpu_shim_marker[] = \"vgpu\";\n",
    );
    let other = shared_lib(
        t.path(),
        "other",
        "libother.so",
        "int other(void) { return 0; }\n",
    );
    assert_eq!(
        driver::classify(&driver_like),
        Candidate::Driver(driver_like.clone())
    );
    assert_eq!(
        driver::classify(&vgpu_like),
        Candidate::Vgpu(vgpu_like.clone())
    );
    assert!(
        matches!(driver::classify(&other), Candidate::Unusable(_, why) if why.contains("cuInit"))
    );
    let text = t.path().join("text.so");
    fs::write(&text, "not an ELF file").expect("write");
    assert!(matches!(driver::classify(&text), Candidate::Unusable(..)));
}

#[test]
fn embedded_example_compiles_cleanly_and_fails_cleanly_without_a_driver() {
    let t = scratch("example");
    fs::write(t.path().join("vad.c"), vgpu_cli::example::SOURCE).expect("write");
    cc(
        &[
            "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-o", "vad", "vad.c", "-ldl",
        ],
        t.path(),
    );
    // A library without the entry points: the program must say so and exit 3.
    let lib = shared_lib(
        t.path(),
        "empty",
        "libempty.so",
        "int nothing(void) { return 0; }\n",
    );
    let out = Command::new(t.path().join("vad"))
        .arg("-l")
        .arg(&lib)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(3));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("does not export cuInit"), "{stdout}");
}
