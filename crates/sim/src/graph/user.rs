//! User objects: reference-counted application objects whose destructor runs when the
//! last reference goes. References are held by the application and by graphs
//! (`cuGraphRetainUserObject`); an executable graph holds a copy of its graph's when
//! instantiated, until it is destroyed. A destructor that becomes due is queued here
//! and run by the export once the device's lock is released ([`take_due`]), since it
//! may block (a worker asking its client to run it).

use std::collections::HashMap;

use super::{invalid, HostFn};
use crate::error::Res;
use crate::state::State;

/// `CU_USER_OBJECT_NO_DESTRUCTOR_SYNC`, the one flag, which the driver requires.
const NO_DESTRUCTOR_SYNC: u32 = 1;
/// `CU_GRAPH_USER_OBJECT_MOVE`: the caller's references move to the graph.
const MOVE: u32 = 1;

/// One user object.
#[derive(Debug)]
pub(crate) struct UserObject {
    refs: u64,
    destroy: HostFn,
    ptr: usize,
}

/// User objects, the references graphs and executable graphs hold, and destructors due.
#[derive(Debug, Default)]
pub(crate) struct UserObjects {
    objects: HashMap<usize, UserObject>,
    /// (graph or executable graph, object) -> references held.
    held: HashMap<(usize, usize), u64>,
    due: Vec<(HostFn, usize)>,
}

/// `cuUserObjectCreate`.
pub(crate) fn create_user_object(
    st: &mut State,
    destroy: HostFn,
    ptr: usize,
    refs: u32,
    flags: u32,
) -> Res<usize> {
    if refs == 0 || flags != NO_DESTRUCTOR_SYNC {
        return invalid("a user object needs references and CU_USER_OBJECT_NO_DESTRUCTOR_SYNC");
    }
    let key = st.mint();
    let o = UserObject {
        refs: u64::from(refs),
        destroy,
        ptr,
    };
    st.ext.graphs.users.objects.insert(key, o);
    Ok(key)
}

/// Adds `count` references to `key`.
pub(crate) fn retain_user_object(st: &mut State, key: usize, count: u32) -> Res<()> {
    match st.ext.graphs.users.objects.get_mut(&key) {
        Some(o) if count > 0 => {
            o.refs += u64::from(count);
            Ok(())
        }
        _ => invalid(format!("{key:#x} is not a user object, or the count is 0")),
    }
}

/// Drops `count` references of `key`; the last one queues its destructor.
pub(crate) fn release_user_object(st: &mut State, key: usize, count: u64) -> Res<()> {
    let u = &mut st.ext.graphs.users;
    match u.objects.get_mut(&key) {
        Some(o) if count > 0 && count <= o.refs => {
            o.refs -= count;
            if o.refs == 0 {
                if let Some(o) = u.objects.remove(&key) {
                    u.due.push((o.destroy, o.ptr));
                }
            }
            Ok(())
        }
        _ => invalid(format!(
            "{key:#x} is not a user object, or holds fewer references"
        )),
    }
}

/// `cuGraphRetainUserObject`: graph `owner` holds `count` more references, moved from
/// the caller's with `CU_GRAPH_USER_OBJECT_MOVE`.
pub(crate) fn graph_retain(
    st: &mut State,
    owner: usize,
    key: usize,
    count: u32,
    flags: u32,
) -> Res<()> {
    if !st.ext.graphs.graphs.contains_key(&owner) || flags & !MOVE != 0 {
        return invalid(format!(
            "graph {owner:#x} does not exist, or flags {flags:#x}"
        ));
    }
    if flags & MOVE == 0 {
        retain_user_object(st, key, count)?;
    } else if count == 0 || !st.ext.graphs.users.objects.contains_key(&key) {
        return invalid(format!("{key:#x} is not a user object, or the count is 0"));
    }
    *st.ext.graphs.users.held.entry((owner, key)).or_default() += u64::from(count);
    Ok(())
}

/// `cuGraphReleaseUserObject`: graph `owner` drops `count` of the references it holds.
pub(crate) fn graph_release(st: &mut State, owner: usize, key: usize, count: u32) -> Res<()> {
    let count = u64::from(count);
    match st.ext.graphs.users.held.get_mut(&(owner, key)) {
        Some(n) if count > 0 && count <= *n => *n -= count,
        _ => {
            return invalid(format!(
                "graph {owner:#x} holds fewer references to {key:#x}"
            ))
        }
    }
    release_user_object(st, key, count)
}

/// A copy of `graph`'s references for `exec` (at instantiation).
pub(crate) fn copy_held(st: &mut State, graph: usize, exec: usize) {
    let held: Vec<(usize, u64)> = (st.ext.graphs.users.held.iter())
        .filter(|((g, _), n)| *g == graph && **n > 0)
        .map(|((_, k), n)| (*k, *n))
        .collect();
    for (k, n) in held {
        if let Some(o) = st.ext.graphs.users.objects.get_mut(&k) {
            o.refs += n;
            st.ext.graphs.users.held.insert((exec, k), n);
        }
    }
}

/// Drops every reference `owner` (a destroyed graph or executable graph) holds.
pub(crate) fn drop_held(st: &mut State, owner: usize) {
    let held: Vec<(usize, u64)> = (st.ext.graphs.users.held.iter())
        .filter(|((g, _), n)| *g == owner && **n > 0)
        .map(|((_, k), n)| (*k, *n))
        .collect();
    st.ext.graphs.users.held.retain(|(g, _), _| *g != owner);
    for (k, n) in held {
        let _ = release_user_object(st, k, n);
    }
}

/// The destructors that became due, for the caller to run without the lock.
pub(crate) fn take_due(st: &mut State) -> Vec<(HostFn, usize)> {
    std::mem::take(&mut st.ext.graphs.users.due)
}
