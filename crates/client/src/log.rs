//! One-line diagnostics on standard error (or a file), only when `VGPU_LOG` is set.

use std::io::Write;

use crate::runtime::runtime;

fn emit(args: std::fmt::Arguments<'_>) {
    let line = format!("vgpu[{}]: {args}\n", std::process::id());
    match runtime().config.log.as_ref() {
        None => {}
        Some(crate::config::LogTarget::Stderr) => {
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
        Some(crate::config::LogTarget::File(path)) => {
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = f.write_all(line.as_bytes());
            }
        }
    }
}

/// Logs a line when logging is on.
pub fn line(args: std::fmt::Arguments<'_>) {
    emit(args);
}

/// Logs a line when logging is on; used for faults worth seeing.
pub fn always(args: std::fmt::Arguments<'_>) {
    emit(args);
}

/// Logs a line once per `key` for the life of the process.
pub fn once(key: &'static str, args: std::fmt::Arguments<'_>) {
    if runtime().config.log.is_none() {
        return;
    }
    let first = {
        let mut seen = runtime()
            .logged_once
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        seen.insert(key)
    };
    if first {
        emit(args);
    }
}
