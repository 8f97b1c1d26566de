//! The command line of `vgpu`, declared with clap's derive API.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::bench::catalog;

const EXIT_CODES: &str = "\
Exit codes:
  0    success
  1    a check failed (demo result wrong, doctor found a problem, mediator unreachable)
  2    invalid command line
  3    a vgpu component (library, mediator, C compiler) was not found
  4    the mediator did not start or did not open its socket in time
  5    any other system error
  6    install/uninstall refused (needs root, another one running, or files
       changed since the install: see uninstall --force)
  vgpu run becomes the command, so its status is the command's own; before
  that it exits 125 (vgpu failed), 126 (not executable) or 127 (not found).";

/// vgpu: run unmodified CUDA programs on a GPU that lives in another process,
/// VM or machine.
///
/// The client library (libvgpu-cuda.so) stands in for NVIDIA's libcuda.so.1
/// and forwards every CUDA Driver API call to vgpu-mediator, which runs it on
/// the real GPU (or on the simulated device, a test double).
#[derive(Debug, Parser)]
#[command(name = "vgpu", version, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(flatten)]
    pub paths: PathArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Where vgpu's own files are, when they are not beside the `vgpu` binary.
#[derive(Debug, Args, Clone, Default, PartialEq, Eq)]
pub struct PathArgs {
    /// Folder holding libvgpu-cuda.so (default: ../lib beside vgpu, then
    /// vgpu's own folder).
    #[arg(long, global = true, value_name = "DIR")]
    pub lib_dir: Option<PathBuf>,
    /// The vgpu-mediator binary (default: beside vgpu).
    #[arg(long, global = true, value_name = "FILE")]
    pub mediator_bin: Option<PathBuf>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one command with vgpu's libcuda.so.1 in front of the real one.
    ///
    /// Prepends vgpu's library folder to LD_LIBRARY_PATH, sets VGPU_MEDIATOR
    /// when --mediator is given, and executes the command in place of vgpu, so
    /// vgpu exits with the command's own status. Nothing is installed; no root is needed.
    #[command(
        after_help = "Example:\n  vgpu run --mediator unix:/run/vgpu/mediator.sock -- python3 train.py"
    )]
    Run(RunArgs),
    /// Show vgpu working end to end: a private mediator plus an example program.
    ///
    /// Starts vgpu-mediator on a temporary socket, runs a small C program
    /// written against the CUDA Driver API (device query, memory, a vector add
    /// whose result is checked) through libvgpu-cuda.so, prints each step and
    /// stops the mediator. Needs a C compiler (`cc`) unless a prebuilt
    /// vector_add_driver sits beside vgpu.
    Demo(DemoArgs),
    /// Print versions, where vgpu's files are, whether the mediator answers,
    /// and its live sessions.
    ///
    /// The sessions (uid, client pid, worker pid, transport, device memory
    /// held, uptime) come from the mediator's supervisor, which answers
    /// without starting a worker. --json prints everything as one JSON object.
    Status(StatusArgs),
    /// Check the installation and explain what is wrong, one line per check.
    ///
    /// Checks vgpu's files, which libcuda.so.1 a fresh process gets (the
    /// loader cache, and a child started with an empty environment that
    /// loads libcuda.so.1 and reads its own memory map), the mediator the
    /// client would use (found as the client finds it, then a real
    /// handshake), the socket's permissions, versions, and the real driver a
    /// worker on this machine would load. Exits 0 only when all is well.
    Doctor(MediatorArgs),
    /// Make vgpu's library the libcuda.so.1 of every process (needs root).
    ///
    /// Copies libvgpu-cuda.so to /usr/lib/vgpu/, links libcuda.so.1 and
    /// libcuda.so to it in the standard library folders that exist
    /// (/usr/lib/<arch>-linux-gnu, /usr/lib64, /usr/local/lib), writes
    /// /etc/ld.so.conf.d/000-vgpu.conf and rebuilds the loader cache
    /// (ldconfig -X). Whatever stood in the way is backed up to
    /// /var/lib/vgpu/backup/, and every change is recorded in
    /// /var/lib/vgpu/manifest.json. Running it again repairs or updates the
    /// installation. /etc/ld.so.preload is never touched.
    #[command(
        after_help = "Examples:\n  sudo vgpu install\n  vgpu install --root /tmp/image --lib target/release/libvgpu_cuda.so"
    )]
    Install(InstallArgs),
    /// Undo `vgpu install` exactly, from its manifest.
    ///
    /// Puts back every file and link install replaced (contents, mode and
    /// link targets), removes what it created and rebuilds the loader cache.
    /// Refuses, changing nothing, when a path was changed since the install,
    /// unless --force.
    Uninstall(UninstallArgs),
    /// Measure vgpu against the native driver in the same run (on a GPU machine).
    ///
    /// Starts a private mediator, runs each benchmark program on the native
    /// driver and through vgpu once per transport, and prints every figure
    /// with the ratio vgpu/native (docs/bench.md).
    Bench(BenchArgs),
    /// Internal: load libcuda.so.1 and print what got mapped (used by doctor).
    #[command(hide = true, name = "__loader-probe")]
    LoaderProbe,
    /// Test tool: stand in for QEMU and its guest's sysfs on a host without
    /// VMs (docs/vm.md, "Without a VM"). Connects to a mediator's
    /// `ivshmem:` socket, lays out `SYSFS/bus/pci/devices/BDF/` with the
    /// device's ids, `resource2` (the guest's shared memory) and `resource0`
    /// (its registers), prints `ready`, and forwards doorbell writes until
    /// killed. Clients run with `VGPU_SYSFS_ROOT=SYSFS` then reach the
    /// mediator as processes of that guest.
    #[command(hide = true, name = "ivshmem-peer")]
    IvshmemPeer(IvshmemPeerArgs),
}

/// Arguments of `vgpu ivshmem-peer`.
#[derive(Debug, Args)]
pub struct IvshmemPeerArgs {
    /// The mediator's `ivshmem:` socket.
    #[arg(long)]
    pub socket: PathBuf,
    /// Where to lay out the fake sysfs tree.
    #[arg(long)]
    pub sysfs: PathBuf,
    /// The device's address in the fake tree.
    #[arg(long, default_value = "0000:00:05.0")]
    pub bdf: String,
}

/// Arguments of `vgpu install`.
#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Install into this folder as if it were / (for images and tests).
    #[arg(long, default_value = "/", value_name = "DIR")]
    pub root: PathBuf,
    /// The library to install (default: libvgpu-cuda.so found as for
    /// `vgpu run`, see --lib-dir).
    #[arg(long, value_name = "PATH")]
    pub lib: Option<PathBuf>,
    /// Print what would be done; change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Arguments of `vgpu uninstall`.
#[derive(Debug, Args)]
pub struct UninstallArgs {
    /// The root given to `vgpu install --root`.
    #[arg(long, default_value = "/", value_name = "DIR")]
    pub root: PathBuf,
    /// Restore even paths that were changed since the install.
    #[arg(long)]
    pub force: bool,
    /// Print what would be done; change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Arguments of `vgpu run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Mediator address for the command (`unix:PATH`, `tls://HOST:PORT`,
    /// `tcp://HOST:PORT`); sets VGPU_MEDIATOR (a `tls://` mediator also needs
    /// VGPU_TLS_CA and VGPU_TOKEN or VGPU_TLS_CERT/VGPU_TLS_KEY, passed on).
    /// Without it the client's own search applies (VGPU_MEDIATOR,
    /// /etc/vgpu/client.toml, a vGPU PCI device, then the default socket
    /// /run/vgpu/mediator.sock).
    #[arg(long, value_name = "ADDR")]
    pub mediator: Option<String>,
    /// The command and its arguments, after `--`.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<OsString>,
}

/// Arguments of `vgpu demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Which driver the mediator runs the calls on: `auto` (the NVIDIA driver
    /// if this machine has one, else the simulated device), `sim`, or the
    /// absolute path of a libcuda.so.1.
    #[arg(long, default_value = "auto", value_name = "sim|auto|PATH")]
    pub driver: DriverChoice,
    /// Number of float elements in the vector add.
    #[arg(long, default_value_t = 1 << 20, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=(1 << 26)))]
    pub elements: u32,
    /// Seconds to wait for the mediator's socket.
    #[arg(long, default_value_t = 10, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=600))]
    pub socket_timeout: u64,
    /// Seconds the example program may run before it is stopped.
    #[arg(long, default_value_t = 120, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub run_timeout: u64,
}

/// Arguments of `vgpu status` and `vgpu doctor`.
#[derive(Debug, Args)]
pub struct MediatorArgs {
    /// Mediator address to check (default: the one the client would find:
    /// VGPU_MEDIATOR, /etc/vgpu/client.toml, a vGPU PCI device, then
    /// unix:/run/vgpu/mediator.sock).
    #[arg(long, value_name = "ADDR")]
    pub mediator: Option<String>,
}

/// Arguments of `vgpu status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub mediator: MediatorArgs,
    /// Print the report as one JSON object (`sessions` is a list, or an
    /// object with `error` when the mediator could not list them).
    #[arg(long)]
    pub json: bool,
}

const BENCH_AFTER_HELP: &str = "\
Examples:
  vgpu bench --driver /usr/local/nvidia/lib64/libcuda.so.1 --json bench.json
  vgpu bench --quick --only launch,memcpy_8b --transports rings
  vgpu bench --list

The ratio is vgpu/native: above 1 is better for throughput (/s), worse for
times (us, ms). See docs/bench.md. The CPU-only ring benchmark is
`cargo bench -p vgpu-transport --bench ring`.";

/// Arguments of `vgpu bench`.
#[derive(Debug, Args)]
#[command(after_help = BENCH_AFTER_HELP)]
pub struct BenchArgs {
    /// Fewer iterations: a smoke run, not figures to quote.
    #[arg(long)]
    pub quick: bool,
    /// Run only these benchmarks (names or groups, comma-separated; see --list).
    #[arg(long, value_delimiter = ',', value_name = "NAME,...", value_parser = catalog::check_name)]
    pub only: Vec<String>,
    /// The driver vgpu's mediator runs the calls on: `auto` (the NVIDIA
    /// driver if this machine has one, else the simulated device), `sim`, or
    /// the absolute path of a libcuda.so.1.
    #[arg(long, default_value = "auto", value_name = "auto|sim|PATH")]
    pub driver: DriverChoice,
    /// The native side: `auto` (the libcuda.so.1 the dynamic loader finds,
    /// in a plain environment), `sim` (vgpu's simulated device, loaded
    /// directly: for testing the harness without a GPU), or the absolute path
    /// of a libcuda.so.1.
    #[arg(long, default_value = "auto", value_name = "auto|sim|PATH")]
    pub native_driver: DriverChoice,
    /// The transports to measure vgpu with (comma-separated): `rings` and
    /// `socket` set VGPU_TRANSPORT; `tcp` reaches the same mediator over a
    /// loopback TCP connection (VGPU_MEDIATOR=tcp://127.0.0.1:PORT);
    /// `ivshmem` through the ivshmem transport of VM guests, with a stand-in
    /// for QEMU on this host (VGPU_MEDIATOR=pci:BDF in a fake sysfs tree);
    /// `tls` over a loopback TLS 1.3 connection, authenticated by a client
    /// certificate (VGPU_MEDIATOR=tls://127.0.0.1:PORT; the run's
    /// certificates are made with the `openssl` command).
    #[arg(long, value_delimiter = ',', default_value = "rings,socket,tcp", value_name = "T,...", value_parser = check_transport)]
    pub transports: Vec<String>,
    /// Rounds of each C benchmark. A round runs the native side, then each
    /// transport, so a machine that drifts (clocks, other load) moves both
    /// sides alike; each figure is the median over the rounds. Cold start
    /// takes its own median over fresh processes. Every round's value is in
    /// the JSON report.
    #[arg(long, default_value_t = 3, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=50))]
    pub rounds: u64,
    /// Rounds of each PyTorch model, taken as --rounds are (each model's
    /// run is minutes long, so one by default). Where the native figure
    /// moves from run to run, several rounds make the ratio worth quoting.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=20))]
    pub model_rounds: u64,
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

/// The driver choice of `vgpu demo --driver` and `vgpu bench --driver`:
/// `sim`, `auto` or an absolute path, as for `vgpu-mediator --driver`.
pub use vgpu_abi::driver::DriverChoice;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transports_are_plain_words() {
        assert_eq!(check_transport(" rings ").as_deref(), Ok("rings"));
        assert!(check_transport("").is_err());
        assert!(check_transport("a b").is_err());
        assert!(check_transport("x;rm").is_err());
    }
}
