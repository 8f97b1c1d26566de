//! The demo's example program: `vector_add_driver`, a small C program written
//! against the CUDA Driver API (source: `crates/cli/c/vector_add_driver.c`,
//! also reachable as `gpu/vector_add_driver.c`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::error::CliError;
use crate::layout;

/// The program's C source, built into `vgpu` so the demo can compile it anywhere.
pub const SOURCE: &str = include_str!("../c/vector_add_driver.c");

/// Where the example program comes from.
#[derive(Debug)]
pub enum Origin {
    /// A prebuilt binary beside `vgpu`.
    Prebuilt,
    /// Compiled now with `cc`.
    Compiled,
}

/// The prebuilt program beside `vgpu`, or the embedded source compiled with
/// `cc` into `dir`.
pub fn obtain(exe_dir: &Path, dir: &Path) -> Result<(PathBuf, Origin), CliError> {
    if let Some(p) = layout::find_example(exe_dir) {
        return Ok((p, Origin::Prebuilt));
    }
    let src = dir.join("vector_add_driver.c");
    let bin = dir.join(layout::EXAMPLE_NAME);
    std::fs::write(&src, SOURCE).map_err(CliError::io(format!("writing {}", src.display())))?;
    let out = Command::new("cc")
        .args(["-std=c11", "-O2", "-Wall", "-o"])
        .arg(&bin)
        .arg(&src)
        .arg("-ldl")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| CliError::Missing {
            what: format!("a C compiler (cc: {e})"),
            looked: vec![exe_dir.join(layout::EXAMPLE_NAME)],
            hint: "; install one (e.g. `apt-get install gcc`) or put a prebuilt vector_add_driver beside vgpu".into(),
        })?;
    if !out.status.success() {
        return Err(CliError::Check(format!(
            "cc could not compile the example program:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok((bin, Origin::Compiled))
}

/// Runs `cmd`, printing each line of its merged stdout and stderr with
/// `prefix`, and stops it after `timeout`. Returns its status and stdout+stderr.
pub fn run_streaming(
    mut cmd: Command,
    prefix: &str,
    timeout: Duration,
) -> Result<(ExitStatus, String), CliError> {
    let (reader, writer) = std::io::pipe().map_err(CliError::io("making a pipe"))?;
    let writer2 = writer
        .try_clone()
        .map_err(CliError::io("duplicating a pipe"))?;
    cmd.stdin(Stdio::null()).stdout(writer).stderr(writer2);
    let mut child = cmd
        .spawn()
        .map_err(CliError::io(format!("starting {:?}", cmd.get_program())))?;
    // The command holds the pipe's write ends; drop it so EOF arrives when the child exits.
    drop(cmd);
    let prefix = prefix.to_owned();
    let printer = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(reader).lines().map_while(Result::ok) {
            println!("{prefix}{line}");
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .map_err(CliError::io("waiting for the example"))?
        {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(CliError::Check(format!(
                "the example program did not finish within {} s and was stopped",
                timeout.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let output = printer.join().unwrap_or_default();
    Ok((status, output))
}
