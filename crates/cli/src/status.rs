//! `vgpu status`: what is installed where, whether the mediator answers, and
//! its live sessions. Every line reports something that was actually checked
//! (`vgpu doctor`, in [`crate::doctor`], checks more and explains how to fix
//! what it finds). `--json` prints the same facts as one JSON object.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use vgpu_proto::sessions::{transport, SessionRecord};

use crate::args::{PathArgs, StatusArgs};
use crate::config::Env;
use crate::error::CliError;
use crate::layout;
use crate::probe::{self, Probe};

const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

fn line(label: &str, value: impl std::fmt::Display) {
    println!("{label:<18} {value}");
}

/// `vgpu status`: versions, files, the mediator's answer and its sessions.
pub fn status(env: &Env, paths: &PathArgs, args: &StatusArgs) -> Result<(), CliError> {
    let exe_dir = layout::exe_dir()?;
    let client = layout::find_client(&layout::lib_search_dirs(&exe_dir, paths))
        .map(|p| p.display().to_string())
        .map_err(|e| e.to_string());
    let mediator_bin = layout::find_mediator(&exe_dir, paths)
        .map(|p| p.display().to_string())
        .map_err(|e| e.to_string());
    let choice = env
        .find_mediator(args.mediator.mediator.as_deref())
        .map_err(|e| CliError::Check(format!("no usable mediator address: {e}")))?;
    let address = choice.address;
    // The sessions first: the probe is a session of its own, which would
    // otherwise be listed while its worker ends.
    let sessions = probe::sessions(&address, PROBE_TIMEOUT, &env.tls);
    let mut pci = Vec::new();
    let probe = probe::probe(
        &address,
        &env.discovery().sysfs_root,
        PROBE_TIMEOUT,
        &env.tls,
        &mut pci,
    );
    let unreachable = matches!(probe, Probe::Unreachable(_));
    if args.json {
        let report = json!({
            "vgpu": env!("CARGO_PKG_VERSION"),
            "protocol": vgpu_proto::PROTOCOL_VERSION,
            "client_library": found(&client),
            "mediator_binary": found(&mediator_bin),
            "mediator_address": { "address": address, "source": choice.source.to_string() },
            "pci_device": pci,
            "mediator": probe_json(&probe),
            "sessions": match &sessions {
                Ok(list) => Value::Array(list.iter().map(session_json).collect()),
                Err(why) => json!({ "error": why }),
            },
        });
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| CliError::Check(format!("cannot encode the report: {e}")))?;
        println!("{text}");
    } else {
        line("vgpu", env!("CARGO_PKG_VERSION"));
        line("protocol", format!("v{}", vgpu_proto::PROTOCOL_VERSION));
        line("client library", either(&client));
        line("mediator binary", either(&mediator_bin));
        line("mediator address", format!("{address} ({})", choice.source));
        for l in &pci {
            line("vGPU PCI device", l);
        }
        match &probe {
            Probe::Answered(w) => {
                line("mediator", "answered the handshake");
                for l in probe::describe(w) {
                    line("", l);
                }
            }
            Probe::NotChecked(why) => line("mediator", format!("not checked: {why}")),
            Probe::Unreachable(why) => line("mediator", format!("not reachable: {why}")),
        }
        match &sessions {
            Ok(list) => {
                line("sessions", format!("{} live", list.len()));
                for l in describe_sessions(list, SystemTime::now()) {
                    line("", l);
                }
            }
            Err(why) => line("sessions", format!("not listed: {why}")),
        }
    }
    if unreachable {
        return Err(CliError::Check(format!(
            "the mediator at {address} is not reachable"
        )));
    }
    Ok(())
}

fn either(r: &Result<String, String>) -> &str {
    match r {
        Ok(s) | Err(s) => s,
    }
}

fn found(r: &Result<String, String>) -> Value {
    match r {
        Ok(path) => json!({ "path": path }),
        Err(why) => json!({ "error": why }),
    }
}

fn probe_json(p: &Probe) -> Value {
    match p {
        Probe::Answered(w) => json!({
            "answered": true,
            "driver_version": w.driver_version,
            "init_status": w.init_status,
            "devices": w.devices.iter().map(|d| json!({
                "name": d.name_str(),
                "total_memory": d.total_mem.get(),
                "pci_bus_id": d.pci_bus_id_str(),
            })).collect::<Vec<_>>(),
        }),
        Probe::NotChecked(why) => json!({ "answered": false, "not_checked": why }),
        Probe::Unreachable(why) => json!({ "answered": false, "error": why }),
    }
}

fn session_json(r: &SessionRecord) -> Value {
    json!({
        "worker_pid": r.worker_pid.get(),
        "client_pid": r.client_pid.get(),
        "uid": r.uid.get(),
        "tenant": r.tenant_name(),
        "transport": transport::name(r.transport.get()),
        "device_memory": r.device_memory.get(),
        "started_ms": r.started_ms.get(),
        "uptime_s": uptime(r, SystemTime::now()).as_secs(),
    })
}

fn uptime(r: &SessionRecord, now: SystemTime) -> Duration {
    let started = UNIX_EPOCH + Duration::from_millis(r.started_ms.get());
    now.duration_since(started).unwrap_or_default()
}

/// A table of the sessions: a header line and one line per session.
pub fn describe_sessions(list: &[SessionRecord], now: SystemTime) -> Vec<String> {
    if list.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "{:>8} {:>10} {:>10} {:<11} {:>12} {:>10}  {}",
        "uid", "client pid", "worker pid", "transport", "memory", "uptime", "tenant"
    )];
    for r in list {
        let tenant = match r.tenant_name() {
            "" => "-",
            name => name,
        };
        lines.push(format!(
            "{:>8} {:>10} {:>10} {:<11} {:>12} {:>10}  {}",
            r.uid.get(),
            r.client_pid.get(),
            r.worker_pid.get(),
            transport::name(r.transport.get()),
            bytes(r.device_memory.get()),
            duration(uptime(r, now)),
            tenant,
        ));
    }
    lines
}

fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / f64::from(1u32 << 30)),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / f64::from(1u32 << 20)),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

fn duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        s if s >= 3600 => format!("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60),
        s if s >= 60 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_a_table() {
        let r = SessionRecord {
            worker_pid: 20.into(),
            client_pid: 10.into(),
            uid: 1000.into(),
            transport: transport::UNIX_RINGS.into(),
            device_memory: (3u64 << 20).into(),
            started_ms: 1_000_000u64.into(),
            tenant: [0; vgpu_proto::sessions::TENANT_NAME_BYTES],
        };
        let now = UNIX_EPOCH + Duration::from_millis(1_000_000 + 3_723_000);
        let lines = describe_sessions(&[r], now);
        assert_eq!(lines.len(), 2);
        let cells: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            cells,
            [
                "1000",
                "10",
                "20",
                "unix+rings",
                "3.0",
                "MiB",
                "1h02m03s",
                "-"
            ]
        );
        assert!(describe_sessions(&[], now).is_empty());
        assert_eq!(bytes(512), "512 B");
        assert_eq!(duration(Duration::from_secs(61)), "1m01s");
        let j = session_json(&r);
        assert_eq!(j["client_pid"], 10);
        assert_eq!(j["tenant"], "");
        let mut named = r;
        named.set_tenant("research");
        let cells: Vec<String> = describe_sessions(&[named], now)[1]
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        assert_eq!(cells[7], "research");
        assert_eq!(j["transport"], "unix+rings");
    }
}
