//! The mediator file (`/etc/vgpu/mediator.toml`, `--config FILE`): every
//! key, parsed with serde into [`File`] and checked before anything starts.
//!
//! Keys are documented in `packaging/mediator.toml` and `docs/config.md`.
//! An unknown key, a value of the wrong type or a value that does not make
//! sense (a memory limit of "lots", a token digest that is not 64 hex
//! digits) is an error that names the file, the line and the key
//! ([`FileError`]); the mediator then does not start.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

/// Where the mediator looks for its file when `--config` is not given; a
/// missing default file is not an error.
pub const DEFAULT_PATH: &str = "/etc/vgpu/mediator.toml";

/// Everything the mediator file can say. The top-level scalar keys are the
/// mediator's flags of the same name (`lane_ports` is `--lane-ports`); a
/// flag given on the command line wins over the file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    pub listen: Option<OneOrMany>,
    pub lane_ports: Option<Spanned<String>>,
    pub driver: Option<Spanned<String>>,
    pub sim_lib: Option<PathBuf>,
    pub log: Option<PathBuf>,
    pub log_level: Option<String>,
    pub ipc_dir: Option<PathBuf>,
    pub metrics: Option<Spanned<String>>,
    pub ivshmem_mib: Option<Spanned<usize>>,
    /// Plain `tcp://` listeners off loopback are refused unless this is set.
    #[serde(default)]
    pub insecure_tcp: bool,
    /// `--tokens`: a file of `NAME SHA256HEX` bearer tokens (beside the
    /// tenants' own `tokens`).
    pub tokens: Option<PathBuf>,
    pub tls: Option<Tls>,
    #[serde(default)]
    pub unix: Unix,
    #[serde(default)]
    pub limits: Limits,
    /// `[mps]`: how MPS groups' control daemons are run (tenants name
    /// their group with `mps_group`).
    #[serde(default)]
    pub mps: Mps,
    /// `[[tenant]]` tables, in order: the first that names a client wins.
    #[serde(default, rename = "tenant")]
    pub tenants: Vec<Tenant>,
}

/// `listen = "ADDR"` or `listen = ["ADDR", …]`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub fn to_vec(&self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// `[tls]`: the server's certificate and key (both or neither), and the CA
/// that signs client certificates (mutual TLS; optional, needs both).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tls {
    pub cert: Option<Spanned<PathBuf>>,
    pub key: Option<Spanned<PathBuf>>,
    pub client_ca: Option<Spanned<PathBuf>>,
}

/// A group by name (`"vgpu"`) or number (`1001`).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum GroupRef {
    Id(u32),
    Name(String),
}

/// `[unix]`: the Unix sockets' file mode and group, and who may connect.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unix {
    /// Octal, e.g. `"0660"`.
    pub mode: Option<Spanned<String>>,
    pub group: Option<Spanned<GroupRef>>,
    #[serde(default)]
    pub allow_uids: Vec<u32>,
    #[serde(default)]
    pub allow_groups: Vec<Spanned<GroupRef>>,
}

/// `[limits]`: admission limits (read by the supervisor's admission code).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    pub max_pending_handshakes: Option<u32>,
    pub handshake_timeout_ms: Option<u64>,
    pub max_workers: Option<u32>,
    pub frame_timeout_ms: Option<u64>,
    pub worker_user: Option<String>,
}

/// `[mps]`: the MPS control program and where the groups' pipe and log
/// folders go ([`crate::mps`]).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mps {
    /// `nvidia-cuda-mps-control`, found on `PATH` when not given.
    pub control: Option<Spanned<PathBuf>>,
    /// Default `/run/vgpu/mps` (root) or `$XDG_RUNTIME_DIR/vgpu/mps`.
    pub dir: Option<Spanned<PathBuf>>,
}

/// A bearer token: its name (what logs and the session table show) and the
/// SHA-256 of its secret, in hex.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Token {
    pub name: String,
    pub sha256: Spanned<String>,
}

/// A device by index (`0`) or UUID (`"GPU-…"`), as `CUDA_VISIBLE_DEVICES`
/// names devices.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum DeviceRef {
    Index(u32),
    Uuid(String),
}

impl std::fmt::Display for DeviceRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceRef::Index(i) => write!(f, "{i}"),
            DeviceRef::Uuid(u) => f.write_str(u),
        }
    }
}

/// A size: bytes as an integer, or a string with a unit (`"8GiB"`).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum SizeText {
    Bytes(u64),
    Text(String),
}

/// `[[tenant]]`: who the tenant is, and what it may use.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tenant {
    pub name: Spanned<String>,
    #[serde(default)]
    pub uids: Vec<u32>,
    #[serde(default)]
    pub groups: Vec<Spanned<GroupRef>>,
    #[serde(default)]
    pub tokens: Vec<Token>,
    #[serde(default)]
    pub cert_names: Vec<String>,
    pub memory_limit: Option<Spanned<SizeText>>,
    pub max_sessions: Option<u32>,
    pub devices: Option<Vec<DeviceRef>>,
    pub weight: Option<Spanned<u32>>,
    /// The MPS group whose server runs this tenant's kernels; tenants
    /// without one get a context of their own per session.
    pub mps_group: Option<Spanned<String>>,
    /// `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE` of its sessions, 1 to 100.
    pub mps_active_thread_percentage: Option<Spanned<u32>>,
    /// `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT` of its sessions, on every device.
    pub mps_pinned_memory_limit: Option<Spanned<SizeText>>,
}

/// A mediator file that cannot be used: where, which key, and why.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{file}:{line}: {key}: {message}")]
pub struct FileError {
    pub file: PathBuf,
    /// 1-based; 0 when the whole file is at fault (it cannot be read).
    pub line: usize,
    /// The key as written, with its table (`[unix] mode`), or `-`.
    pub key: String,
    pub message: String,
}

/// Reads the mediator file: `explicit` (an error if it is missing), else
/// [`DEFAULT_PATH`] when it exists; `Ok(None)` when there is no file.
pub fn load(explicit: Option<&Path>) -> Result<Option<(PathBuf, File)>, FileError> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None if Path::new(DEFAULT_PATH).exists() => PathBuf::from(DEFAULT_PATH),
        None => return Ok(None),
    };
    let text = std::fs::read_to_string(&path).map_err(|e| FileError {
        file: path.clone(),
        line: 0,
        key: "-".into(),
        message: format!("cannot read it: {e}"),
    })?;
    parse(&path, &text).map(|f| Some((path, f)))
}

/// Parses and checks the text of the file at `path`.
pub fn parse(path: &Path, text: &str) -> Result<File, FileError> {
    let file: File = toml::from_str(text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        error_at(path, text, at, e.message().trim())
    })?;
    check(&file).map_err(|(at, message)| error_at(path, text, at, &message))?;
    Ok(file)
}

impl File {
    /// Sets each flag of `args` that the command line did not give
    /// (`given(id)` is false for it) from the file's key of the same name.
    /// The values were checked by [`parse`].
    pub fn apply(&self, args: &mut crate::config::ServeArgs, given: impl Fn(&str) -> bool) {
        let take = |id: &str| !given(id);
        if let Some(l) = self.listen.as_ref().filter(|_| take("listen")) {
            args.listen = l.to_vec();
        }
        if let Some(p) = self.lane_ports.as_ref().filter(|_| take("lane_ports")) {
            args.lane_ports = p.get_ref().parse().ok();
        }
        if let Some(d) = self.driver.as_ref().filter(|_| take("driver")) {
            if let Ok(d) = d.get_ref().parse() {
                args.driver = d;
            }
        }
        if let Some(p) = self.sim_lib.as_ref().filter(|_| take("sim_lib")) {
            args.sim_lib = Some(p.clone());
        }
        if let Some(p) = self.log.as_ref().filter(|_| take("log")) {
            args.log = Some(p.clone());
        }
        if let Some(l) = self.log_level.as_ref().filter(|_| take("log_level")) {
            args.log_level = l.clone();
        }
        if let Some(p) = self.ipc_dir.as_ref().filter(|_| take("ipc_dir")) {
            args.ipc_dir = Some(p.clone());
        }
        if let Some(m) = self.metrics.as_ref().filter(|_| take("metrics")) {
            args.metrics = m.get_ref().parse().ok();
        }
        if let Some(n) = self.ivshmem_mib.as_ref().filter(|_| take("ivshmem_mib")) {
            args.ivshmem_mib = *n.get_ref();
        }
        let l = &self.limits;
        let limits = &mut args.limits;
        if let Some(n) = l
            .max_pending_handshakes
            .filter(|_| take("max_pending_handshakes"))
        {
            limits.max_pending_handshakes = n;
        }
        if let Some(n) = l
            .handshake_timeout_ms
            .filter(|_| take("handshake_timeout_ms"))
        {
            limits.handshake_timeout_ms = n;
        }
        if let Some(n) = l.max_workers.filter(|_| take("max_workers")) {
            limits.max_workers = n;
        }
        if let Some(n) = l.frame_timeout_ms.filter(|_| take("frame_timeout_ms")) {
            limits.frame_timeout_ms = n;
        }
        if let Some(u) = l.worker_user.as_ref().filter(|_| take("worker_user")) {
            limits.worker_user = Some(u.clone());
        }
        if self.insecure_tcp && take("insecure_tcp") {
            args.insecure_tcp = true;
        }
        if let Some(p) = self.tokens.as_ref().filter(|_| take("tokens")) {
            args.tokens = Some(p.clone());
        }
        if let Some(tls) = &self.tls {
            let path = |p: &Option<Spanned<PathBuf>>| p.as_ref().map(|p| p.get_ref().clone());
            if take("tls_cert") {
                args.tls_cert = args.tls_cert.take().or_else(|| path(&tls.cert));
            }
            if take("tls_key") {
                args.tls_key = args.tls_key.take().or_else(|| path(&tls.key));
            }
            if take("tls_client_ca") {
                args.tls_client_ca = args.tls_client_ca.take().or_else(|| path(&tls.client_ca));
            }
        }
    }
}

/// A [`FileError`] for byte offset `at` of `text`.
fn error_at(path: &Path, text: &str, at: usize, message: &str) -> FileError {
    let at = at.min(text.len());
    let line = text[..at].matches('\n').count() + 1;
    FileError {
        file: path.to_path_buf(),
        line,
        key: key_at(text, line),
        message: message.to_owned(),
    }
}

/// The key written on line `line` (1-based), with the table it is in.
fn key_at(text: &str, line: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let here = lines.get(line.saturating_sub(1)).copied().unwrap_or("");
    let table = lines[..line.saturating_sub(1).min(lines.len())]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| l.starts_with('['))
        .map(|l| format!("{l} "))
        .unwrap_or_default();
    match here.split_once('=') {
        Some((key, _)) if !here.trim_start().starts_with('[') => {
            format!("{table}{}", key.trim())
        }
        _ if here.trim_start().starts_with('[') => here.trim().to_owned(),
        _ => format!("{table}-").trim().to_owned(),
    }
}

/// A value that parsed but makes no sense: its offset and what is wrong.
type Bad = (usize, String);

fn at<T>(s: &Spanned<T>, message: impl Into<String>) -> Bad {
    (s.span().start, message.into())
}

/// Checks what serde cannot: sizes, modes, digests, names, flags' values.
fn check(f: &File) -> Result<(), Bad> {
    if let Some(p) = &f.lane_ports {
        p.get_ref()
            .parse::<crate::config::PortRange>()
            .map_err(|e| at(p, e))?;
    }
    if let Some(d) = &f.driver {
        d.get_ref()
            .parse::<crate::config::DriverChoice>()
            .map_err(|e| at(d, e))?;
    }
    if let Some(m) = &f.metrics {
        m.get_ref()
            .parse::<std::net::SocketAddr>()
            .map_err(|e| at(m, format!("{:?}: {e} (ADDR:PORT)", m.get_ref())))?;
    }
    if let Some(n) = &f.ivshmem_mib {
        crate::config::parse_ivshmem_mib(&n.get_ref().to_string()).map_err(|e| at(n, e))?;
    }
    if let Some(m) = &f.unix.mode {
        parse_mode(m.get_ref()).map_err(|e| at(m, e))?;
    }
    if let Some(tls) = &f.tls {
        match (&tls.cert, &tls.key, &tls.client_ca) {
            (Some(c), None, _) => return Err(at(c, "a certificate needs its key (key = …)")),
            (None, Some(k), _) => return Err(at(k, "a key needs its certificate (cert = …)")),
            (None, None, Some(ca)) => {
                return Err(at(ca, "client certificates need the server's cert and key"))
            }
            _ => {}
        }
    }
    let groups = f.unix.group.iter().chain(&f.unix.allow_groups);
    for g in groups.chain(f.tenants.iter().flat_map(|t| &t.groups)) {
        super::unix::gid(g.get_ref()).map_err(|e| at(g, e))?;
    }
    let mut names = std::collections::HashSet::new();
    for t in &f.tenants {
        let name = t.name.get_ref();
        if name.is_empty() || name.len() > 32 || !name.chars().all(is_name_char) {
            return Err(at(
                &t.name,
                format!("{name:?}: 1 to 32 letters, digits, '-', '_' or '.'"),
            ));
        }
        if !names.insert(name.as_str()) {
            return Err(at(&t.name, format!("a second tenant named {name:?}")));
        }
        if let Some(limit) = &t.memory_limit {
            parse_size(limit.get_ref()).map_err(|e| at(limit, e))?;
        }
        if let Some(w) = &t.weight {
            if !(1..=1000).contains(w.get_ref()) {
                return Err(at(w, "a weight from 1 to 1000"));
            }
        }
        for token in &t.tokens {
            parse_digest(token.sha256.get_ref()).map_err(|e| at(&token.sha256, e))?;
        }
        check_mps(t)?;
    }
    Ok(())
}

/// A tenant's MPS keys: a group named like a tenant, and the per-session
/// settings only with a group.
fn check_mps(t: &Tenant) -> Result<(), Bad> {
    match &t.mps_group {
        Some(g) => {
            let name = g.get_ref();
            if name.is_empty() || name.len() > 32 || !name.chars().all(is_name_char) {
                return Err(at(
                    g,
                    format!("{name:?}: 1 to 32 letters, digits, '-', '_' or '.'"),
                ));
            }
        }
        None => {
            if let Some(p) = &t.mps_active_thread_percentage {
                return Err(at(p, "needs mps_group: the setting is of an MPS client"));
            }
            if let Some(l) = &t.mps_pinned_memory_limit {
                return Err(at(l, "needs mps_group: the setting is of an MPS client"));
            }
        }
    }
    if let Some(p) = &t.mps_active_thread_percentage {
        if !(1..=100).contains(p.get_ref()) {
            return Err(at(p, "a percentage from 1 to 100"));
        }
    }
    if let Some(l) = &t.mps_pinned_memory_limit {
        let bytes = parse_size(l.get_ref()).map_err(|e| at(l, e))?;
        if bytes < 1 << 20 {
            return Err(at(l, "at least 1MiB (MPS counts in MiB)"));
        }
    }
    Ok(())
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// A file mode in octal (`"0660"`, `"660"`), permission bits only.
pub fn parse_mode(s: &str) -> Result<u32, String> {
    match u32::from_str_radix(s.trim_start_matches("0o"), 8) {
        Ok(m) if m <= 0o777 => Ok(m),
        _ => Err(format!("{s:?}: an octal file mode such as \"0660\"")),
    }
}

/// Bytes from an integer or a string with a unit: `B`, `KiB`, `MiB`, `GiB`,
/// `TiB` (powers of 1024) or `KB`, `MB`, `GB`, `TB` (powers of 1000).
pub fn parse_size(s: &SizeText) -> Result<u64, String> {
    let text = match s {
        SizeText::Bytes(n) => return Ok(*n),
        SizeText::Text(t) => t.trim(),
    };
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let scale: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        _ => 0,
    };
    digits
        .parse::<u64>()
        .ok()
        .filter(|_| scale != 0)
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| {
            format!("{text:?}: a size such as \"512MiB\", \"8GiB\" or a number of bytes")
        })
}

/// A SHA-256 digest written as 64 hex digits.
pub fn parse_digest(s: &str) -> Result<[u8; 32], String> {
    let bad = || {
        format!(
            "{} characters: the SHA-256 of the token as 64 hex digits",
            s.len()
        )
    };
    if s.len() != 64 || !s.is_ascii() {
        return Err(bad());
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> Result<File, FileError> {
        parse(Path::new("m.toml"), text)
    }

    #[test]
    fn every_key_parses() {
        let text = r#"
listen = ["unix:/run/vgpu/mediator.sock", "tls://0.0.0.0:7011"]
insecure_tcp = false
lane_ports = "40000-40010"
driver = "sim"
log_level = "info"
metrics = "127.0.0.1:9400"
ivshmem_mib = 64

[tls]
cert = "/etc/vgpu/cert.pem"
key = "/etc/vgpu/key.pem"
client_ca = "/etc/vgpu/ca.pem"

[unix]
mode = "0660"
group = "root"
allow_uids = [1000]
allow_groups = ["root", 44]

[limits]
max_pending_handshakes = 64
handshake_timeout_ms = 5000
max_workers = 256
worker_user = "vgpu-worker"

[mps]
control = "/usr/bin/nvidia-cuda-mps-control"
dir = "/run/vgpu/mps"

[[tenant]]
name = "alice"
uids = [1000]
groups = ["root", 7]
tokens = [{ name = "ci", sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" }]
cert_names = ["alice.example.com"]
memory_limit = "8GiB"
max_sessions = 4
devices = ["GPU-1234", 1]
weight = 3
mps_group = "shared"
mps_active_thread_percentage = 50
mps_pinned_memory_limit = "2GiB"

[[tenant]]
name = "bob"
memory_limit = 1048576
"#;
        let f = parse_text(text).expect("parses");
        assert_eq!(f.listen.expect("listen").to_vec().len(), 2);
        assert_eq!(f.unix.allow_uids, [1000]);
        assert_eq!(f.limits.max_workers, Some(256));
        assert!(f.tls.expect("tls").client_ca.is_some());
        assert_eq!(f.tenants.len(), 2);
        let a = &f.tenants[0];
        assert_eq!(
            a.devices.as_deref(),
            Some(&[DeviceRef::Uuid("GPU-1234".into()), DeviceRef::Index(1)][..])
        );
        let limit = a.memory_limit.as_ref().expect("limit").get_ref();
        assert_eq!(parse_size(limit), Ok(8 << 30));
        assert_eq!(
            parse_size(f.tenants[1].memory_limit.as_ref().expect("l").get_ref()),
            Ok(1 << 20)
        );
    }

    #[test]
    fn errors_name_the_line_and_the_key() {
        let e = parse_text("driver = \"sim\"\n\n[unix]\nmode = \"0660\"\nowner = 3\n")
            .expect_err("unknown key");
        assert_eq!((e.line, e.key.as_str()), (5, "[unix] owner"), "{e}");
        assert!(e.message.contains("owner"), "{e}");
        assert!(e.to_string().starts_with("m.toml:5: [unix] owner: "), "{e}");

        let e = parse_text("[[tenant]]\nname = \"a\"\nmax_sessions = \"x\"\n").expect_err("type");
        assert_eq!(
            (e.line, e.key.as_str()),
            (3, "[[tenant]] max_sessions"),
            "{e}"
        );

        let e =
            parse_text("[[tenant]]\nname = \"a\"\nmemory_limit = \"lots\"\n").expect_err("size");
        assert_eq!(
            (e.line, e.key.as_str()),
            (3, "[[tenant]] memory_limit"),
            "{e}"
        );

        let e = parse_text("[unix]\nmode = \"0999\"\n").expect_err("mode");
        assert_eq!((e.line, e.key.as_str()), (2, "[unix] mode"), "{e}");

        let bad_digest =
            "[[tenant]]\nname = \"a\"\ntokens = [{ name = \"t\", sha256 = \"abc\" }]\n";
        let e = parse_text(bad_digest).expect_err("digest");
        assert_eq!(e.line, 3, "{e}");

        let e =
            parse_text("[[tenant]]\nname = \"a\"\n[[tenant]]\nname = \"a\"\n").expect_err("twice");
        assert_eq!(e.line, 4, "{e}");
        let e = parse_text("[unix]\ngroup = \"no-such-group-vgpu\"\n").expect_err("group");
        assert_eq!((e.line, e.key.as_str()), (2, "[unix] group"), "{e}");
        let e = parse_text("[tls]\ncert = \"c.pem\"\n").expect_err("no key");
        assert_eq!((e.line, e.key.as_str()), (2, "[tls] cert"), "{e}");
        let e = parse_text("lane_ports = \"9-1\"\n").expect_err("ports");
        assert_eq!((e.line, e.key.as_str()), (1, "lane_ports"), "{e}");
        let e = parse_text("listen = [1]\n").expect_err("listen");
        assert_eq!(e.line, 1, "{e}");
        let e = parse_text("[[tenant]]\nname = \"a\"\nmps_active_thread_percentage = 20\n")
            .expect_err("percentage without a group");
        assert_eq!(
            (e.line, e.key.as_str()),
            (3, "[[tenant]] mps_active_thread_percentage"),
            "{e}"
        );
        assert!(e.message.contains("mps_group"), "{e}");
        let e = parse_text(
            "[[tenant]]\nname = \"a\"\nmps_group = \"g\"\nmps_active_thread_percentage = 0\n",
        )
        .expect_err("0%");
        assert_eq!(e.line, 4, "{e}");
        let e = parse_text("[[tenant]]\nname = \"a\"\nmps_group = \"../x\"\n").expect_err("name");
        assert_eq!((e.line, e.key.as_str()), (3, "[[tenant]] mps_group"), "{e}");
        let e = parse_text("[mps]\npipes = \"/x\"\n").expect_err("unknown key");
        assert_eq!((e.line, e.key.as_str()), (2, "[mps] pipes"), "{e}");
    }

    #[test]
    fn sizes_modes_and_digests() {
        let t = |s: &str| parse_size(&SizeText::Text(s.into()));
        assert_eq!(t("512MiB"), Ok(512 << 20));
        assert_eq!(t("2 GB"), Ok(2_000_000_000));
        assert_eq!(t("4096"), Ok(4096));
        for bad in ["", "GiB", "1.5GiB", "8 gib", "99999999999TiB"] {
            assert!(t(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_mode("0660"), Ok(0o660));
        assert_eq!(parse_mode("777"), Ok(0o777));
        assert!(parse_mode("1777").is_err());
        assert!(parse_digest(&"0".repeat(63)).is_err());
        assert!(parse_digest(&"g".repeat(64)).is_err());
        assert_eq!(parse_digest(&"ab".repeat(32)), Ok([0xab; 32]));
    }

    #[test]
    fn missing_files() {
        let e = load(Some(Path::new("/nonexistent/m.toml"))).expect_err("explicit");
        assert_eq!(e.line, 0);
        assert!(e.to_string().contains("/nonexistent/m.toml"), "{e}");
    }
}
