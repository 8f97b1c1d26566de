//! Running the benchmark programs on one side: their environment, their
//! deadlines, the run log, and reading the figures they print.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use super::catalog::{self, Benchmark, Program};
use super::report::{Outcome, RunInfo};
use super::{exec, median, BenchArgs, NativePlan, Side, IVSHMEM, IVSHMEM_BDF, LIBCUDA_ENV, TCP};
use crate::config::Env;
use crate::layout::ClientLayout;

/// Everything one `vgpu bench` run shares.
pub(super) struct Bench<'a> {
    pub(super) args: &'a BenchArgs,
    pub(super) env: &'a Env,
    pub(super) native: NativePlan,
    pub(super) client: ClientLayout,
    /// `unix:<socket>` of the private mediator.
    pub(super) address: OsString,
    /// The mediator's loopback TCP address, when `tcp` is measured.
    pub(super) tcp_address: Option<String>,
    /// The mediator's loopback TLS listener and its clients' settings,
    /// when `tls` is measured.
    pub(super) tls: Option<super::tls::TlsRun>,
    /// The stand-in for QEMU and its fake sysfs root, when `ivshmem` is
    /// measured.
    pub(super) ivshmem: Option<(vgpu_transport::ivshmem::server::FakeQemu, PathBuf)>,
    /// The compiled C program, or why there is none.
    pub(super) c_program: Result<PathBuf, String>,
    /// The PyTorch script, or why the PyTorch benchmarks are skipped.
    pub(super) torch: Result<PathBuf, String>,
    pub(super) log: Option<File>,
    pub(super) info: RunInfo,
}

impl Bench<'_> {
    /// Sets the environment of `cmd` for `side`. `python` selects how the
    /// native library is put in front (loader path instead of dlopen path).
    fn side_env(&self, cmd: &mut Command, side: &Side, python: bool) {
        cmd.env_remove(LIBCUDA_ENV);
        match side {
            Side::Native => {
                cmd.env_remove("VGPU_MEDIATOR").env_remove("VGPU_TRANSPORT");
                if python {
                    if let Some(links) = &self.native.links {
                        cmd.env("LD_LIBRARY_PATH", self.env.ld_library_path_with(links));
                    }
                } else if let Some(lib) = &self.native.lib {
                    cmd.env(LIBCUDA_ENV, lib);
                }
            }
            Side::Vgpu(t) => {
                cmd.env(
                    "LD_LIBRARY_PATH",
                    self.env.ld_library_path_with(&self.client.loader_dir),
                );
                match (t.as_str(), &self.tcp_address, &self.ivshmem) {
                    (TCP, Some(tcp), _) => {
                        cmd.env("VGPU_MEDIATOR", tcp).env("VGPU_TRANSPORT", "auto")
                    }
                    (super::tls::TLS, _, _) if self.tls.is_some() => {
                        let env = self.tls.iter().flat_map(|t| t.client_env.iter());
                        cmd.envs(env.map(|(k, v)| (k, v)))
                    }
                    (IVSHMEM, _, Some((_, sysfs))) => cmd
                        .env("VGPU_MEDIATOR", format!("pci:{IVSHMEM_BDF}"))
                        .env("VGPU_SYSFS_ROOT", sysfs)
                        .env("VGPU_TRANSPORT", "auto"),
                    _ => cmd
                        .env("VGPU_MEDIATOR", &self.address)
                        .env("VGPU_TRANSPORT", t),
                };
            }
        }
    }

    fn c_command(&self, side: &Side, args: &[String]) -> Result<Command, String> {
        let program = self.c_program.as_ref().map_err(Clone::clone)?;
        let mut cmd = Command::new(program);
        cmd.args(args);
        self.side_env(&mut cmd, side, false);
        Ok(cmd)
    }

    /// Checks the library line of a run against its side; an error says why
    /// the run's figures cannot be trusted.
    fn check_library(&mut self, side: &Side, parsed: &exec::Parsed) -> Result<(), String> {
        let Some((path, shim)) = parsed.library() else {
            return Ok(());
        };
        let info = match side {
            Side::Native => &mut self.info.native,
            Side::Vgpu(_) => &mut self.info.vgpu,
        };
        if info.library.is_none() {
            info.library = Some(path.to_owned());
        }
        if info.device.is_none() {
            info.device = parsed.meta("device").map(str::to_owned);
        }
        match (side, shim) {
            (Side::Native, true) => Err(format!(
                "the native side loaded vgpu's client library ({path}); is vgpu installed as \
                 the system libcuda? pass --native-driver PATH"
            )),
            (Side::Vgpu(_), false) => Err(format!(
                "the vgpu side loaded {path}, not vgpu's client library"
            )),
            _ => Ok(()),
        }
    }

    fn note_warnings(&mut self, side: &Side, parsed: &exec::Parsed) {
        for (k, v) in &parsed.meta {
            if k == "warn" {
                let w = format!("{}: {v}", side.label());
                if !self.info.warnings.contains(&w) {
                    self.info.warnings.push(w);
                }
            }
        }
    }

    /// Runs a program that prints the figures itself and reads them.
    fn run_printing(
        &mut self,
        b: &Benchmark,
        side: &Side,
        cmd: Command,
        timeout: Duration,
    ) -> Vec<Outcome> {
        let title = format!("{} on {}", b.name, side.label());
        let shown = format!("{cmd:?}");
        let run = exec::run(cmd, timeout);
        let (f, parsed) = match self.logged(b, side, &title, &shown, run) {
            Ok(r) => r,
            Err(failed) => return failed,
        };
        let why = exec::failure(&f, &parsed, timeout);
        outcomes(b, &parsed, why.as_deref())
    }

    /// Logs a run and reads what it printed. `Err`: the outcomes to report
    /// instead, when it could not run or mapped the wrong library.
    fn logged(
        &mut self,
        b: &Benchmark,
        side: &Side,
        title: &str,
        shown: &str,
        run: Result<exec::Finished, String>,
    ) -> Result<(exec::Finished, exec::Parsed), Vec<Outcome>> {
        let f = run.map_err(|e| {
            self.write_log_text(title, shown, &e);
            fail_all(b, &e)
        })?;
        self.write_log_finished(title, shown, &f);
        let parsed = exec::parse(&f.stdout);
        self.note_warnings(side, &parsed);
        self.check_library(side, &parsed)
            .map_err(|e| fail_all(b, &e))?;
        Ok((f, parsed))
    }

    fn write_log_text(&mut self, title: &str, shown: &str, err: &str) {
        self.write_log_line(&format!("=== {title}\n$ {shown}\ncould not run: {err}\n\n"));
    }

    fn write_log_finished(&mut self, title: &str, shown: &str, f: &exec::Finished) {
        let status = f.status.map_or_else(
            || "stopped at the deadline".into(),
            crate::mediator::describe,
        );
        self.write_log_line(&format!(
            "=== {title}\n$ {shown}\n{status} after {:.3} s\n--- stdout ---\n{}--- stderr ---\n{}\n",
            f.elapsed.as_secs_f64(),
            f.stdout,
            f.stderr
        ));
    }

    fn write_log_line(&mut self, text: &str) {
        let Some(log) = self.log.as_mut() else {
            return;
        };
        if log.write_all(text.as_bytes()).is_err() {
            eprintln!("vgpu bench: cannot write the run log; no more runs are logged");
            self.log = None;
        }
    }

    /// Cold start: fresh processes timed from spawn to `first_kernel_done`;
    /// one unmeasured run (it fills the driver's JIT cache), then the median.
    fn run_cold_start(&mut self, b: &Benchmark, side: &Side, runs: u64) -> Vec<Outcome> {
        let timeout = b.timeout(self.args.quick, self.args.timeout);
        let deadline = Instant::now() + timeout;
        let mut ms = Vec::new();
        for i in 0..=runs {
            let cmd = match self.c_command(side, &["first_kernel".to_owned()]) {
                Ok(c) => c,
                Err(e) => return fail_all(b, &e),
            };
            let shown = format!("{cmd:?}");
            let title = format!("{} on {} (run {i} of {runs})", b.name, side.label());
            let left = deadline.saturating_duration_since(Instant::now());
            let (at, run) = match exec::time_to_line(cmd, "first_kernel_done", left) {
                Ok((at, f)) => (at, Ok(f)),
                Err(e) => (None, Err(e)),
            };
            let (f, parsed) = match self.logged(b, side, &title, &shown, run) {
                Ok(r) => r,
                Err(failed) => return failed,
            };
            if let Some(why) = exec::failure(&f, &parsed, timeout) {
                return fail_all(b, &why);
            }
            match at {
                Some(t) if i > 0 => ms.push(t.as_secs_f64() * 1e3),
                Some(_) => {}
                None => return fail_all(b, "the program never printed first_kernel_done"),
            }
        }
        vec![Outcome::Value(median(&mut ms))]
    }

    pub(super) fn run_side(&mut self, b: &Benchmark, side: &Side) -> Vec<Outcome> {
        let quick = self.args.quick;
        let timeout = b.timeout(quick, self.args.timeout);
        match b.program {
            Program::C { .. } => match self.c_command(side, &catalog::c_args(&b.program, quick)) {
                Ok(cmd) => self.run_printing(b, side, cmd, timeout),
                Err(e) => fail_all(b, &e),
            },
            Program::ColdStart { runs } => self.run_cold_start(b, side, runs.get(quick)),
            Program::Torch {
                model,
                warmup,
                steps,
            } => {
                let script = match &self.torch {
                    Ok(s) => s.clone(),
                    Err(why) => {
                        return b
                            .figures
                            .iter()
                            .map(|_| Outcome::Skip(why.clone()))
                            .collect()
                    }
                };
                let mut cmd = Command::new(&self.args.python);
                cmd.arg(script)
                    .arg(model)
                    .arg("--warmup")
                    .arg(warmup.get(quick).to_string())
                    .arg("--steps")
                    .arg(steps.get(quick).to_string());
                self.side_env(&mut cmd, side, true);
                self.run_printing(b, side, cmd, timeout)
            }
        }
    }

    /// Runs `vgpu_bench info` on a side, for the header.
    pub(super) fn side_info(&mut self, side: &Side) {
        let Ok(cmd) = self.c_command(side, &["info".to_owned()]) else {
            return;
        };
        let shown = format!("{cmd:?}");
        let title = format!("info on {}", side.label());
        match exec::run(cmd, Duration::from_secs(120)) {
            Ok(f) => {
                self.write_log_finished(&title, &shown, &f);
                let parsed = exec::parse(&f.stdout);
                let problem = self
                    .check_library(side, &parsed)
                    .err()
                    .or_else(|| exec::failure(&f, &parsed, Duration::from_secs(120)));
                let info = match side {
                    Side::Native => &mut self.info.native,
                    Side::Vgpu(_) => &mut self.info.vgpu,
                };
                info.cuda_version = parsed.meta("cuda_version").map(str::to_owned);
                if let Some(p) = problem {
                    self.info
                        .warnings
                        .push(format!("{}: the info run failed: {p}", side.label()));
                }
            }
            Err(e) => self.write_log_text(&title, &shown, &e),
        }
    }
}

fn fail_all(b: &Benchmark, why: &str) -> Vec<Outcome> {
    b.figures
        .iter()
        .map(|_| Outcome::Fail(why.to_owned()))
        .collect()
}

/// The outcome of each figure of `b` from what its program printed.
fn outcomes(b: &Benchmark, parsed: &exec::Parsed, failure: Option<&str>) -> Vec<Outcome> {
    b.figures
        .iter()
        .map(|f| match parsed.value(f.name) {
            Some((v, unit)) if unit == f.unit => Outcome::Value(v),
            Some((_, unit)) => {
                Outcome::Fail(format!("{} printed in {unit}, expected {}", f.name, f.unit))
            }
            None => Outcome::Fail(
                failure.map_or_else(|| format!("no value printed for {}", f.name), str::to_owned),
            ),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_come_from_the_output_or_carry_the_failure() {
        let b = catalog::BENCHMARKS
            .iter()
            .find(|b| b.name == "memcpy_8b")
            .expect("memcpy_8b");
        let p = exec::parse(
            "memcpy_8b_pinned_h2d 7.5 us\nmemcpy_8b_pinned_d2h 7 ms\nFAIL cuMemcpyHtoD_v2 returned X (1)\n",
        );
        let o = outcomes(b, &p, p.fail.as_deref());
        assert_eq!(o[0], Outcome::Value(7.5));
        assert_eq!(
            o[1],
            Outcome::Fail("memcpy_8b_pinned_d2h printed in ms, expected us".into())
        );
        assert_eq!(o[2], Outcome::Fail("cuMemcpyHtoD_v2 returned X (1)".into()));
        let o = outcomes(b, &exec::parse(""), None);
        assert_eq!(
            o[3],
            Outcome::Fail("no value printed for memcpy_8b_pageable_d2h".into())
        );
    }
}
