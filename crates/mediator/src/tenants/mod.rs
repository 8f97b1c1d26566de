//! Who may use this mediator, as which tenant, and within which limits.
//!
//! - [`file`]: the mediator file, parsed and checked.
//! - [`Policy`] (here): the Unix allowlist and the tenants, from the file;
//!   the supervisor asks it about each connection's [`Identity`] before
//!   it starts a worker, and counts each tenant's live sessions.
//! - [`quota`]: the tenants' shared device-memory counters, charged by
//!   the workers.
//! - [`devices`]: a tenant's devices, applied in its workers as a
//!   `CUDA_VISIBLE_DEVICES` composed with the client's own.
//! - [`pacing`]: compute weights, a launch clock per tenant.
//! - [`arrays`]: CUDA arrays' sizes, for the quota.
//! - [`supervise`] and [`worker`]: the supervisor's and the worker's sides.
//! - [`activation`]: listening sockets inherited from systemd.
//! - [`unix`]: the Unix sockets' mode and group, and the peer's groups.
//!
//! The trust model is in `docs/security.md`.

pub mod activation;
pub mod arrays;
pub mod devices;
pub mod file;
pub mod globals;
pub mod graphs;
pub mod pacing;
pub mod quota;
pub mod supervise;
pub mod unix;
pub mod worker;

use std::collections::HashMap;
use std::sync::Mutex;

use crate::identity::Identity;
use crate::sessions::Refusal;
use file::{DeviceRef, GroupRef};

/// What the supervisor takes from the mediator file.
#[derive(Debug, Default)]
pub struct Settings {
    pub policy: Policy,
    /// File mode of the Unix sockets the supervisor binds.
    pub unix_mode: u32,
    /// Their group, if the file names one.
    pub unix_group: Option<u32>,
    /// `[mps]` (tenants name their groups).
    pub mps: crate::mps::Settings,
}

impl Settings {
    /// The settings of `file`; without a file, nobody is restricted beyond
    /// the socket's mode, [`unix::DEFAULT_MODE`].
    pub fn new(file: Option<&file::File>) -> Result<Settings, String> {
        let Some(f) = file else {
            return Ok(Settings {
                unix_mode: unix::DEFAULT_MODE,
                ..Settings::default()
            });
        };
        let unix_mode = match &f.unix.mode {
            Some(m) => file::parse_mode(m.get_ref())?,
            None => unix::DEFAULT_MODE,
        };
        let unix_group = match &f.unix.group {
            Some(g) => Some(unix::gid(g.get_ref())?),
            None => None,
        };
        let span =
            |p: &Option<toml::Spanned<std::path::PathBuf>>| p.as_ref().map(|p| p.get_ref().clone());
        Ok(Settings {
            policy: Policy::new(f)?,
            unix_mode,
            unix_group,
            mps: crate::mps::Settings {
                control: span(&f.mps.control),
                dir: span(&f.mps.dir),
            },
        })
    }
}

/// One tenant, resolved from its `[[tenant]]` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tenant {
    pub name: String,
    pub uids: Vec<u32>,
    pub gids: Vec<u32>,
    /// Names of its bearer tokens (the transport checks the secrets).
    pub token_names: Vec<String>,
    /// Each token's name and the SHA-256 of its secret.
    pub token_digests: Vec<(String, [u8; 32])>,
    pub cert_names: Vec<String>,
    /// Bytes of device memory all of its sessions may hold together.
    pub memory_limit: Option<u64>,
    pub max_sessions: Option<u32>,
    /// The devices it sees, as `CUDA_VISIBLE_DEVICES` names them.
    pub devices: Option<Vec<DeviceRef>>,
    /// Its compute weight (1 when the file gives none).
    pub weight: u32,
    /// Its MPS group and settings, if its sessions run under MPS.
    pub mps: Option<crate::mps::TenantMps>,
}

/// The tenant a connection was admitted as: its index in the file's
/// order, and the tenant.
pub type Admitted<'a> = Option<(usize, &'a Tenant)>;

/// The supervisor's admission rules.
#[derive(Debug, Default)]
pub struct Policy {
    /// Uids and gids allowed on Unix sockets besides the tenants' own.
    allow_uids: Vec<u32>,
    allow_gids: Vec<u32>,
    pub tenants: Vec<Tenant>,
    /// Some tenant has a `weight`: every tenant's launches are paced.
    pub weighted: bool,
    /// Live sessions by tenant index.
    live: Mutex<HashMap<usize, u32>>,
}

/// Why a connection is refused, for the log and the metrics.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused {
    pub reason: Refusal,
    pub why: String,
}

impl Policy {
    /// The rules of `f`; group names are looked up in the system's group
    /// database.
    pub fn new(f: &file::File) -> Result<Policy, String> {
        if f.tenants.len() > quota::MAX_TENANTS {
            return Err(format!(
                "{} tenants: a mediator serves {} at most",
                f.tenants.len(),
                quota::MAX_TENANTS
            ));
        }
        let gids = |groups: &[toml::Spanned<GroupRef>]| -> Result<Vec<u32>, String> {
            groups.iter().map(|g| unix::gid(g.get_ref())).collect()
        };
        let mut tenants = Vec::new();
        for t in &f.tenants {
            tenants.push(Tenant {
                name: t.name.get_ref().clone(),
                uids: t.uids.clone(),
                gids: gids(&t.groups)?,
                token_names: t.tokens.iter().map(|k| k.name.clone()).collect(),
                token_digests: t
                    .tokens
                    .iter()
                    .map(|k| Ok((k.name.clone(), file::parse_digest(k.sha256.get_ref())?)))
                    .collect::<Result<_, String>>()?,
                cert_names: t.cert_names.clone(),
                memory_limit: match &t.memory_limit {
                    Some(l) => Some(file::parse_size(l.get_ref())?),
                    None => None,
                },
                max_sessions: t.max_sessions,
                devices: t.devices.clone(),
                weight: t.weight.as_ref().map_or(1, |w| *w.get_ref()),
                mps: match &t.mps_group {
                    Some(group) => Some(crate::mps::TenantMps {
                        group: group.get_ref().clone(),
                        active_thread_percentage: t
                            .mps_active_thread_percentage
                            .as_ref()
                            .map(|p| *p.get_ref()),
                        pinned_memory_limit: match &t.mps_pinned_memory_limit {
                            Some(l) => Some(file::parse_size(l.get_ref())?),
                            None => None,
                        },
                    }),
                    None => None,
                },
            });
        }
        Ok(Policy {
            allow_uids: f.unix.allow_uids.clone(),
            allow_gids: gids(&f.unix.allow_groups)?,
            weighted: f.tenants.iter().any(|t| t.weight.is_some()),
            tenants,
            live: Mutex::new(HashMap::new()),
        })
    }

    /// Whether anything restricts who may connect over a Unix socket;
    /// otherwise the socket's file mode is the only gate.
    pub fn gates_unix(&self) -> bool {
        !(self.allow_uids.is_empty() && self.allow_gids.is_empty() && self.tenants.is_empty())
    }

    /// Decides about a client: refused, or admitted as a tenant (or as no
    /// tenant where none are configured, or for root and the mediator's
    /// own uid when no tenant names them). `groups` are the peer's
    /// supplementary groups (Unix sockets).
    pub fn admit(&self, id: &Identity, groups: &[u32]) -> Result<Admitted<'_>, Refused> {
        let gids: Vec<u32> = id.gid.into_iter().chain(groups.iter().copied()).collect();
        let tenant = self.tenant_of(id, &gids);
        let own = rustix::process::geteuid().as_raw();
        let privileged = id.uid.is_some_and(|u| u == 0 || u == own);
        if let Some(uid) = id.uid {
            let allowed = !self.gates_unix()
                || privileged
                || tenant.is_some()
                || self.allow_uids.contains(&uid)
                || gids.iter().any(|g| self.allow_gids.contains(g));
            if !allowed {
                return Err(Refused {
                    reason: Refusal::NotAllowed,
                    why: format!(
                        "uid {uid} is not allowed ([unix] allow_uids, allow_groups, tenants)"
                    ),
                });
            }
        }
        match tenant {
            Some(t) => Ok(Some(t)),
            None if self.tenants.is_empty() || privileged => Ok(None),
            None => Err(Refused {
                reason: Refusal::NoTenant,
                why: "no tenant names this client (uids, groups, tokens, cert_names)".into(),
            }),
        }
    }

    /// The first tenant that names the client: by uid, then by group, then
    /// by token name, then by certificate name.
    fn tenant_of(&self, id: &Identity, gids: &[u32]) -> Admitted<'_> {
        let find =
            |pred: &dyn Fn(&Tenant) -> bool| self.tenants.iter().enumerate().find(|(_, t)| pred(t));
        id.uid
            .and_then(|u| find(&|t| t.uids.contains(&u)))
            .or_else(|| find(&|t| t.gids.iter().any(|g| gids.contains(g))))
            .or_else(|| {
                let token = id.token_name.as_deref()?;
                find(&|t| t.token_names.iter().any(|n| n == token))
            })
            .or_else(|| {
                let cert = id.cert_name.as_deref()?;
                find(&|t| t.cert_names.iter().any(|n| n == cert))
            })
    }

    /// The name of the configured token whose secret has SHA-256 `digest`
    /// (the transport hashes what the client presents). Every configured
    /// digest is compared in full, in time that does not depend on where
    /// the bytes differ.
    pub fn token_name(&self, digest: &[u8; 32]) -> Option<&str> {
        let mut found = None;
        for (name, want) in self.tenants.iter().flat_map(|t| &t.token_digests) {
            let diff = want
                .iter()
                .zip(digest)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b));
            if diff == 0 && found.is_none() {
                found = Some(name.as_str());
            }
        }
        found
    }

    /// Counts a new session of tenant `index`, unless it has its
    /// `max_sessions` live already.
    pub fn start_session(&self, index: usize) -> Result<(), Refused> {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let n = live.entry(index).or_default();
        let t = &self.tenants[index];
        if t.max_sessions.is_some_and(|max| *n >= max) {
            return Err(Refused {
                reason: Refusal::TenantSessions,
                why: format!(
                    "tenant {} has {} live sessions, its max_sessions",
                    t.name, n
                ),
            });
        }
        *n += 1;
        Ok(())
    }

    /// A session of tenant `index` ended (or its worker did not start).
    pub fn end_session(&self, index: usize) {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = live.get_mut(&index) {
            *n = n.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(text: &str) -> Policy {
        let f = file::parse(std::path::Path::new("t.toml"), text).expect("parses");
        Policy::new(&f).expect("policy")
    }

    fn unix(uid: u32, gid: u32) -> Identity {
        Identity {
            uid: Some(uid),
            gid: Some(gid),
            pid: Some(1),
            ..Identity::default()
        }
    }

    const TWO: &str = r#"
[unix]
allow_uids = [5000]
allow_groups = [6000]

[[tenant]]
name = "a"
uids = [1000]
max_sessions = 1

[[tenant]]
name = "b"
uids = [2000]
groups = [3000]
tokens = [{ name = "ci", sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" }]
cert_names = ["svc.example"]
"#;

    #[test]
    fn nothing_configured_keeps_the_socket_mode_as_the_gate() {
        let p = policy("");
        assert!(!p.gates_unix());
        assert_eq!(p.admit(&unix(1234, 1234), &[]), Ok(None));
    }

    #[test]
    fn clients_map_to_tenants_in_order() {
        let p = policy(TWO);
        assert!(p.gates_unix());
        let name = |r: Result<Admitted<'_>, Refused>| r.map(|t| t.map(|(_, t)| t.name.clone()));
        assert_eq!(name(p.admit(&unix(1000, 1000), &[])), Ok(Some("a".into())));
        // By uid first: uid 1000 in group 3000 is still tenant a.
        assert_eq!(name(p.admit(&unix(1000, 3000), &[])), Ok(Some("a".into())));
        // By supplementary group.
        assert_eq!(
            name(p.admit(&unix(4000, 4000), &[7, 3000])),
            Ok(Some("b".into()))
        );
        let token = Identity {
            token_name: Some("ci".into()),
            ..Identity::default()
        };
        assert_eq!(name(p.admit(&token, &[])), Ok(Some("b".into())));
        // SHA-256 of "test", as the file holds it.
        let digest =
            file::parse_digest("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
                .expect("hex");
        assert_eq!(p.token_name(&digest), Some("ci"));
        assert_eq!(p.token_name(&[0; 32]), None);
        let cert = Identity {
            cert_name: Some("svc.example".into()),
            ..Identity::default()
        };
        assert_eq!(name(p.admit(&cert, &[])), Ok(Some("b".into())));
        // Allowed on the socket, but no tenant names it.
        let e = p.admit(&unix(5000, 5000), &[]).expect_err("no tenant");
        assert_eq!(e.reason, Refusal::NoTenant);
        let e = p.admit(&unix(4000, 4000), &[]).expect_err("not allowed");
        assert_eq!(e.reason, Refusal::NotAllowed);
        assert!(e.why.contains("uid 4000"), "{}", e.why);
        assert_eq!(
            p.admit(&Identity::default(), &[]).map_err(|e| e.reason),
            Err(Refusal::NoTenant)
        );
        // Root is always allowed, and served without a tenant.
        assert_eq!(name(p.admit(&unix(0, 0), &[])), Ok(None));
    }

    #[test]
    fn session_limits() {
        let p = policy(TWO);
        assert_eq!(p.start_session(0), Ok(()));
        let e = p.start_session(0).expect_err("one at most");
        assert_eq!(e.reason, Refusal::TenantSessions);
        assert_eq!(p.start_session(1), Ok(()));
        assert_eq!(p.start_session(1), Ok(()), "b has no limit");
        p.end_session(0);
        assert_eq!(p.start_session(0), Ok(()));
    }
}
