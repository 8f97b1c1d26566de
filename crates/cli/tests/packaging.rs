//! The files under `packaging/` agree with the code: the sample
//! `mediator.toml` names exactly the mediator's flags at its top level and
//! the mediator accepts it (`check-config`), the sample
//! `client.toml` parses as the client parses it, and the systemd units use
//! the default socket, real flags and `KillMode=process`.

mod common;

use std::path::PathBuf;
use std::process::Command;

use vgpu_transport::discovery::{self, ClientFile, DEFAULT_SOCKET};

fn packaging(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../packaging")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The text with `#key = value` lines uncommented.
fn uncommented(text: &str) -> String {
    text.lines()
        .map(|l| match l.strip_prefix('#') {
            Some(rest) if rest.contains(" = ") && !rest.starts_with(' ') => rest,
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The long flags `vgpu-mediator --help` lists, without `help`/`version`.
fn mediator_flags() -> Vec<String> {
    let out = Command::new(common::build().mediator)
        .arg("--help")
        .output()
        .expect("vgpu-mediator --help");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut flags: Vec<String> = text
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("--"))
        .map(|w| {
            w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-')
                .to_owned()
        })
        .filter(|f| !f.is_empty() && f != "help" && f != "version")
        .collect();
    flags.sort();
    flags.dedup();
    flags
}

/// Flags that are not keys of the file (`--config` names the file).
const FLAG_ONLY: [&str; 1] = ["config"];

#[test]
fn mediator_toml_names_every_flag() {
    let text = uncommented(&packaging("mediator.toml"));
    let table: toml::Table = text.parse().expect("valid TOML");
    // Top-level keys are the flags of the same name, `[limits]`'s keys too,
    // and `[tls]`'s keys the `--tls-…` flags (`[tls] cert` is `--tls-cert`);
    // the other tables (`[unix]`, `[[tenant]]`) exist only in the file.
    let mut keys: Vec<String> = table
        .iter()
        .flat_map(|(k, v)| match v {
            toml::Value::Table(t) if k == "tls" => {
                t.keys().map(|sub| format!("{k}_{sub}")).collect()
            }
            toml::Value::Table(t) if k == "limits" => t.keys().cloned().collect(),
            toml::Value::Table(_) => Vec::new(),
            toml::Value::Array(a) if !a.is_empty() && a.iter().all(toml::Value::is_table) => {
                Vec::new()
            }
            _ => vec![k.clone()],
        })
        .map(|k| k.replace('_', "-"))
        .collect();
    keys.sort();
    let flags: Vec<String> = mediator_flags()
        .into_iter()
        .filter(|f| !FLAG_ONLY.contains(&f.as_str()))
        .collect();
    assert_eq!(keys, flags);
    assert_eq!(
        table["listen"].as_array().and_then(|l| l.first()?.as_str()),
        Some(format!("unix:{DEFAULT_SOCKET}").as_str())
    );
    // The mediator reads the sample, with every `#key = value` line on.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("mediator.toml");
    std::fs::write(&file, &text).expect("write");
    let out = Command::new(common::build().mediator)
        .arg("--config")
        .arg(&file)
        .arg("check-config")
        .output()
        .expect("vgpu-mediator check-config");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn client_toml_parses_to_the_defaults() {
    let text = uncommented(&packaging("client.toml"));
    let file = discovery::parse_client_file(&text).expect("the client accepts it");
    assert_eq!(
        file,
        ClientFile {
            mediator: Some(format!("unix:{DEFAULT_SOCKET}")),
            pci: discovery::PciIds::default(),
        }
    );
}

#[test]
fn units_keep_sessions_and_use_the_default_socket() {
    let service = packaging("vgpu-mediator.service");
    assert!(service.lines().any(|l| l == "KillMode=process"));
    let exec = service
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("ExecStart");
    let flags = mediator_flags();
    for flag in exec.split_whitespace().filter_map(|w| w.strip_prefix("--")) {
        assert!(
            flags.iter().any(|f| f == flag),
            "--{flag} is not a mediator flag"
        );
    }
    // The unit's settings are the sample file's, installed where it says.
    assert!(exec.contains("--config /etc/vgpu/mediator.toml"), "{exec}");
    let socket = packaging("vgpu-mediator.socket");
    assert!(socket
        .lines()
        .any(|l| l == format!("ListenStream={DEFAULT_SOCKET}")));
}
