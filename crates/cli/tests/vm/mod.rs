//! Boots a real, minimal Linux guest under QEMU and runs programs in it.
//!
//! A test describes the guest with a [`GuestSpec`]: host files to copy in
//! (an ELF file brings its shared libraries along), shell commands to run,
//! kernel modules to load first, devices (ivshmem, [`Device`]) and extra
//! QEMU arguments. [`Guest::boot`] runs the guest to its end and returns a
//! [`GuestRun`]: the serial console's text and the commands' exit status.
//! [`Guest::start`] returns the running guest instead, for tests that watch
//! its output, run something beside it, or kill it; dropping a [`Guest`]
//! kills QEMU.
//!
//! The guest:
//! - kernel: Debian's `linux-image-cloud-amd64`. PCI and its sysfs
//!   `resource*` files, the 8250 serial console, devtmpfs, eventfd and
//!   ACPI power-off are built in, so the guest needs no module; `uio`,
//!   `uio_pci_generic` and `vfio-pci` are modules ([`GuestSpec::modules`]);
//! - root file system: an initramfs built by the test ([`initramfs`]):
//!   busybox, `/init`, the given files and their libraries;
//! - `/init` mounts proc, sysfs, devtmpfs and a tmpfs on `/dev/shm`, loads
//!   the modules, prints [`READY`], runs the commands with `sh -e` (the
//!   first failing command ends them), prints [`EXIT`] and the status, and
//!   powers the machine off;
//! - QEMU: `-nodefaults -nographic -no-reboot`, the serial console on
//!   QEMU's stdout, KVM (`-cpu host`) where a guest starts under it, TCG
//!   otherwise (see [`Accel::pick`]; `VGPU_VM_ACCEL=kvm|tcg` decides
//!   instead), and a hard deadline.
//!
//! The kernel and busybox come from `scripts/vm-assets`, unpacked into
//! `<target dir>/vm-cache` (`VGPU_VM_CACHE` overrides it). `.ci/run` fetches
//! them; a test fetches them itself when they are missing. [`qemu`] finds
//! QEMU, or says why a test skips: only where QEMU is not installed and the
//! run is not CI (`CI` unset); CI installs it, so there its absence fails.

#![allow(dead_code)] // each test binary uses its own part of the harness

pub mod host;
pub mod initramfs;
pub mod ivshmem_server;

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

pub use host::{qemu, Accel, Assets};

/// Printed by `/init` once the file systems are mounted and the modules
/// loaded, just before the commands run.
pub const READY: &str = "VGPU-GUEST-READY";
/// Printed by `/init` after the commands, followed by their exit status.
pub const EXIT: &str = "VGPU-GUEST-EXIT ";

/// The repository's root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// An ivshmem PCI device (vendor 0x1af4, device 0x1110) given to the guest.
#[derive(Debug, Clone)]
pub enum Device {
    /// `ivshmem-plain`: BAR2 is the host file `mem_path` (`size` bytes, a
    /// power of two: QEMU aborts on any other BAR size), shared with the
    /// host.
    IvshmemPlain { mem_path: PathBuf, size: u64 },
    /// `ivshmem-doorbell`: QEMU connects to the ivshmem server on
    /// `socket` at start-up and takes BAR2 and the eventfds from it;
    /// `vectors` interrupt vectors (BAR1 is the MSI-X table).
    IvshmemDoorbell { socket: PathBuf, vectors: u32 },
}

impl Device {
    /// The QEMU arguments of device number `index`.
    pub fn qemu_args(&self, index: usize) -> Vec<String> {
        match self {
            Device::IvshmemPlain { mem_path, size } => {
                assert!(
                    size.is_power_of_two(),
                    "BAR2 size {size} is not a power of two"
                );
                vec![
                    "-object".into(),
                    format!(
                        "memory-backend-file,id=vgpu-mem{index},share=on,mem-path={},size={size}",
                        qemu_escape(mem_path)
                    ),
                    "-device".into(),
                    format!("ivshmem-plain,memdev=vgpu-mem{index}"),
                ]
            }
            Device::IvshmemDoorbell { socket, vectors } => vec![
                "-chardev".into(),
                format!("socket,path={},id=vgpu{index}", qemu_escape(socket)),
                "-device".into(),
                format!("ivshmem-doorbell,chardev=vgpu{index},vectors={vectors}"),
            ],
        }
    }
}

/// A path inside a QEMU option value (a comma is written twice there).
fn qemu_escape(path: &Path) -> String {
    path.to_string_lossy().replace(',', ",,")
}

/// What to boot.
#[derive(Debug, Clone)]
pub struct GuestSpec {
    /// Host file → absolute guest path. An ELF file goes in without its
    /// debug sections (`strip --strip-debug`) and brings its libraries.
    pub files: Vec<(PathBuf, String)>,
    /// Shell commands run in order by `sh -e` as root, after [`READY`];
    /// their exit status is [`GuestRun::exit_status`].
    pub init_commands: Vec<String>,
    /// Kernel modules loaded (insmod) in this order before the commands,
    /// dependencies first, e.g. `["uio", "uio_pci_generic"]`.
    pub modules: Vec<String>,
    pub devices: Vec<Device>,
    /// Added to QEMU's command line as they are, before the devices.
    pub qemu_extra_args: Vec<OsString>,
    pub memory_mib: u32,
    pub cpus: u32,
    /// From QEMU's start to its end; QEMU is killed after it.
    pub timeout: Duration,
}

impl Default for GuestSpec {
    fn default() -> GuestSpec {
        GuestSpec {
            files: Vec::new(),
            init_commands: Vec::new(),
            modules: Vec::new(),
            devices: Vec::new(),
            qemu_extra_args: Vec::new(),
            memory_mib: 512,
            cpus: 1,
            timeout: Duration::from_secs(120),
        }
    }
}

/// A finished guest.
#[derive(Debug)]
pub struct GuestRun {
    /// The serial console (kernel messages and the commands' output),
    /// without carriage returns.
    pub serial_output: String,
    /// QEMU's own stderr (device errors show here).
    pub qemu_stderr: String,
    /// The status the commands exited with; `None` when the guest never
    /// got there (a panic, a hang killed at the deadline).
    pub exit_status: Option<i32>,
    /// From QEMU's start to [`READY`] on the console.
    pub boot_time: Option<Duration>,
    /// From QEMU's start to its end.
    pub elapsed: Duration,
    pub timed_out: bool,
    pub accel: Accel,
}

impl GuestRun {
    /// Panics with the whole console unless the commands exited 0.
    #[track_caller]
    pub fn assert_success(&self) -> &GuestRun {
        assert!(
            self.exit_status == Some(0),
            "the guest's commands did not succeed (exit status {:?}):\n{self}",
            self.exit_status
        );
        self
    }

    /// Panics unless the console has a line equal to `line` (trimmed).
    #[track_caller]
    pub fn assert_line(&self, line: &str) -> &GuestRun {
        assert!(
            self.serial_output.lines().any(|l| l.trim() == line),
            "no line {line:?} on the guest's console:\n{self}"
        );
        self
    }

    /// The rest of the first console line that starts with `prefix`.
    pub fn value(&self, prefix: &str) -> Option<&str> {
        self.serial_output
            .lines()
            .find_map(|l| l.trim().strip_prefix(prefix))
            .map(str::trim)
    }
}

impl std::fmt::Display for GuestRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--- serial console ---\n{}--- qemu stderr ---\n{}--- ({:?}, boot {:?}, total {:?}{}) ---",
            self.serial_output,
            self.qemu_stderr,
            self.accel,
            self.boot_time,
            self.elapsed,
            if self.timed_out { ", timed out" } else { "" }
        )
    }
}

/// A running guest; dropping it kills QEMU.
pub struct Guest {
    child: Child,
    /// Keeps the initramfs until QEMU has read it.
    _dir: tempfile::TempDir,
    lines: Receiver<String>,
    serial: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    ready_at: Arc<Mutex<Option<Instant>>>,
    readers: Vec<JoinHandle<()>>,
    started: Instant,
    deadline: Instant,
    accel: Accel,
}

impl Guest {
    /// Boots the guest and waits for its end (or its deadline).
    pub fn boot(qemu: &Path, spec: &GuestSpec) -> GuestRun {
        Guest::start(qemu, spec).finish()
    }

    /// Builds the initramfs and starts QEMU; returns at once.
    pub fn start(qemu: &Path, spec: &GuestSpec) -> Guest {
        let assets = Assets::get();
        let dir = tempfile::Builder::new()
            .prefix("vgpu-vm")
            .tempdir()
            .expect("temp dir for the guest");
        let initrd = dir.path().join("initramfs.cpio");
        initramfs::for_guest(&assets, spec, dir.path())
            .write(&initrd)
            .expect("write the initramfs");
        let accel = Accel::pick(qemu, &assets);
        let mut cmd = Command::new(qemu);
        cmd.args(["-nodefaults", "-no-user-config", "-nographic", "-no-reboot"])
            .args(accel.qemu_args())
            .args(["-m", &spec.memory_mib.to_string()])
            .args(["-smp", &spec.cpus.to_string()])
            .arg("-kernel")
            .arg(&assets.kernel)
            .arg("-initrd")
            .arg(&initrd)
            .args([
                "-append",
                "console=ttyS0 quiet panic=-1 rdinit=/init",
                "-serial",
                "stdio",
            ]);
        // The extra arguments go first: a virtual IOMMU (`-device
        // intel-iommu`) must exist before the PCI devices it translates.
        cmd.args(&spec.qemu_extra_args);
        for (i, d) in spec.devices.iter().enumerate() {
            cmd.args(d.qemu_args(i));
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", qemu.display()));
        let serial = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let ready_at = Arc::new(Mutex::new(None));
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().expect("piped stdout");
        let mut err = child.stderr.take().expect("piped stderr");
        let (s, r) = (serial.clone(), ready_at.clone());
        let e = stderr.clone();
        let readers = vec![
            thread::spawn(move || {
                for line in BufReader::new(out).split(b'\n') {
                    let Ok(line) = line else { break };
                    let line = String::from_utf8_lossy(&line).replace('\r', "");
                    if line.contains(READY) {
                        r.lock()
                            .expect("ready lock")
                            .get_or_insert_with(Instant::now);
                    }
                    let mut text = s.lock().expect("serial lock");
                    text.push_str(&line);
                    text.push('\n');
                    drop(text);
                    let _ = tx.send(line);
                }
            }),
            thread::spawn(move || {
                let mut buf = String::new();
                let _ = err.read_to_string(&mut buf);
                *e.lock().expect("stderr lock") = buf;
            }),
        ];
        Guest {
            child,
            _dir: dir,
            lines,
            serial,
            stderr,
            ready_at,
            readers,
            started,
            deadline: started + spec.timeout,
            accel,
        }
    }

    /// Waits for a console line that contains `text` and returns it;
    /// panics (with the console) when the guest ends or `timeout` passes
    /// first.
    #[track_caller]
    pub fn wait_for(&mut self, text: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(text) => return line,
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    self.kill();
                    panic!(
                        "no console line with {text:?} within {timeout:?}:\n{}",
                        self.serial.lock().expect("serial lock")
                    );
                }
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "the guest ended before a console line with {text:?}:\n{}",
                    self.serial.lock().expect("serial lock")
                ),
            }
        }
    }

    /// SIGKILLs QEMU (as a crash or `kill -9` of the VM would end it).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for QEMU to exit, killing it at the spec's deadline.
    pub fn finish(mut self) -> GuestRun {
        let timed_out = loop {
            if self.child.try_wait().expect("wait for qemu").is_some() {
                break false;
            }
            if Instant::now() >= self.deadline {
                self.kill();
                break true;
            }
            thread::sleep(Duration::from_millis(10));
        };
        let elapsed = self.started.elapsed();
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        let serial_output = self.serial.lock().expect("serial lock").clone();
        let exit_status = serial_output
            .lines()
            .filter_map(|l| l.split_once(EXIT).map(|(_, s)| s.trim()))
            .filter_map(|s| s.parse().ok())
            .next_back();
        let boot_time = (*self.ready_at.lock().expect("ready lock")).map(|t| t - self.started);
        GuestRun {
            serial_output,
            qemu_stderr: self.stderr.lock().expect("stderr lock").clone(),
            exit_status,
            boot_time,
            elapsed,
            timed_out,
            accel: self.accel,
        }
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill();
        }
    }
}

/// Compiles the C program `source` into `out_dir` with the flags of the
/// other C clients and returns the executable.
pub fn compile_c(source: &Path, out_dir: &Path) -> PathBuf {
    let stem = source.file_stem().expect("a C file name");
    let exe = out_dir.join(stem);
    let out = Command::new("cc")
        .args([
            "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread", "-o",
        ])
        .arg(&exe)
        .arg(source)
        .arg("-ldl")
        .output()
        .expect("run cc (CI installs gcc)");
    assert!(
        out.status.success(),
        "cc {} failed:\n{}",
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}
