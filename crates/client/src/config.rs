//! The client's configuration, read from the environment once, at the first
//! CUDA call (never at load). Documented in `docs/config.md`.
//!
//! Only the environment is read here; the client file and sysfs are read by
//! [`vgpu_transport::discovery`] when `cuInit` looks for the mediator.

use std::path::PathBuf;
use std::time::Duration;

use vgpu_transport::discovery::{PciCache, Settings};

/// Where diagnostics go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogTarget {
    Stderr,
    File(PathBuf),
}

/// Which transport lanes use (`VGPU_TRANSPORT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportChoice {
    /// Shared-memory rings when the worker offers them, else the socket.
    Auto,
    /// The lane socket only.
    Socket,
    /// Shared-memory rings, or no session at all.
    Rings,
}

/// Everything the client reads from its environment.
#[derive(Debug, Clone)]
pub struct Config {
    /// How to find the mediator: `VGPU_MEDIATOR`, `VGPU_CLIENT_CONFIG`
    /// (default `/etc/vgpu/client.toml`), `VGPU_SYSFS_ROOT` (default `/sys`).
    pub discovery: Settings,
    /// The vGPU PCI device found by an earlier search, re-checked before reuse.
    pub pci_cache: PciCache,
    /// `VGPU_LOG`: unset = quiet; `1`/`stderr` = standard error; else a file path.
    pub log: Option<LogTarget>,
    /// Allowlisted `CUDA_*` variables that travel to the worker.
    pub cuda_env: Vec<(String, String)>,
    /// `VGPU_TRACE`: a file that gets one line per CUDA call, and a summary at exit.
    pub trace: Option<PathBuf>,
    /// `VGPU_TRANSPORT`: `socket`, `rings`, or unset/`auto`. Any other value
    /// is kept in `bad_transport` and means `auto`.
    pub transport: TransportChoice,
    /// A `VGPU_TRANSPORT` value that was not understood (logged at `cuInit`).
    pub bad_transport: Option<String>,
    /// `VGPU_RING_SPIN_US`: how long a thread polls its ring for a reply
    /// before it sleeps on the futex (default 50 µs).
    pub ring_spin: Duration,
    /// `VGPU_RING_YIELD_US`: after `ring_spin`, how long the thread goes on
    /// polling with a `sched_yield` between polls before it sleeps (default
    /// 2000 µs). A reply to a synchronizing call comes when the GPU is done;
    /// the driver waits for that by spinning or yielding, and a futex
    /// wake-up would add several microseconds to every such wait.
    pub ring_yield: Duration,
    /// `VGPU_TCP_SENDER`: `1` hands the calls a plain TCP lane posts to a
    /// sender thread, `0` writes each on its own thread; unset: the sender
    /// runs on hosts of at least 4 CPUs.
    pub tcp_sender: Option<bool>,
    /// `VGPU_TCP_PIECE_KIB`: the largest piece of a copy in one frame on a
    /// TCP lane, in KiB (64 to 16384; default: the lane's own, 4 MiB).
    pub tcp_piece: Option<usize>,
    /// `VGPU_COPY_THREADS`: threads that copy host memory for staged
    /// pageable copies (default: up to 4, no more than the CPUs; 1 = the
    /// calling thread alone). `VGPU_STAGING=0` turns staging off.
    pub copy_threads: usize,
    pub staging: bool,
    /// `tls://` mediators: `VGPU_TLS_CA`, `VGPU_TLS_CERT`, `VGPU_TLS_KEY`,
    /// `VGPU_TOKEN`, `VGPU_TOKEN_FILE` (the token's `Debug` is redacted).
    pub tls: vgpu_transport::tls::TlsSettings,
}

/// The default number of copy threads: up to 4, no more than the CPUs.
fn default_copy_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

impl Config {
    /// Builds the configuration from `(key, value)` pairs.
    pub fn from_env(vars: impl Iterator<Item = (String, String)>) -> Config {
        let mut cfg = Config {
            discovery: Settings::default(),
            pci_cache: PciCache::default(),
            log: None,
            cuda_env: Vec::new(),
            trace: None,
            transport: TransportChoice::Auto,
            bad_transport: None,
            ring_spin: Duration::from_micros(50),
            ring_yield: Duration::from_micros(2000),
            tcp_sender: None,
            tcp_piece: None,
            copy_threads: default_copy_threads(),
            staging: true,
            tls: Default::default(),
        };
        for (k, v) in vars {
            if cfg.discovery.set_from_env(&k, &v) || cfg.tls.set_from_env(&k, &v) {
                continue;
            }
            match k.as_str() {
                "VGPU_TRACE" if !v.is_empty() => cfg.trace = Some(v.into()),
                "VGPU_TRANSPORT" => match v.as_str() {
                    "" | "auto" => cfg.transport = TransportChoice::Auto,
                    "socket" => cfg.transport = TransportChoice::Socket,
                    "rings" => cfg.transport = TransportChoice::Rings,
                    _ => cfg.bad_transport = Some(v),
                },
                "VGPU_RING_SPIN_US" => {
                    if let Ok(us) = v.parse::<u64>() {
                        cfg.ring_spin = Duration::from_micros(us);
                    }
                }
                "VGPU_RING_YIELD_US" => {
                    if let Ok(us) = v.parse::<u64>() {
                        cfg.ring_yield = Duration::from_micros(us);
                    }
                }
                "VGPU_TCP_SENDER" => {
                    cfg.tcp_sender = match v.as_str() {
                        "0" => Some(false),
                        "1" => Some(true),
                        _ => None,
                    }
                }
                "VGPU_TCP_PIECE_KIB" => {
                    if let Ok(kib @ 64..=16_384) = v.parse::<usize>() {
                        cfg.tcp_piece = Some(kib << 10);
                    }
                }
                "VGPU_COPY_THREADS" => {
                    if let Ok(n @ 1..=64) = v.parse::<usize>() {
                        cfg.copy_threads = n;
                    }
                }
                "VGPU_STAGING" => cfg.staging = v != "0",
                "VGPU_LOG" => {
                    cfg.log = match v.as_str() {
                        "" | "0" => None,
                        "1" | "stderr" => Some(LogTarget::Stderr),
                        path => Some(LogTarget::File(path.into())),
                    }
                }
                _ if vgpu_proto::env_allowed(&k) => cfg.cuda_env.push((k, v)),
                _ => {}
            }
        }
        cfg.cuda_env.sort();
        cfg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Config {
        Config::from_env(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    #[test]
    fn tls_settings_are_read_and_the_token_never_prints() {
        let cfg = config(&[
            ("VGPU_MEDIATOR", "tls://gpu.example:7443"),
            ("VGPU_TLS_CA", "/etc/ca.pem"),
            ("VGPU_TOKEN", "s3cr3t-value"),
        ]);
        assert_eq!(cfg.discovery.env.as_deref(), Some("tls://gpu.example:7443"));
        assert_eq!(
            cfg.tls.ca.as_deref(),
            Some(std::path::Path::new("/etc/ca.pem"))
        );
        let token = cfg.tls.bearer().expect("a token").expect("set");
        assert_eq!(token.expose(), b"s3cr3t-value");
        let shown = format!("{cfg:?}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
        // The token is not a CUDA variable: it never travels in the hello.
        assert!(cfg.cuda_env.iter().all(|(k, _)| !k.contains("TOKEN")));
    }

    #[test]
    fn reads_only_what_it_knows() {
        let cfg = config(&[
            ("VGPU_MEDIATOR", "unix:/tmp/m.sock"),
            ("VGPU_LOG", "1"),
            ("CUDA_VISIBLE_DEVICES", "0"),
            ("LD_PRELOAD", "x"),
        ]);
        assert_eq!(cfg.discovery.env.as_deref(), Some("unix:/tmp/m.sock"));
        assert_eq!(cfg.log, Some(LogTarget::Stderr));
        assert_eq!(
            cfg.cuda_env,
            vec![("CUDA_VISIBLE_DEVICES".into(), "0".into())]
        );
    }

    #[test]
    fn transport_choice() {
        assert_eq!(config(&[]).transport, TransportChoice::Auto);
        assert_eq!(
            config(&[("VGPU_TRANSPORT", "socket")]).transport,
            TransportChoice::Socket
        );
        assert_eq!(
            config(&[("VGPU_TRANSPORT", "rings")]).transport,
            TransportChoice::Rings
        );
        let bad = config(&[("VGPU_TRANSPORT", "carrier-pigeon")]);
        assert_eq!(bad.transport, TransportChoice::Auto);
        assert_eq!(bad.bad_transport.as_deref(), Some("carrier-pigeon"));
        assert_eq!(config(&[]).ring_spin, Duration::from_micros(50));
        assert_eq!(config(&[]).ring_yield, Duration::from_micros(2000));
        assert_eq!(config(&[]).tcp_sender, None);
        assert_eq!(config(&[("VGPU_TCP_SENDER", "0")]).tcp_sender, Some(false));
        assert_eq!(config(&[("VGPU_TCP_SENDER", "1")]).tcp_sender, Some(true));
        assert_eq!(config(&[("VGPU_TCP_SENDER", "yes")]).tcp_sender, None);
        assert_eq!(config(&[]).tcp_piece, None);
        assert_eq!(
            config(&[("VGPU_TCP_PIECE_KIB", "1024")]).tcp_piece,
            Some(1 << 20)
        );
        assert_eq!(config(&[("VGPU_TCP_PIECE_KIB", "32")]).tcp_piece, None);
        assert_eq!(
            config(&[("VGPU_RING_YIELD_US", "0")]).ring_yield,
            Duration::ZERO
        );
        assert_eq!(
            config(&[("VGPU_RING_SPIN_US", "0")]).ring_spin,
            Duration::ZERO
        );
        assert_eq!(config(&[("VGPU_COPY_THREADS", "3")]).copy_threads, 3);
        assert_eq!(
            config(&[("VGPU_COPY_THREADS", "0")]).copy_threads,
            default_copy_threads(),
            "out of range keeps the default"
        );
        assert!(config(&[]).staging);
        assert!(!config(&[("VGPU_STAGING", "0")]).staging);
    }

    #[test]
    fn discovery_inputs_default_to_the_system_paths() {
        let cfg = config(&[("VGPU_MEDIATOR", "")]);
        assert_eq!(cfg.discovery, Settings::default());
        assert_eq!(
            cfg.discovery.client_file,
            PathBuf::from("/etc/vgpu/client.toml")
        );
        assert_eq!(cfg.discovery.sysfs_root, PathBuf::from("/sys"));
        let cfg = config(&[
            ("VGPU_CLIENT_CONFIG", "/tmp/c.toml"),
            ("VGPU_SYSFS_ROOT", "/tmp/sys"),
        ]);
        assert_eq!(cfg.discovery.env, None);
        assert_eq!(cfg.discovery.client_file, PathBuf::from("/tmp/c.toml"));
        assert_eq!(cfg.discovery.sysfs_root, PathBuf::from("/tmp/sys"));
    }
}
