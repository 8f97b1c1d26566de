//! The per-session worker process.
//!
//! One worker serves one client session: it reads the [`Hello`], applies the
//! allowlisted environment, loads the driver, runs `cuInit`, answers with a
//! [`Welcome`] holding every device's snapshot, and then serves the control
//! connection (which only opens lanes) and one thread per lane ([`lane`]).
//! When the control connection closes, the client is gone and the process
//! exits; the driver frees everything the session held.

mod array;
mod callback;
mod calls;
mod checkpoint;
mod context;
mod copy;
mod coredump;
mod deadline;
mod decompress;
mod event;
mod exec;
mod external;
#[doc(hidden)]
pub mod fuzz;
mod generated;
mod graph;
mod green;
mod held;
mod host;
mod ipc;
mod lane;
mod launch;
mod library;
mod link;
mod logs;
mod memop;
mod memory;
mod module;
mod multicast;
mod notify;
mod nvml;
mod options;
mod order;
mod output;
mod pointer;
mod pool;
mod profile;
mod readahead;
mod registry;
mod remote;
mod sending;
mod snapshot;
mod stream;
mod tables;
mod tensormap;
mod texture;
mod tls;
mod vm;
mod vmm;

use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use vgpu_proto::sessions::transport;
use vgpu_proto::{features, read_request, write_response, Hello, Op, Welcome};
use vgpu_transport::Channel;

use crate::config::{DriverChoice, ServeArgs};
use crate::driver::{self, Driver};
use crate::sessions::{self, Refusal};
use crate::MediatorError;

/// CUDA status codes the worker produces itself, from the ABI's `CUresult`.
pub mod status {
    use crate::driver::Status;
    pub const SUCCESS: Status = Status::CUDA_SUCCESS;
    pub const INVALID_VALUE: Status = Status::CUDA_ERROR_INVALID_VALUE;
    pub const OUT_OF_MEMORY: Status = Status::CUDA_ERROR_OUT_OF_MEMORY;
    pub const INVALID_CONTEXT: Status = Status::CUDA_ERROR_INVALID_CONTEXT;
    pub const INVALID_HANDLE: Status = Status::CUDA_ERROR_INVALID_HANDLE;
    pub const CONTEXT_IS_DESTROYED: Status = Status::CUDA_ERROR_CONTEXT_IS_DESTROYED;
    pub const NOT_SUPPORTED: Status = Status::CUDA_ERROR_NOT_SUPPORTED;
    pub const MAP_FAILED: Status = Status::CUDA_ERROR_MAP_FAILED;
    pub const OPERATING_SYSTEM: Status = Status::CUDA_ERROR_OPERATING_SYSTEM;
    pub const HOST_MEMORY_NOT_REGISTERED: Status = Status::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

/// State shared by every lane of one session.
pub struct Session {
    pub driver: Driver,
    pub tables: Mutex<tables::Tables>,
    /// The session-wide order of requests across lanes.
    pub order: order::Order,
    /// Bumped whenever a context enters or leaves the tables: a lane whose
    /// context was found live at the current count need not look again.
    pub contexts_changed: AtomicU64,
    /// Bumped whenever a stream or function leaves the tables (the tables'
    /// own counter, read here without their lock): lanes' launch
    /// translations taken at another count are stale ([`launch`]).
    pub handles_gone: Arc<AtomicU64>,
    /// Set when the control connection has closed: lanes stop waiting.
    pub closing: AtomicBool,
    /// Lanes run on shared-memory rings (`features::RINGS` negotiated).
    pub rings: bool,
    /// The control connection is TCP: the client is on another host, so
    /// nothing can be shared with it (no rings, no pinned host memory) and
    /// lanes are TCP connections ([`remote`]). Also set for a process in a
    /// VM guest ([`vm`]): only bytes cross its ring streams.
    pub remote: bool,
    /// The host-callback channel (`callback`).
    pub callbacks: Arc<callback::Callbacks>,
    /// The output channel was opened (`output`).
    pub output_opened: Mutex<bool>,
    /// Who the client is, as the connection proves it.
    pub peer: Peer,
    /// The host's record of inter-process handles ([`registry`]).
    pub registry: registry::Registry,
    /// What NVML queries need ([`nvml`]).
    pub nvml: nvml::Nvml,
    /// How many devices the session sees.
    pub device_count: usize,
    /// How long a request's rest may take once its first bytes came ([`deadline`]).
    pub frame_timeout: std::time::Duration,
    /// A duplicate of the control connection's socket, shut down to end
    /// the session from a lane ([`Session::end`]); `None` for a VM guest.
    control: Option<OwnedFd>,
}

/// The session's client, for inter-process handles and log lines.
#[derive(Debug, Clone)]
pub struct Peer {
    /// The client's uid from the socket's peer credentials; `None` on TCP,
    /// where it is only what the client states.
    pub uid: Option<u32>,
    /// Whose sessions NVML shows this session ([`nvml`]); `None` for a
    /// client over TCP, which can only state who it is.
    pub tenant: Option<Tenant>,
    /// Names the session in log lines: worker and client pids.
    pub label: String,
}

/// A tenant, as NVML's view of memory and processes scopes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tenant {
    /// The uid: the kernel's word for a local client, the stated one for a
    /// process in a VM guest.
    pub uid: u32,
    /// The VM guest of the session ([`sessions::Slot::guest`]), 0 for a
    /// local client.
    pub guest: u64,
}

impl Session {
    /// Ends the session from any thread: lanes stop waiting, and the
    /// control connection's reader sees it close, so the worker runs its
    /// cleanup and exits as when the client leaves.
    pub fn end(&self) {
        self.closing.store(true, Ordering::SeqCst);
        if let Some(fd) = &self.control {
            let _ = rustix::net::shutdown(fd, rustix::net::Shutdown::Both);
        }
    }

    /// The handle tables; a lane that panicked while holding them poisons
    /// nothing the others cannot still use.
    pub fn tables(&self) -> std::sync::MutexGuard<'_, tables::Tables> {
        self.tables.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Takes the session table inherited as descriptor `fd`, with slot `slot`
/// as this worker's own ([`crate::sessions`]). A table that cannot be
/// mapped is logged; the session is then served without being listed.
pub fn attach_session_table(fd: i32, slot: usize) {
    if fd < 3 {
        tracing::warn!("--session-table {fd} is not an inherited descriptor");
        return;
    }
    // SAFETY: the supervisor started this process with `fd` open for
    // exactly this purpose; nothing else in the process owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    if let Err(e) = crate::sessions::attach(fd, slot) {
        tracing::warn!("session table not attached: {e}; this session is not listed");
    }
}

/// Serves the session on the inherited connection `fd` (or, with
/// `region`, a VM guest's region of the inherited shared memory `fd`:
/// [`vm`]) until the client leaves.
/// With `tls_admission`, `fd` is a TLS session's listener and
/// `tls_admission` the pipe of its admission ([`tls`]).
///
/// `hello`, when given, is an inherited memfd holding the client's hello,
/// which the supervisor read off the connection before it started this
/// worker; without it (a VM guest's or a TLS session) the hello is read
/// from the connection.
pub fn run(
    args: &ServeArgs,
    fd: i32,
    region: Option<&str>,
    tls_admission: Option<i32>,
    hello: Option<i32>,
) -> Result<(), MediatorError> {
    if fd < 3 {
        return Err(MediatorError::Config(format!(
            "--fd {fd} is not an inherited connection"
        )));
    }
    let mut tls_session = None;
    let (mut control, vm) = match (region, tls_admission) {
        (Some(spec), _) => {
            let (vm, control) = vm::VmRegion::open(fd, spec)?;
            (control, Some(vm))
        }
        (None, Some(pipe)) => {
            let (control, session) =
                tls::admit(fd, pipe).inspect_err(|_| sessions::refuse(Refusal::Handshake))?;
            tls_session = Some(session);
            (control, None)
        }
        (None, None) => {
            // SAFETY: the supervisor started this process with `fd` open,
            // inherited for exactly this purpose; nothing else owns it.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            // Whatever this worker starts must not hold the client's
            // connection open after the worker ends.
            rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC)
                .map_err(std::io::Error::from)?;
            (Channel::from_fd(fd), None)
        }
    };
    let remote = control.is_tcp() || control.is_vm();
    let credentials = if remote {
        None
    } else {
        Some(control.peer_credentials()?)
    };
    let hello = match hello {
        Some(memfd) => read_inherited_hello(memfd),
        None => Hello::read(&mut control),
    }
    .inspect_err(|_| sessions::refuse(Refusal::Handshake))?;
    let uid = credentials.map(|(_, uid, _)| uid);
    let pid = match credentials {
        Some((pid, uid, _)) => {
            tracing::info!(client_pid = pid, uid, env = ?hello.env, "session starting");
            pid
        }
        None if vm.is_some() => {
            tracing::info!(
                guest_pid = hello.pid,
                uid = hello.uid,
                env = ?hello.env,
                "session starting (process in a VM guest over ivshmem; pid and uid as it states them)"
            );
            hello.pid
        }
        None => {
            // No credentials over TCP: pid and uid are what the client says.
            let peer = control
                .peer_addr()
                .map_or_else(|| "unknown".to_owned(), |a| a.to_string());
            let over = if control.is_tls() { "TLS" } else { "TCP" };
            // Over TLS: who the supervisor authenticated (names, never secrets).
            let identity = tls_session.as_ref().map(|t| &t.identity);
            tracing::info!(
                client_pid = hello.pid,
                uid = hello.uid,
                peer,
                ?identity,
                env = ?hello.env,
                "session starting (remote client over {over}; pid and uid as it states them)"
            );
            hello.pid
        }
    };
    for (k, v) in &hello.env {
        if let Err(why) = crate::privilege::env_value_allowed(k, v) {
            tracing::warn!("{k} from the client ignored: {why}");
            continue;
        }
        // Single-threaded here: no other thread reads the environment yet.
        std::env::set_var(k, v);
    }
    // A tenant's devices bound what its client may see (`tenants::devices`).
    let client_devices = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    if let Some(v) = crate::tenants::worker::visible_devices(client_devices.as_deref()) {
        tracing::info!(client = client_devices, applied = v, "the tenant's devices");
        std::env::set_var("CUDA_VISIBLE_DEVICES", v);
    }
    let driver = load_driver(args).inspect_err(|_| sessions::refuse(Refusal::Driver))?;
    tracing::info!(driver = %driver.path().display(), "driver loaded");
    let welcome = snapshot::welcome(&driver);
    if welcome.init_status != status::SUCCESS.0 {
        tracing::warn!(status = welcome.init_status, "cuInit failed in the worker");
    }
    // Lane rings are memfds both sides map: never over TCP nor to a VM.
    let offered = if remote {
        features::ALL & !features::RINGS
    } else {
        features::ALL
    };
    let negotiated = offered & hello.features;
    let nvml = nvml::Nvml::new(&welcome.devices);
    let uuids: Vec<[u8; 16]> = welcome.devices.iter().map(|d| d.uuid).collect();
    Welcome {
        features: negotiated,
        ..welcome
    }
    .write(&mut control)?;
    let tables = tables::Tables::default();
    let session = Arc::new(Session {
        driver,
        handles_gone: tables.gone_counter(),
        tables: Mutex::new(tables),
        order: order::Order::default(),
        contexts_changed: AtomicU64::new(0),
        closing: AtomicBool::new(false),
        rings: negotiated & features::RINGS != 0,
        remote,
        callbacks: Arc::default(),
        output_opened: Mutex::new(false),
        peer: Peer {
            uid,
            tenant: match (uid, &vm) {
                (Some(uid), _) => Some(Tenant { uid, guest: 0 }),
                (None, Some(vm)) => Some(Tenant {
                    uid: hello.uid,
                    guest: vm.guest(),
                }),
                (None, None) => None,
            },
            label: format!("worker {} (client pid {pid})", std::process::id()),
        },
        registry: if remote {
            registry::Registry::off()
        } else {
            registry::Registry::open(&args.ipc_directory())
        },
        nvml,
        device_count: uuids.len(),
        frame_timeout: args.limits.frame_timeout(),
        control: control
            .socket_fd()
            .and_then(|fd| fd.try_clone_to_owned().ok()),
    });
    tracing::debug!(features = negotiated, "features negotiated");
    if let Some(slot) = sessions::own() {
        let kind = if vm.is_some() {
            transport::IVSHMEM
        } else if control.is_tls() {
            transport::TLS
        } else if remote {
            transport::TCP
        } else if session.rings {
            transport::UNIX_RINGS
        } else {
            transport::UNIX
        };
        slot.set_devices(&uuids);
        if let Some(vm) = &vm {
            slot.guest.store(vm.guest(), Ordering::Relaxed);
        }
        slot.go_live(pid, uid.unwrap_or(hello.uid), kind);
    }
    serve_control(&session, control, args, vm.as_ref(), tls_session);
    session.closing.store(true, Ordering::SeqCst);
    session.callbacks.close();
    session.tables().vmm.release_all(&session.driver);
    ipc::session_ends(&session);
    tracing::info!(client_pid = pid, "client disconnected; worker exits");
    Ok(())
}

/// The hello the supervisor left in the inherited memfd `fd`.
fn read_inherited_hello(fd: i32) -> Result<Hello, vgpu_proto::ProtoError> {
    if fd < 3 {
        return Err(vgpu_proto::ProtoError::Io(std::io::Error::other(format!(
            "--hello {fd} is not an inherited descriptor"
        ))));
    }
    // SAFETY: the supervisor started this process with `fd` open, holding
    // the hello, for exactly this purpose; nothing else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    Hello::read(&mut std::fs::File::from(fd))
}

fn load_driver(args: &ServeArgs) -> Result<Driver, MediatorError> {
    let sim = || -> Result<Driver, MediatorError> {
        let path = args.sim_library().ok_or_else(|| {
            MediatorError::Driver("libvgpu-sim.so not found (pass --sim-lib PATH)".into())
        })?;
        Driver::load(&path)
    };
    match &args.driver {
        DriverChoice::Path(p) => Driver::load(p),
        DriverChoice::Sim => sim(),
        DriverChoice::Auto => match driver::load_real_driver() {
            Some(d) => Ok(d),
            None => {
                tracing::warn!(
                    "NO REAL CUDA DRIVER FOUND: falling back to the SIMULATED device \
                     (libvgpu-sim.so). Results come from host memory, not a GPU."
                );
                sim()
            }
        },
    }
}

/// The control connection opens lanes; its end is the end of the session.
fn serve_control(
    session: &Arc<Session>,
    mut control: Channel,
    args: &ServeArgs,
    vm: Option<&vm::VmRegion>,
    tls: Option<tls::TlsSession>,
) {
    let mut tcp_lanes = remote::TcpLanes::new(&control, args.lane_ports, tls);
    deadline::arm(&mut control, session.frame_timeout);
    let alive = || !session.closing.load(Ordering::SeqCst);
    loop {
        let mut reader = deadline::FrameReader::new(&mut control, session.frame_timeout, &alive);
        let req = match read_request(&mut reader) {
            Ok(r) => r,
            Err(e) if deadline::is_frame_timeout(&e) => {
                tracing::warn!("control connection: {e}; ending the session");
                return;
            }
            Err(vgpu_proto::ProtoError::Io(_)) => return,
            Err(e) => {
                tracing::warn!("control connection: {e}; closing the session");
                return;
            }
        };
        let ok = match req.op {
            Op::OpenLane => match (&mut tcp_lanes, vm) {
                (_, Some(vm)) => vm.open_lane(session, &mut control, req.seq),
                (Some(tcp), None) => tcp.open(session, &mut control, req.seq),
                (None, None) => lane::open(session, &mut control, req.seq),
            },
            Op::OpenCallbacks => callback::open(session, &mut control, req.seq),
            Op::OpenOutput => output::open(session, &mut control, req.seq),
            Op::NvmlQuery => nvml::serve(session, &mut control, &req),
            other => {
                tracing::warn!(?other, "operation not allowed on the control connection");
                write_response(&mut control, status::INVALID_VALUE.0, req.seq, &[], &[]).is_ok()
            }
        };
        if !ok {
            return;
        }
    }
}
