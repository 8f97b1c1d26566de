//! The mediator's configuration: command-line flags, parsed once.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
pub use vgpu_abi::driver::DriverChoice;

/// vgpu-mediator runs CUDA calls for vgpu clients on the real GPU.
///
/// The supervisor listens for clients and starts one worker process per
/// session; the worker loads the driver and executes the session's calls.
/// Exit codes: 0 clean shutdown, 1 runtime error, 2 bad command line or
/// mediator file.
#[derive(Debug, Parser)]
#[command(name = "vgpu-mediator", version)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The mediator file (TOML, `docs/config.md`); by default
    /// `/etc/vgpu/mediator.toml` when it exists. Flags given on the command
    /// line win over the file.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// Ports for the lanes of TCP sessions: `LOW-HIGH` or one `PORT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortRange {
    pub low: u16,
    pub high: u16,
}

impl std::str::FromStr for PortRange {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (low, high) = s.split_once('-').unwrap_or((s, s));
        let port = |p: &str| p.trim().parse::<u16>().ok().filter(|p| *p != 0);
        match (port(low), port(high)) {
            (Some(low), Some(high)) if low <= high => Ok(PortRange { low, high }),
            _ => Err(format!(
                "{s:?}: expected LOW-HIGH (1..=65535, LOW <= HIGH) or one port"
            )),
        }
    }
}

impl std::fmt::Display for PortRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.low, self.high)
    }
}

/// Flags shared by the supervisor and the workers it starts.
#[derive(Debug, Args, Clone)]
pub struct ServeArgs {
    /// Where to listen: `unix:PATH`, `tls://ADDR:PORT`, `tcp://ADDR:PORT`
    /// or `ivshmem:PATH`; repeat the flag to listen in several places
    /// (giving it replaces the default). `tls://` needs `--tls-cert`,
    /// `--tls-key` and a way for clients to authenticate (`--tls-client-ca`
    /// or `--tokens`). `tcp://` is plain TCP: served on loopback addresses
    /// only, unless `--insecure-tcp`. Port 0 takes a free port; the log
    /// says which (`listening on tls://…`). `ivshmem:PATH` is a socket that QEMU's
    /// `ivshmem-doorbell` devices connect to (`docs/vm.md`).
    #[arg(long, default_value = "unix:/run/vgpu/mediator.sock")]
    pub listen: Vec<String>,
    /// Ports on which the worker of a TCP session listens for the client's
    /// lanes (one connection per client thread), `LOW-HIGH`; by default
    /// any free port. Firewalls must let clients reach them.
    #[arg(long)]
    pub lane_ports: Option<PortRange>,
    /// Driver for the workers: `auto` (the real driver if found, else the
    /// simulated device, loudly), `sim`, or an absolute path to libcuda.so.1.
    #[arg(long, default_value = "auto")]
    pub driver: DriverChoice,
    /// Path of libvgpu-sim.so; by default it is looked up next to this binary.
    #[arg(long)]
    pub sim_lib: Option<PathBuf>,
    /// Append logs to this file instead of standard error.
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// Log filter, e.g. `info` or `vgpu_mediator=debug`.
    #[arg(long, default_value = "info")]
    pub log_level: String,
    /// The private directory where the workers of every mediator of this
    /// host record inter-process handles they exported (mode 0700, owned by
    /// the mediator's uid); by default `/tmp/vgpu-ipc-UID`.
    #[arg(long)]
    pub ipc_dir: Option<PathBuf>,
    /// Serve Prometheus metrics over HTTP at `http://ADDR:PORT/metrics`
    /// (e.g. `127.0.0.1:9400`, `[::1]:9400`; port 0 takes a free port, the
    /// log says which). The series are listed in docs/metrics.md. Anyone who
    /// reaches the port reads them: bind it to a trusted address.
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Shared memory given to each VM guest on `ivshmem:` sockets, in MiB:
    /// a power of two, at least 8 (64 MiB holds 14 sessions).
    #[arg(long, default_value_t = 64, value_parser = parse_ivshmem_mib)]
    pub ivshmem_mib: usize,
    /// TLS: the server's certificate chain (PEM), for `tls://` listeners.
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// TLS: the server's private key (PEM), for `tls://` listeners.
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// TLS: a CA file (PEM); clients may authenticate with a certificate it
    /// signed (mTLS). The certificate's subject common name names them.
    #[arg(long, value_name = "FILE")]
    pub tls_client_ca: Option<PathBuf>,
    /// Bearer tokens clients may authenticate with on `tls://` listeners:
    /// one `NAME SHA256HEX` per line (the SHA-256 of the secret, never the
    /// secret itself).
    #[arg(long, value_name = "FILE")]
    pub tokens: Option<PathBuf>,
    /// Serve plain `tcp://` listeners on addresses other than loopback:
    /// nothing is encrypted and no client is authenticated. Without it the
    /// mediator refuses to start with such a listener.
    #[arg(long)]
    pub insecure_tcp: bool,
    /// Admission limits and worker privileges ([`crate::admission`]).
    #[command(flatten)]
    pub limits: crate::admission::LimitArgs,
}

pub(crate) fn parse_ivshmem_mib(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n.is_power_of_two() && (8..=16384).contains(&n) => Ok(n),
        _ => Err(format!("{s:?}: a power of two from 8 to 16384")),
    }
}

/// Subcommands; without one the supervisor runs.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Reads and checks the mediator file, prints what it found, and exits
    /// (0: usable; 2: not, with the file, line and key at fault).
    CheckConfig,
    /// Serve one session on an inherited connection (started by the supervisor).
    #[command(hide = true)]
    Worker {
        /// The inherited connection's file descriptor (with `--region`:
        /// the guest's shared memory).
        #[arg(long)]
        fd: i32,
        /// The inherited session table's file descriptor.
        #[arg(long, requires = "session_slot")]
        session_table: Option<i32>,
        /// This worker's slot in the session table.
        #[arg(long, requires = "session_table")]
        session_slot: Option<usize>,
        /// A VM guest's session: the region of the shared memory, its
        /// owner word, and the lifeline descriptor that closes when the
        /// guest goes (`REGION:WORD:FD`).
        #[arg(long)]
        region: Option<String>,
        /// The session's tenant (`crate::tenants`).
        #[arg(long)]
        tenant: Option<String>,
        /// The tenant's index in the quota table.
        #[arg(long, requires = "tenant")]
        tenant_index: Option<usize>,
        /// The inherited quota table's file descriptor.
        #[arg(long, requires = "tenant")]
        quota_table: Option<i32>,
        /// The tenant's device-memory limit, in bytes.
        #[arg(long, requires = "tenant")]
        memory_limit: Option<u64>,
        /// The tenant's devices, as `CUDA_VISIBLE_DEVICES` names them.
        #[arg(long, requires = "tenant")]
        tenant_devices: Option<String>,
        /// The tenant's compute weight, when launches are paced.
        #[arg(long, requires = "tenant")]
        tenant_weight: Option<u32>,
        /// A TLS session: `--fd` is the listener the client connects to,
        /// and this inherited pipe gives the ticket and the server's
        /// certificate and key (`crate::tls`).
        #[arg(long, value_name = "FD", conflicts_with = "region")]
        tls_admission: Option<i32>,
        /// A memfd holding the client's hello, which the supervisor read
        /// and checked before it started this worker.
        #[arg(long)]
        hello: Option<i32>,
    },
}

impl ServeArgs {
    /// The IPC registry's directory: `--ipc-dir`, else `/tmp/vgpu-ipc-UID`
    /// for the effective uid, shared by every mediator of that uid.
    pub fn ipc_directory(&self) -> PathBuf {
        self.ipc_dir.clone().unwrap_or_else(|| {
            let uid = rustix::process::geteuid().as_raw();
            PathBuf::from(format!("/tmp/vgpu-ipc-{uid}"))
        })
    }

    /// The simulated device library: `--sim-lib`, else next to the executable.
    pub fn sim_library(&self) -> Option<PathBuf> {
        if let Some(p) = &self.sim_lib {
            return Some(p.clone());
        }
        let exe = std::env::current_exe().ok()?;
        let dir = exe.parent()?;
        let names = ["libvgpu-sim.so", "libvgpu_sim.so"];
        let dirs = [dir.to_path_buf(), dir.join("../lib"), dir.join("deps")];
        dirs.iter()
            .flat_map(|d| names.iter().map(move |n| d.join(n)))
            .find(|p| p.is_file())
            .and_then(|p| p.canonicalize().ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_ranges() {
        let r = |low, high| PortRange { low, high };
        assert_eq!("40000-40100".parse(), Ok(r(40000, 40100)));
        assert_eq!("7012".parse(), Ok(r(7012, 7012)));
        assert_eq!(r(1, 2).to_string(), "1-2");
        for bad in ["", "0-10", "10-9", "1-65536", "a-b", "-5", "5-"] {
            assert!(bad.parse::<PortRange>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn listen_repeats_and_replaces_the_default() {
        let cli = Cli::parse_from(["vgpu-mediator"]);
        assert_eq!(cli.serve.listen, ["unix:/run/vgpu/mediator.sock"]);
        let cli = Cli::parse_from([
            "vgpu-mediator",
            "--listen",
            "unix:/tmp/m.sock",
            "--listen",
            "tcp://0.0.0.0:7011",
            "--lane-ports",
            "40000-40009",
        ]);
        assert_eq!(cli.serve.listen, ["unix:/tmp/m.sock", "tcp://0.0.0.0:7011"]);
        assert_eq!(
            cli.serve.lane_ports,
            Some(PortRange {
                low: 40000,
                high: 40009
            })
        );
    }

    #[test]
    fn ivshmem_sizes_are_powers_of_two() {
        assert_eq!(Cli::parse_from(["vgpu-mediator"]).serve.ivshmem_mib, 64);
        let ok = Cli::try_parse_from(["vgpu-mediator", "--ivshmem-mib", "256"]).expect("256");
        assert_eq!(ok.serve.ivshmem_mib, 256);
        for bad in ["0", "4", "48", "32768", "x"] {
            assert!(
                Cli::try_parse_from(["vgpu-mediator", "--ivshmem-mib", bad]).is_err(),
                "{bad}"
            );
        }
        let w = Cli::parse_from(["vgpu-mediator", "worker", "--fd", "3", "--region", "2:99:4"]);
        assert!(matches!(
            w.command,
            Some(Command::Worker { fd: 3, region: Some(ref r), .. }) if r == "2:99:4"
        ));
    }
}
