//! `vgpu bench`: vgpu against the native driver, on the same machine in the
//! same run, figure by figure, with the ratio vgpu/native.
//!
//! Contract:
//! - Each benchmark program runs once on the **native** side (a plain
//!   environment: the `libcuda.so.1` the loader finds, or `--native-driver`)
//!   and once per **transport** on the **vgpu** side (`LD_LIBRARY_PATH` =
//!   vgpu's library folder, `VGPU_MEDIATOR` = a private mediator started
//!   here, `VGPU_TRANSPORT` = the transport).
//! - The programs are built into `vgpu`: `gpu/bench/vgpu_bench.c` is
//!   compiled with `cc` into a private folder at run time, and
//!   `gpu/bench/torch_train.py` is written there. They print
//!   `name value unit` lines (see [`exec`]); the C program honours
//!   `VGPU_BENCH_LIBCUDA`, the library to `dlopen` instead of `libcuda.so.1`.
//! - Every run has a deadline. A failing figure prints `FAIL reason` in its
//!   row and the run goes on. Each program reports the library it mapped,
//!   and a side that mapped the wrong one (vgpu's client on the native side,
//!   or anything else on the vgpu side) fails.
//! - Exit 0 when every figure ran (skips, such as PyTorch missing, are not
//!   failures), 1 when any failed.
//!
//! The CPU-only benchmark of the shared-memory ring is a criterion bench of
//! the transport crate: `cargo bench -p vgpu-transport --bench ring`.

pub mod catalog;
pub mod exec;
pub mod report;

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use clap::Args;

use crate::args::{DriverChoice, PathArgs};
use crate::config::Env;
use crate::demo;
use crate::driver::{self, Candidate};
use crate::error::CliError;
use crate::layout::{self, ClientLayout};
use crate::mediator::Mediator;
use crate::privdir::TempDir;

use catalog::{Benchmark, Program};
use report::{Outcome, Row, RunInfo, SideInfo};

/// The C benchmark program, compiled at run time.
pub const C_SOURCE: &str = include_str!("../../../../gpu/bench/vgpu_bench.c");
/// The PyTorch training benchmark.
pub const TORCH_SOURCE: &str = include_str!("../../../../gpu/bench/torch_train.py");
/// The variable the C program reads for the library to load.
pub const LIBCUDA_ENV: &str = "VGPU_BENCH_LIBCUDA";

const AFTER_HELP: &str = "\
Examples:
  vgpu bench --driver /usr/local/nvidia/lib64/libcuda.so.1 --json bench.json
  vgpu bench --quick --only launch,memcpy_8b --transports rings
  vgpu bench --list

The ratio is vgpu/native: above 1 is better for throughput (/s), worse for
times (us, ms). See docs/bench.md. The CPU-only ring benchmark is
`cargo bench -p vgpu-transport --bench ring`.";

/// Arguments of `vgpu bench`.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct BenchArgs {
    /// Fewer iterations: a smoke run, not figures to quote.
    #[arg(long)]
    pub quick: bool,
    /// Run only these benchmarks (names or groups, comma-separated; see --list).
    #[arg(long, value_delimiter = ',', value_name = "NAME,...", value_parser = catalog::check_name)]
    pub only: Vec<String>,
    /// The driver vgpu's mediator runs the calls on: `auto` (the NVIDIA
    /// driver if this machine has one, else the simulated device), `sim`, or
    /// the path of a libcuda.so.1.
    #[arg(long, default_value = "auto", value_name = "auto|sim|PATH")]
    pub driver: DriverChoice,
    /// The native side: `auto` (the libcuda.so.1 the dynamic loader finds,
    /// in a plain environment), `sim` (vgpu's simulated device, loaded
    /// directly: for testing the harness without a GPU), or the path of a
    /// libcuda.so.1.
    #[arg(long, default_value = "auto", value_name = "auto|sim|PATH")]
    pub native_driver: DriverChoice,
    /// The transports to measure vgpu with (comma-separated): `rings` and
    /// `socket` set VGPU_TRANSPORT; `tcp` reaches the same mediator over a
    /// loopback TCP connection (VGPU_MEDIATOR=tcp://127.0.0.1:PORT).
    #[arg(long, value_delimiter = ',', default_value = "rings,socket,tcp", value_name = "T,...", value_parser = check_transport)]
    pub transports: Vec<String>,
    /// Rounds of each C benchmark. A round runs the native side, then each
    /// transport, so a machine that drifts (clocks, other load) moves both
    /// sides alike; each figure is the median over the rounds. Cold start
    /// takes its own median over fresh processes and the PyTorch models run
    /// once. Every round's value is in the JSON report.
    #[arg(long, default_value_t = 3, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=50))]
    pub rounds: u64,
    /// Also write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Time limit of each program run in seconds (default: 120 per C
    /// benchmark, 600 per PyTorch model; halved with --quick).
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub timeout: Option<u64>,
    /// Write every program's output (runs.log) and the mediator's log here.
    #[arg(long, value_name = "DIR")]
    pub log_dir: Option<PathBuf>,
    /// The Python interpreter for the PyTorch benchmarks.
    #[arg(long, default_value = "python3", value_name = "PATH")]
    pub python: PathBuf,
    /// Seconds to wait for the mediator's socket.
    #[arg(long, default_value_t = 10, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=600))]
    pub socket_timeout: u64,
    /// List the benchmarks and their figures, then exit.
    #[arg(long)]
    pub list: bool,
}

/// The `--transports` name of a loopback TCP connection to the mediator.
const TCP: &str = "tcp";

/// A loopback port that is free now (the mediator binds it right after).
fn free_loopback_port() -> Result<u16, CliError> {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0))
        .map_err(CliError::io("finding a free loopback port"))?;
    let port = l
        .local_addr()
        .map_err(CliError::io("finding a free loopback port"))?
        .port();
    Ok(port)
}

/// Checks one `--transports` value: a VGPU_TRANSPORT word.
pub fn check_transport(s: &str) -> Result<String, String> {
    let s = s.trim();
    if !s.is_empty()
        && s.len() <= 32
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "{s:?} is not a transport name (e.g. rings, socket)"
        ))
    }
}

/// Where one program run happens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Side {
    /// The native driver.
    Native,
    /// Through vgpu, with this `VGPU_TRANSPORT`.
    Vgpu(String),
}

impl Side {
    /// `native` or `vgpu/<transport>`.
    pub fn label(&self) -> String {
        match self {
            Side::Native => "native".into(),
            Side::Vgpu(t) => format!("vgpu/{t}"),
        }
    }
}

/// The native side's library, as `--native-driver` chose it.
#[derive(Debug)]
struct NativePlan {
    /// For the C program: `VGPU_BENCH_LIBCUDA`.
    lib: Option<PathBuf>,
    /// For Python: a folder whose libcuda.so.1 is `lib`, put in front of
    /// LD_LIBRARY_PATH.
    links: Option<PathBuf>,
    description: String,
    simulated: bool,
}

fn native_plan(
    choice: &DriverChoice,
    dirs: &[PathBuf],
    tmp: &Path,
) -> Result<NativePlan, CliError> {
    match choice {
        DriverChoice::Auto => Ok(NativePlan {
            lib: None,
            links: None,
            description: "the libcuda.so.1 the dynamic loader finds (plain environment)".into(),
            simulated: false,
        }),
        DriverChoice::Sim => {
            let sim = layout::find_sim(dirs).ok_or_else(|| CliError::Missing {
                what: format!(
                    "the simulated device library ({})",
                    layout::SIM_NAMES.join(" or ")
                ),
                looked: dirs.to_vec(),
                hint: "; build it with `cargo build --release` or pass --lib-dir".into(),
            })?;
            Ok(NativePlan {
                description: format!(
                    "SIMULATED device {} loaded directly (a test double, not a GPU)",
                    sim.display()
                ),
                lib: Some(sim),
                links: None,
                simulated: true,
            })
        }
        DriverChoice::Path(p) => {
            let p = p.canonicalize().map_err(CliError::io(format!(
                "resolving the native driver path {}",
                p.display()
            )))?;
            match driver::classify(&p) {
                Candidate::Driver(p) => Ok(NativePlan {
                    links: Some(layout::loader_dir(&p, tmp)?),
                    description: format!("NVIDIA driver {}", p.display()),
                    lib: Some(p),
                    simulated: false,
                }),
                Candidate::Vgpu(p) => Err(CliError::Check(format!(
                    "--native-driver {} is vgpu's own client library, not a driver",
                    p.display()
                ))),
                Candidate::Unusable(p, why) => Err(CliError::Check(format!(
                    "--native-driver {} is not a CUDA driver: {why}",
                    p.display()
                ))),
            }
        }
    }
}

/// Everything one `vgpu bench` run shares.
struct Bench<'a> {
    args: &'a BenchArgs,
    env: &'a Env,
    native: NativePlan,
    client: ClientLayout,
    /// `unix:<socket>` of the private mediator.
    address: OsString,
    /// The mediator's loopback TCP address, when `tcp` is measured.
    tcp_address: Option<String>,
    /// The compiled C program, or why there is none.
    c_program: Result<PathBuf, String>,
    /// The PyTorch script, or why the PyTorch benchmarks are skipped.
    torch: Result<PathBuf, String>,
    log: Option<File>,
    info: RunInfo,
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
                match (t.as_str(), &self.tcp_address) {
                    (TCP, Some(tcp)) => cmd.env("VGPU_MEDIATOR", tcp).env("VGPU_TRANSPORT", "auto"),
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
        let f = match exec::run(cmd, timeout) {
            Ok(f) => f,
            Err(e) => {
                self.write_log_text(&title, &shown, &e);
                return fail_all(b, &e);
            }
        };
        self.write_log_finished(&title, &shown, &f);
        let parsed = exec::parse(&f.stdout);
        self.note_warnings(side, &parsed);
        if let Err(e) = self.check_library(side, &parsed) {
            return fail_all(b, &e);
        }
        let why = exec::failure(&f, &parsed, timeout);
        outcomes(b, &parsed, why.as_deref())
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
            let (at, f) = match exec::time_to_line(cmd, "first_kernel_done", left) {
                Ok(r) => r,
                Err(e) => {
                    self.write_log_text(&title, &shown, &e);
                    return fail_all(b, &e);
                }
            };
            self.write_log_finished(&title, &shown, &f);
            let parsed = exec::parse(&f.stdout);
            if let Err(e) = self.check_library(side, &parsed) {
                return fail_all(b, &e);
            }
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

    fn run_side(&mut self, b: &Benchmark, side: &Side) -> Vec<Outcome> {
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
    fn side_info(&mut self, side: &Side) {
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

/// The median (NaN for no samples); sorts `v`.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// A few words for the progress line.
fn summary(b: &Benchmark, out: &[Outcome]) -> String {
    if let Some(Outcome::Fail(r)) = out.iter().find(|o| matches!(o, Outcome::Fail(_))) {
        return format!("FAIL {r}");
    }
    if let Some(Outcome::Skip(r)) = out.first() {
        return format!("SKIP {r}");
    }
    b.figures
        .iter()
        .zip(out)
        .filter_map(|(f, o)| {
            o.value()
                .map(|v| format!("{} {}", report::format_value(v), f.unit))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn compile(dir: &Path) -> Result<PathBuf, String> {
    let src = dir.join("vgpu_bench.c");
    let bin = dir.join("vgpu_bench");
    std::fs::write(&src, C_SOURCE).map_err(|e| format!("writing {}: {e}", src.display()))?;
    let mut cmd = Command::new("cc");
    cmd.args(["-std=c11", "-O2", "-Wall", "-pthread", "-o"])
        .arg(&bin)
        .arg(&src)
        .arg("-ldl");
    let f = exec::run(cmd, Duration::from_secs(120))
        .map_err(|e| format!("cannot compile the C benchmark program: {e}"))?;
    match f.status {
        Some(s) if s.success() => Ok(bin),
        _ => Err(format!(
            "cc could not compile the C benchmark program: {}",
            exec::one_line(
                f.stderr
                    .lines()
                    .find(|l| l.contains("error"))
                    .unwrap_or(&f.stderr)
            )
        )),
    }
}

/// Whether PyTorch can run on both sides, and the script if so.
fn torch_script(
    args: &BenchArgs,
    dir: &Path,
    native_sim: bool,
    vgpu_sim: bool,
) -> Result<PathBuf, String> {
    if native_sim || vgpu_sim {
        let side = if native_sim { "native" } else { "vgpu" };
        return Err(format!(
            "the {side} side is the simulated device, which cannot run PyTorch's kernels"
        ));
    }
    let mut cmd = Command::new(&args.python);
    cmd.args(["-c", "import torch"]);
    let f = exec::run(cmd, Duration::from_secs(120)).map_err(|e| {
        format!(
            "{} cannot run: {}",
            args.python.display(),
            exec::one_line(&e)
        )
    })?;
    if let Some(why) = exec::failure(&f, &exec::Parsed::default(), Duration::from_secs(120)) {
        return Err(format!(
            "`{} -c 'import torch'` failed: {why}",
            args.python.display()
        ));
    }
    let script = dir.join("torch_train.py");
    std::fs::write(&script, TORCH_SOURCE)
        .map_err(|e| format!("writing {}: {e}", script.display()))?;
    Ok(script)
}

/// The progress line's start: which figure is being measured, on which side.
/// The result is appended to the same line when the run ends.
fn progress(step: usize, total: usize, b: &Benchmark, side: &Side, round: (u64, u64)) {
    let w = total.to_string().len();
    let name = match round {
        (_, 1) => b.name.to_owned(),
        (k, n) => format!("{} {k}/{n}", b.name),
    };
    eprint!("[{step:>w$}/{total}] {name:<17} {:<13} ", side.label());
    let _ = std::io::stderr().flush();
}

fn print_header(info: &RunInfo, mediator: &str, quick: bool) {
    let or_unknown = |s: &Option<String>| s.clone().unwrap_or_else(|| "?".into());
    println!();
    println!("vgpu bench: vgpu against the native driver, same machine, same run");
    for (name, s) in [("native", &info.native), ("vgpu", &info.vgpu)] {
        println!(
            "  {name:<8} {} (CUDA {}), {}",
            or_unknown(&s.device),
            or_unknown(&s.cuda_version),
            s.library.as_deref().unwrap_or("library unknown")
        );
        println!("  {:<8} driver: {}", "", s.driver);
    }
    println!("  {:<8} {mediator}", "mediator");
    println!(
        "  {:<8} {}",
        "mode",
        if quick {
            "--quick (smoke run: do not quote these)"
        } else {
            "full"
        }
    );
    println!(
        "  {:<8} C benchmarks: median of {} round(s), each native then every transport",
        "rounds", info.rounds
    );
    println!();
}

/// Runs `vgpu bench`.
pub fn bench(env: &Env, paths: &PathArgs, args: &BenchArgs) -> Result<(), CliError> {
    if args.list {
        print!("{}", catalog::list());
        return Ok(());
    }
    let selected = catalog::select(&args.only);
    let exe_dir = layout::exe_dir()?;
    let dirs = layout::lib_search_dirs(&exe_dir, paths);
    let client = ClientLayout::discover(&exe_dir, paths, &env.tmp_dir)?;
    let mediator_bin = layout::find_mediator(&exe_dir, paths)?;
    let vgpu_plan = demo::plan(&args.driver, layout::find_sim(&dirs), &dirs)?;
    let native = native_plan(&args.native_driver, &dirs, &env.tmp_dir)?;

    let work = TempDir::new(&env.tmp_dir, "bench")
        .map_err(CliError::io("making the benchmark's private folder"))?;
    let log = match &args.log_dir {
        Some(d) => {
            std::fs::create_dir_all(d)
                .map_err(CliError::io(format!("creating {}", d.display())))?;
            let p = d.join("runs.log");
            Some(File::create(&p).map_err(CliError::io(format!("creating {}", p.display())))?)
        }
        None => None,
    };

    eprintln!("vgpu bench: preparing (compiler, PyTorch check, mediator)");
    let c_program = if selected.iter().any(|b| b.needs_c()) {
        compile(work.path())
    } else {
        Err("not needed".into())
    };
    let torch = if selected.iter().any(|b| b.is_torch()) {
        torch_script(args, work.path(), native.simulated, vgpu_plan.simulated)
    } else {
        Err("not selected".into())
    };

    let socket = work.path().join("mediator.sock");
    let med_log = args.log_dir.as_ref().map_or_else(
        || work.path().join("mediator.log"),
        |d| d.join("mediator.log"),
    );
    let mut med_args = vgpu_plan.args.clone();
    let tcp_address = if args.transports.iter().any(|t| t == TCP) {
        let tcp = format!("tcp://127.0.0.1:{}", free_loopback_port()?);
        med_args.extend(["--listen".into(), tcp.clone().into()]);
        Some(tcp)
    } else {
        None
    };
    let mut med = Mediator::start(&mediator_bin, &socket, &med_args, &med_log)?;
    // The supervisor binds its --listen addresses one after the other at
    // start-up: the TCP port is open long before the first run through it
    // (every benchmark runs natively first).
    med.wait_ready(Duration::from_secs(args.socket_timeout))?;
    let mut address = OsString::from("unix:");
    address.push(&socket);
    let mediator_line = format!(
        "pid {} on {}{} (log {})",
        med.pid(),
        address.to_string_lossy(),
        tcp_address
            .as_ref()
            .map_or(String::new(), |tcp| format!(" and {tcp}")),
        med_log.display()
    );

    let client_path = client.client.clone();
    let mut b = Bench {
        args,
        env,
        client,
        address,
        tcp_address,
        c_program,
        torch,
        log,
        info: RunInfo {
            quick: args.quick,
            transports: args.transports.clone(),
            rounds: args.rounds,
            native: SideInfo {
                driver: native.description.clone(),
                ..SideInfo::default()
            },
            vgpu: SideInfo {
                driver: format!(
                    "the mediator runs {}; client {}",
                    vgpu_plan.description,
                    client_path.display()
                ),
                ..SideInfo::default()
            },
            warnings: Vec::new(),
        },
        native,
    };
    if let (Err(e), true) = (&b.c_program, selected.iter().any(|b| b.needs_c())) {
        b.info.warnings.push(e.clone());
    }
    b.side_info(&Side::Native);
    if let Some(t) = args.transports.first() {
        b.side_info(&Side::Vgpu(t.clone()));
    }
    print_header(&b.info, &mediator_line, args.quick);

    let sides: Vec<Side> = std::iter::once(Side::Native)
        .chain(args.transports.iter().cloned().map(Side::Vgpu))
        .collect();
    let rounds_of = |bench: &Benchmark| match bench.program {
        Program::C { .. } => args.rounds,
        Program::ColdStart { .. } | Program::Torch { .. } => 1,
    };
    let total: usize = selected
        .iter()
        .map(|bench| usize::try_from(rounds_of(bench)).unwrap_or(1) * sides.len())
        .sum();
    let mut rows = Vec::new();
    let mut step = 0;
    for bench in &selected {
        let rounds = rounds_of(bench);
        // Per side, per round, per figure.
        let mut runs: Vec<Vec<Vec<Outcome>>> = vec![Vec::new(); sides.len()];
        for round in 1..=rounds {
            for (side, runs) in sides.iter().zip(&mut runs) {
                step += 1;
                if report::Rounds::settled(runs) {
                    continue;
                }
                progress(step, total, bench, side, (round, rounds));
                let t = Instant::now();
                let out = b.run_side(bench, side);
                eprintln!(
                    "{} ({:.1} s)",
                    summary(bench, &out),
                    t.elapsed().as_secs_f64()
                );
                runs.push(out);
            }
        }
        let mut combined = runs
            .iter()
            .map(|r| report::Rounds::of(r, bench.figures.len()));
        let native = combined.next().unwrap_or_default();
        let vgpu: Vec<_> = combined.collect();
        for (i, figure) in bench.figures.iter().enumerate() {
            for (tr, out) in args.transports.iter().zip(&vgpu) {
                rows.push(Row {
                    benchmark: bench.name.to_owned(),
                    figure: *figure,
                    transport: tr.clone(),
                    vgpu: out.outcomes[i].clone(),
                    native: native.outcomes[i].clone(),
                    vgpu_runs: out.values[i].clone(),
                    native_runs: native.values[i].clone(),
                });
            }
        }
    }
    let stopped = med.stop();
    drop(med);

    println!();
    print!("{}", report::table(&rows));
    println!();
    println!("vgpu/native: above 1 is better for throughput (/s), worse for times (us, ms).");
    for w in &b.info.warnings {
        println!("warning: {w}");
    }
    if let Err(e) = stopped {
        println!("warning: the mediator could not be stopped: {e}");
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report::report_json(&b.info, &rows))
            .map_err(|e| CliError::Check(format!("encoding the JSON report: {e}")))?;
        std::fs::write(path, text + "\n")
            .map_err(CliError::io(format!("writing {}", path.display())))?;
        println!("wrote {}", path.display());
    }
    let failed = rows.iter().filter(|r| r.failed()).count();
    if failed > 0 {
        return Err(CliError::Check(format!(
            "{failed} of {} figures failed (see FAIL in the table)",
            rows.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }

    #[test]
    fn transports_are_plain_words() {
        assert_eq!(check_transport(" rings ").as_deref(), Ok("rings"));
        assert!(check_transport("").is_err());
        assert!(check_transport("a b").is_err());
        assert!(check_transport("x;rm").is_err());
    }

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

    #[test]
    fn sides_are_labelled() {
        assert_eq!(Side::Native.label(), "native");
        assert_eq!(Side::Vgpu("rings".into()).label(), "vgpu/rings");
    }
}
