//! The client library finds the mediator at `cuInit`, in a real process:
//! `VGPU_MEDIATOR`, then the client file, then a vGPU PCI device, then the
//! default socket; addresses it cannot use give `CUDA_ERROR_NO_DEVICE` and a
//! log line that says why. A tiny C program loads `libcuda.so.1` (the
//! client, through `LD_LIBRARY_PATH`) and calls `cuInit`.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use common::{LibDir, Mediator, Output};

const CLIENT_C: &str = r#"
#include <dlfcn.h>
#include <stdio.h>
int main(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) { printf("dlopen %s\n", dlerror()); return 2; }
    int (*init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
    int (*count)(int *) = (int (*)(int *))dlsym(h, "cuDeviceGetCount");
    int n = -1;
    int r = init(0);
    if (r == 0) count(&n);
    printf("cuInit %d devices %d\n", r, n);
    return 0;
}
"#;

/// The C client, built once per test binary.
fn client_program() -> &'static Path {
    static BUILT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, exe) = BUILT.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let src = dir.path().join("client.c");
        fs::write(&src, CLIENT_C).expect("write");
        let exe = dir.path().join("client");
        let mut cc = Command::new("cc");
        cc.arg("-o").arg(&exe).arg(&src).arg("-ldl");
        common::run(cc, Duration::from_secs(120)).assert_success();
        (dir, exe)
    });
    exe
}

/// Runs the client with the vgpu library first on the loader path, the log
/// on standard error, no inherited `VGPU_*`, and `env`.
fn run_client(lib: &LibDir, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(client_program());
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("VGPU_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("LD_LIBRARY_PATH", lib.path())
        .env("VGPU_LOG", "stderr");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = common::run(cmd, Duration::from_secs(60));
    eprintln!("{env:?}\n{out}");
    out
}

fn fake_sysfs(root: &Path) -> PathBuf {
    let dev = root.join("sys/devices/pci0000:00/0000:00:05.0");
    fs::create_dir_all(&dev).expect("mkdir");
    for (name, value) in [
        ("vendor", "0x1af4"),
        ("device", "0x1110"),
        ("class", "0x050000"),
    ] {
        fs::write(dev.join(name), format!("{value}\n")).expect("write");
    }
    let links = root.join("sys/bus/pci/devices");
    fs::create_dir_all(&links).expect("mkdir");
    std::os::unix::fs::symlink(&dev, links.join("0000:00:05.0")).expect("link");
    root.join("sys")
}

#[test]
fn the_client_file_names_the_mediator() {
    let build = common::build();
    let lib = LibDir::new(&build);
    let m = Mediator::start(&build);
    let t = tempfile::tempdir().expect("tempdir");
    let file = t.path().join("client.toml");
    fs::write(&file, format!("mediator = \"{}\"\n", m.endpoint())).expect("write");
    let file_s = file.to_str().expect("utf-8");
    // An ivshmem device is present too: the file comes first.
    let sysfs = fake_sysfs(t.path());
    let sysfs_s = sysfs.to_str().expect("utf-8");
    let out = run_client(
        &lib,
        &[("VGPU_CLIENT_CONFIG", file_s), ("VGPU_SYSFS_ROOT", sysfs_s)],
    );
    out.assert_success().assert_line("cuInit 0 devices 1");
    assert!(
        out.stderr
            .contains(&format!("connected to {} (from {file_s})", m.endpoint())),
        "{out}"
    );

    // VGPU_MEDIATOR comes before the file.
    let none = format!("unix:{}", t.path().join("none.sock").display());
    let out = run_client(
        &lib,
        &[("VGPU_CLIENT_CONFIG", file_s), ("VGPU_MEDIATOR", &none)],
    );
    out.assert_success().assert_line("cuInit 100 devices -1");
    assert!(
        out.stderr.contains(&format!(
            "cannot reach the mediator at {none} (from VGPU_MEDIATOR)"
        )),
        "{out}"
    );
}

#[test]
fn unusable_addresses_fail_cleanly_and_say_why() {
    let build = common::build();
    let lib = LibDir::new(&build);
    let t = tempfile::tempdir().expect("tempdir");
    let file = t.path().join("client.toml");
    let file_s = file.to_str().expect("utf-8");
    let empty_sysfs = t.path().join("empty-sys");
    fs::create_dir(&empty_sysfs).expect("mkdir");
    let empty_s = empty_sysfs.to_str().expect("utf-8");

    // TCP with nothing listening: refused at once, and said so.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let tcp = format!("tcp://127.0.0.1:{port}");
    let out = run_client(
        &lib,
        &[("VGPU_MEDIATOR", &tcp), ("VGPU_CLIENT_CONFIG", file_s)],
    );
    out.assert_success().assert_line("cuInit 100 devices -1");
    assert!(
        out.stderr.contains(&format!(
            "cannot reach the mediator at {tcp} (from VGPU_MEDIATOR)"
        )),
        "{out}"
    );
    // Rings cannot cross machines: refused before connecting.
    let out = run_client(
        &lib,
        &[
            ("VGPU_MEDIATOR", &tcp),
            ("VGPU_TRANSPORT", "rings"),
            ("VGPU_CLIENT_CONFIG", file_s),
        ],
    );
    out.assert_success().assert_line("cuInit 100 devices -1");
    assert!(
        out.stderr
            .contains("VGPU_TRANSPORT=rings needs shared memory on one host"),
        "{out}"
    );

    // A typo in the file is an error naming the file, not a silent fallback.
    fs::write(&file, "mediatr = \"unix:/x\"\n").expect("write");
    let out = run_client(
        &lib,
        &[("VGPU_CLIENT_CONFIG", file_s), ("VGPU_SYSFS_ROOT", empty_s)],
    );
    out.assert_success().assert_line("cuInit 100 devices -1");
    assert!(
        out.stderr
            .contains(&format!("{file_s}: unknown key \"mediatr\"")),
        "{out}"
    );

    // A vGPU PCI device is found by the scan; this fake one has no BARs, so
    // the client cannot use it and says why (e2e_ivshmem.rs runs a usable one).
    fs::remove_file(&file).expect("rm");
    let sysfs = fake_sysfs(t.path());
    let out = run_client(
        &lib,
        &[
            ("VGPU_CLIENT_CONFIG", file_s),
            ("VGPU_SYSFS_ROOT", sysfs.to_str().expect("utf-8")),
        ],
    );
    out.assert_success().assert_line("cuInit 100 devices -1");
    assert!(
        out.stderr
            .contains("pci:0000:00:05.0 (vGPU PCI device found under"),
        "{out}"
    );
    assert!(
        out.stderr.contains("cannot use the vgpu PCI device") && out.stderr.contains("resource2"),
        "{out}"
    );

    // Nothing configured: the default socket.
    if Path::new("/run/vgpu/mediator.sock").exists() {
        println!("default socket case skipped: a mediator listens on this machine");
        return;
    }
    let out = run_client(
        &lib,
        &[("VGPU_CLIENT_CONFIG", file_s), ("VGPU_SYSFS_ROOT", empty_s)],
    );
    out.assert_success().assert_line("cuInit 100 devices -1");
    assert!(
        out.stderr.contains(
            "cannot reach the mediator at unix:/run/vgpu/mediator.sock (the default socket)"
        ),
        "{out}"
    );
}
