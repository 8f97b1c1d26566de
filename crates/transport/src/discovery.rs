//! Finding the mediator.
//!
//! Contract: [`find`] searches in this order and returns the first hit, with
//! where it came from ([`Source`]):
//! 1. `VGPU_MEDIATOR` (`unix:PATH`, `tcp://HOST:PORT`, `tls://HOST:PORT`, `pci:BDF`);
//! 2. the client file, `/etc/vgpu/client.toml` (key `mediator`);
//! 3. a vGPU PCI device, by a light scan of `<sysfs>/bus/pci/devices/*/` that
//!    reads only the `vendor`, `device` and `class` attributes (never a
//!    `resource*` file: opening a BAR is transport set-up, which happens at
//!    connect time, not during discovery). The ids come from the client file
//!    (`pci_vendor`, `pci_device`, `pci_class`; default: ivshmem,
//!    `0x1af4:0x1110`, class `0x0500xx`). The BDF found is cached in a
//!    [`PciCache`] and its ids are read again before it is reused;
//! 4. the default socket, [`DEFAULT_SOCKET`].
//!
//! Everything here is a function of its inputs (the variable's value, the
//! file's text, the sysfs root), so tests run against a fake tree. Nothing
//! here connects; the client does, at `cuInit`.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::Address;

/// The default mediator socket.
pub const DEFAULT_SOCKET: &str = "/run/vgpu/mediator.sock";
/// The client file.
pub const CLIENT_FILE: &str = "/etc/vgpu/client.toml";
/// Where sysfs is mounted.
pub const SYSFS_ROOT: &str = "/sys";
/// Largest client file read.
const MAX_FILE: u64 = 64 << 10;
/// Most PCI devices looked at in one scan.
const MAX_DEVICES: usize = 4096;

/// A PCI address, `domain:bus:device.function`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bdf {
    pub domain: u32,
    pub bus: u8,
    pub device: u8,
    pub function: u8,
}

impl Bdf {
    /// Parses `DDDD:BB:DD.F` (sysfs's form) or `BB:DD.F` (domain 0).
    pub fn parse(s: &str) -> Option<Bdf> {
        let (rest, function) = s.rsplit_once('.')?;
        let mut parts = rest.rsplit(':');
        let device = parts.next()?;
        let bus = parts.next()?;
        let domain = parts.next().unwrap_or("0");
        if parts.next().is_some()
            || [domain, bus, device, function]
                .iter()
                .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_hexdigit()))
            || domain.len() > 8
            || bus.len() > 2
            || device.len() > 2
            || function.len() > 1
        {
            return None;
        }
        let bdf = Bdf {
            domain: u32::from_str_radix(domain, 16).ok()?,
            bus: u8::from_str_radix(bus, 16).ok()?,
            device: u8::from_str_radix(device, 16).ok()?,
            function: u8::from_str_radix(function, 16).ok()?,
        };
        (bdf.device < 32 && bdf.function < 8).then_some(bdf)
    }
}

impl fmt::Display for Bdf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{:x}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

/// Where a mediator can be reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `unix:PATH` (or a bare absolute path).
    Unix(PathBuf),
    /// `tcp://HOST:PORT`: `host` as [`Address::Tcp`] keeps it (an IPv6
    /// literal without its brackets); the port is never 0.
    Tcp { host: String, port: u16 },
    /// `tls://HOST:PORT`: as [`Target::Tcp`], inside TLS ([`crate::tls`]).
    Tls { host: String, port: u16 },
    /// `pci:BDF`: an ivshmem-style device shared with the host.
    Pci(Bdf),
}

impl Target {
    /// Parses a mediator address: an [`Address`] a client can connect to
    /// (a `tcp://` one may end in `/`), or `pci:BDF`; `None` when it has
    /// none of the known forms.
    pub fn parse(s: &str) -> Option<Target> {
        if let Some(bdf) = s.strip_prefix("pci:") {
            return Bdf::parse(bdf).map(Target::Pci);
        }
        let s = match s.strip_suffix('/') {
            Some(t) if t.starts_with("tcp://") || t.starts_with("tls://") => t,
            _ => s,
        };
        match s.parse::<Address>().ok()? {
            Address::Unix(path) => Some(Target::Unix(path)),
            Address::Tcp { port: 0, .. } => None,
            Address::Tcp { host, port } => Some(Target::Tcp { host, port }),
            Address::Tls { port: 0, .. } => None,
            Address::Tls { host, port } => Some(Target::Tls { host, port }),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Unix(p) => Address::Unix(p.clone()).fmt(f),
            Target::Tcp { host, port } => Address::Tcp {
                host: host.clone(),
                port: *port,
            }
            .fmt(f),
            Target::Tls { host, port } => Address::Tls {
                host: host.clone(),
                port: *port,
            }
            .fmt(f),
            Target::Pci(bdf) => write!(f, "pci:{bdf}"),
        }
    }
}

/// Which step of the search gave the address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The `VGPU_MEDIATOR` variable.
    Env,
    /// The `mediator` key of the client file at this path.
    File(PathBuf),
    /// The PCI scan under this sysfs root.
    PciScan(PathBuf),
    /// Nothing else matched: the default socket.
    Default,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Env => f.write_str("from VGPU_MEDIATOR"),
            Source::File(p) => write!(f, "from {}", p.display()),
            Source::PciScan(root) => write!(
                f,
                "vGPU PCI device found under {}",
                root.join("bus/pci/devices").display()
            ),
            Source::Default => f.write_str("the default socket"),
        }
    }
}

/// The result of the search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub target: Target,
    pub source: Source,
}

impl Found {
    /// The socket path of a `unix:` address; a `tcp://` address connects
    /// over TCP (`crate::tcp`) and a `pci:` one through the device's BARs
    /// (`crate::ivshmem`) instead.
    pub fn unix_path(&self) -> Result<&Path, DiscoveryError> {
        match &self.target {
            Target::Unix(p) => Ok(p),
            Target::Tcp { .. } | Target::Tls { .. } | Target::Pci(_) => {
                Err(DiscoveryError::NotUnix {
                    found: self.to_string(),
                })
            }
        }
    }
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.target, self.source)
    }
}

/// Why no usable address came out of the search.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// An address does not have any of the known forms.
    #[error("{text:?} ({from}) is not a mediator address; expected unix:PATH, tcp://HOST:PORT, tls://HOST:PORT or pci:BDF")]
    BadAddress { text: String, from: Source },
    /// The client file could not be read or understood.
    #[error("{}: {why}", path.display())]
    BadFile { path: PathBuf, why: String },
    /// A `tcp://` or `pci:` address where a socket path was needed.
    #[error("{found} is not a Unix socket")]
    NotUnix { found: String },
}

/// The vGPU PCI device's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PciIds {
    pub vendor: u16,
    pub device: u16,
    /// Class code (`0xBBSSPP`); base and sub class are compared, the
    /// programming interface is not.
    pub class: u32,
}

impl Default for PciIds {
    /// ivshmem: Red Hat's vendor id, device 0x1110, class "RAM memory".
    fn default() -> PciIds {
        PciIds {
            vendor: 0x1af4,
            device: 0x1110,
            class: 0x05_00_00,
        }
    }
}

/// What the client file says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientFile {
    /// `mediator = "..."`, unparsed.
    pub mediator: Option<String>,
    /// `pci_vendor`, `pci_device`, `pci_class` over the defaults.
    pub pci: PciIds,
}

fn id_value(key: &str, v: &toml::Value, max: u32) -> Result<u32, String> {
    let n = match v {
        toml::Value::Integer(i) => u32::try_from(*i).ok(),
        toml::Value::String(s) => {
            let digits = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"));
            digits.and_then(|d| u32::from_str_radix(d, 16).ok())
        }
        _ => None,
    };
    n.filter(|n| *n <= max)
        .ok_or_else(|| format!("{key} must be an integer or a \"0x…\" string, at most {max:#x}"))
}

/// Parses the client file's text. Unknown keys are errors, so that a typo
/// does not silently send the client elsewhere.
pub fn parse_client_file(text: &str) -> Result<ClientFile, String> {
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| e.to_string().lines().next().unwrap_or("").to_owned())?;
    let mut file = ClientFile::default();
    for (key, value) in &table {
        match key.as_str() {
            "mediator" => match value {
                toml::Value::String(s) => file.mediator = Some(s.clone()),
                _ => {
                    return Err(
                        "mediator must be a string, e.g. \"unix:/run/vgpu/mediator.sock\"".into(),
                    )
                }
            },
            "pci_vendor" => file.pci.vendor = narrow(id_value(key, value, 0xffff)?),
            "pci_device" => file.pci.device = narrow(id_value(key, value, 0xffff)?),
            "pci_class" => file.pci.class = id_value(key, value, 0xff_ffff)?,
            other => {
                return Err(format!(
                    "unknown key {other:?} (known: mediator, pci_vendor, pci_device, pci_class)"
                ))
            }
        }
    }
    Ok(file)
}

fn narrow(v: u32) -> u16 {
    u16::try_from(v).unwrap_or(u16::MAX)
}

/// Reads the client file: `Ok(None)` when there is none.
pub fn read_client_file(path: &Path) -> Result<Option<ClientFile>, DiscoveryError> {
    let bad = |why: String| DiscoveryError::BadFile {
        path: path.to_owned(),
        why,
    };
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(bad(e.to_string())),
    };
    let mut text = String::new();
    file.take(MAX_FILE + 1)
        .read_to_string(&mut text)
        .map_err(|e| bad(e.to_string()))?;
    if text.len() as u64 > MAX_FILE {
        return Err(bad(format!("larger than {MAX_FILE} bytes")));
    }
    parse_client_file(&text).map(Some).map_err(bad)
}

/// Reads one small sysfs attribute of a device. Only the names below are
/// ever read.
fn attribute(dev: &Path, name: Attribute) -> Option<u32> {
    let name = match name {
        Attribute::Vendor => "vendor",
        Attribute::Device => "device",
        Attribute::Class => "class",
    };
    let mut text = String::new();
    std::fs::File::open(dev.join(name))
        .ok()?
        .take(32)
        .read_to_string(&mut text)
        .ok()?;
    let t = text.trim();
    let digits = t.strip_prefix("0x").unwrap_or(t);
    u32::from_str_radix(digits, 16).ok()
}

#[derive(Clone, Copy)]
enum Attribute {
    Vendor,
    Device,
    Class,
}

/// True when the device at `bdf` has the vGPU ids.
pub fn pci_matches(sysfs: &Path, bdf: Bdf, ids: &PciIds) -> bool {
    let dev = sysfs.join("bus/pci/devices").join(bdf.to_string());
    attribute(&dev, Attribute::Vendor) == Some(u32::from(ids.vendor))
        && attribute(&dev, Attribute::Device) == Some(u32::from(ids.device))
        && attribute(&dev, Attribute::Class).is_some_and(|c| c >> 8 == ids.class >> 8)
}

/// The first device (in BDF order) under `sysfs` with the vGPU ids.
pub fn scan_pci(sysfs: &Path, ids: &PciIds) -> Option<Bdf> {
    let entries = std::fs::read_dir(sysfs.join("bus/pci/devices")).ok()?;
    let mut bdfs: Vec<Bdf> = entries
        .take(MAX_DEVICES)
        .filter_map(|e| e.ok()?.file_name().to_str().and_then(Bdf::parse))
        .collect();
    bdfs.sort_by_key(|b| (b.domain, b.bus, b.device, b.function));
    bdfs.into_iter().find(|b| pci_matches(sysfs, *b, ids))
}

/// The BDF found by an earlier scan.
#[derive(Debug, Default)]
pub struct PciCache(Mutex<Option<Bdf>>);

impl PciCache {
    fn get(&self) -> Option<Bdf> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, bdf: Option<Bdf>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = bdf;
    }
}

impl Clone for PciCache {
    fn clone(&self) -> PciCache {
        PciCache(Mutex::new(self.get()))
    }
}

/// The inputs of the search, as read by `config.rs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// `VGPU_MEDIATOR`, if set and not empty.
    pub env: Option<String>,
    /// The client file (`VGPU_CLIENT_CONFIG`, default [`CLIENT_FILE`]).
    pub client_file: PathBuf,
    /// Where sysfs is (`VGPU_SYSFS_ROOT`, default [`SYSFS_ROOT`]).
    pub sysfs_root: PathBuf,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            env: None,
            client_file: CLIENT_FILE.into(),
            sysfs_root: SYSFS_ROOT.into(),
        }
    }
}

impl Settings {
    /// Takes the environment variable `key` if it is one of the search's
    /// (`VGPU_MEDIATOR`, `VGPU_CLIENT_CONFIG`, `VGPU_SYSFS_ROOT`; an empty
    /// value keeps the default). `false`: `key` is not one of them.
    pub fn set_from_env(&mut self, key: &str, value: &str) -> bool {
        match key {
            "VGPU_MEDIATOR" if !value.is_empty() => self.env = Some(value.to_owned()),
            "VGPU_CLIENT_CONFIG" if !value.is_empty() => self.client_file = value.into(),
            "VGPU_SYSFS_ROOT" if !value.is_empty() => self.sysfs_root = value.into(),
            "VGPU_MEDIATOR" | "VGPU_CLIENT_CONFIG" | "VGPU_SYSFS_ROOT" => {}
            _ => return false,
        }
        true
    }
}

/// Runs the search (see the module header). The client file is read here;
/// `cache` holds the BDF of an earlier scan, which is reused only while its
/// ids still match.
pub fn find(settings: &Settings, cache: &PciCache) -> Result<Found, DiscoveryError> {
    let file = if settings.env.is_some() {
        None
    } else {
        read_client_file(&settings.client_file)?
    };
    decide(settings, file.as_ref(), cache)
}

/// [`find`] with the client file already read.
pub fn decide(
    settings: &Settings,
    file: Option<&ClientFile>,
    cache: &PciCache,
) -> Result<Found, DiscoveryError> {
    let parse = |text: &str, source: Source| {
        Target::parse(text)
            .map(|target| Found {
                target,
                source: source.clone(),
            })
            .ok_or_else(|| DiscoveryError::BadAddress {
                text: text.to_owned(),
                from: source,
            })
    };
    if let Some(env) = &settings.env {
        return parse(env, Source::Env);
    }
    if let Some(m) = file.and_then(|f| f.mediator.as_deref()) {
        return parse(m, Source::File(settings.client_file.clone()));
    }
    let ids = file.map(|f| f.pci).unwrap_or_default();
    let sysfs = &settings.sysfs_root;
    let bdf = match cache.get() {
        Some(b) if pci_matches(sysfs, b, &ids) => Some(b),
        _ => scan_pci(sysfs, &ids),
    };
    cache.set(bdf);
    if let Some(bdf) = bdf {
        return Ok(Found {
            target: Target::Pci(bdf),
            source: Source::PciScan(sysfs.clone()),
        });
    }
    Ok(Found {
        target: Target::Unix(DEFAULT_SOCKET.into()),
        source: Source::Default,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn settings(root: &Path) -> Settings {
        Settings {
            env: None,
            client_file: root.join("client.toml"),
            sysfs_root: root.join("sys"),
        }
    }

    /// Adds a fake PCI device. Its `resource0` is a FIFO: opening it would
    /// block, so a scan that touched it would hang the test.
    fn device(root: &Path, bdf: &str, vendor: &str, device: &str, class: &str) {
        let dev = root.join("sys/devices/pci0000:00").join(bdf);
        fs::create_dir_all(&dev).expect("mkdir");
        fs::write(dev.join("vendor"), format!("{vendor}\n")).expect("vendor");
        fs::write(dev.join("device"), format!("{device}\n")).expect("device");
        fs::write(dev.join("class"), format!("{class}\n")).expect("class");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dev.join("resource0"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");
        let links = root.join("sys/bus/pci/devices");
        fs::create_dir_all(&links).expect("mkdir");
        std::os::unix::fs::symlink(&dev, links.join(bdf)).expect("link");
    }

    fn tree() -> tempfile::TempDir {
        let t = tempfile::tempdir().expect("tempdir");
        device(t.path(), "0000:00:01.0", "0x8086", "0x1237", "0x060000");
        device(t.path(), "0000:00:03.0", "0x1af4", "0x1000", "0x020000");
        t
    }

    #[test]
    fn parses_every_address_form() {
        assert_eq!(
            Target::parse("unix:/run/x.sock"),
            Some(Target::Unix("/run/x.sock".into()))
        );
        assert_eq!(
            Target::parse("/run/x.sock"),
            Some(Target::Unix("/run/x.sock".into()))
        );
        assert_eq!(
            Target::parse("tcp://gpu-host.example:7011"),
            Some(Target::Tcp {
                host: "gpu-host.example".into(),
                port: 7011
            })
        );
        assert_eq!(
            Target::parse("tcp://[::1]:7011"),
            Some(Target::Tcp {
                host: "::1".into(),
                port: 7011
            })
        );
        let bdf = Bdf {
            domain: 0,
            bus: 0,
            device: 5,
            function: 0,
        };
        assert_eq!(Target::parse("pci:0000:00:05.0"), Some(Target::Pci(bdf)));
        assert_eq!(Target::parse("pci:00:05.0"), Some(Target::Pci(bdf)));
        assert_eq!(
            Target::parse("tcp://10.0.0.7:7011/"),
            Some(Target::Tcp {
                host: "10.0.0.7".into(),
                port: 7011
            }),
            "a trailing slash is allowed"
        );
        assert_eq!(
            Target::parse("tls://gpu-host.example:7443/"),
            Some(Target::Tls {
                host: "gpu-host.example".into(),
                port: 7443
            })
        );
        assert_eq!(
            Target::parse("tls://[::1]:7443").map(|t| t.to_string()),
            Some("tls://[::1]:7443".to_owned()),
            "round trip"
        );
        assert_eq!(Target::parse("tls://host:0"), None);
        assert_eq!(
            Target::parse("tcp://[fe80::1]:65535"),
            Some(Target::Tcp {
                host: "fe80::1".into(),
                port: 65535
            })
        );
        for bad in [
            "",
            "unix:",
            "tcp://::1:7011",
            "tcp://[::1]",
            "tcp://[::1:7011",
            "tcp://h_st:1",
            "tcp://h:-1",
            "tcp://host",
            "tcp://host:0",
            "tcp://host:99999",
            "tcp://:80",
            "tcp://[nope]:80",
            "pci:00:20.0",
            "pci:00:05.8",
            "pci:zz:05.0",
            "pci:",
            "http://x:1",
            "mediator.sock",
        ] {
            assert_eq!(Target::parse(bad), None, "{bad:?}");
        }
        for s in [
            "unix:/a/b",
            "tcp://h:1",
            "tcp://[::1]:2",
            "pci:0001:02:1f.7",
        ] {
            assert_eq!(Target::parse(s).expect("parses").to_string(), s);
        }
    }

    #[test]
    fn only_unix_addresses_have_a_socket_path() {
        let found = |s: &str| Found {
            target: Target::parse(s).expect("parses"),
            source: Source::Env,
        };
        assert!(found("unix:/x").unix_path().is_ok());
        for other in ["tcp://h:1", "pci:00:05.0"] {
            let e = found(other).unix_path().expect_err(other).to_string();
            assert!(e.contains("is not a Unix socket"), "{e}");
        }
    }

    #[test]
    fn client_file_keys() {
        let f = parse_client_file(
            "mediator = \"tcp://h:9\"\npci_vendor = 0x1234\npci_device = \"0x5678\"\npci_class = 0x058000\n",
        )
        .expect("parses");
        assert_eq!(f.mediator.as_deref(), Some("tcp://h:9"));
        assert_eq!(
            f.pci,
            PciIds {
                vendor: 0x1234,
                device: 0x5678,
                class: 0x05_80_00
            }
        );
        assert_eq!(parse_client_file("").expect("empty"), ClientFile::default());
        for bad in [
            "mediatr = \"x\"",
            "mediator = 3",
            "pci_vendor = 0x10000",
            "pci_device = \"12\"",
            "= =",
        ] {
            assert!(parse_client_file(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn order_env_file_pci_default() {
        let t = tree();
        let mut s = settings(t.path());
        let cache = PciCache::default();
        // Nothing: the default socket.
        let f = find(&s, &cache).expect("found");
        assert_eq!(f.source, Source::Default);
        assert_eq!(f.target, Target::Unix(DEFAULT_SOCKET.into()));
        // An ivshmem device appears.
        device(t.path(), "0000:00:05.0", "0x1af4", "0x1110", "0x050000");
        let f = find(&s, &cache).expect("found");
        assert_eq!(f.target, Target::parse("pci:0000:00:05.0").expect("bdf"));
        assert_eq!(f.source, Source::PciScan(t.path().join("sys")));
        // The file wins over the scan.
        fs::write(&s.client_file, "mediator = \"unix:/f.sock\"\n").expect("write");
        let f = find(&s, &cache).expect("found");
        assert_eq!(
            (f.target, f.source),
            (
                Target::Unix("/f.sock".into()),
                Source::File(s.client_file.clone())
            )
        );
        // The variable wins over everything, even a broken file.
        fs::write(&s.client_file, "broken = = =").expect("write");
        s.env = Some("unix:/e.sock".into());
        let f = find(&s, &cache).expect("found");
        assert_eq!(
            (f.target, f.source),
            (Target::Unix("/e.sock".into()), Source::Env)
        );
        // Without the variable the broken file is an error that names it.
        s.env = None;
        let e = find(&s, &cache).expect_err("broken file").to_string();
        assert!(e.contains("client.toml"), "{e}");
        // A bad variable is an error that names it.
        s.env = Some("tcp://nohost".into());
        let e = find(&s, &cache).expect_err("bad address").to_string();
        assert!(e.contains("VGPU_MEDIATOR"), "{e}");
    }

    #[test]
    fn ids_come_from_the_file() {
        let t = tree();
        let s = settings(t.path());
        fs::write(
            &s.client_file,
            "pci_vendor = 0x1af4\npci_device = 0x1000\npci_class = 0x020000\n",
        )
        .expect("write");
        let f = find(&s, &PciCache::default()).expect("found");
        assert_eq!(f.target, Target::parse("pci:0000:00:03.0").expect("bdf"));
        // Class is compared too (base and sub class).
        fs::write(&s.client_file, "pci_vendor = 0x1af4\npci_device = 0x1000\n").expect("write");
        let f = find(&s, &PciCache::default()).expect("found");
        assert_eq!(f.source, Source::Default);
    }

    #[test]
    fn cached_bdf_is_rechecked() {
        let t = tree();
        let s = settings(t.path());
        device(t.path(), "0000:00:07.0", "0x1af4", "0x1110", "0x050000");
        let cache = PciCache::default();
        let first = find(&s, &cache).expect("found");
        assert_eq!(cache.get(), Bdf::parse("0000:00:07.0"));
        // A device that sorts earlier appears: the cached one is still used.
        device(t.path(), "0000:00:06.0", "0x1af4", "0x1110", "0x050000");
        assert_eq!(find(&s, &cache).expect("found"), first);
        // The cached slot now holds another device: it is scanned again.
        let dev = t.path().join("sys/devices/pci0000:00/0000:00:07.0");
        fs::write(dev.join("device"), "0x1000\n").expect("write");
        let again = find(&s, &cache).expect("found");
        assert_eq!(
            again.target,
            Target::parse("pci:0000:00:06.0").expect("bdf")
        );
        assert_eq!(cache.get(), Bdf::parse("0000:00:06.0"));
        // Gone entirely: the default socket, and the cache is cleared.
        fs::remove_dir_all(t.path().join("sys")).expect("rm");
        assert_eq!(find(&s, &cache).expect("found").source, Source::Default);
        assert_eq!(cache.get(), None);
    }

    #[test]
    fn scan_reads_no_resource_file() {
        let t = tree();
        device(t.path(), "0000:00:05.0", "0x1af4", "0x1110", "0x050000");
        let root = t.path().join("sys");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(scan_pci(&root, &PciIds::default()));
        });
        // Every device has a FIFO `resource0`; opening one would block.
        let found = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the scan finished without opening resource0");
        assert_eq!(found, Bdf::parse("0000:00:05.0"));
    }

    #[test]
    fn unreadable_file_is_an_error_missing_file_is_not() {
        let t = tempfile::tempdir().expect("tempdir");
        assert_eq!(
            read_client_file(&t.path().join("none.toml")).expect("ok"),
            None
        );
        // A folder where the file should be cannot be read.
        assert!(read_client_file(t.path()).is_err());
    }
}
