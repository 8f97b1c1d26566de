//! External-semaphore signal and wait nodes (`cuGraphAddExternalSemaphoresSignalNode`,
//! `…WaitNode` and their parameters). A node keeps its semaphores and parameter structs
//! as given (`…GetParams` hands out pointers to them); at each launch it signals or
//! waits for each semaphore in turn with the fence value its struct starts with, as
//! `cuSignalExternalSemaphoresAsync` and `cuWaitExternalSemaphoresAsync` do on the
//! simulated device (`crate::semaphore`).

use super::node::exec_index;
use super::{add_node_after, invalid, Work};
use crate::error::Res;
use crate::state::State;

/// One `CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS` or `…_WAIT_PARAMS` as 8-byte words (its
/// size and alignment); the first is the fence value.
pub(crate) type RawSemParams = [u64; 18];

/// The kind of node, for messages.
fn kind(wait: bool) -> &'static str {
    match wait {
        true => "an external-semaphore wait node",
        false => "an external-semaphore signal node",
    }
}

/// `cuGraphAddExternalSemaphores{Signal,Wait}Node`: every semaphore must be live.
pub(crate) fn add_ext_sem(
    st: &mut State,
    key: usize,
    deps: &[usize],
    wait: bool,
    sems: Vec<usize>,
    params: Vec<RawSemParams>,
) -> Res<usize> {
    crate::semaphore::resolve(st, &sems)?;
    let work = Work::ExtSem { wait, sems, params };
    add_node_after(st, key, deps, work)
}

/// `cuGraphExternalSemaphores{Signal,Wait}NodeGetParams`: the node's semaphores and
/// parameter structs, which stay where they are until the node's parameters change.
pub(crate) fn ext_sem_of(st: &State, node: usize, wait: bool) -> Res<(&[usize], &[RawSemParams])> {
    match st.ext.graphs.nodes.get(&node).map(|n| &n.work) {
        Some(Work::ExtSem {
            wait: w,
            sems,
            params,
        }) if *w == wait => Ok((sems, params)),
        _ => invalid(format!("node {node:#x} is not {}", kind(wait))),
    }
}

/// `cuGraphExternalSemaphores{Signal,Wait}NodeSetParams`.
pub(crate) fn set_ext_sem(
    st: &mut State,
    node: usize,
    wait: bool,
    sems: Vec<usize>,
    params: Vec<RawSemParams>,
) -> Res<()> {
    ext_sem_of(st, node, wait)?;
    crate::semaphore::resolve(st, &sems)?;
    if let Some(n) = st.ext.graphs.nodes.get_mut(&node) {
        n.work = Work::ExtSem { wait, sems, params };
    }
    Ok(())
}

/// `cuGraphExecExternalSemaphores{Signal,Wait}NodeSetParams`: the executable graph's
/// copy changes (the number of semaphores may not); the graph's node keeps its own.
pub(crate) fn exec_set_ext_sem(
    st: &mut State,
    exec_key: usize,
    node: usize,
    wait: bool,
    sems: Vec<usize>,
    params: Vec<RawSemParams>,
) -> Res<()> {
    crate::semaphore::resolve(st, &sems)?;
    let i = exec_index(st, exec_key, node)?;
    let slot = st
        .ext
        .graphs
        .execs
        .get_mut(&exec_key)
        .and_then(|e| e.work.get_mut(i));
    let Some(w) = slot else {
        return invalid(format!("node {node:#x} is not {}", kind(wait)));
    };
    match w {
        Work::ExtSem {
            wait: kept,
            sems: old,
            ..
        } if *kept == wait => {
            if old.len() != sems.len() {
                return invalid(
                    "an executable graph's external-semaphore node keeps its number of semaphores",
                );
            }
            *w = Work::ExtSem { wait, sems, params };
            Ok(())
        }
        _ => invalid(format!("node {node:#x} is not {}", kind(wait))),
    }
}
