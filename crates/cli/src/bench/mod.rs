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
mod link;
pub mod report;
mod runner;
mod tls;

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::args::{DriverChoice, PathArgs};
use crate::config::Env;
use crate::driver::{self, Candidate};
use crate::error::CliError;
use crate::layout::{self, ClientLayout};
use crate::mediator::Mediator;
use crate::privdir::TempDir;

use catalog::{Benchmark, Program};
use report::{Outcome, Row, RunInfo, SideInfo};
use runner::Bench;

/// `vgpu bench`'s arguments, declared in [`crate::args`] with the rest of
/// the command line.
pub use crate::args::BenchArgs;

/// The C benchmark program, compiled at run time.
pub const C_SOURCE: &str = include_str!("../../../../gpu/bench/vgpu_bench.c");
/// The PyTorch training benchmark.
pub const TORCH_SOURCE: &str = include_str!("../../../../gpu/bench/torch_train.py");
/// The variable the C program reads for the library to load.
pub const LIBCUDA_ENV: &str = "VGPU_BENCH_LIBCUDA";

/// The `--transports` name of a loopback TCP connection to the mediator.
const TCP: &str = "tcp";
/// The `--transports` name of the ivshmem transport, run through a
/// stand-in for QEMU on this host (`docs/vm.md`, "Without a VM").
const IVSHMEM: &str = "ivshmem";
/// The stand-in device's address in its fake sysfs tree.
const IVSHMEM_BDF: &str = "0000:00:05.0";

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
    println!(
        "  {:<8} PyTorch models: median of {} round(s)",
        "", info.model_rounds
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
    let vgpu_plan = driver::plan(&args.driver, layout::find_sim(&dirs), &dirs)?;
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
    let tls = if args.transports.iter().any(|t| t == tls::TLS) {
        let run = tls::prepare(work.path(), free_loopback_port()?)
            .map_err(|e| CliError::Mediator(format!("the tls transport: {e}")))?;
        med_args.extend(run.mediator_args.iter().cloned());
        Some(run)
    } else {
        None
    };
    let ivshmem_socket = work.path().join("ivshmem.sock");
    let measure_ivshmem = args.transports.iter().any(|t| t == IVSHMEM);
    if measure_ivshmem {
        let listen = format!("ivshmem:{}", ivshmem_socket.display());
        med_args.extend(["--listen".into(), listen.into()]);
    }
    let mut med = Mediator::start(&mediator_bin, &socket, &med_args, &med_log)?;
    // The supervisor binds its --listen addresses one after the other at
    // start-up: the TCP port is open long before the first run through it
    // (every benchmark runs natively first).
    med.wait_ready(Duration::from_secs(args.socket_timeout))?;
    // The supervisor binds its ivshmem socket before its Unix socket.
    let ivshmem = if measure_ivshmem {
        let sysfs = work.path().join("sys");
        let peer = vgpu_transport::ivshmem::server::FakeQemu::start(
            &ivshmem_socket,
            &sysfs,
            IVSHMEM_BDF,
            1,
        )
        .map_err(|e| CliError::Mediator(format!("{}: {e}", ivshmem_socket.display())))?;
        Some((peer, sysfs))
    } else {
        None
    };
    let mut address = OsString::from("unix:");
    address.push(&socket);
    let mediator_line = format!(
        "pid {} on {}{} (log {})",
        med.pid(),
        address.to_string_lossy(),
        tcp_address
            .iter()
            .chain(tls.as_ref().map(|t| &t.address))
            .map(|a| format!(" and {a}"))
            .collect::<String>(),
        med_log.display()
    );

    let client_path = client.client.clone();
    let mut b = Bench {
        args,
        env,
        client,
        address,
        tcp_address,
        tls,
        ivshmem,
        c_program,
        torch,
        log,
        info: RunInfo {
            quick: args.quick,
            transports: args.transports.clone(),
            rounds: args.rounds,
            model_rounds: args.model_rounds,
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
        Program::Torch { .. } => args.model_rounds,
        Program::ColdStart { .. } => 1,
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
    // The raw link under the tcp transport, measured now, after the runs
    // through it, while the machine is as they found it.
    let link = if b.tcp_address.is_some() && !link::against(&rows, 1.0).is_empty() {
        eprintln!(
            "vgpu bench: raw loopback TCP, 3 x {} MiB each way",
            link::BYTES >> 20
        );
        match link::stream(3) {
            Ok(measured) => Some(measured),
            Err(e) => {
                b.info.warnings.push(format!("raw TCP not measured: {e}"));
                None
            }
        }
    } else {
        None
    };
    let stopped = med.stop();
    drop(med);

    println!();
    print!("{}", report::table(&rows));
    println!();
    println!("vgpu/native: above 1 is better for throughput (/s), worse for times (us, ms).");
    if let Some(measured) = &link {
        println!();
        for line in link::lines(measured, &rows) {
            println!("{line}");
        }
    }
    for w in &b.info.warnings {
        println!("warning: {w}");
    }
    if let Err(e) = stopped {
        println!("warning: the mediator could not be stopped: {e}");
    }
    if let Some(path) = &args.json {
        let mut report = report::report_json(&b.info, &rows);
        if let (Some(measured), Some(o)) = (&link, report.as_object_mut()) {
            o.insert("link".into(), link::json(measured, &rows));
        }
        let text = serde_json::to_string_pretty(&report)
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
    fn sides_are_labelled() {
        assert_eq!(Side::Native.label(), "native");
        assert_eq!(Side::Vgpu("rings".into()).label(), "vgpu/rings");
    }
}
