//! The library's one global: the count of `nvmlInit`s and, while it is not
//! zero, the session with the mediator.
//!
//! A session is a control connection (a socket, or in a VM guest a region
//! of the vgpu PCI device: `vgpu_transport::connect`, as the CUDA client
//! connects) that speaks the handshake of every vgpu client (`Hello`, `Welcome`: the devices' snapshots) and then only
//! `NvmlQuery` requests, one at a time. Every read and write has a deadline,
//! so a mediator that stops answering costs at most that long, once: the
//! session is then lost, and every device call fails with
//! `NVML_ERROR_GPU_IS_LOST` until the last `nvmlShutdown`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use vgpu_proto::{nvml_query, write_request, DeviceSnapshot, Hello, Op, Response, Welcome};
use vgpu_transport::discovery::{self, PciCache};
use vgpu_transport::ivshmem::guest::Region;
use vgpu_transport::{connect, Channel, WaitPolicy};
use zerocopy::little_endian::U32;
use zerocopy::{FromBytes, IntoBytes};

use crate::config::{self, Config};
use crate::edge::{NvmlError, Res};

/// How long connecting and the handshake may take: the worker loads the
/// driver and runs `cuInit` before it answers.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one query may take.
const QUERY_TIMEOUT: Duration = Duration::from_secs(10);
/// How the streams of a VM guest's session wait for the worker: NVML
/// calls are rare, so briefly spinning, then napping; every 100 ms a
/// waiting stream checks that the region is still the session's.
const GUEST_POLICY: WaitPolicy = WaitPolicy {
    spin: Duration::from_micros(20),
    yield_for: Duration::from_micros(500),
    timeout: Some(Duration::from_millis(100)),
};

/// One connection to a worker.
pub struct Session {
    control: Mutex<Channel>,
    /// The devices as the handshake described them, in NVML's order (by PCI
    /// location, whatever order the worker's driver enumerates them in).
    pub devices: Vec<DeviceSnapshot>,
    /// The worker's ordinal of each device of `devices`.
    ordinals: Vec<u32>,
    /// The CUDA driver version (`cuDriverGetVersion`), e.g. 13000.
    pub cuda_version: i32,
    lost: AtomicBool,
    /// The process that connected: a forked child opens its own session.
    pid: u32,
    /// In a VM guest, the region of the vgpu PCI device the session runs
    /// in: given back when the session ends (or at exit).
    region: Option<Arc<Region>>,
}

impl Drop for Session {
    fn drop(&mut self) {
        // Only the process that claimed it gives it back (not a forked
        // child dropping what it inherited).
        if let Some(r) = &self.region {
            r.release();
        }
    }
}

/// Registers, once per process, the handler that gives the session's
/// region of a VM guest's device back at exit, so its worker ends at once.
fn release_at_exit() {
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    extern "C" fn release() {
        // Never wait at exit: a thread killed while holding the lock has
        // left it held.
        if let Ok(st) = STATE.try_lock() {
            if let Some(r) = st.session.as_ref().and_then(|s| s.region.as_ref()) {
                r.release();
            }
        }
    }
    // SAFETY: `release` is an `extern "C" fn()` that only tries the
    // library's lock, which lives for the whole process.
    AT_EXIT.call_once(|| unsafe {
        libc::atexit(release);
    });
}

/// What a query answered: NVML's two numbers and the blob.
pub struct Answer {
    pub a: u64,
    pub b: u64,
    pub blob: Vec<u8>,
}

struct State {
    count: u32,
    session: Option<Arc<Session>>,
}

static STATE: Mutex<State> = Mutex::new(State {
    count: 0,
    session: None,
});

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

thread_local! {
    /// [`STATE`]'s guard, held by the forking thread from [`before_fork`]
    /// until the fork returns: no other thread holds the lock at the fork,
    /// so a child never inherits it locked (and never waits for it forever).
    static FORK_GUARD: std::cell::RefCell<Option<MutexGuard<'static, State>>> =
        const { std::cell::RefCell::new(None) };
}

extern "C" fn before_fork() {
    let _ = FORK_GUARD.try_with(|g| {
        if let Ok(mut g) = g.try_borrow_mut() {
            *g = Some(state());
        }
    });
}

extern "C" fn after_fork() {
    let _ = FORK_GUARD.try_with(|g| g.try_borrow_mut().map(|mut g| g.take()));
}

/// Installs the fork handlers, once per process.
fn guard_forks() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: the handlers are `extern "C" fn()`s that run in the
        // forking thread and only take and release `STATE`'s lock.
        unsafe { libc::pthread_atfork(Some(before_fork), Some(after_fork), Some(after_fork)) };
    });
}

/// Whether `nvmlInit` has succeeded more often than `nvmlShutdown`.
pub fn initialized() -> bool {
    state().count > 0
}

/// `nvmlInit`: connects on the first call, counts every call.
pub fn init() -> Res<()> {
    guard_forks();
    let mut st = state();
    if st.count == 0 {
        let session = Session::connect(config::get()).map_err(|e| {
            config::log(format_args!("nvmlInit: {e}"));
            NvmlError::DRIVER_NOT_LOADED
        })?;
        st.session = Some(Arc::new(session));
    }
    st.count += 1;
    Ok(())
}

/// `nvmlShutdown`: the last matching call closes the session.
pub fn shutdown() -> Res<()> {
    let mut st = state();
    if st.count == 0 {
        return Err(NvmlError::UNINITIALIZED);
    }
    st.count -= 1;
    if st.count == 0 {
        st.session = None;
    }
    Ok(())
}

/// The live session, or `NVML_ERROR_UNINITIALIZED`. In a child forked
/// after `nvmlInit` the first call connects a session of the child's own, so
/// parent and child never share a connection (`NVML_ERROR_GPU_IS_LOST` if
/// that fails).
pub fn current() -> Res<Arc<Session>> {
    let mut st = state();
    let s = st.session.clone().ok_or(NvmlError::UNINITIALIZED)?;
    if s.pid == std::process::id() {
        return Ok(s);
    }
    let fresh = Session::connect(config::get()).map_err(|e| {
        config::log(format_args!("reconnecting after fork: {e}"));
        NvmlError::GPU_IS_LOST
    })?;
    let fresh = Arc::new(fresh);
    st.session = Some(Arc::clone(&fresh));
    Ok(fresh)
}

impl Session {
    fn connect(cfg: &Config) -> Result<Session, String> {
        let found =
            discovery::find(&cfg.discovery, &PciCache::default()).map_err(|e| e.to_string())?;
        let opts = connect::Options {
            tcp_timeout: HANDSHAKE_TIMEOUT,
            tls: &cfg.tls,
            sysfs_root: &cfg.discovery.sysfs_root,
            guest_policy: GUEST_POLICY,
        };
        let connected = connect::connect(&found, &opts).map_err(|e| e.to_string())?;
        let (mut control, region) = (connected.channel, connected.region);
        if region.is_some() {
            release_at_exit();
        }
        control
            .set_deadlines(HANDSHAKE_TIMEOUT)
            .map_err(|e| format!("cannot set a deadline: {e}"))?;
        let hello = Hello {
            features: 0,
            pid: std::process::id(),
            uid: rustix::process::getuid().as_raw(),
            env: Vec::new(),
        };
        hello.write(&mut control).map_err(|e| e.to_string())?;
        let welcome = Welcome::read(&mut control).map_err(|e| format!("handshake: {e}"))?;
        if welcome.init_status != 0 {
            return Err(format!(
                "the worker's cuInit failed with {}",
                welcome.init_status
            ));
        }
        control
            .set_deadlines(QUERY_TIMEOUT)
            .map_err(|e| format!("cannot set a deadline: {e}"))?;
        config::log(format_args!(
            "connected to {found}: {} device(s), CUDA {}",
            welcome.devices.len(),
            welcome.driver_version
        ));
        let mut ordered: Vec<(u32, DeviceSnapshot)> = (0..).zip(welcome.devices).collect();
        ordered.sort_by_key(|(_, d)| crate::api::location(d));
        let (ordinals, devices) = ordered.into_iter().unzip();
        Ok(Session {
            control: Mutex::new(control),
            devices,
            ordinals,
            cuda_version: welcome.driver_version,
            lost: AtomicBool::new(false),
            pid: std::process::id(),
            region,
        })
    }

    /// `Err(GPU_IS_LOST)` once the mediator has gone away.
    pub fn alive(&self) -> Res<()> {
        if self.lost.load(Ordering::SeqCst) {
            return Err(NvmlError::GPU_IS_LOST);
        }
        let hung_up = self.control.lock().map_or(true, |c| c.hung_up());
        if hung_up {
            self.lose("the mediator closed the connection");
            return Err(NvmlError::GPU_IS_LOST);
        }
        Ok(())
    }

    fn lose(&self, why: impl std::fmt::Display) {
        if !self.lost.swap(true, Ordering::SeqCst) {
            config::log(format_args!(
                "{why}; device calls now fail with NVML_ERROR_GPU_IS_LOST"
            ));
        }
    }

    /// Asks the worker for value `what` of device `index` (of `devices`)
    /// with `arg`; the worker's NVML status becomes the error.
    pub fn query(&self, index: usize, what: u32, arg: u32) -> Res<Answer> {
        self.query_with(index, what, arg, &[])
    }

    /// [`Session::query`] with a blob in the request.
    pub fn query_with(&self, index: usize, what: u32, arg: u32, blob: &[u8]) -> Res<Answer> {
        let ordinal = *self
            .ordinals
            .get(index)
            .ok_or(NvmlError::INVALID_ARGUMENT)?;
        self.ask(ordinal, what, arg, blob)
    }

    /// Asks the worker for system value `what`.
    pub fn query_system(&self, what: u32) -> Res<Answer> {
        self.ask(0, what, 0, &[])
    }

    fn ask(&self, device: u32, what: u32, arg: u32, blob: &[u8]) -> Res<Answer> {
        if self.lost.load(Ordering::SeqCst) {
            return Err(NvmlError::GPU_IS_LOST);
        }
        let req = nvml_query::Request {
            device: U32::new(device),
            what: U32::new(what),
            arg: U32::new(arg),
        };
        let result = {
            let mut control = self.control.lock().map_err(|_| NvmlError::UNKNOWN)?;
            write_request(&mut *control, Op::NvmlQuery, 0, 0, req.as_bytes(), blob)
                .and_then(|()| Response::read(&mut *control))
        };
        let resp = result.map_err(|e| {
            self.lose(format_args!("NvmlQuery: {e}"));
            NvmlError::GPU_IS_LOST
        })?;
        let rep = nvml_query::Reply::read_from_bytes(&resp.fixed)
            .ok()
            .filter(|_| resp.status == 0)
            .ok_or(NvmlError::UNKNOWN)?;
        NvmlError::check(rep.status.get())?;
        Ok(Answer {
            a: rep.a.get(),
            b: rep.b.get(),
            blob: resp.blob,
        })
    }
}
