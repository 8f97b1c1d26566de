//! `vgpu install` / `vgpu uninstall` on scratch roots built by the tests.
//!
//! Every test builds its own root: the standard library folders, a fake
//! pre-existing `libcuda.so.1` file and a `libcuda.so` link to it. The tree
//! is snapshotted (paths, types, modes, contents, link targets) before the
//! install and compared after the uninstall.
//!
//! When the tests run as root with `unshare` and overlayfs (CI does), one
//! test goes further and asks the real system loader: inside a private
//! mount namespace the scratch root's library folders and `/etc` are laid
//! over the real ones, and a process started with `env -i`, plus a
//! grandchild it starts by a direct `execve` with an empty environment, must
//! both map vgpu's library (read from their own `/proc/self/maps`). Without
//! those, that test prints why it was skipped.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;
use vgpu_cli::install::manifest::Manifest;
use vgpu_cli::install::rooted::Root;

const FAKE_DRIVER: &[u8] = b"not really NVIDIA's driver\n";

fn multiarch() -> String {
    format!("usr/lib/{}-linux-gnu", std::env::consts::ARCH)
}

/// The client library built with this test.
fn client() -> PathBuf {
    common::build().client
}

/// The standard library folders of the scratch root, and vgpu's own.
fn dirs_with_vgpu() -> [String; 4] {
    [
        multiarch(),
        "usr/lib64".into(),
        "usr/local/lib".into(),
        "usr/lib/vgpu".into(),
    ]
}

/// A scratch root that looks like a small distribution.
fn scratch_root() -> TempDir {
    let t = tempfile::Builder::new()
        .prefix("vgpu-install-root")
        .tempdir()
        .expect("tempdir");
    let r = t.path();
    for d in [
        multiarch().as_str(),
        "usr/lib64",
        "usr/local/lib",
        "etc/ld.so.conf.d",
        "var/cache/ldconfig",
    ] {
        fs::create_dir_all(r.join(d)).expect("mkdir");
    }
    fs::write(
        r.join("etc/ld.so.conf"),
        "include /etc/ld.so.conf.d/*.conf\n",
    )
    .expect("ld.so.conf");
    fs::write(r.join("etc/ld.so.conf.d/libc.conf"), "/usr/local/lib\n").expect("libc.conf");
    let lib = r.join(multiarch());
    fs::write(lib.join("libcuda.so.1"), FAKE_DRIVER).expect("fake driver");
    fs::set_permissions(lib.join("libcuda.so.1"), fs::Permissions::from_mode(0o640))
        .expect("chmod");
    symlink("libcuda.so.1", lib.join("libcuda.so")).expect("link");
    fs::write(lib.join("libnvidia-ml.so.1"), b"fake NVML").expect("fake NVML");
    fs::write(r.join("usr/local/lib/libother.so"), b"unrelated").expect("other");
    t
}

/// Every path under `root` with its type, mode and contents or target
/// (ldconfig's stat cache by its presence alone).
fn snapshot(root: &Path) -> BTreeMap<PathBuf, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
        let mut entries: Vec<_> = fs::read_dir(dir)
            .expect("read_dir")
            .map(|e| e.expect("entry").path())
            .collect();
        entries.sort();
        for p in entries {
            let m = fs::symlink_metadata(&p).expect("lstat");
            let rel = p.strip_prefix(root).expect("inside").to_path_buf();
            let mode = m.mode() & 0o7777;
            let v = if m.file_type().is_symlink() {
                format!("link -> {}", fs::read_link(&p).expect("readlink").display())
            } else if m.is_dir() {
                walk(root, &p, out);
                format!("dir {mode:o}")
            } else if rel == Path::new("var/cache/ldconfig/aux-cache") {
                // ldconfig's own cache of the libraries' stat data (inode
                // times): a rerun may rewrite it with nothing else changed.
                format!("file {mode:o} (ldconfig's stat cache)")
            } else {
                let bytes = fs::read(&p).expect("read");
                format!("file {mode:o} {} bytes {:?}", bytes.len(), hash(&bytes))
            };
            out.insert(rel, v);
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn hash(bytes: &[u8]) -> u64 {
    use std::hash::{DefaultHasher, Hasher};
    let mut h = DefaultHasher::new();
    h.write(bytes);
    h.finish()
}

fn vgpu(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_vgpu"))
        .args(args)
        .output()
        .expect("run vgpu");
    eprintln!(
        "$ vgpu {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn install(root: &Path, extra: &[&str]) -> Output {
    let lib = client();
    let mut args = vec![
        "install",
        "--root",
        root.to_str().expect("utf-8"),
        "--lib",
        lib.to_str().expect("utf-8"),
    ];
    args.extend_from_slice(extra);
    vgpu(&args)
}

fn uninstall(root: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["uninstall", "--root", root.to_str().expect("utf-8")];
    args.extend_from_slice(extra);
    vgpu(&args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn assert_ok(o: &Output) {
    assert!(o.status.success(), "vgpu failed: {:?}", o.status);
}

/// Checks that every `libcuda.so*` name the loader or linker could use
/// resolves, inside the root, to a byte-for-byte copy of the client.
fn assert_links_serve_vgpu(root: &Path) {
    let r = Root::new(root).expect("root");
    let want = fs::read(client()).expect("client");
    for dir in dirs_with_vgpu() {
        for name in ["libcuda.so.1", "libcuda.so"] {
            let p = Path::new("/").join(&dir).join(name);
            let real = r.resolve(&p).expect("resolves");
            assert_eq!(
                real,
                Path::new("/usr/lib/vgpu/libvgpu-cuda.so"),
                "{}",
                p.display()
            );
            assert!(
                fs::read(r.host(&real)).expect("read") == want,
                "{} is not the client",
                p.display()
            );
        }
    }
    let want_nvml = fs::read(common::build().nvml).expect("NVML library");
    for dir in dirs_with_vgpu() {
        for name in ["libnvidia-ml.so.1", "libnvidia-ml.so"] {
            let p = Path::new("/").join(&dir).join(name);
            let real = r.resolve(&p).expect("resolves");
            assert_eq!(
                real,
                Path::new("/usr/lib/vgpu/libvgpu-nvml.so"),
                "{}",
                p.display()
            );
            assert!(
                fs::read(r.host(&real)).expect("read") == want_nvml,
                "{} is not the NVML library",
                p.display()
            );
        }
    }
    let conf = fs::read_to_string(root.join("etc/ld.so.conf.d/000-vgpu.conf")).expect("conf");
    assert!(conf.lines().any(|l| l == "/usr/lib/vgpu"), "{conf}");
    let mut names: Vec<_> = fs::read_dir(root.join("etc/ld.so.conf.d"))
        .expect("conf.d")
        .map(|e| e.expect("entry").file_name())
        .collect();
    names.sort();
    assert_eq!(names[0], "000-vgpu.conf", "vgpu's file sorts first");
}

#[test]
fn install_twice_then_uninstall_restores_the_tree_exactly() {
    let t = scratch_root();
    let root = t.path();
    let before = snapshot(root);

    let first = install(root, &[]);
    assert_ok(&first);
    assert!(
        stdout(&first).contains("backup"),
        "the fake driver is backed up"
    );
    assert_links_serve_vgpu(root);
    let backup = root.join("var/lib/vgpu/backup").join(multiarch());
    assert_eq!(
        fs::read(backup.join("libcuda.so.1")).expect("backup"),
        FAKE_DRIVER
    );
    assert_eq!(
        fs::read_link(backup.join("libcuda.so")).expect("link backup"),
        Path::new("libcuda.so.1")
    );
    let manifest = Manifest::load(&root.join("var/lib/vgpu/manifest.json"))
        .expect("readable")
        .expect("written");
    assert_eq!(
        fs::read(backup.join("libnvidia-ml.so.1")).expect("NVML backup"),
        b"fake NVML"
    );
    assert_eq!(
        manifest.entries.len(),
        19,
        "2 libraries, 4 links beside them, 3 folders x 4 links, conf"
    );
    let installed = snapshot(root);

    let second = install(root, &[]);
    assert_ok(&second);
    let text = stdout(&second);
    assert_eq!(text.matches("unchanged").count(), 19, "{text}");
    assert!(!text.contains("backup "), "nothing new to back up: {text}");
    assert_eq!(
        snapshot(root),
        installed,
        "a second install changes nothing"
    );

    assert_ok(&uninstall(root, &[]));
    assert_eq!(
        snapshot(root),
        before,
        "uninstall restores the tree exactly"
    );
    let mode = fs::metadata(root.join(multiarch()).join("libcuda.so.1"))
        .expect("stat")
        .mode();
    assert_eq!(mode & 0o7777, 0o640);

    let again = uninstall(root, &[]);
    assert_ok(&again);
    assert!(stdout(&again).contains("nothing to do"));
    assert_eq!(snapshot(root), before);
}

#[test]
fn dry_run_changes_nothing() {
    let t = scratch_root();
    let before = snapshot(t.path());
    let out = install(t.path(), &["--dry-run"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("would link"));
    assert_eq!(snapshot(t.path()), before);
    assert_ok(&install(t.path(), &[]));
    let installed = snapshot(t.path());
    assert_ok(&uninstall(t.path(), &["--dry-run"]));
    assert_eq!(snapshot(t.path()), installed);
    assert_ok(&uninstall(t.path(), &[]));
    assert_eq!(snapshot(t.path()), before);
}

#[test]
fn uninstall_refuses_after_changes_unless_forced() {
    let t = scratch_root();
    let root = t.path();
    let before = snapshot(root);
    assert_ok(&install(root, &[]));
    // Someone re-points a link (a plain `ldconfig` does this).
    let link = root.join("usr/lib64/libcuda.so.1");
    fs::remove_file(&link).expect("rm");
    symlink("/somewhere/else.so", &link).expect("link");
    let changed = snapshot(root);

    let refused = uninstall(root, &[]);
    assert_eq!(refused.status.code(), Some(6), "refused");
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("--force"), "{err}");
    assert!(stdout(&refused).contains("/usr/lib64/libcuda.so.1"));
    assert_eq!(
        snapshot(root),
        changed,
        "a refused uninstall changes nothing"
    );

    assert_ok(&uninstall(root, &["--force"]));
    assert_eq!(snapshot(root), before);
}

#[test]
fn reinstall_after_an_outside_change_keeps_the_newer_state() {
    let t = scratch_root();
    let root = t.path();
    let before = snapshot(root);
    assert_ok(&install(root, &[]));
    // A driver update replaces vgpu's link with its own file.
    let rel = Path::new(&multiarch()).join("libcuda.so.1");
    let p = root.join(&rel);
    fs::remove_file(&p).expect("rm");
    fs::write(&p, b"driver 2").expect("write");
    let newer = snapshot(root)[&rel].clone();
    let out = install(root, &[]);
    assert_ok(&out);
    assert!(stdout(&out).contains("changed since the last install"));
    assert_links_serve_vgpu(root);
    assert_ok(&uninstall(root, &[]));
    // Everything as before vgpu, except the file the update put there.
    let mut expected = before;
    expected.insert(rel, newer);
    assert_eq!(snapshot(root), expected);
    assert_eq!(fs::read(&p).expect("read"), b"driver 2");
}

#[test]
fn refuses_a_library_that_is_not_vgpu() {
    let t = scratch_root();
    let before = snapshot(t.path());
    let fake = t.path().join(multiarch()).join("libcuda.so.1");
    let out = vgpu(&[
        "install",
        "--root",
        t.path().to_str().expect("utf-8"),
        "--lib",
        fake.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(snapshot(t.path()), before);
}

#[test]
fn a_fresh_loader_cache_is_rebuilt_identical() {
    let Some(ldconfig) = ["/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .into_iter()
        .find(|p| Path::new(p).is_file())
    else {
        println!("SKIPPED a_fresh_loader_cache_is_rebuilt_identical: no ldconfig on this machine");
        return;
    };
    if !is_root() {
        println!("SKIPPED a_fresh_loader_cache_is_rebuilt_identical: ldconfig -r needs root");
        return;
    }
    let t = scratch_root();
    let root = t.path();
    fs::remove_dir(root.join("var/cache/ldconfig")).expect("rmdir");
    let st = Command::new(ldconfig)
        .args(["-X", "-r"])
        .arg(root)
        .status()
        .expect("ldconfig");
    assert!(st.success());
    assert!(root.join("etc/ld.so.cache").is_file());
    let before = snapshot(root);
    assert_ok(&install(root, &[]));
    assert_ne!(
        snapshot(root)[Path::new("etc/ld.so.cache")],
        before[Path::new("etc/ld.so.cache")]
    );
    let out = uninstall(root, &[]);
    assert_ok(&out);
    assert!(stdout(&out).contains("is as it was before vgpu"));
    assert_eq!(snapshot(root), before);
}

fn is_root() -> bool {
    fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// The program each process of the loader test runs: it reports its
/// environment's size, loads `libcuda.so.1`, prints the matching lines of
/// its own maps, and (as `child`) execs itself as `grandchild` with an empty
/// environment.
const PROBE_C: &str = r#"
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
extern char **environ;
int main(int argc, char **argv) {
    const char *who = argc > 1 ? argv[1] : "child";
    int n = 0;
    for (char **e = environ; e && *e; e++) n++;
    printf("%s env %d\n", who, n);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) printf("%s dlopen-error %s\n", who, dlerror());
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    while (f && fgets(line, sizeof line, f)) {
        char *p = strchr(line, '/');
        if (p && (strstr(p, "libcuda") || strstr(p, "vgpu"))) printf("%s map %s", who, p);
    }
    if (f) fclose(f);
    fflush(stdout);
    if (strcmp(who, "child") == 0) {
        char *args[] = { "probe", "grandchild", NULL };
        char *envp[] = { NULL };
        execve("/proc/self/exe", args, envp);
        perror("execve");
        return 1;
    }
    return 0;
}
"#;

const FAKE_DRIVER_C: &str = "int cuInit(unsigned flags) { (void)flags; return 100; }\n";

/// Why the namespace test cannot run here, if it cannot.
fn namespace_unavailable() -> Option<String> {
    if !is_root() {
        return Some("not running as root".into());
    }
    if Command::new("unshare").arg("--version").output().is_err() {
        return Some("`unshare` (util-linux) is not installed".into());
    }
    let fs_types = fs::read_to_string("/proc/filesystems").unwrap_or_default();
    if !fs_types.lines().any(|l| l.trim_end().ends_with("overlay")) {
        return Some("the kernel has no overlayfs".into());
    }
    if Command::new("cc").arg("--version").output().is_err() {
        return Some("no C compiler (cc)".into());
    }
    let probe = Command::new("unshare")
        .args(["-m", "--propagation", "private", "true"])
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        return Some("`unshare -m` is not permitted here".into());
    }
    None
}

fn cc(args: &[&str]) {
    let out = Command::new("cc").args(args).output().expect("cc");
    assert!(
        out.status.success(),
        "cc {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `env -i PROBE child` (and the doctor) in a mount namespace where the
/// root's `/usr/lib`, `/usr/lib64`, `/usr/local/lib`, `/etc` and `/var/lib`
/// lie over the real ones (read-only overlays; the root's files win).
fn in_namespace(root: &Path, probe: &Path) -> String {
    let script = r#"
set -eu
R=$1; P=$2; V=$3
for d in /usr/lib /usr/lib64 /usr/local/lib /etc /var/lib; do
    if [ -d "$R$d" ] && [ -d "$d" ] && [ ! -L "$d" ]; then
        mount -t overlay overlay -o "ro,lowerdir=$R$d:$d" "$d"
    fi
done
env -i "$P" child
"$V" doctor --mediator unix:/nonexistent/vgpu-test.sock || true
"#;
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", script, "sh"])
        .arg(root)
        .arg(probe)
        .arg(env!("CARGO_BIN_EXE_vgpu"))
        .output()
        .expect("unshare");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("--- namespace ---\n{text}");
    assert!(out.status.success(), "namespace script failed");
    text
}

#[test]
fn env_cleared_child_and_execve_grandchild_map_vgpu() {
    if let Some(why) = namespace_unavailable() {
        println!("SKIPPED env_cleared_child_and_execve_grandchild_map_vgpu: {why}");
        return;
    }
    let t = scratch_root();
    let root = t.path();
    let lib = root.join(multiarch());
    // The pre-existing libcuda.so.1 is a real (fake) driver this time, so the
    // loader can show that uninstall gives it back.
    let work = tempfile::tempdir().expect("tempdir");
    let src = work.path().join("fake.c");
    fs::write(&src, FAKE_DRIVER_C).expect("write");
    let fake = lib.join("libcuda.so.1");
    fs::remove_file(&fake).expect("rm");
    cc(&[
        "-shared",
        "-fPIC",
        "-Wl,-soname,libcuda.so.1",
        "-o",
        fake.to_str().expect("utf-8"),
        src.to_str().expect("utf-8"),
    ]);
    let probe_src = work.path().join("probe.c");
    fs::write(&probe_src, PROBE_C).expect("write");
    let probe = work.path().join("probe");
    cc(&[
        "-o",
        probe.to_str().expect("utf-8"),
        probe_src.to_str().expect("utf-8"),
        "-ldl",
    ]);
    let before = snapshot(root);

    assert_ok(&install(root, &[]));
    let text = in_namespace(root, &probe);
    for who in ["child", "grandchild"] {
        assert!(
            text.contains(&format!("{who} env 0\n")),
            "{who} has an empty environment"
        );
        assert!(
            text.contains(&format!("{who} map /usr/lib/vgpu/libvgpu-cuda.so")),
            "{who} maps vgpu's library:\n{text}"
        );
    }
    for check in ["installed", "loader cache", "fresh process", "NVML"] {
        assert!(
            text.lines()
                .any(|l| l.starts_with("ok") && l[4..].trim_start().starts_with(check)),
            "doctor: `{check}` is ok:\n{text}"
        );
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with("FAIL") && l.contains("mediator socket")),
        "{text}"
    );

    assert_ok(&uninstall(root, &[]));
    assert_eq!(snapshot(root), before);
    let text = in_namespace(root, &probe);
    let fake_path = format!("/{}/libcuda.so.1", multiarch());
    for who in ["child", "grandchild"] {
        assert!(
            !text.contains(&format!("{who} map /usr/lib/vgpu")),
            "{who} no longer maps vgpu:\n{text}"
        );
        assert!(
            text.contains(&format!("{who} map {fake_path}")),
            "{who} maps the driver that was there before:\n{text}"
        );
    }
}

/// `vgpu install` and `vgpu uninstall` on `/` itself, in a mount namespace
/// where `/usr/lib`, `/usr/lib64`, `/usr/local/lib`, `/etc`, `/var/lib` and
/// `/var/cache` are writable overlays on a tmpfs: the real `ldconfig` (no
/// `-r`) and the real loader, while the machine's own files stay untouched.
#[test]
fn install_on_slash_in_a_namespace() {
    if let Some(why) = namespace_unavailable() {
        println!("SKIPPED install_on_slash_in_a_namespace: {why}");
        return;
    }
    let host_had_vgpu = Path::new("/usr/lib/vgpu").exists();
    let work = tempfile::tempdir().expect("tempdir");
    let probe_src = work.path().join("probe.c");
    fs::write(&probe_src, PROBE_C).expect("write");
    let probe = work.path().join("probe");
    cc(&[
        "-o",
        probe.to_str().expect("utf-8"),
        probe_src.to_str().expect("utf-8"),
        "-ldl",
    ]);
    let scratch = work.path().join("overlays");
    fs::create_dir(&scratch).expect("mkdir");
    let script = r#"
set -eu
W=$1; P=$2; V=$3; L=$4; A=$5
mount -t tmpfs tmpfs "$W"
for d in /usr/lib /usr/lib64 /usr/local/lib /etc /var/lib /var/cache; do
    if [ -d "$d" ] && [ ! -L "$d" ]; then
        n=$(echo "$d" | tr / _)
        mkdir -p "$W/u$n" "$W/w$n"
        mount -t overlay overlay -o "lowerdir=$d,upperdir=$W/u$n,workdir=$W/w$n" "$d"
        grep -q " $d overlay " /proc/self/mounts
    fi
done
snap() {
    for p in /usr/lib/$A-linux-gnu/libcuda.so.1 /usr/lib/$A-linux-gnu/libcuda.so \
             /usr/lib64/libcuda.so.1 /usr/lib64/libcuda.so /usr/local/lib/libcuda.so.1 \
             /usr/local/lib/libcuda.so /usr/lib/vgpu /etc/ld.so.conf.d/000-vgpu.conf \
             /var/lib/vgpu /etc/ld.so.preload; do
        if [ -e "$p" ] || [ -L "$p" ]; then stat -c "$1 %n %F %a %N" "$p"; else echo "$1 $p absent"; fi
    done
    ls /etc/ld.so.conf.d | sed "s/^/$1 conf.d /"
}
snap before
"$V" install --lib "$L"
env -i "$P" child | sed 's/^/installed /'
"$V" uninstall
snap after
env -i "$P" child | sed 's/^/uninstalled /'
"#;
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", script, "sh"])
        .arg(&scratch)
        .arg(&probe)
        .arg(env!("CARGO_BIN_EXE_vgpu"))
        .arg(client())
        .arg(std::env::consts::ARCH)
        .output()
        .expect("unshare");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("--- namespace ---\n{text}");
    assert!(out.status.success(), "namespace script failed");
    assert!(
        text.contains("ldconfig -X\n"),
        "the real ldconfig ran, without -r: {text}"
    );
    for who in ["child", "grandchild"] {
        assert!(text.contains(&format!("installed {who} env 0\n")), "{text}");
        assert!(
            text.contains(&format!(
                "installed {who} map /usr/lib/vgpu/libvgpu-cuda.so"
            )),
            "{who} maps vgpu's library after `vgpu install`:\n{text}"
        );
        assert!(
            !text.contains(&format!("uninstalled {who} map /usr/lib/vgpu")),
            "{text}"
        );
    }
    let phase = |p: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.strip_prefix(p))
            .map(str::to_owned)
            .collect()
    };
    let before = phase("before ");
    assert!(
        before
            .iter()
            .any(|l| l.contains("/etc/ld.so.preload absent")),
        "{text}"
    );
    assert_eq!(before, phase("after "), "uninstall restores /");
    if !host_had_vgpu {
        assert!(
            !Path::new("/usr/lib/vgpu").exists(),
            "the machine itself was not touched"
        );
    }
}
