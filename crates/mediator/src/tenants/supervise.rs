//! The supervisor's side of tenants: who a new connection is, whether it
//! is admitted and as which tenant, what its worker is told, and what is
//! given back when the worker ends.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Mutex;

use vgpu_transport::Channel;

use super::quota::QuotaTable;
use super::{devices, Policy, Refused};
use crate::identity::Identity;
use crate::sessions::Refusal;

/// The tenants of a running supervisor.
pub struct Tenancy {
    pub policy: Policy,
    /// The tenants' memory counters (made when any tenant is configured).
    quotas: Option<QuotaTable>,
    /// Tenant index and session slot of each running worker of a tenant.
    workers: Mutex<HashMap<u32, (usize, usize)>>,
}

/// One tenant's use, for metrics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TenantUsage {
    pub name: String,
    /// Device memory its sessions hold, as its quota counts it.
    pub memory_used: u64,
    pub memory_limit: Option<u64>,
    /// Its live sessions.
    pub sessions: u64,
}

/// A connection the policy admitted: its identity and tenant.
#[derive(Debug)]
pub struct Admission {
    pub identity: Identity,
    pub tenant: Option<usize>,
}

impl Tenancy {
    pub fn new(policy: Policy) -> std::io::Result<Tenancy> {
        let quotas = if policy.tenants.is_empty() {
            None
        } else {
            Some(QuotaTable::create()?)
        };
        Ok(Tenancy {
            policy,
            quotas,
            workers: Mutex::new(HashMap::new()),
        })
    }

    /// Says in the log what admits Unix clients.
    pub fn log_gate(&self) {
        let n = self.policy.tenants.len();
        if self.policy.gates_unix() {
            tracing::info!(
                tenants = n,
                "Unix clients are admitted by uid and group ([unix] allow lists, tenants); \
                 root and the mediator's own uid always"
            );
        } else {
            tracing::info!(
                "no [unix] allow lists and no tenants are configured: the Unix socket's file \
                 mode is the only gate"
            );
        }
    }

    /// Decides about an identity ([`identify`] for a Unix or TCP peer; a
    /// TLS handshake that verified a certificate or a token fills in its
    /// names), with the peer's supplementary `groups`: refused (logged here
    /// with the uid and pid), or admitted. With `count`, a session of its
    /// tenant starts and counts against its `max_sessions` (give it back
    /// with [`Tenancy::not_started`] if no worker starts); without, as for
    /// a status query, nothing is counted.
    pub fn decide_identity(
        &self,
        identity: Identity,
        groups: &[u32],
        count: bool,
    ) -> Result<Admission, Refusal> {
        let admitted = self.policy.admit(&identity, groups).and_then(|t| match t {
            Some((index, _)) if count => self.policy.start_session(index).map(|()| Some(index)),
            Some((index, _)) => Ok(Some(index)),
            None => Ok(None),
        });
        match admitted {
            Ok(tenant) => Ok(Admission { identity, tenant }),
            Err(Refused { reason, why }) => {
                tracing::warn!(
                    uid = identity.uid,
                    pid = identity.pid,
                    peer = identity.peer.map(|p| p.to_string()),
                    reason = reason.label(),
                    "refusing a session: {why}"
                );
                Err(reason)
            }
        }
    }
}

/// What the kernel says of the peer of `conn`: on a Unix socket its uid,
/// gid, pid and supplementary groups; on TCP only its address.
pub fn identify(conn: &Channel) -> (Identity, Vec<u32>) {
    let mut identity = Identity {
        peer: conn.peer_addr(),
        ..Identity::default()
    };
    let mut groups = Vec::new();
    if let (Ok((pid, uid, gid)), Some(fd)) = (conn.peer_credentials(), conn.socket_fd()) {
        identity.uid = Some(uid);
        identity.gid = Some(gid);
        identity.pid = Some(pid);
        groups = super::unix::peer_groups(fd);
    }
    (identity, groups)
}

impl Tenancy {
    /// The worker's extra arguments and descriptors for a session of
    /// `tenant` (its session slot is on its command line already).
    pub fn worker_args(&self, tenant: Option<usize>) -> (Vec<String>, Vec<OwnedFd>) {
        let (Some(index), Some(quotas)) = (tenant, &self.quotas) else {
            return (Vec::new(), Vec::new());
        };
        let t = &self.policy.tenants[index];
        let mut args = vec![
            "--tenant".to_owned(),
            t.name.clone(),
            "--tenant-index".to_owned(),
            index.to_string(),
        ];
        let mut fds = Vec::new();
        match quotas.fd().try_clone() {
            Ok(fd) => {
                args.extend([
                    "--quota-table".to_owned(),
                    fd.as_raw_fd().to_string(),
                    "--memory-limit".to_owned(),
                    t.memory_limit.unwrap_or(u64::MAX).to_string(),
                ]);
                fds.push(fd);
            }
            Err(e) => tracing::error!("cannot share the quota table: {e}"),
        }
        if let Some(list) = &t.devices {
            args.extend(["--tenant-devices".to_owned(), devices::to_arg(list)]);
        }
        if self.policy.weighted {
            args.extend(["--tenant-weight".to_owned(), t.weight.to_string()]);
        }
        (args, fds)
    }

    /// The worker of a session of `tenant` in `slot` started as `pid`.
    pub fn started(&self, pid: u32, tenant: Option<usize>, slot: usize) {
        if let Some(index) = tenant {
            self.lock().insert(pid, (index, slot));
        }
    }

    /// No worker started for an admitted session of `tenant`.
    pub fn not_started(&self, tenant: Option<usize>) {
        if let Some(index) = tenant {
            self.policy.end_session(index);
        }
    }

    /// Worker `pid` ended, however it ended: its tenant's session and the
    /// memory its slot charged are given back. Call before its session
    /// slot is freed.
    pub fn ended(&self, pid: u32) {
        let Some((index, slot)) = self.lock().remove(&pid) else {
            return;
        };
        self.policy.end_session(index);
        if let Some(q) = &self.quotas {
            let bytes = q.give_back(index, slot);
            if bytes > 0 {
                tracing::info!(
                    worker = pid,
                    tenant = self.policy.tenants[index].name,
                    bytes,
                    "gave back the device memory the ended worker still held"
                );
            }
        }
    }

    /// The tenant name of worker `pid`'s session, if it has one.
    pub fn tenant_of_worker(&self, pid: u32) -> Option<&str> {
        let (index, _) = *self.lock().get(&pid)?;
        self.policy.tenants.get(index).map(|t| t.name.as_str())
    }

    /// Each tenant's use now.
    pub fn usage(&self) -> Vec<TenantUsage> {
        let workers = self.lock();
        self.policy
            .tenants
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let used = self.quotas.as_ref().map_or(0, |q| q.used(i));
                let live = workers.values().filter(|(index, _)| *index == i).count();
                TenantUsage {
                    name: t.name.clone(),
                    memory_used: used,
                    memory_limit: t.memory_limit,
                    sessions: u64::try_from(live).unwrap_or(u64::MAX),
                }
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u32, (usize, usize)>> {
        self.workers.lock().unwrap_or_else(|e| e.into_inner())
    }
}
