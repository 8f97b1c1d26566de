//! The client's one global, [`Runtime`], and the per-thread state.
//!
//! Nothing here runs at load. The first CUDA call builds the `Runtime` (reads
//! the environment, registers the fork handler); `cuInit` connects a
//! [`Session`]. Each client thread that makes calls gets its own lane: a
//! socket to its own worker thread, opened on the session's control
//! connection. A blocking call on one thread therefore never stalls another.

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use vgpu_proto::{DeviceSnapshot, Hello, Welcome};
use vgpu_transport::Channel;

use crate::config::Config;
use crate::edge::{CuError, CuResult};
use crate::objects::Objects;

/// The process-wide state of the client.
pub struct Runtime {
    pub config: Config,
    session: Mutex<Option<&'static Session>>,
    /// Bumped in a forked child, so it never touches its parent's connections.
    fork_epoch: AtomicU64,
    next_id: AtomicU64,
    sessions: AtomicU64,
    /// The call trace, when `VGPU_TRACE` names a file.
    pub trace: Option<crate::trace::Trace>,
    /// Keys already logged by [`crate::log::once`].
    pub logged_once: Mutex<HashSet<&'static str>>,
}

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// The runtime, built on first use. Safe from any thread and from library
/// constructors: it does no I/O and starts no threads.
pub fn runtime() -> &'static Runtime {
    RUNTIME.get_or_init(|| {
        // SAFETY: the three handlers are `extern "C" fn()`s that run in the
        // forking thread; they take and release the session slot's lock and
        // touch atomics, nothing else.
        unsafe {
            libc::pthread_atfork(
                Some(before_fork),
                Some(after_fork_in_parent),
                Some(after_fork_in_child),
            )
        };
        let config = Config::from_env(std::env::vars());
        let trace = config.trace.as_deref().and_then(crate::trace::Trace::open);
        Runtime {
            trace,
            config,
            session: Mutex::new(None),
            fork_epoch: AtomicU64::new(0),
            next_id: AtomicU64::new(1),
            sessions: AtomicU64::new(0),
            logged_once: Mutex::new(HashSet::new()),
        }
    })
}

thread_local! {
    /// The calling thread's last answer of [`Runtime::session`], with its
    /// fork epoch: no lock and no reference count on the hot path.
    static CURRENT: std::cell::Cell<Option<(u64, &'static Session)>> =
        const { std::cell::Cell::new(None) };
    /// The session slot's guard, held by the forking thread from
    /// [`before_fork`] until the fork returns: no other thread holds the lock
    /// at the fork, so the child never inherits it locked.
    static FORK_GUARD: RefCell<Option<MutexGuard<'static, Option<&'static Session>>>> =
        const { RefCell::new(None) };
}

extern "C" fn before_fork() {
    if let Some(rt) = RUNTIME.get() {
        let _ = FORK_GUARD.try_with(|g| {
            if let Ok(mut g) = g.try_borrow_mut() {
                *g = Some(rt.lock());
            }
        });
    }
}

fn release_fork_guard() {
    let _ = FORK_GUARD.try_with(|g| g.try_borrow_mut().map(|mut g| g.take()));
}

extern "C" fn after_fork_in_parent() {
    release_fork_guard();
}

extern "C" fn after_fork_in_child() {
    if let Some(rt) = RUNTIME.get() {
        rt.fork_epoch.fetch_add(1, Ordering::SeqCst);
    }
    release_fork_guard();
}

/// The VM region of this process's session, if it has one (for the exit
/// handler of `crate::vm`); never waits for the session lock.
pub(crate) fn current_vm_region() -> Option<std::sync::Arc<vgpu_transport::ivshmem::guest::Region>>
{
    let rt = RUNTIME.get()?;
    let slot = rt.session.try_lock().ok()?;
    slot.as_ref().and_then(|s| s.vm.clone())
}

/// The number of forks between the first CUDA call of this process's
/// lineage and this process: per-thread state tagged with an older epoch was
/// inherited from a parent and names nothing here.
pub fn fork_epoch() -> u64 {
    RUNTIME
        .get()
        .map_or(0, |rt| rt.fork_epoch.load(Ordering::SeqCst))
}

/// Kinds of client-minted handles; the kind sits in the top byte. Bit 63
/// stays clear, so bindings that hold handles as signed integers see positive
/// values, and bits 47..62 are not all equal, so every id is a non-canonical
/// address that faults if dereferenced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Context = 0x41,
    Stream = 0x42,
    Event = 0x43,
    Module = 0x44,
    Function = 0x45,
    Library = 0x46,
    Link = 0x4c,
}

impl Runtime {
    /// A fresh handle id. Ids are non-canonical addresses, so an application
    /// that dereferences one faults at once instead of reading garbage.
    pub fn mint(&self, kind: Kind) -> u64 {
        (u64::from(kind as u8) << 56) | self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, Option<&'static Session>> {
        self.session.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The live session, or `CUDA_ERROR_NOT_INITIALIZED` before a successful
    /// `cuInit` in this process.
    ///
    /// From inside a host callback it is `CUDA_ERROR_NOT_PERMITTED`: a
    /// callback must not call CUDA, and such a call must never wait on a
    /// lane that waits for the callback (`crate::callback`).
    pub fn session(&self) -> CuResult<&'static Session> {
        if crate::callback::running() {
            return Err(CuError::NOT_PERMITTED);
        }
        let epoch = self.fork_epoch.load(Ordering::SeqCst);
        // A thread's last answer holds for its epoch: a process's session
        // is set once per epoch (by `init`) and never replaced.
        let cached = CURRENT
            .try_with(|c| c.get())
            .ok()
            .flatten()
            .filter(|(e, _)| *e == epoch);
        if let Some((_, s)) = cached {
            return Ok(s);
        }
        match *self.lock() {
            Some(s) if s.epoch == epoch && s.init_status == 0 => {
                let _ = CURRENT.try_with(|c| c.set(Some((epoch, s))));
                Ok(s)
            }
            _ => Err(CuError::NOT_INITIALIZED),
        }
    }

    /// `cuInit`: connects once per process (again in a forked child) and
    /// returns the worker's `cuInit` status.
    pub fn init(&self) -> CuResult<()> {
        let epoch = self.fork_epoch.load(Ordering::SeqCst);
        let mut slot = self.lock();
        if let Some(s) = slot.as_ref().filter(|s| s.epoch == epoch) {
            if s.dead.load(Ordering::SeqCst) || s.control_hung_up() {
                s.dead.store(true, Ordering::SeqCst);
                return Err(CuError::DEVICE_UNAVAILABLE);
            }
            return crate::edge::check(s.init_status);
        }
        let serial = self.sessions.fetch_add(1, Ordering::Relaxed) + 1;
        let session = Session::connect(&self.config, epoch, serial).map_err(|e| {
            crate::log::line(format_args!("cuInit: {e}"));
            match e {
                // The VM's regions are all held: a resource limit, not a
                // missing device (docs/vm.md, "Limits").
                ConnectError::Full(_) => CuError::OUT_OF_MEMORY,
                _ => CuError::NO_DEVICE,
            }
        })?;
        let status = session.init_status;
        // Sessions live as long as the process: threads keep references
        // without counting them (at most one session per fork epoch).
        *slot = Some(Box::leak(Box::new(session)));
        crate::edge::check(status)
    }
}

/// One connection to a worker: the control channel, the snapshot it sent,
/// and the client's view of the session's objects.
pub struct Session {
    pub(crate) control: Mutex<Channel>,
    pub(crate) epoch: u64,
    pub(crate) serial: u64,
    pub(crate) dead: AtomicBool,
    /// The mediator is reached over TCP (`crate::remote`) or from a VM
    /// guest (`crate::vm`): nothing is shared with the worker.
    pub remote: bool,
    pub init_status: u32,
    pub driver_version: i32,
    pub devices: Vec<DeviceSnapshot>,
    pub objects: Mutex<Objects>,
    /// Lane transport, order tickets and counters (`crate::lane`).
    pub lanes: crate::lane::Lanes,
    /// Staging arenas for large pageable copies (`crate::staging`).
    pub staging: crate::staging::Stager,
    /// Stream captures this session began and has not ended
    /// (`api::graph`): while any is open nothing is posted, so the driver's
    /// answer to each call during capture comes back from the call itself.
    pub captures: std::sync::atomic::AtomicU32,
    /// Host callbacks and their channel (`crate::callback`).
    pub callbacks: crate::callback::Callbacks,
    /// The read end of the worker's standard output (`crate::output`).
    pub output: Option<std::sync::Arc<crate::output::Output>>,
    /// The region of the VM guest's PCI device this session runs in
    /// (`crate::vm`); `None` on sockets.
    pub(crate) vm: Option<std::sync::Arc<vgpu_transport::ivshmem::guest::Region>>,
    /// Held while a host registration or unregistration runs
    /// (`api::host_register`): deciding which pages move and moving them
    /// must not interleave with another thread's doing the same.
    pub registering: Mutex<()>,
}

impl From<vgpu_transport::connect::ConnectError> for ConnectError {
    fn from(e: vgpu_transport::connect::ConnectError) -> ConnectError {
        use vgpu_transport::connect::ConnectError as E;
        use vgpu_transport::ivshmem::guest::GuestError;
        match e {
            E::Transport(shown, e) => ConnectError::Transport(shown, e),
            E::Guest(_, e @ GuestError::Full(_)) => ConnectError::Full(e.to_string()),
            E::Guest(shown, e) => ConnectError::Vm(shown, e),
        }
    }
}

/// Errors while setting up a session.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// No usable mediator address was found.
    #[error("{0}")]
    Discovery(#[from] vgpu_transport::discovery::DiscoveryError),
    /// Nothing answered at the address.
    #[error("cannot reach the mediator at {0}: {1}")]
    Transport(String, vgpu_transport::TransportError),
    /// The handshake failed.
    #[error("handshake: {0}")]
    Proto(#[from] vgpu_proto::ProtoError),
    /// The worker hung up during the handshake: it refused our hello.
    #[error("the mediator closed the connection during the handshake; it refuses this client's protocol version or schema, or could not start its worker (its log says which)")]
    Refused,
    /// The VM's vgpu PCI device could not be used.
    #[error("cannot use the vgpu PCI device {0}: {1}")]
    Vm(String, vgpu_transport::ivshmem::guest::GuestError),
    /// Every session region of the VM's device is held.
    #[error("{0}")]
    Full(String),
    /// The transport `VGPU_TRANSPORT` demands is not on offer.
    #[error("{0}")]
    Lanes(String),
}

impl Session {
    fn connect(cfg: &Config, epoch: u64, serial: u64) -> Result<Session, ConnectError> {
        let found = vgpu_transport::discovery::find(&cfg.discovery, &cfg.pci_cache)?;
        crate::remote::check_transport(cfg, &found)?;
        let opts = vgpu_transport::connect::Options {
            tcp_timeout: crate::remote::CONNECT_TIMEOUT,
            tls: &cfg.tls,
            sysfs_root: &cfg.discovery.sysfs_root,
            guest_policy: crate::vm::policy(cfg),
        };
        let connected = vgpu_transport::connect::connect(&found, &opts)?;
        let (mut control, vm) = (connected.channel, connected.region);
        if vm.is_some() {
            crate::vm::release_at_exit();
        }
        // SAFETY: getuid has no preconditions and cannot fail.
        let uid = unsafe { libc::getuid() };
        let hello = Hello {
            features: crate::lane::hello_features(cfg),
            pid: std::process::id(),
            uid,
            env: cfg.cuda_env.clone(),
        };
        hello.write(&mut control)?;
        let welcome = Welcome::read(&mut control).map_err(|e| match e {
            vgpu_proto::ProtoError::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
                ConnectError::Refused
            }
            other => ConnectError::Proto(other),
        })?;
        let lanes = crate::lane::Lanes::new(cfg, welcome.features, control.is_tcp())
            .map_err(ConnectError::Lanes)?;
        crate::log::line(format_args!(
            "session {serial} connected to {found}: driver {}, {} device(s), cuInit status {}, lanes on {}",
            welcome.driver_version,
            welcome.devices.len(),
            welcome.init_status,
            if lanes.rings() {
                "rings"
            } else if control.is_tls() {
                "TLS connections"
            } else if control.is_tcp() {
                "TCP connections"
            } else if control.is_vm() {
                "rings in the ivshmem BAR"
            } else {
                "sockets"
            }
        ));
        let remote = control.is_tcp() || control.is_vm();
        let output = if remote {
            None
        } else {
            crate::output::open(&mut control)
        };
        Ok(Session {
            control: Mutex::new(control),
            epoch,
            serial,
            dead: AtomicBool::new(false),
            remote,
            init_status: welcome.init_status,
            driver_version: welcome.driver_version,
            devices: welcome.devices,
            objects: Mutex::new(Objects::default()),
            lanes,
            // Only on one host (a Unix socket) can the worker share pinned pages.
            staging: crate::staging::Stager::new(cfg.staging && !remote, cfg.copy_threads),
            captures: std::sync::atomic::AtomicU32::new(0),
            callbacks: crate::callback::Callbacks::default(),
            registering: Mutex::new(()),
            output,
            vm,
        })
    }

    /// The session's object tables.
    pub fn objects(&self) -> MutexGuard<'_, Objects> {
        self.objects.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The snapshot of device `ordinal`, or `CUDA_ERROR_INVALID_DEVICE`.
    pub fn device(&self, ordinal: i32) -> CuResult<&DeviceSnapshot> {
        usize::try_from(ordinal)
            .ok()
            .and_then(|i| self.devices.get(i))
            .ok_or(CuError::INVALID_DEVICE)
    }

    /// Whether the worker closed the control connection (it exited or crashed).
    fn control_hung_up(&self) -> bool {
        self.control.lock().map(|c| c.hung_up()).unwrap_or(true)
    }

    pub(crate) fn fail(&self, what: &str, e: impl std::fmt::Display) -> CuError {
        if !self.dead.swap(true, Ordering::SeqCst) {
            crate::log::always(format_args!(
                "session {}: the mediator went away ({what}: {e}); every later call fails with CUDA_ERROR_DEVICE_UNAVAILABLE",
                self.serial
            ));
        }
        CuError::DEVICE_UNAVAILABLE
    }
}
