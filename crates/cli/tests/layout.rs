//! Finding vgpu's files, and `vgpu run` end to end with the real binary in
//! staged and cargo-style layouts (no other vgpu crate is needed: the
//! "libraries" here are placeholder files or tiny libraries built with cc).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use vgpu_cli::args::PathArgs;
use vgpu_cli::error::CliError;
use vgpu_cli::layout::{self, ClientLayout};
use vgpu_cli::privdir::TempDir;

fn scratch(name: &str) -> TempDir {
    TempDir::new(&std::env::temp_dir(), &format!("test-{name}")).expect("temp dir")
}

fn touch(p: &Path) {
    fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    fs::write(p, b"placeholder").expect("write");
}

/// Puts the `vgpu` binary under test at `dest` (the layout is found relative
/// to the executable): a hard link where possible, else a copy.
fn install_vgpu(dest: &Path) {
    fs::create_dir_all(dest.parent().expect("parent")).expect("mkdir");
    let src = env!("CARGO_BIN_EXE_vgpu");
    if fs::hard_link(src, dest).is_err() {
        fs::copy(src, dest).expect("copy vgpu");
    }
}

#[test]
fn staged_layout_prefers_lib_beside_bin() {
    let t = scratch("staged");
    let root = t.path().canonicalize().expect("canon");
    touch(&root.join("lib/libvgpu-cuda.so"));
    touch(&root.join("bin/libvgpu_cuda.so"));
    let dirs = layout::lib_search_dirs(&root.join("bin"), &PathArgs::default());
    assert_eq!(dirs, vec![root.join("lib"), root.join("bin")]);
    assert_eq!(
        layout::find_client(&dirs).expect("found"),
        root.join("lib/libvgpu-cuda.so")
    );
}

#[test]
fn cargo_layout_uses_cargo_names() {
    let t = scratch("cargo");
    let root = t.path().canonicalize().expect("canon");
    touch(&root.join("release/libvgpu_cuda.so"));
    touch(&root.join("release/libvgpu_sim.so"));
    let dirs = layout::lib_search_dirs(&root.join("release"), &PathArgs::default());
    assert_eq!(
        layout::find_client(&dirs).expect("found"),
        root.join("release/libvgpu_cuda.so")
    );
    assert_eq!(
        layout::find_sim(&dirs),
        Some(root.join("release/libvgpu_sim.so"))
    );
}

#[test]
fn lib_dir_flag_replaces_the_search() {
    let t = scratch("flag");
    let root = t.path().canonicalize().expect("canon");
    touch(&root.join("bin/libvgpu-cuda.so"));
    let paths = PathArgs {
        lib_dir: Some(root.join("elsewhere")),
        mediator_bin: None,
    };
    let dirs = layout::lib_search_dirs(&root.join("bin"), &paths);
    assert_eq!(dirs, vec![root.join("elsewhere")]);
    match layout::find_client(&dirs) {
        Err(e @ CliError::Missing { .. }) => {
            assert_eq!(e.exit_code(), 3);
            let msg = e.to_string();
            assert!(
                msg.contains("libvgpu-cuda.so") && msg.contains("elsewhere"),
                "{msg}"
            );
        }
        other => panic!("expected Missing, got {other:?}"),
    }
}

#[test]
fn mediator_is_found_beside_vgpu_or_by_flag() {
    let t = scratch("mediator");
    let root = t.path().canonicalize().expect("canon");
    touch(&root.join("bin/vgpu-mediator"));
    touch(&root.join("other/med"));
    let found = layout::find_mediator(&root.join("bin"), &PathArgs::default()).expect("found");
    assert_eq!(found, root.join("bin/vgpu-mediator"));
    let paths = PathArgs {
        lib_dir: None,
        mediator_bin: Some(root.join("other/med")),
    };
    assert_eq!(
        layout::find_mediator(&root.join("bin"), &paths).expect("found"),
        root.join("other/med")
    );
    let err =
        layout::find_mediator(&root.join("other"), &PathArgs::default()).expect_err("missing");
    assert_eq!(err.exit_code(), 3);
}

#[test]
fn staged_folder_with_links_is_used_as_is() {
    let t = scratch("links");
    let root = t.path().canonicalize().expect("canon");
    touch(&root.join("lib/libvgpu-cuda.so"));
    std::os::unix::fs::symlink("libvgpu-cuda.so", root.join("lib/libcuda.so.1")).expect("link");
    let l = ClientLayout::discover(&root.join("bin"), &PathArgs::default(), &root).expect("layout");
    assert_eq!(l.loader_dir, root.join("lib"));
    assert!(!root
        .join(format!("vgpu-{}", vgpu_cli::privdir::uid()))
        .exists());
}

#[test]
fn folder_without_links_gets_private_links() {
    let t = scratch("private");
    let root = t.path().canonicalize().expect("canon");
    let client = root.join("debug/libvgpu_cuda.so");
    touch(&client);
    let l =
        ClientLayout::discover(&root.join("debug"), &PathArgs::default(), &root).expect("layout");
    assert_ne!(l.loader_dir, root.join("debug"));
    assert!(l
        .loader_dir
        .starts_with(root.join(format!("vgpu-{}", vgpu_cli::privdir::uid()))));
    for name in ["libcuda.so.1", "libcuda.so"] {
        assert_eq!(
            l.loader_dir.join(name).canonicalize().expect("resolves"),
            client
        );
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(&l.loader_dir)
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(
        mode & 0o077,
        0,
        "private folder is open to others: {mode:o}"
    );
    // A second discovery reuses the same folder.
    let again =
        ClientLayout::discover(&root.join("debug"), &PathArgs::default(), &root).expect("layout");
    assert_eq!(again, l);
}

#[test]
fn private_root_refuses_a_planted_link() {
    let t = scratch("planted");
    let root = t.path().canonicalize().expect("canon");
    fs::create_dir(root.join("elsewhere")).expect("mkdir");
    let planted = root.join(format!("vgpu-{}", vgpu_cli::privdir::uid()));
    std::os::unix::fs::symlink(root.join("elsewhere"), &planted).expect("link");
    let err = vgpu_cli::privdir::user_root(&root).expect_err("a link is not a private folder");
    assert!(err.to_string().contains("not a folder"), "{err}");
}

fn run_vgpu(vgpu: &Path, tmp: &Path, args: &[&str]) -> (i32, String, String) {
    let mut tries = 0;
    let out = loop {
        let out = Command::new(vgpu)
            .args(args)
            .env("TMPDIR", tmp)
            .env("LD_LIBRARY_PATH", "/previous/path")
            .env_remove("VGPU_MEDIATOR")
            .output();
        match out {
            // A freshly copied binary is "busy" while a child forked by a
            // concurrent test still holds the copy's write descriptor.
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => break other.expect("vgpu runs"),
        }
    };
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const SHOW_ENV: &str = "echo \"$LD_LIBRARY_PATH\"; echo \"${VGPU_MEDIATOR-unset}\"; exit 7";

#[test]
fn run_in_a_staged_layout_sets_the_environment_and_keeps_the_exit_code() {
    let t = scratch("run-staged");
    let root = t.path().canonicalize().expect("canon");
    install_vgpu(&root.join("dist/bin/vgpu"));
    touch(&root.join("dist/lib/libvgpu-cuda.so"));
    std::os::unix::fs::symlink("libvgpu-cuda.so", root.join("dist/lib/libcuda.so.1"))
        .expect("link");
    let (code, out, err) = run_vgpu(
        &root.join("dist/bin/vgpu"),
        &root,
        &[
            "run",
            "--mediator",
            "unix:/tmp/x.sock",
            "--",
            "sh",
            "-c",
            SHOW_ENV,
        ],
    );
    assert_eq!(code, 7, "stderr: {err}");
    let lines: Vec<&str> = out.lines().collect();
    let lib = root.join("dist/lib");
    assert_eq!(
        lines,
        vec![
            format!("{}:/previous/path", lib.display()).as_str(),
            "unix:/tmp/x.sock"
        ]
    );
}

#[test]
fn run_in_a_cargo_layout_uses_private_links() {
    let t = scratch("run-cargo");
    let root = t.path().canonicalize().expect("canon");
    install_vgpu(&root.join("target/release/vgpu"));
    let client = root.join("target/release/libvgpu_cuda.so");
    touch(&client);
    let (code, out, err) = run_vgpu(
        &root.join("target/release/vgpu"),
        &root,
        &["run", "--", "sh", "-c", SHOW_ENV],
    );
    assert_eq!(code, 7, "stderr: {err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    let (first, rest) = lines[0].split_once(':').expect("two entries");
    assert_eq!(rest, "/previous/path");
    assert_eq!(
        PathBuf::from(first)
            .join("libcuda.so.1")
            .canonicalize()
            .expect("link"),
        client
    );
    assert_eq!(lines[1], "unset");
}

#[test]
fn run_reports_missing_pieces_with_documented_codes() {
    let t = scratch("run-codes");
    let root = t.path().canonicalize().expect("canon");
    install_vgpu(&root.join("bin/vgpu"));
    let vgpu = root.join("bin/vgpu");
    let (code, _, err) = run_vgpu(&vgpu, &root, &["run", "--", "true"]);
    assert_eq!(code, 125, "no client library: {err}");
    assert!(err.contains("libvgpu-cuda.so"), "{err}");

    touch(&root.join("lib/libvgpu-cuda.so"));
    let (code, _, err) = run_vgpu(
        &vgpu,
        &root,
        &["run", "--", "no-such-command-for-vgpu-test"],
    );
    assert_eq!(code, 127, "{err}");
    assert!(err.contains("no-such-command-for-vgpu-test"), "{err}");

    touch(&root.join("not-executable"));
    let path = root.join("not-executable");
    let (code, _, err) = run_vgpu(&vgpu, &root, &["run", "--", path.to_str().expect("utf-8")]);
    assert_eq!(code, 126, "{err}");
}

#[test]
fn demo_without_components_says_what_is_missing() {
    let t = scratch("demo-missing");
    let root = t.path().canonicalize().expect("canon");
    install_vgpu(&root.join("bin/vgpu"));
    let (code, _, err) = run_vgpu(&root.join("bin/vgpu"), &root, &["demo", "--driver", "sim"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("client library"), "{err}");
}
