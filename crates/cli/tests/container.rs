//! A container without a container runtime: an image root built the way
//! `docs/containers.md` says (`vgpu install --root` plus the few files a
//! dynamically linked C client needs), entered with `chroot` in a new mount
//! namespace where the mediator's socket directory is bind-mounted at
//! `/run/vgpu`, as `-v /run/vgpu:/run/vgpu` would do. The client inside has
//! no vgpu environment at all: it finds vgpu's `libcuda.so.1` through the
//! image's loader cache and the mediator at the default socket.
//!
//! It needs root, `unshare` and `chroot` (util-linux, coreutils), `ldd` and
//! a C compiler; where one is missing or namespaces are not permitted, the
//! test prints why and passes without running.

mod common;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::Mediator;

/// Why the container test cannot run here, if it cannot.
fn cannot_run() -> Option<String> {
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root: chroot and mounts need it".into());
    }
    for (tool, arg) in [
        ("unshare", "--version"),
        ("chroot", "--version"),
        ("ldd", "--version"),
        ("cc", "--version"),
    ] {
        if Command::new(tool).arg(arg).output().is_err() {
            return Some(format!("`{tool}` is not installed"));
        }
    }
    let probe = Command::new("unshare")
        .args(["-m", "--propagation", "private", "true"])
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        return Some("`unshare -m` (a new mount namespace) is not permitted here".into());
    }
    None
}

/// The absolute paths of the shared objects `ldd` says `file` loads.
fn needed(file: &Path) -> Vec<PathBuf> {
    let out = Command::new("ldd").arg(file).output().expect("ldd");
    assert!(out.status.success(), "ldd {}", file.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = match l.split_once("=>") {
                Some((_, rest)) => rest.trim().split(' ').next()?,
                None => l.split(' ').next()?,
            };
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect()
}

/// Copies `path` of the host (its target, if a link) to the same path
/// under `root`.
fn copy_in(root: &Path, path: &Path) {
    let to = root.join(path.strip_prefix("/").expect("absolute"));
    fs::create_dir_all(to.parent().expect("a folder")).expect("mkdir");
    fs::copy(path, &to).unwrap_or_else(|e| panic!("copy {}: {e}", path.display()));
}

/// An image root: the host's merged-/usr links, the loader configuration,
/// the standard library folders, and `exe` at `/client` with every shared
/// object it and vgpu's client library need (libcuda.so.1 itself comes
/// from `vgpu install --root`).
fn image(root: &Path, exe: &Path, client: &Path) {
    for d in ["lib", "lib64", "bin", "sbin"] {
        if let Ok(target) = fs::read_link(Path::new("/").join(d)) {
            symlink(target, root.join(d)).expect("merged-/usr link");
        }
    }
    let multiarch = format!("usr/lib/{}-linux-gnu", std::env::consts::ARCH);
    for d in [
        multiarch.as_str(),
        "usr/lib64",
        "usr/local/lib",
        "etc/ld.so.conf.d",
        "var/cache/ldconfig",
        "run/vgpu",
        "proc",
        "dev",
    ] {
        fs::create_dir_all(root.join(d)).expect("mkdir");
    }
    fs::write(
        root.join("etc/ld.so.conf"),
        "include /etc/ld.so.conf.d/*.conf\n",
    )
    .expect("ld.so.conf");
    for lib in needed(exe).into_iter().chain(needed(client)) {
        copy_in(root, &lib);
    }
    fs::copy(exe, root.join("client")).expect("copy the client program");
}

#[test]
fn a_client_in_an_image_root_reaches_the_mounted_socket() {
    if let Some(why) = cannot_run() {
        // CI must run it: `.ci/run` runs as root with util-linux and a C
        // compiler, and sets `CI`.
        assert!(
            std::env::var_os("CI").is_none(),
            "the container test cannot run in CI: {why}"
        );
        eprintln!("SKIPPED the container test: {why}");
        return;
    }
    let build = common::build();
    let t = tempfile::tempdir().expect("tempdir");
    let root = t.path().join("image");
    let sockets = t.path().join("host-run-vgpu");
    fs::create_dir_all(&sockets).expect("mkdir");
    let socket = sockets.join("mediator.sock");
    let m = Mediator::start_with(&build, &["--listen", &format!("unix:{}", socket.display())]);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        assert!(std::time::Instant::now() < deadline, "{}", m.log_text());
        std::thread::sleep(Duration::from_millis(10));
    }

    let exe = t.path().join("session_hold");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/c/session_hold.c");
    let cc = common::run(
        {
            let mut cc = Command::new("cc");
            cc.args(["-std=c11", "-O2", "-Wall", "-o"])
                .arg(&exe)
                .arg(&src)
                .arg("-ldl");
            cc
        },
        Duration::from_secs(120),
    );
    cc.assert_success();
    fs::create_dir_all(&root).expect("mkdir");
    image(&root, &exe, &build.client);

    let mut install = Command::new(env!("CARGO_BIN_EXE_vgpu"));
    install
        .args(["install", "--root"])
        .arg(&root)
        .arg("--lib")
        .arg(&build.client);
    common::run(install, Duration::from_secs(60)).assert_success();
    assert!(root.join("usr/lib/vgpu/libvgpu-cuda.so").is_file());

    // The container: a private mount namespace, the host's socket folder
    // mounted at /run/vgpu, /proc and /dev, then chroot with an empty
    // environment (PATH aside) and no standard input.
    let script = r#"
set -eu
R=$1; S=$2
mount --bind "$S" "$R/run/vgpu"
mount -t proc proc "$R/proc"
mount --rbind /dev "$R/dev"
exec chroot "$R" /client 1048576 3 </dev/null
"#;
    let mut cmd = Command::new("unshare");
    cmd.env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .args(["-m", "--propagation", "private", "sh", "-c", script, "sh"])
        .arg(&root)
        .arg(&sockets);
    let out = common::run(cmd, Duration::from_secs(60));
    out.assert_success()
        .assert_line("ok load libcuda.so.1")
        .assert_line("freed")
        .assert_line("done");
    let pid: u32 = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("ready "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no ready line:\n{out}"));
    // The mediator on the host served it, through the mounted socket.
    let log = m.log_text();
    assert!(
        log.lines()
            .any(|l| l.contains("session starting") && l.contains(&format!("client_pid={pid}"))),
        "the mediator served no session of client {pid}:\n{log}"
    );
}
