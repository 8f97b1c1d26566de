//! Tenants, end to end on the simulated device: real mediators started with
//! a mediator file (`--config`), real clients (this test binary re-executed
//! as a small client that takes commands on its standard input, some of
//! them under another uid), and the supervisor's and workers' decisions
//! checked from the clients' side: who is refused, the device-memory
//! limit shared by a tenant's sessions, `cuMemGetInfo`'s tenant view, the
//! usage a killed worker gives back, session limits, devices, socket
//! activation and config errors.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{cu, is_child, Harness, Mediator, Running};
use cudarc::driver::sys;

const WAIT: Duration = Duration::from_secs(30);
const MIB: usize = 1 << 20;
/// The uid and gid of `nobody`, the other user of these tests.
const NOBODY: u32 = 65534;

/// The client child: reads commands, one a line, and prints one answer
/// line per command:
/// - `init` → `init CODE` (cuInit, then a context on device 0);
/// - `alloc MIB` → `alloc CODE` (cuMemAlloc, kept);
/// - `free` → `free CODE` (the last kept allocation);
/// - `info` → `info CODE FREE TOTAL` (cuMemGetInfo_v2);
/// - `devices` → `devices CODE COUNT LAST…` (each device's UUID's last byte);
/// - `launch SECONDS` → `launch CODE COUNT` (launches of the simulated
///   device's `fill_u32` for that long, synchronizing every 8);
/// - `global MIB` → `global CODE` (loads a module of the simulated device
///   with a global of that size and looks it up twice; kept);
/// - `unload` → `unload CODE` (that module);
/// - `graph MIB` → `graph CODE` (a new graph with one memory allocation
///   node of that size; kept);
/// - `ungraph` → `ungraph CODE` (destroys that graph);
/// - `fault` → `fault CODE` (a `fill_u32` launch past the end of its
///   allocation, then cuCtxSynchronize: the simulated device's illegal
///   address, which loses the context);
/// - `pid` → `pid PID`.
#[test]
#[ignore = "the client child of the other tests (run by them)"]
fn tenant_client() {
    if !is_child() {
        return;
    }
    let mut kept: Vec<sys::CUdeviceptr> = Vec::new();
    let mut module: sys::CUmodule = std::ptr::null_mut();
    let mut graph: sys::CUgraph = std::ptr::null_mut();
    let mut line = String::new();
    while {
        line.clear();
        std::io::stdin().read_line(&mut line).expect("stdin") > 0
    } {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["init"] => {
                // SAFETY: no pointers.
                let mut code = cu::code(unsafe { sys::cuInit(0) });
                if code == 0 {
                    let mut ctx = std::ptr::null_mut();
                    // SAFETY: the out-pointer is a live local.
                    code = cu::code(unsafe { sys::cuCtxCreate_v2(&mut ctx, 0, 0) });
                }
                println!("init {code}");
            }
            ["alloc", mib] => {
                let bytes = mib.parse::<usize>().expect("MiB") * MIB;
                let mut d = 0;
                // SAFETY: the out-pointer is a live local.
                let code = cu::code(unsafe { sys::cuMemAlloc_v2(&mut d, bytes) });
                if code == 0 {
                    kept.push(d);
                }
                println!("alloc {code}");
            }
            ["free"] => {
                let d = kept.pop().expect("an allocation to free");
                // SAFETY: an allocation of this client, freed once.
                println!("free {}", cu::code(unsafe { sys::cuMemFree_v2(d) }));
            }
            ["info"] => {
                let (mut free, mut total) = (0, 0);
                // SAFETY: both out-pointers are live locals.
                let code = cu::code(unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) });
                println!("info {code} {free} {total}");
            }
            ["devices"] => {
                let mut n = 0;
                // SAFETY: the out-pointer is a live local.
                let code = cu::code(unsafe { sys::cuDeviceGetCount(&mut n) });
                let mut last = Vec::new();
                for d in 0..n {
                    let mut uuid = sys::CUuuid { bytes: [0; 16] };
                    // SAFETY: the out-pointer is a live local; `d` is below the count.
                    cu::ok(unsafe { sys::cuDeviceGetUuid_v2(&mut uuid, d) }, "uuid");
                    last.push(uuid.bytes[15].to_string());
                }
                println!("devices {code} {n} {}", last.join(" "));
            }
            ["launch", secs] => {
                let secs: f64 = secs.parse().expect("seconds");
                let (code, count) = launch_for(Duration::from_secs_f64(secs));
                println!("launch {code} {count}");
            }
            ["global", mib] => {
                let bytes = mib.parse::<usize>().expect("MiB") * MIB;
                let image =
                    std::ffi::CString::new(format!("VGPU-SIM-MODULE 1\nglobal big {bytes}\n"))
                        .expect("no NUL");
                // SAFETY: the out-pointer is a live local; the image is NUL-terminated.
                let mut code =
                    cu::code(unsafe { sys::cuModuleLoadData(&mut module, image.as_ptr().cast()) });
                for _ in 0..2 {
                    let (mut d, mut size) = (0, 0);
                    if code == 0 {
                        // SAFETY: out-pointers are live locals; the module is live.
                        code = cu::code(unsafe {
                            sys::cuModuleGetGlobal_v2(&mut d, &mut size, module, c"big".as_ptr())
                        });
                    }
                }
                println!("global {code}");
            }
            ["unload"] => {
                // SAFETY: the module this client loaded, unloaded once.
                let code = cu::code(unsafe { sys::cuModuleUnload(module) });
                println!("unload {code}");
            }
            ["graph", mib] => {
                // SAFETY: the out-pointer is a live local.
                let mut code = cu::code(unsafe { sys::cuGraphCreate(&mut graph, 0) });
                // SAFETY: plain C data; all zero is valid before the fields are set.
                let mut p: sys::CUDA_MEM_ALLOC_NODE_PARAMS = unsafe { std::mem::zeroed() };
                p.poolProps.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
                p.poolProps.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
                p.bytesize = mib.parse::<usize>().expect("MiB") * MIB;
                let mut node = std::ptr::null_mut();
                if code == 0 {
                    // SAFETY: live out-pointer and parameters; no dependencies.
                    code = cu::code(unsafe {
                        sys::cuGraphAddMemAllocNode(&mut node, graph, std::ptr::null(), 0, &mut p)
                    });
                }
                println!("graph {code}");
            }
            ["ungraph"] => {
                // SAFETY: the graph this client made, destroyed once.
                let code = cu::code(unsafe { sys::cuGraphDestroy(graph) });
                println!("ungraph {code}");
            }
            ["fault"] => println!("fault {}", fault()),
            ["pid"] => println!("pid {}", std::process::id()),
            other => panic!("unknown command {other:?}"),
        }
    }
}

/// The simulated device's `fill_u32` (a new module) and an allocation of
/// `bytes` for it.
fn fill_u32(bytes: usize) -> (sys::CUfunction, sys::CUdeviceptr) {
    let (mut module, mut f, mut d) = (std::ptr::null_mut(), std::ptr::null_mut(), 0);
    // SAFETY: out-pointers are live locals; the image is a NUL-terminated
    // module of the simulated device; the name is NUL-terminated.
    unsafe {
        cu::ok(
            sys::cuModuleLoadData(&mut module, common::SIM_MODULE.as_ptr().cast()),
            "cuModuleLoadData",
        );
        cu::ok(
            sys::cuModuleGetFunction(&mut f, module, c"fill_u32".as_ptr()),
            "cuModuleGetFunction",
        );
        cu::ok(sys::cuMemAlloc_v2(&mut d, bytes), "cuMemAlloc");
    }
    (f, d)
}

/// Launches `fill_u32` on 256 words for `time`; the first failure's code
/// (0: none) and the launches made.
fn launch_for(time: Duration) -> (u32, u64) {
    use std::ffi::c_void;
    let (f, mut d) = fill_u32(1024);
    let (mut v, mut n) = (7u32, 256i32);
    let mut params: [*mut c_void; 3] = [
        (&raw mut d).cast(),
        (&raw mut v).cast(),
        (&raw mut n).cast(),
    ];
    let start = std::time::Instant::now();
    let mut count = 0u64;
    while start.elapsed() < time {
        // SAFETY: `f` is a live function whose three parameters `params`
        // points to; the default stream; no extra options.
        let code = cu::code(unsafe {
            sys::cuLaunchKernel(
                f,
                1,
                1,
                1,
                256,
                1,
                1,
                0,
                std::ptr::null_mut(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        });
        if code != 0 {
            return (code, count);
        }
        count += 1;
        if count.is_multiple_of(8) {
            // SAFETY: no pointers.
            let code = cu::code(unsafe { sys::cuCtxSynchronize() });
            if code != 0 {
                return (code, count);
            }
        }
    }
    (0, count)
}

/// Launches `fill_u32` for 17 words into a 16-word allocation and
/// synchronizes: the synchronize's code (the simulated device's illegal
/// address, a fatal fault).
fn fault() -> u32 {
    use std::ffi::c_void;
    let (f, mut d) = fill_u32(64);
    let (mut v, mut n) = (7u32, 17i32);
    let mut params: [*mut c_void; 3] = [
        (&raw mut d).cast(),
        (&raw mut v).cast(),
        (&raw mut n).cast(),
    ];
    // SAFETY: `f` is a live function whose three parameters `params`
    // points to; the default stream; no extra options.
    let launched = unsafe {
        sys::cuLaunchKernel(
            f,
            1,
            1,
            1,
            32,
            1,
            1,
            0,
            std::ptr::null_mut(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    cu::ok(launched, "cuLaunchKernel");
    // SAFETY: no pointers.
    cu::code(unsafe { sys::cuCtxSynchronize() })
}

/// A mediator file in a directory of its own.
struct ConfigFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn config(text: &str) -> ConfigFile {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mediator.toml");
    std::fs::write(&path, text).expect("write the mediator file");
    ConfigFile { _dir: dir, path }
}

/// A harness whose mediator reads `file` (and has `env`), reachable by
/// other uids: its socket's and the client library's folders are opened.
fn harness(file: &ConfigFile, env: &[(&str, &str)]) -> Harness {
    harness_with(file, env, &[])
}

/// [`harness`] with `extra` mediator flags.
fn harness_with(file: &ConfigFile, env: &[(&str, &str)], extra: &[&str]) -> Harness {
    let mut h = Harness::without_mediator();
    let path = file.path.to_str().expect("a UTF-8 path");
    let mut args = vec!["--config", path];
    args.extend_from_slice(extra);
    let m = Mediator::start_with_env(&h.build, &args, env);
    h.mediator = Some(m);
    for dir in [h.lib.path().to_path_buf(), socket_dir(&h)] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    h
}

fn socket_path(h: &Harness) -> PathBuf {
    PathBuf::from(h.mediator().endpoint().trim_start_matches("unix:"))
}

fn socket_dir(h: &Harness) -> PathBuf {
    socket_path(h).parent().expect("a folder").to_path_buf()
}

/// A client child, as root or as `uid`.
struct Client(Running);

impl Client {
    fn start(h: &Harness, uid: Option<u32>) -> Client {
        let mut cmd = h.self_test("tenant_client");
        if let Some(uid) = uid {
            // As root, std also drops the supplementary groups.
            cmd.uid(uid).gid(uid);
            cmd.env("HOME", "/");
        }
        Client(Running::spawn(cmd))
    }

    /// Sends `command`; returns the words of its answer after the first.
    #[track_caller]
    fn ask(&mut self, command: &str) -> Vec<String> {
        self.0.send(command);
        let verb = command.split_whitespace().next().expect("a command");
        let line = self.0.expect_line(&format!("{verb} "), WAIT);
        line.split_whitespace().skip(1).map(str::to_owned).collect()
    }

    /// The status code of `command`'s answer.
    #[track_caller]
    fn code(&mut self, command: &str) -> u32 {
        self.ask(command)[0].parse().expect("a code")
    }

    /// `cuMemGetInfo`'s (free, total), in MiB.
    #[track_caller]
    fn info_mib(&mut self) -> (usize, usize) {
        let a = self.ask("info");
        assert_eq!(a[0], "0", "cuMemGetInfo failed: {a:?}");
        let mib = |s: &str| s.parse::<usize>().expect("bytes") / MIB;
        (mib(&a[1]), mib(&a[2]))
    }
}

const OUT_OF_MEMORY: u32 = 2;
const DEVICE_UNAVAILABLE: u32 = 46;
const NO_DEVICE: u32 = 100;

#[test]
fn memory_limits_are_per_tenant_and_shared_by_its_sessions() {
    // Mode 0666: the other uid may open the socket; the tenants decide.
    let file = config(&format!(
        r#"
[unix]
mode = "0666"

[[tenant]]
name = "small"
uids = [0]
memory_limit = "8MiB"
max_sessions = 3

[[tenant]]
name = "big"
uids = [{NOBODY}]
memory_limit = "64MiB"
"#
    ));
    let h = harness_with(&file, &[], &["--metrics", "127.0.0.1:0"]);
    let mut a = Client::start(&h, None);
    assert_eq!(a.code("init"), 0);
    assert_eq!(a.code("alloc 6"), 0);
    assert_eq!(a.info_mib(), (2, 8), "the tenant's view: free, total");
    let text = scrape(&h);
    for line in [
        "vgpu_tenant_device_memory_used_bytes{tenant=\"small\"} 6291456",
        "vgpu_tenant_device_memory_limit_bytes{tenant=\"small\"} 8388608",
        "vgpu_tenant_sessions_live{tenant=\"small\"} 1",
        "vgpu_tenant_device_memory_used_bytes{tenant=\"big\"} 0",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
    }
    assert_eq!(a.code("alloc 3"), OUT_OF_MEMORY, "past the limit");

    // A second session of the same tenant shares the limit.
    let mut b = Client::start(&h, None);
    assert_eq!(b.code("init"), 0);
    assert_eq!(b.code("alloc 3"), OUT_OF_MEMORY);
    assert_eq!(b.code("alloc 2"), 0);
    assert_eq!(b.info_mib(), (0, 8));

    // Another tenant is unaffected.
    let mut c = Client::start(&h, Some(NOBODY));
    assert_eq!(c.code("init"), 0, "{}", h.mediator().log_text());
    assert_eq!(c.code("alloc 32"), 0);
    assert_eq!(c.info_mib(), (32, 64));

    // A free gives the bytes back to the tenant, for every session.
    assert_eq!(a.code("free"), 0);
    assert_eq!(b.code("alloc 3"), 0);
    assert_eq!(a.info_mib(), (3, 8), "B holds 5 MiB");

    // (`vgpu status` opens a session of its own: the third.)
    let b_pid: u32 = b.ask("pid")[0].parse().expect("pid");
    let (worker, tenant) = worker_pid(&h, b_pid);
    assert_eq!(tenant, "small");

    // A fourth session of "small" is refused: max_sessions = 3. (A third
    // is served once the status query's session has ended.)
    let mut d = None;
    for _ in 0..100 {
        let mut third = Client::start(&h, None);
        if third.code("init") == 0 {
            d = Some(third);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let d = d.expect("a third session of the tenant is served");
    let mut e = Client::start(&h, None);
    assert_eq!(e.code("init"), NO_DEVICE);
    let log = h.mediator().log_text();
    assert!(log.contains("reason=\"tenant_sessions\""), "{log}");

    // B's worker is killed: its 5 MiB come back to the tenant.
    common::sigkill(worker);
    assert!(
        common::wait_gone(worker, WAIT),
        "worker {worker} still runs"
    );
    let given = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        a.info_mib() == (8, 8)
    });
    assert!(
        given,
        "B's usage never came back: {:?}\n{}",
        a.info_mib(),
        h.mediator().log_text()
    );
    assert_eq!(a.code("alloc 8"), 0, "the whole limit again");
    drop((d, e));
}

/// One scrape of the mediator's `/metrics` (its address from the log).
fn scrape(h: &Harness) -> String {
    use std::io::{Read, Write};
    let logged = || {
        let log = h.mediator().log_text();
        log.lines()
            .find_map(|l| l.split_once("metrics on http://")?.1.split_once("/metrics"))
            .map(|(addr, _)| addr.to_owned())
    };
    let start = std::time::Instant::now();
    let addr = loop {
        match logged() {
            Some(addr) => break addr,
            None if start.elapsed() < WAIT => std::thread::sleep(Duration::from_millis(20)),
            None => panic!("no metrics address logged:\n{}", h.mediator().log_text()),
        }
    };
    let mut s = std::net::TcpStream::connect(&addr).expect("connect to the metrics port");
    s.set_read_timeout(Some(WAIT)).expect("timeout");
    write!(s, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n").expect("send");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read the answer");
    text
}

#[test]
fn unix_peers_are_admitted_by_uid() {
    // Anyone may open the socket; only root and uid 4242 are allowed.
    let file = config("[unix]\nmode = \"0777\"\nallow_uids = [4242]\n");
    let h = harness(&file, &[]);
    let mode = std::fs::metadata(socket_path(&h))
        .expect("socket")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o777);
    let mut other = Client::start(&h, Some(NOBODY));
    let pid: u32 = other.ask("pid")[0].parse().expect("pid");
    assert_eq!(other.code("init"), NO_DEVICE, "refused at the handshake");
    let log = h.mediator().log_text();
    let refused = log
        .lines()
        .find(|l| l.contains("refusing a session"))
        .unwrap_or_else(|| panic!("no refusal logged:\n{log}"));
    assert!(refused.contains(&format!("uid={NOBODY}")), "{refused}");
    assert!(refused.contains(&format!("pid={pid}")), "{refused}");
    assert!(
        !log.contains("session accepted"),
        "no worker was started:\n{log}"
    );
    // Nor does it get the session list.
    let mut status = Command::new(h.build.dir.join("vgpu"));
    status.args(["status", "--json", "--mediator", &h.mediator().endpoint()]);
    status.uid(NOBODY).gid(NOBODY);
    let out = common::run(status, WAIT);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert!(v["sessions"]["error"].is_string(), "{v:#}");
    let mut root = Client::start(&h, None);
    assert_eq!(root.code("init"), 0, "root is always allowed");

    // The same uid, allowed by the file: served.
    let file = config(&format!(
        "[unix]\nmode = \"0666\"\ngroup = {NOBODY}\nallow_uids = [{NOBODY}]\n"
    ));
    let h = harness(&file, &[]);
    let meta = std::fs::metadata(socket_path(&h)).expect("socket");
    assert_eq!(meta.permissions().mode() & 0o777, 0o666);
    assert_eq!(
        std::os::unix::fs::MetadataExt::gid(&meta),
        NOBODY,
        "[unix] group"
    );
    let mut allowed = Client::start(&h, Some(NOBODY));
    assert_eq!(allowed.code("init"), 0);
    assert_eq!(allowed.code("alloc 1"), 0);
}

#[test]
fn a_tenant_sees_only_its_devices() {
    let file = config("[[tenant]]\nname = \"t\"\nuids = [0]\ndevices = [2, 0]\n");
    let h = harness(&file, &[("VGPU_SIM_DEVICES", "3")]);
    let mut c = Client::start(&h, None);
    assert_eq!(c.code("init"), 0);
    assert_eq!(c.ask("devices"), ["0", "2", "2", "0"], "physical 2 and 0");
    // The client's own CUDA_VISIBLE_DEVICES picks among the tenant's.
    let mut h = h;
    h.env("CUDA_VISIBLE_DEVICES", "1");
    let mut c = Client::start(&h, None);
    assert_eq!(c.code("init"), 0);
    assert_eq!(
        c.ask("devices"),
        ["0", "1", "0"],
        "the tenant's second device"
    );
    h.env("CUDA_VISIBLE_DEVICES", "2");
    let mut c = Client::start(&h, None);
    assert_eq!(c.code("init"), NO_DEVICE, "no third device for this tenant");
}

#[test]
fn clients_no_tenant_names_are_refused() {
    let file = config(&format!(
        "[unix]\nmode = \"0666\"\nallow_uids = [4343]\n\
         [[tenant]]\nname = \"t\"\nuids = [4242]\ngroups = [{NOBODY}]\n"
    ));
    let h = harness(&file, &[]);
    // nobody's group names it: admitted as tenant t.
    let mut member = Client::start(&h, Some(NOBODY));
    assert_eq!(member.code("init"), 0);
    // A uid the socket allows, but no tenant names.
    let mut stranger = Client::start(&h, Some(4343));
    assert_eq!(stranger.code("init"), NO_DEVICE);
    // A uid nothing allows.
    let mut outsider = Client::start(&h, Some(4444));
    assert_eq!(outsider.code("init"), NO_DEVICE);
    let log = h.mediator().log_text();
    assert!(log.contains("uid=4343 pid="), "{log}");
    assert!(log.contains("reason=\"no_tenant\""), "{log}");
    assert!(log.contains("uid=4444 pid="), "{log}");
    assert!(log.contains("reason=\"not_allowed\""), "{log}");
}

#[test]
fn config_errors_name_the_file_line_and_key() {
    let build = common::build();
    let file = config("driver = \"sim\"\n\n[unix]\nmode = \"0660\"\nowner = \"me\"\n");
    let out = Command::new(&build.mediator)
        .arg("--config")
        .arg(&file.path)
        .output()
        .expect("run the mediator");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let want = format!("{}:5: [unix] owner: ", file.path.display());
    assert!(stderr.contains(&want), "{stderr}");

    let out = Command::new(&build.mediator)
        .args(["--config", "/nonexistent/vgpu/mediator.toml"])
        .output()
        .expect("run the mediator");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/vgpu/mediator.toml"));

    // check-config accepts a good file and says what it found.
    let good = config("[[tenant]]\nname = \"a\"\nuids = [1]\nmemory_limit = \"1GiB\"\n");
    let out = Command::new(&build.mediator)
        .arg("--config")
        .arg(&good.path)
        .arg("check-config")
        .output()
        .expect("run the mediator");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("1073741824"), "{stdout}");
}

#[test]
fn sockets_are_taken_from_the_service_manager() {
    let h = Harness::without_mediator();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("activated.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").expect("bind TCP");
    let tcp_addr = tcp.local_addr().expect("TCP address");
    let log = dir.path().join("mediator.log");
    let mut cmd = Command::new("sh");
    // The shell's pid is the mediator's after exec: LISTEN_PID names it.
    cmd.arg("-c")
        .arg("LISTEN_PID=$$ LISTEN_FDS=2 LISTEN_FDNAMES=clients:remote exec \"$@\"")
        .arg("sh")
        .arg(&h.build.mediator)
        .args(["--driver", "sim", "--sim-lib"])
        .arg(&h.build.sim)
        .arg("--log")
        .arg(&log)
        .args(["--listen", "unix:/nonexistent/never-bound.sock"]);
    let fds = [
        std::os::fd::AsRawFd::as_raw_fd(&listener),
        std::os::fd::AsRawFd::as_raw_fd(&tcp),
    ];
    // SAFETY: fcntl and dup2 are async-signal-safe; both descriptors are
    // open in the parent, so in the child, until exec.
    unsafe {
        cmd.pre_exec(move || {
            // Each out of the way of 3 and 4 first (a copy at 10 or above,
            // closed by exec), then into place (dup2 leaves it open). No
            // allocation here: this runs between fork and exec.
            let mut high = [-1; 2];
            for (h, &fd) in high.iter_mut().zip(&fds) {
                *h = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10);
            }
            for (target, &fd) in (3..).zip(&high) {
                if fd < 0 || libc::dup2(fd, target) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let mut mediator = cmd.spawn().expect("start the mediator");
    let answer = |endpoint: String| {
        let mut cmd = h.self_test("tenant_client");
        cmd.env("VGPU_MEDIATOR", endpoint);
        let mut c = Running::spawn(cmd);
        c.send("init");
        let line = c.expect_line("init ", WAIT);
        (c, line)
    };
    let (_local, local_line) = answer(format!("unix:{}", path.display()));
    let (_remote, remote_line) = answer(format!("tcp://{tcp_addr}"));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = mediator.kill();
    let _ = mediator.wait();
    for pid in worker_pids(&text) {
        common::sigkill(pid);
    }
    assert_eq!(local_line, "init 0", "{text}");
    assert_eq!(remote_line, "init 0", "{text}");
    assert!(
        text.contains("a Unix socket (inherited from the service manager, clients)"),
        "{text}"
    );
    let tcp_line = format!("tcp://{tcp_addr} (inherited from the service manager, remote)");
    assert!(text.contains(&tcp_line), "{text}");
    assert!(!Path::new("/nonexistent/never-bound.sock").exists());
}

fn worker_pids(log: &str) -> Vec<u32> {
    log.lines()
        .filter_map(|l| l.split_once("session accepted worker=").map(|(_, r)| r))
        .filter_map(|r| r.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .collect()
}

#[test]
fn every_allocation_path_stops_at_the_limit() {
    let file = config("[[tenant]]\nname = \"t\"\nuids = [0]\nmemory_limit = \"64MiB\"\n");
    let h = harness(&file, &[]);
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = common::build_c(dir.path(), "tenant_quota");
    let mut cmd = h.command(&exe);
    cmd.arg("64");
    let out = h.run(cmd);
    assert!(out.status.success(), "{out}\n{}", h.mediator().log_text());
    out.assert_line("ok cuMemAlloc past the limit")
        .assert_line("ok cuMemAllocPitch past the limit")
        .assert_line("ok cuMemAllocPitch counts the pitch")
        .assert_line("ok cuMemAllocAsync past the limit")
        .assert_line("ok cuMemCreate past the limit")
        .assert_line("ok cuArrayCreate past the limit")
        .assert_line("ok array destroyed free")
        .assert_line("ok full total")
        .assert_line("PASS: 0 failed");
}

#[test]
fn busy_tenants_share_launches_by_weight() {
    let file = config(&format!(
        "[unix]\nmode = \"0666\"\n\
         [[tenant]]\nname = \"light\"\nuids = [0]\nweight = 1\n\
         [[tenant]]\nname = \"heavy\"\nuids = [{NOBODY}]\nweight = 3\n"
    ));
    let h = harness(&file, &[]);
    let mut light = Client::start(&h, None);
    let mut heavy = Client::start(&h, Some(NOBODY));
    assert_eq!(light.code("init"), 0);
    assert_eq!(heavy.code("init"), 0);
    light.0.send("launch 3");
    heavy.0.send("launch 3");
    let count = |c: &mut Client| -> f64 {
        let line = c.0.expect_line("launch ", WAIT);
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[1], "0", "{line}");
        words[2].parse().expect("a count")
    };
    let (l, hv) = (count(&mut light), count(&mut heavy));
    let share = hv / (l + hv);
    eprintln!(
        "launches in 3 s: light (weight 1) {l}, heavy (weight 3) {hv}: heavy share {share:.2}"
    );
    assert!(l > 0.0 && hv > 0.0, "both ran: {l} {hv}");
    assert!(
        (0.65..=0.85).contains(&share),
        "heavy's share {share:.2}, want 0.75: {l} vs {hv}"
    );
}

#[test]
fn module_globals_count_once_looked_up() {
    let file = config("[[tenant]]\nname = \"t\"\nuids = [0]\nmemory_limit = \"8MiB\"\n");
    let h = harness(&file, &[]);
    let mut c = Client::start(&h, None);
    assert_eq!(c.code("init"), 0);
    assert_eq!(c.code("global 4"), 0);
    assert_eq!(
        c.info_mib(),
        (4, 8),
        "a 4 MiB global, looked up twice, counts once"
    );
    assert_eq!(c.code("alloc 5"), OUT_OF_MEMORY);
    assert_eq!(c.code("alloc 4"), 0);
    assert_eq!(c.code("unload"), 0);
    assert_eq!(
        c.info_mib(),
        (4, 8),
        "the unloaded module's global is given back"
    );
}

#[test]
fn graph_memory_nodes_are_charged_until_their_graph_goes() {
    let file = config("[[tenant]]\nname = \"t\"\nuids = [0]\nmemory_limit = \"8MiB\"\n");
    let h = harness(&file, &[]);
    let mut c = Client::start(&h, None);
    assert_eq!(c.code("init"), 0);
    assert_eq!(c.code("graph 6"), 0);
    assert_eq!(c.info_mib(), (2, 8));
    assert_eq!(c.code("alloc 3"), OUT_OF_MEMORY);
    assert_eq!(c.code("ungraph"), 0);
    assert_eq!(
        c.info_mib(),
        (8, 8),
        "the destroyed graph's node is given back"
    );
    assert_eq!(c.code("graph 9"), OUT_OF_MEMORY, "a node past the limit");
    assert_eq!(c.info_mib(), (8, 8));
}

/// A stand-in for `nvidia-cuda-mps-control` (CI has no GPU, so no MPS).
/// With `-f` it appends "PID UID" to `starts` in its pipe folder, opens
/// `control` there (the real daemon's socket, here a plain file) and
/// serves until `quit` appears, then appends its pid to `quits`. Without
/// arguments it reads one command from its standard input, as the real
/// one does, and answers `quit` by making `quit` and waiting for the
/// daemon to take it. Unlike the real daemon it also ends when the
/// supervisor is gone, so that a failed test leaves nothing running.
const FAKE_MPS_CONTROL: &str = r#"#!/bin/sh
dir=$CUDA_MPS_PIPE_DIRECTORY
case "$1" in
-f)
    parent=$PPID
    echo "$$ $(id -u)" >>"$dir/starts"
    : >"$dir/control"
    while [ ! -e "$dir/quit" ] && [ -d "/proc/$parent" ]; do sleep 0.05; done
    rm -f "$dir/control" "$dir/quit"
    echo "$$" >>"$dir/quits"
    ;;
"")
    read -r cmd
    [ "$cmd" = quit ] || exit 1
    : >"$dir/quit"
    while [ -e "$dir/quit" ]; do sleep 0.05; done
    ;;
esac
"#;

/// An MPS set-up for the mediator file: the fake control program and the
/// groups' folder, both reachable by the worker user.
struct FakeMps {
    dir: tempfile::TempDir,
}

impl FakeMps {
    fn new() -> FakeMps {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        let control = dir.path().join("control");
        std::fs::write(&control, FAKE_MPS_CONTROL).expect("write the fake control");
        std::fs::set_permissions(&control, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        FakeMps { dir }
    }

    /// The `[mps]` table.
    fn table(&self) -> String {
        let d = self.dir.path().display();
        format!("[mps]\ncontrol = \"{d}/control\"\ndir = \"{d}/groups\"\n")
    }

    fn pipe(&self, group: &str) -> PathBuf {
        self.dir.path().join("groups").join(group).join("pipe")
    }

    /// The lines of `starts` or `quits` in `group`'s pipe folder.
    fn lines(&self, group: &str, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.pipe(group).join(name))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Waits until `group`'s `name` has `n` lines.
    #[track_caller]
    fn wait_lines(&self, h: &Harness, group: &str, name: &str, n: usize) {
        let start = std::time::Instant::now();
        while self.lines(group, name).len() < n {
            assert!(
                start.elapsed() < WAIT,
                "{group}: {name} has {:?}, not {n} lines\n{}",
                self.lines(group, name),
                h.mediator().log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The worker pid and tenant of client `client_pid`, from `vgpu status --json`.
fn worker_pid(h: &Harness, client_pid: u32) -> (u32, String) {
    let mut cmd = Command::new(h.build.dir.join("vgpu"));
    cmd.args(["status", "--json", "--mediator", &h.mediator().endpoint()]);
    let out = common::run(cmd, WAIT);
    out.assert_success();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    let s = v["sessions"]
        .as_array()
        .and_then(|l| l.iter().find(|s| s["client_pid"] == client_pid))
        .unwrap_or_else(|| panic!("client {client_pid} not listed: {v:#}"));
    let pid = u32::try_from(s["worker_pid"].as_u64().expect("a pid")).expect("u32");
    (pid, s["tenant"].as_str().unwrap_or_default().to_owned())
}

/// A process's `CUDA_MPS_*` environment, sorted.
fn mps_env(pid: u32) -> Vec<String> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).expect("environ");
    let mut env: Vec<String> = raw
        .split(|&b| b == 0)
        .map(|e| String::from_utf8_lossy(e).into_owned())
        .filter(|e| e.starts_with("CUDA_MPS_"))
        .collect();
    env.sort();
    env
}

/// A process's real uid, from `/proc/PID/status`.
fn uid_of(pid: u32) -> u32 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|u| u.parse().ok())
        .expect("a Uid line")
}

#[test]
fn mps_groups_have_their_own_servers_and_a_fault_restarts_only_its_group() {
    let mps = FakeMps::new();
    let file = config(&format!(
        r#"
[unix]
mode = "0666"

{}
[[tenant]]
name = "a"
uids = [0]
mps_group = "ga"
mps_active_thread_percentage = 40
mps_pinned_memory_limit = "2GiB"

[[tenant]]
name = "b"
uids = [{NOBODY}]
mps_group = "gb"
"#,
        mps.table()
    ));
    let h = harness(&file, &[]);
    mps.wait_lines(&h, "ga", "starts", 1);
    mps.wait_lines(&h, "gb", "starts", 1);

    let mut a1 = Client::start(&h, None);
    let mut a2 = Client::start(&h, None);
    let mut b1 = Client::start(&h, Some(NOBODY));
    for c in [&mut a1, &mut a2, &mut b1] {
        assert_eq!(c.code("init"), 0, "{}", h.mediator().log_text());
    }
    let pid = |c: &mut Client| c.ask("pid")[0].parse::<u32>().expect("pid");
    let (a1_worker, tenant) = worker_pid(&h, pid(&mut a1));
    assert_eq!(tenant, "a");
    let (b1_worker, _) = worker_pid(&h, pid(&mut b1));
    let pipe = |g: &str| format!("CUDA_MPS_PIPE_DIRECTORY={}", mps.pipe(g).display());
    let a_env = mps_env(a1_worker);
    for want in [
        pipe("ga"),
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=40".to_owned(),
        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2048M".to_owned(),
    ] {
        assert!(a_env.contains(&want), "{want} not in {a_env:?}");
    }
    let b_env = mps_env(b1_worker);
    assert!(b_env.contains(&pipe("gb")), "{b_env:?}");
    assert!(
        !b_env.iter().any(|e| e.contains("PERCENTAGE")),
        "b sets no percentage: {b_env:?}"
    );
    // The daemons run as the workers' user.
    let daemon_uid = |g: &str| {
        mps.lines(g, "starts")[0]
            .split(' ')
            .nth(1)
            .map(str::to_owned)
    };
    assert_eq!(daemon_uid("ga"), Some(uid_of(a1_worker).to_string()));

    // A fatal fault in a session of group ga: the group restarts.
    assert_eq!(a1.code("fault"), 700, "CUDA_ERROR_ILLEGAL_ADDRESS");
    mps.wait_lines(&h, "ga", "quits", 1);
    mps.wait_lines(&h, "ga", "starts", 2);
    let log = h.mediator().log_text();
    assert!(log.contains("restarting the group"), "{log}");
    // The group's other session ended with it: its worker is gone.
    assert_eq!(
        a2.code("alloc 1"),
        DEVICE_UNAVAILABLE,
        "a2 ended with its group"
    );
    // Group gb was not touched.
    let b = b1.ask("launch 0.3");
    assert_eq!(b[0], "0", "b1 still works: {b:?}");
    assert!(b[1].parse::<u64>().expect("count") > 0);
    assert_eq!(mps.lines("gb", "starts").len(), 1);
    assert!(mps.lines("gb", "quits").is_empty());
    // A new session of a is served by the new daemon.
    let mut a3 = Client::start(&h, None);
    assert_eq!(a3.code("init"), 0, "{}", h.mediator().log_text());
    let a = a3.ask("launch 0.2");
    assert_eq!(a[0], "0", "{a:?}");

    // A daemon that dies is started again.
    let gb_daemon: u32 = mps.lines("gb", "starts")[0]
        .split(' ')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a pid");
    common::sigkill(gb_daemon);
    mps.wait_lines(&h, "gb", "starts", 2);
    assert!(
        h.mediator().log_text().contains("exited by itself"),
        "{}",
        h.mediator().log_text()
    );

    // A stopping supervisor tells the daemons to quit.
    let quits = (
        mps.lines("ga", "quits").len(),
        mps.lines("gb", "quits").len(),
    );
    let mut term = Command::new("kill");
    term.args(["-TERM", &h.mediator().pid().to_string()]);
    common::run(term, WAIT).assert_success();
    mps.wait_lines(&h, "ga", "quits", quits.0 + 1);
    mps.wait_lines(&h, "gb", "quits", quits.1 + 1);
    drop((a1, a2, a3, b1));
}

#[test]
fn a_missing_mps_control_program_stops_the_mediator_with_a_reason() {
    let file = config(
        "[mps]\ncontrol = \"/nonexistent/nvidia-cuda-mps-control\"\n\
         [[tenant]]\nname = \"t\"\nuids = [0]\nmps_group = \"g\"\n",
    );
    let path = file.path.to_str().expect("a UTF-8 path");
    let h = Harness::without_mediator();
    let mut cmd = Command::new(h.build.dir.join("vgpu-mediator"));
    cmd.args([
        "--config",
        path,
        "--listen",
        "unix:/nonexistent-dir-vgpu/m.sock",
    ]);
    let out = common::run(cmd, WAIT);
    assert!(!out.status.success(), "the mediator started");
    assert!(
        out.stderr.contains("[mps] control") && out.stderr.contains("not an executable"),
        "{}",
        out.stderr
    );
    // check-config says so too, and shows a good file's groups.
    let check = |file: &ConfigFile| {
        let mut cmd = Command::new(h.build.dir.join("vgpu-mediator"));
        cmd.args([
            "--config",
            file.path.to_str().expect("UTF-8"),
            "check-config",
        ]);
        common::run(cmd, WAIT)
    };
    let out = check(&file);
    assert_eq!(out.status.code(), Some(2), "{out}");
    assert!(out.stderr.contains("[mps] control"), "{out}");
    let mps = FakeMps::new();
    let good = config(&format!(
        "{}[[tenant]]\nname = \"t\"\nuids = [0]\nmps_group = \"g\"\n\
         mps_active_thread_percentage = 30\n",
        mps.table()
    ));
    let out = check(&good);
    out.assert_success()
        .assert_line(&format!("mps control {}/control", mps.dir.path().display()))
        .assert_line("tenant t: mps group g, active threads 30%, pinned memory -");
}
