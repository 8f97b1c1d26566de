//! The files under `packaging/` agree with the code: the sample
//! `mediator.toml` names exactly the mediator's flags, the sample
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

#[test]
fn mediator_toml_names_every_flag() {
    let text = uncommented(&packaging("mediator.toml"));
    let table: toml::Table = text.parse().expect("valid TOML");
    // Top-level keys, and those of the `[limits]` table, are flags.
    let limits = table.get("limits").and_then(toml::Value::as_table);
    let mut keys: Vec<String> = table
        .iter()
        .filter(|(_, v)| !v.is_table())
        .map(|(k, _)| k)
        .chain(limits.into_iter().flat_map(|t| t.keys()))
        .map(|k| k.replace('_', "-"))
        .collect();
    keys.sort();
    assert_eq!(keys, mediator_flags());
    assert_eq!(
        table["listen"].as_str(),
        Some(format!("unix:{DEFAULT_SOCKET}").as_str())
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
    assert!(exec.contains(&format!("unix:{DEFAULT_SOCKET}")));
    let socket = packaging("vgpu-mediator.socket");
    assert!(socket
        .lines()
        .any(|l| l == format!("ListenStream={DEFAULT_SOCKET}")));
}
