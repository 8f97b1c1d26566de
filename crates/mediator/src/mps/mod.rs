//! MPS mode: the sessions of tenants that name an `mps_group` run as
//! clients of an NVIDIA MPS server, one server per group, which the
//! supervisor starts, watches and stops (ADR 0010, `docs/mps.md`).
//!
//! Separate contexts take turns on a GPU; an MPS server runs its clients'
//! kernels side by side. The price is shared fate: a fatal fault in one
//! client (an illegal address, a device-side assert) tears down every
//! client of its server. So the mode is per group of tenants:
//!
//! - Each group has a control daemon of its own
//!   (`nvidia-cuda-mps-control -f`, a child of the supervisor in a session
//!   of its own, run as the worker user), with its own pipe and log
//!   folders under `[mps] dir`. The daemon starts the group's server when
//!   its first client comes.
//! - A session of a group's tenant gets the group's pipe folder
//!   (`CUDA_MPS_PIPE_DIRECTORY`) and its tenant's active-thread percentage
//!   and pinned-memory limit in its worker's environment, before the
//!   worker loads the driver. Clients cannot change them: the hello's
//!   environment allowlist has no `CUDA_MPS_` key.
//! - A worker records in its session slot the first status that lost its
//!   context ([`note`]). When a group's session has one, the supervisor
//!   restarts the group: it ends the group's sessions (MPS tore down
//!   their contexts already), quits the daemon and starts a fresh one.
//!   Other groups, and tenants outside MPS, are not touched.
//! - A daemon that exits by itself is logged and restarted the same way,
//!   after a back-off when it keeps dying.
//! - When the supervisor stops, each daemon is told to quit: it ends once
//!   its server's clients are gone, so live sessions keep running.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

mod daemon;

pub use daemon::control_program;
use daemon::{backoff, default_dir, group_names, kill_group, make_dir};

use crate::driver::Status;
use crate::privilege::Credentials;
use crate::MediatorError;

/// The control program looked up on `PATH` when `[mps] control` is not set.
pub const CONTROL: &str = "nvidia-cuda-mps-control";
/// How long a new session of a group waits for its daemon to be ready.
const READY_WAIT: Duration = Duration::from_secs(15);
/// How long a new daemon has to open its control socket.
const START_WAIT: Duration = Duration::from_secs(10);
/// How long a daemon has to quit before its process group is killed.
const QUIT_WAIT: Duration = Duration::from_secs(5);
/// How often the watcher looks at daemons and faults.
const TICK: Duration = Duration::from_millis(100);
/// A daemon that exits sooner than this after its start failed to start;
/// each such exit in a row doubles the wait before the next start.
const QUICK_EXIT: Duration = Duration::from_secs(10);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A tenant's MPS settings (`mps_group`, `mps_active_thread_percentage`,
/// `mps_pinned_memory_limit`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TenantMps {
    pub group: String,
    pub active_thread_percentage: Option<u32>,
    /// Bytes, on each device the session sees.
    pub pinned_memory_limit: Option<u64>,
}

/// `[mps]`: the control program and the folder of the groups' folders.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    pub control: Option<PathBuf>,
    pub dir: Option<PathBuf>,
}

/// Statuses after which a context is lost for good: the driver returns
/// them from every later call, and under MPS the fault has torn down every
/// client of the server.
pub fn is_fatal(st: Status) -> bool {
    matches!(
        st,
        Status::CUDA_ERROR_ILLEGAL_ADDRESS
            | Status::CUDA_ERROR_ASSERT
            | Status::CUDA_ERROR_HARDWARE_STACK_ERROR
            | Status::CUDA_ERROR_ILLEGAL_INSTRUCTION
            | Status::CUDA_ERROR_MISALIGNED_ADDRESS
            | Status::CUDA_ERROR_INVALID_ADDRESS_SPACE
            | Status::CUDA_ERROR_INVALID_PC
            | Status::CUDA_ERROR_LAUNCH_FAILED
            | Status::CUDA_ERROR_ECC_UNCORRECTABLE
            | Status::CUDA_ERROR_MPS_CLIENT_TERMINATED
            | Status::CUDA_ERROR_MPS_RPC_FAILURE
    )
}

/// In a worker: records `st` in the session's slot if it is the first
/// fatal status of the session. Called on failed calls only.
pub fn note(st: Status) {
    if !is_fatal(st) {
        return;
    }
    if let Some(slot) = crate::sessions::own() {
        let first = slot.fault.compare_exchange(0, st.0, Relaxed, Relaxed);
        if first.is_ok() {
            tracing::warn!(
                status = st.0,
                "the GPU context is lost (a fatal fault); the session's calls fail from now on"
            );
        }
    }
}

/// The supervisor's MPS groups.
pub struct Mps {
    control: PathBuf,
    run_as: Option<Credentials>,
    groups: Vec<Group>,
    /// Sessions of MPS tenants, by worker pid.
    members: Mutex<HashMap<u32, Member>>,
    /// Running `control quit` commands, which the reaper collects too.
    quitters: Mutex<Vec<u32>>,
}

/// A worker's environment: names and values.
pub type Env = Vec<(String, String)>;

/// Which group's daemon start a new session joins.
#[derive(Clone, Copy, Debug)]
pub struct Join {
    group: usize,
    generation: u64,
}

/// A session of a group: its group, the daemon start it joined, its slot.
#[derive(Clone, Copy, Debug)]
pub struct Member {
    group: usize,
    generation: u64,
    slot: usize,
}

struct Group {
    name: String,
    pipe: PathBuf,
    log: PathBuf,
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// The control daemon's pid while it runs.
    daemon: Option<u32>,
    /// Counts the daemon's starts; a session joins the current one.
    generation: u64,
    /// The daemon's control socket is up and no restart is under way.
    ready: bool,
    /// The supervisor asked the daemon to quit: its exit is expected.
    quitting: bool,
    started: Option<Instant>,
    /// When the daemon may be started next.
    next_start: Option<Instant>,
    quick_exits: u32,
}

impl Mps {
    /// The groups that `tenants` name, in the order first named, with
    /// their folders made; `None` when no tenant names one. The daemons
    /// start with [`Mps::watch`].
    pub fn new(
        settings: &Settings,
        tenants: &[crate::tenants::Tenant],
        run_as: Option<Credentials>,
    ) -> Result<Option<Arc<Mps>>, MediatorError> {
        let Some(control) = control_program(settings, tenants)? else {
            return Ok(None);
        };
        let names = group_names(tenants);
        let dir = settings.dir.clone().unwrap_or_else(default_dir);
        make_dir(&dir, 0o755, None)?;
        let mut groups = Vec::new();
        for name in names {
            let (pipe, log) = (dir.join(name).join("pipe"), dir.join(name).join("log"));
            make_dir(&dir.join(name), 0o755, None)?;
            for d in [&pipe, &log] {
                make_dir(d, 0o700, run_as.as_ref())?;
            }
            groups.push(Group {
                name: name.to_owned(),
                pipe,
                log,
                state: Mutex::new(State::default()),
                changed: Condvar::new(),
            });
        }
        Ok(Some(Arc::new(Mps {
            control,
            run_as,
            groups,
            members: Mutex::new(HashMap::new()),
            quitters: Mutex::new(Vec::new()),
        })))
    }

    /// Starts every group's daemon, and a thread that restarts daemons
    /// that exit and groups whose sessions faulted.
    pub fn watch(self: &Arc<Self>) -> std::io::Result<()> {
        for g in &self.groups {
            tracing::info!(
                group = g.name,
                pipe = %g.pipe.display(),
                log = %g.log.display(),
                control = %self.control.display(),
                "MPS group: starting its control daemon"
            );
        }
        let mps = Arc::clone(self);
        std::thread::Builder::new()
            .name("mps".into())
            .spawn(move || loop {
                for i in 0..mps.groups.len() {
                    mps.tend(i);
                }
                std::thread::sleep(TICK);
            })?;
        Ok(())
    }

    /// The worker environment of a session of a tenant with settings `t`,
    /// and its membership, once the group's daemon is ready (waiting up to
    /// [`READY_WAIT`]); an error if it is not.
    pub fn session_env(&self, t: &TenantMps, devices: usize) -> Result<(Env, Join), String> {
        let i = self
            .groups
            .iter()
            .position(|g| g.name == t.group)
            .ok_or_else(|| format!("no MPS group {}", t.group))?;
        let g = &self.groups[i];
        let state = lock(&g.state);
        let (state, _) = g
            .changed
            .wait_timeout_while(state, READY_WAIT, |s| !s.ready)
            .unwrap_or_else(|e| e.into_inner());
        if !state.ready {
            return Err(format!(
                "MPS group {} is not ready (its control daemon is starting or restarting)",
                g.name
            ));
        }
        let mut env = vec![
            ("CUDA_MPS_PIPE_DIRECTORY".to_owned(), path_text(&g.pipe)),
            ("CUDA_MPS_LOG_DIRECTORY".to_owned(), path_text(&g.log)),
        ];
        if let Some(p) = t.active_thread_percentage {
            env.push(("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE".into(), p.to_string()));
        }
        if let Some(bytes) = t.pinned_memory_limit {
            env.push((
                "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT".into(),
                pinned_limit(bytes, devices),
            ));
        }
        let join = Join {
            group: i,
            generation: state.generation,
        };
        Ok((env, join))
    }

    /// Worker `pid` in `slot` joined a group's daemon start (`join`, from
    /// [`Mps::session_env`]).
    pub fn joined(&self, pid: u32, join: Join, slot: usize) {
        let member = Member {
            group: join.group,
            generation: join.generation,
            slot,
        };
        lock(&self.members).insert(pid, member);
    }

    /// A child the reaper collected: `true` if it was a group's daemon or
    /// a `quit` command (handled here), `false` for a worker (forgotten
    /// here if it was a member; the census handles it).
    pub fn reaped(&self, pid: u32, status: rustix::process::WaitStatus) -> bool {
        {
            let mut quitters = lock(&self.quitters);
            if let Some(at) = quitters.iter().position(|&q| q == pid) {
                quitters.swap_remove(at);
                return true;
            }
        }
        for g in &self.groups {
            let mut s = lock(&g.state);
            if s.daemon != Some(pid) {
                continue;
            }
            s.daemon = None;
            s.ready = false;
            let quick = s.started.is_some_and(|t| t.elapsed() < QUICK_EXIT);
            if std::mem::take(&mut s.quitting) {
                tracing::info!(group = g.name, daemon = pid, "MPS control daemon quit");
                s.next_start = Some(Instant::now());
            } else {
                s.quick_exits = if quick { s.quick_exits + 1 } else { 0 };
                let wait = backoff(s.quick_exits);
                tracing::warn!(
                    group = g.name,
                    daemon = pid,
                    ?status,
                    "MPS control daemon exited by itself; restarting the group in {wait:?} \
                     (its log: {})",
                    g.log.display()
                );
                s.next_start = Some(Instant::now() + wait);
            }
            g.changed.notify_all();
            return true;
        }
        lock(&self.members).remove(&pid);
        false
    }

    /// Tells every daemon to quit (the supervisor is stopping). Each ends
    /// once its server has no clients left, so live sessions go on.
    pub fn stop(&self) {
        for g in &self.groups {
            if lock(&g.state).daemon.is_some() {
                let _ = self.ask_quit(g, Duration::from_secs(1));
            }
        }
    }

    /// One look at group `i`: a fault among its sessions restarts it; a
    /// group without a daemon gets one when its back-off is over.
    fn tend(&self, i: usize) {
        let g = &self.groups[i];
        let (running, ready, generation, due) = {
            let s = lock(&g.state);
            let due = s.next_start.is_none_or(|t| Instant::now() >= t);
            (s.daemon.is_some(), s.ready, s.generation, due)
        };
        if !running {
            if due {
                self.start(i);
            }
            return;
        }
        if ready {
            if let Some((pid, status)) = self.fault_in(i, generation) {
                self.restart(i, pid, status);
            }
        }
    }

    /// A member of the current start of group `i` whose slot holds a fatal
    /// status: its worker pid and that status.
    fn fault_in(&self, i: usize, generation: u64) -> Option<(u32, u32)> {
        let table = crate::sessions::table()?;
        let members = lock(&self.members);
        members
            .iter()
            .filter(|(_, m)| m.group == i && m.generation == generation)
            .find_map(|(&pid, m)| {
                let slot = table.slot(m.slot)?;
                let fault = slot.fault.load(Relaxed);
                (fault != 0 && slot.worker_pid.load(Relaxed) == pid).then_some((pid, fault))
            })
    }

    /// Restarts group `i` after worker `pid`'s fatal `status`: ends its
    /// sessions, quits its daemon; [`Mps::tend`] starts the next.
    fn restart(&self, i: usize, pid: u32, status: u32) {
        let g = &self.groups[i];
        let generation = {
            let mut s = lock(&g.state);
            s.ready = false;
            s.generation
        };
        tracing::warn!(
            group = g.name,
            worker = pid,
            status,
            "MPS group: a session's GPU context was lost to a fatal fault, and MPS tears down \
             every client of the group's server; restarting the group (other groups and \
             tenants are not touched)"
        );
        self.end_members(i, generation);
        if let Err(e) = self.ask_quit(g, QUIT_WAIT) {
            tracing::warn!(
                group = g.name,
                "MPS control daemon did not quit: {e}; killing it"
            );
            let daemon = lock(&g.state).daemon;
            if let Some(d) = daemon {
                kill_group(d);
            }
        }
    }

    /// Ends the workers of group `i` that joined daemon start `generation`
    /// or an earlier one: their contexts are gone with the server.
    fn end_members(&self, i: usize, generation: u64) {
        let pids: Vec<u32> = lock(&self.members)
            .iter()
            .filter(|(_, m)| m.group == i && m.generation <= generation)
            .map(|(&pid, _)| pid)
            .collect();
        for pid in &pids {
            if let Some(p) = rustix::process::Pid::from_raw(*pid as i32) {
                let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
            }
        }
        if !pids.is_empty() {
            tracing::warn!(
                group = self.groups[i].name,
                workers = ?pids,
                "MPS group: ended its sessions"
            );
            let mut members = lock(&self.members);
            for pid in pids {
                members.remove(&pid);
            }
        }
    }
}

/// `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT` for `bytes` on each of `devices`
/// devices (at least one): `0=NM,1=NM,…` in whole MiB.
pub fn pinned_limit(bytes: u64, devices: usize) -> String {
    let mib = (bytes >> 20).max(1);
    (0..devices.max(1))
        .map(|d| format!("{d}={mib}M"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The GPUs of this host, as their device nodes count them.
pub fn host_devices() -> usize {
    std::fs::read_dir("/dev")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.strip_prefix("nvidia")
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        })
        .count()
}

fn path_text(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fatal_statuses() {
        assert!(is_fatal(Status::CUDA_ERROR_ILLEGAL_ADDRESS));
        assert!(is_fatal(Status::CUDA_ERROR_MPS_CLIENT_TERMINATED));
        assert!(!is_fatal(Status::CUDA_ERROR_OUT_OF_MEMORY));
        assert!(!is_fatal(Status::CUDA_ERROR_INVALID_VALUE));
    }

    #[test]
    fn pinned_limits_name_every_device_in_mib() {
        assert_eq!(pinned_limit(2 << 30, 2), "0=2048M,1=2048M");
        assert_eq!(pinned_limit(1, 0), "0=1M");
    }

    #[test]
    fn backoff_doubles_to_a_ceiling() {
        assert_eq!(backoff(0), Duration::ZERO);
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(3), Duration::from_secs(4));
        assert_eq!(backoff(40), MAX_BACKOFF);
    }
}
