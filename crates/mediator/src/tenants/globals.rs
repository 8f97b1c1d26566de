//! Module and library globals against a tenant's quota.
//!
//! A module's globals take device memory when the module loads, and the
//! driver says how much only per global (`cuModuleGetGlobal`,
//! `cuLibraryGetGlobal`). So each global is charged the first time the
//! session looks it up, whatever the limit (the memory is already taken;
//! the tenant's next allocation sees it), and given back when its module
//! or library is unloaded. Globals never looked up are not charged; a
//! module that goes with its destroyed context stays charged until the
//! session ends.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use vgpu_proto::{Op, Request};

/// Charged globals by owner (the request's module or library id, tagged by
/// its kind): their addresses and their total bytes.
type Charged = HashMap<(bool, u64), (HashSet<u64>, u64)>;

static CHARGED: Mutex<Option<Charged>> = Mutex::new(None);

fn dword(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// The owner a request names: (is a library, id).
fn owner(req: &Request) -> Option<(bool, u64)> {
    match req.op {
        Op::ModuleGlobal | Op::ModuleUnload => Some((false, dword(&req.fixed, 0))),
        Op::LibraryGlobal | Op::LibraryUnload => Some((true, dword(&req.fixed, 0))),
        _ => None,
    }
}

/// After `req` succeeded with `reply`: the bytes to charge now (a global
/// looked up for the first time) and to give back (an unload).
pub fn settle(req: &Request, reply: &[u8]) -> (u64, u64) {
    let Some(key) = owner(req) else {
        return (0, 0);
    };
    let mut charged = CHARGED.lock().unwrap_or_else(|e| e.into_inner());
    let charged = charged.get_or_insert_with(HashMap::new);
    match req.op {
        Op::ModuleGlobal | Op::LibraryGlobal => {
            let (dptr, bytes) = (dword(reply, 0), dword(reply, 8));
            let (seen, total) = charged.entry(key).or_default();
            if dptr != 0 && seen.insert(dptr) {
                *total = total.saturating_add(bytes);
                (bytes, 0)
            } else {
                (0, 0)
            }
        }
        _ => (0, charged.remove(&key).map_or(0, |(_, total)| total)),
    }
}
