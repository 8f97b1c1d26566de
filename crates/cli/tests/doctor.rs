//! `vgpu doctor` and `vgpu status` against a real mediator on the simulated
//! device: the exit code is 0 only when all is well, every failure names its
//! fix, and both find the mediator the way the client library does
//! (`VGPU_MEDIATOR`, the client file, a vGPU PCI device, the default socket).
//! No GPU is needed.

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{Mediator, Output};

const DEADLINE: Duration = Duration::from_secs(60);

/// `vgpu ARGS` with no `VGPU_*` or `LD_LIBRARY_PATH` from the test runner,
/// plus `env`.
fn vgpu(args: &[&str], env: &[(&str, &Path)]) -> Output {
    vgpu_as(None, args, env)
}

/// [`vgpu`], run through `setpriv` as another user when `user` is given.
fn vgpu_as(user: Option<u32>, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let bin = env!("CARGO_BIN_EXE_vgpu");
    let mut cmd = match user {
        Some(uid) => {
            let mut c = Command::new("setpriv");
            c.args([
                &format!("--reuid={uid}"),
                &format!("--regid={uid}"),
                "--clear-groups",
                bin,
            ]);
            c
        }
        None => Command::new(bin),
    };
    cmd.args(args);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("VGPU_") || k == "LD_LIBRARY_PATH" {
            cmd.env_remove(k);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = common::run(cmd, DEADLINE);
    eprintln!("$ vgpu {}\n{out}", args.join(" "));
    out
}

fn has_line(out: &Output, tag: &str, check: &str, text: &str) -> bool {
    out.stdout
        .lines()
        .any(|l| l.starts_with(tag) && l[4..].trim_start().starts_with(check) && l.contains(text))
}

fn socket_of(m: &Mediator) -> PathBuf {
    PathBuf::from(m.endpoint().trim_start_matches("unix:"))
}

/// Whether doctor can pass on this machine at all: it fails, rightly, when
/// vgpu is installed system-wide and something drifted, which a test must
/// not depend on.
fn machine_is_clean() -> bool {
    !Path::new("/var/lib/vgpu/manifest.json").exists()
}

#[test]
fn doctor_passes_with_a_live_mediator() {
    if !machine_is_clean() {
        println!("SKIPPED doctor_passes_with_a_live_mediator: vgpu is installed on this machine");
        return;
    }
    let m = Mediator::start(&common::build());
    let out = vgpu(&["doctor", "--mediator", &m.endpoint()], &[]);
    out.assert_success();
    assert!(out.stdout.contains("all checks passed"), "{out}");
    assert!(
        has_line(&out, "ok", "mediator socket", "this user may connect"),
        "{out}"
    );
    assert!(
        has_line(&out, "ok", "mediator", "answered the handshake"),
        "{out}"
    );
    assert!(has_line(&out, "ok", "versions", "protocol v"), "{out}");
    assert!(!out.stdout.contains("FAIL"), "{out}");
}

#[test]
fn doctor_fails_and_explains_an_unreachable_mediator() {
    let t = tempfile::tempdir().expect("tempdir");
    let sock = t.path().join("none.sock");
    let out = vgpu(
        &["doctor", "--mediator", &format!("unix:{}", sock.display())],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{out}");
    assert!(
        has_line(&out, "FAIL", "mediator socket", "is the mediator running?"),
        "{out}"
    );
    assert!(out.stderr.contains("check(s) failed"), "{out}");
}

#[test]
fn status_and_doctor_use_the_client_file() {
    if !machine_is_clean() {
        println!(
            "SKIPPED status_and_doctor_use_the_client_file: vgpu is installed on this machine"
        );
        return;
    }
    let m = Mediator::start(&common::build());
    let t = tempfile::tempdir().expect("tempdir");
    let file = t.path().join("client.toml");
    fs::write(&file, format!("mediator = \"{}\"\n", m.endpoint())).expect("write");
    let env = [("VGPU_CLIENT_CONFIG", file.as_path())];
    let status = vgpu(&["status"], &env);
    status.assert_success();
    let want = format!("{} (from {})", m.endpoint(), file.display());
    assert!(status.stdout.contains(&want), "{status}");
    let doctor = vgpu(&["doctor"], &env);
    doctor.assert_success();
    assert!(
        has_line(&doctor, "ok", "mediator address", &want),
        "{doctor}"
    );

    // VGPU_MEDIATOR wins over the file.
    let none = t.path().join("none.sock");
    let mut cmd_env = env.to_vec();
    let endpoint = PathBuf::from(format!("unix:{}", none.display()));
    cmd_env.push(("VGPU_MEDIATOR", endpoint.as_path()));
    let out = vgpu(&["status"], &cmd_env);
    assert_eq!(out.status.code(), Some(1), "{out}");
    assert!(out.stdout.contains("(from VGPU_MEDIATOR)"), "{out}");

    // A broken file is reported with its path.
    fs::write(&file, "mediatr = \"typo\"\n").expect("write");
    let out = vgpu(&["doctor"], &env);
    assert_eq!(out.status.code(), Some(1), "{out}");
    assert!(
        has_line(&out, "FAIL", "mediator address", "unknown key \"mediatr\""),
        "{out}"
    );
}

#[test]
fn a_vgpu_pci_device_is_found_and_explained() {
    let t = tempfile::tempdir().expect("tempdir");
    let dev = t.path().join("sys/devices/pci0000:00/0000:00:05.0");
    fs::create_dir_all(&dev).expect("mkdir");
    for (name, value) in [
        ("vendor", "0x1af4"),
        ("device", "0x1110"),
        ("class", "0x050000"),
    ] {
        fs::write(dev.join(name), format!("{value}\n")).expect("write");
    }
    let links = t.path().join("sys/bus/pci/devices");
    fs::create_dir_all(&links).expect("mkdir");
    std::os::unix::fs::symlink(&dev, links.join("0000:00:05.0")).expect("link");
    let sysfs = t.path().join("sys");
    let no_file = t.path().join("client.toml");
    let env = [
        ("VGPU_SYSFS_ROOT", sysfs.as_path()),
        ("VGPU_CLIENT_CONFIG", no_file.as_path()),
    ];
    let out = vgpu(&["doctor"], &env);
    assert_eq!(out.status.code(), Some(1), "{out}");
    assert!(
        has_line(
            &out,
            "ok",
            "mediator address",
            "pci:0000:00:05.0 (vGPU PCI device found under"
        ),
        "{out}"
    );
    // This fake device has no BARs: doctor says the client cannot use it
    // (e2e_ivshmem.rs and gpu/ivshmem.sh see a usable one answer).
    assert!(has_line(&out, "FAIL", "mediator", "resource2"), "{out}");
}

#[test]
fn doctor_sees_a_socket_this_user_cannot_use() {
    let root =
        fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0);
    if !root || Command::new("setpriv").arg("--version").output().is_err() {
        println!("SKIPPED doctor_sees_a_socket_this_user_cannot_use: needs root and setpriv to run doctor as another user");
        return;
    }
    let m = Mediator::start(&common::build());
    let sock = socket_of(&m);
    let dir = sock.parent().expect("socket folder");
    let nobody = Some(65534);
    let args = ["doctor", "--mediator", &m.endpoint()];
    // The mediator's private folder is closed to other users.
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).expect("chmod");
    let out = vgpu_as(nobody, &args, &[]);
    assert_eq!(out.status.code(), Some(1), "{out}");
    assert!(
        has_line(
            &out,
            "FAIL",
            "mediator socket",
            "a folder on the way is closed"
        ),
        "{out}"
    );
    // The folder is open, the socket is not writable by others.
    fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).expect("chmod");
    fs::set_permissions(&sock, fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = vgpu_as(nobody, &args, &[]);
    assert_eq!(out.status.code(), Some(1), "{out}");
    assert!(
        has_line(&out, "FAIL", "mediator socket", "may not connect"),
        "{out}"
    );
    // Opened up, the same user passes this check and reaches the mediator.
    fs::set_permissions(&sock, fs::Permissions::from_mode(0o777)).expect("chmod");
    let out = vgpu_as(nobody, &args, &[]);
    assert!(
        has_line(&out, "ok", "mediator socket", "this user may connect"),
        "{out}"
    );
    assert!(
        has_line(&out, "ok", "mediator", "answered the handshake"),
        "{out}"
    );
}
