//! Executable graphs: instantiation, update, upload and launch.

use std::collections::HashSet;
use std::ffi::c_void;

use super::{captured, invalid, Exec, Work};
use crate::error::Res;
use crate::state::{Sim, State};
use crate::stream;

/// Graph `key`'s nodes and a snapshot of their work, child graphs' work included.
pub(super) fn work_of(st: &State, key: usize) -> Res<(Vec<usize>, Vec<Work>)> {
    let g = &st.ext.graphs;
    let Some(graph) = g.graphs.get(&key) else {
        return invalid(format!("graph {key:#x} does not exist"));
    };
    let mut nodes = Vec::new();
    let mut work = Vec::new();
    for (k, n) in in_dependency_order(st, &graph.nodes) {
        nodes.push(k);
        work.push(match &n.work {
            Work::Child { graph, .. } => Work::Child {
                graph: *graph,
                work: work_of(st, *graph)?.1,
            },
            Work::Conditional {
                handle,
                kind,
                bodies,
                ..
            } => Work::Conditional {
                handle: *handle,
                kind: *kind,
                bodies: bodies.clone(),
                work: bodies
                    .iter()
                    .map(|b| work_of(st, *b).map(|w| w.1))
                    .collect::<Res<_>>()?,
            },
            w => w.clone(),
        });
    }
    Ok((nodes, work))
}

/// A graph's nodes (`keys`, in the order they were added) so that each comes after
/// the nodes it depends on: the first node whose dependencies have all come, again and
/// again (edges may be added between nodes after them, so the order added is not
/// enough). A cycle, which the driver refuses elsewhere, keeps the order added.
fn in_dependency_order<'a>(st: &'a State, keys: &[usize]) -> Vec<(usize, &'a super::Node)> {
    let g = &st.ext.graphs;
    let mut left: Vec<(usize, &super::Node)> = keys
        .iter()
        .filter_map(|k| g.nodes.get(k).map(|n| (*k, n)))
        .collect();
    let mut done = HashSet::new();
    let mut out = Vec::with_capacity(left.len());
    while !left.is_empty() {
        let ready = left
            .iter()
            .position(|(_, n)| n.deps.iter().all(|d| done.contains(d) || !keys.contains(d)));
        let (k, n) = left.remove(ready.unwrap_or(0));
        done.insert(k);
        out.push((k, n));
    }
    out
}

/// `cuGraphInstantiateWithFlags`: a snapshot of the graph's work, in the current context.
pub(crate) fn instantiate(st: &mut State, key: usize, flags: u64) -> Res<usize> {
    // CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | _UPLOAD | _DEVICE_LAUNCH | _USE_NODE_PRIORITY
    if flags & !0xF != 0 {
        return invalid(format!("instantiate flags {flags:#x} are not valid"));
    }
    let ctx = crate::context::current(st)?;
    let (nodes, work) = work_of(st, key)?;
    let exec = st.mint();
    let e = Exec {
        ctx,
        flags,
        nodes,
        work,
        disabled: HashSet::new(),
    };
    st.ext.graphs.execs.insert(exec, e);
    super::user::copy_held(st, key, exec);
    Ok(exec)
}

pub(super) fn exec(st: &State, key: usize) -> Res<&Exec> {
    match st.ext.graphs.execs.get(&key) {
        Some(e) => Ok(e),
        None => invalid(format!("executable graph {key:#x} does not exist")),
    }
}

/// `cuGraphExecUpdate`: the executable graph takes graph `key`'s work when both have
/// nodes of the same types in the same order: `(0, 0)`; otherwise nothing changes and
/// the result is `CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED` (2) or
/// `…_NODE_TYPE_CHANGED` (3) with the node that differs (0 for none).
pub(crate) fn exec_update(st: &mut State, exec_key: usize, key: usize) -> Res<(u32, usize)> {
    exec(st, exec_key)?;
    let (nodes, work) = work_of(st, key)?;
    let old = &exec(st, exec_key)?.work;
    if old.len() != work.len() {
        return Ok((2, 0));
    }
    if let Some(i) = (0..work.len()).find(|&i| old[i].node_type() != work[i].node_type()) {
        return Ok((3, nodes.get(i).copied().unwrap_or(0)));
    }
    if let Some(e) = st.ext.graphs.execs.get_mut(&exec_key) {
        e.work = work;
        e.nodes = nodes;
    }
    Ok((0, 0))
}

/// `cuGraphExecDestroy`.
pub(crate) fn exec_destroy(st: &mut State, key: usize) -> Res<()> {
    match st.ext.graphs.execs.remove(&key) {
        Some(_) => {
            super::user::drop_held(st, key);
            Ok(())
        }
        None => invalid(format!("executable graph {key:#x} does not exist")),
    }
}

/// `cuGraphExecGetFlags`.
pub(crate) fn exec_flags(st: &State, key: usize) -> Res<u64> {
    exec(st, key).map(|e| e.flags)
}

/// `cuGraphUpload`: nothing to upload; checks the graph and the stream.
pub(crate) fn upload(st: &State, key: usize, stream_key: usize) -> Res<()> {
    let ctx = exec(st, key)?.ctx;
    if stream::usable(st, stream_key)? != ctx {
        return invalid("executable graph and stream belong to different contexts");
    }
    Ok(())
}

/// `cuGraphLaunch`: runs the work in order on the stream (records it when the stream is
/// capturing), child graphs' work in its place. The first failing node's error is the
/// launch's. Host nodes run without the device's lock held, so that a host function
/// that blocks (a worker waiting for its client) stalls only this launch.
pub(crate) fn launch(sim: &Sim, key: usize, stream_key: usize) -> Res<()> {
    let work = {
        let st = sim.lock();
        upload(&st, key, stream_key)?;
        let e = exec(&st, key)?;
        let enabled = (e.nodes.iter().zip(&e.work)).map(|(n, w)| match e.disabled.contains(n) {
            true => Work::Empty,
            false => w.clone(),
        });
        flatten(&st, enabled)?
    };
    for w in work {
        match w {
            Work::Host { f, data } => {
                {
                    let mut st = sim.lock();
                    stream::usable(&st, stream_key)?;
                    if captured(&mut st, stream_key, || Work::Host { f, data })? {
                        continue;
                    }
                }
                // SAFETY: the function and argument the application gave the host
                // node, called as the driver calls it, with no lock of ours held.
                unsafe { f(data as *mut c_void) };
            }
            // A wait may block until another process signals: no lock is held.
            Work::ExtSem { wait, sems, params } => {
                let resolved = {
                    let mut st = sim.lock();
                    stream::usable(&st, stream_key)?;
                    let again = || Work::ExtSem {
                        wait,
                        sems: sems.clone(),
                        params: params.clone(),
                    };
                    if captured(&mut st, stream_key, again)? {
                        continue;
                    }
                    crate::semaphore::resolve(&st, &sems)?
                };
                ext_sem(&resolved, wait, &params)?;
            }
            w => run(&mut sim.lock(), stream_key, w)?,
        }
    }
    Ok(())
}

/// The work in order, each child graph node replaced by its graph's work and each
/// conditional node by the work of the bodies its handle's value picks.
fn flatten(st: &State, work: impl IntoIterator<Item = Work>) -> Res<Vec<Work>> {
    let mut out = Vec::new();
    for w in work {
        match w {
            Work::Child { work, .. } => out.extend(flatten(st, work)?),
            Work::Conditional {
                handle, kind, work, ..
            } => {
                let picked = super::chosen(st, handle, kind, work.len())?;
                for i in picked {
                    out.extend(flatten(st, work.get(i).cloned().unwrap_or_default())?);
                }
            }
            w => out.push(w),
        }
    }
    Ok(out)
}

/// Signals or waits (`wait`) for each semaphore with its fence value.
fn ext_sem(
    sems: &[(std::os::fd::OwnedFd, bool)],
    wait: bool,
    params: &[super::RawSemParams],
) -> Res<()> {
    let values: Vec<u64> = params.iter().map(|p| p[0]).collect();
    match wait {
        true => crate::semaphore::wait(sems, &values),
        false => crate::semaphore::signal(sems, &values),
    }
}

/// Runs (or records) one node's work on a stream.
fn run(st: &mut State, stream_key: usize, w: Work) -> Res<()> {
    match w {
        Work::Memset {
            dst,
            pattern,
            count,
        } => {
            if captured(st, stream_key, || Work::Memset {
                dst,
                pattern: pattern.clone(),
                count,
            })? {
                return Ok(());
            }
            crate::memory::memset(st, dst, &pattern, count)
        }
        Work::Copy { dst, src, len } => {
            if captured(st, stream_key, || Work::Copy { dst, src, len })? {
                return Ok(());
            }
            // SAFETY: host ends were given by the application when the copy was captured
            // or added, valid (as the driver requires) whenever the graph runs.
            unsafe { crate::memory::copy(st, dst.end(), src.end(), len) }
        }
        Work::Kernel {
            func,
            geometry,
            args,
        } => {
            let ptrs: Vec<*const c_void> = args.iter().map(|a| a.as_ptr().cast()).collect();
            // SAFETY: one pointer per parameter, each to that parameter's bytes, as they
            // were read when the launch was captured.
            unsafe { crate::launch::launch_kernel(st, func, geometry, stream_key, ptrs.as_ptr()) }
        }
        Work::EventRecord { captured: true, .. } => Ok(()),
        Work::EventRecord { event, .. } => crate::event::record_replayed(st, event),
        Work::Memset2D {
            dst,
            pitch,
            pattern,
            width,
            height,
        } => {
            stream::usable(st, stream_key)?;
            let again = Work::Memset2D {
                dst,
                pitch,
                pattern: pattern.clone(),
                width,
                height,
            };
            if captured(st, stream_key, || again)? {
                return Ok(());
            }
            crate::memory::memset_2d(st, dst, pitch, &pattern, width, height)
        }
        Work::Empty => {
            stream::usable(st, stream_key)?;
            captured(st, stream_key, || w).map(drop)
        }
        Work::EventWait { event } => {
            crate::event::get(st, event)?;
            stream::usable(st, stream_key)?;
            captured(st, stream_key, || w).map(drop)
        }
        Work::Child { work, .. } => work.into_iter().try_for_each(|w| run(st, stream_key, w)),
        Work::MemAlloc { .. } | Work::MemFree { .. } => Ok(()),
        Work::Copy3D(c) => {
            stream::usable(st, stream_key)?;
            if captured(st, stream_key, || Work::Copy3D(c))? {
                return Ok(());
            }
            // SAFETY: host sides were given by the application when the node was made,
            // valid (as the driver requires) whenever the graph runs.
            unsafe { crate::array::copy_3d(st, &c.0) }
        }
        // Only `launch` meets host nodes, and runs them without the lock.
        Work::Host { f, data } => {
            stream::usable(st, stream_key)?;
            let _ = captured(st, stream_key, || Work::Host { f, data })?;
            Ok(())
        }
        // Only `launch` meets these (it runs semaphore waits without the lock and
        // expands conditional nodes); run here, a wait would hold the lock.
        Work::ExtSem { wait, sems, params } => {
            stream::usable(st, stream_key)?;
            let again = || Work::ExtSem {
                wait,
                sems: sems.clone(),
                params: params.clone(),
            };
            if captured(st, stream_key, again)? {
                return Ok(());
            }
            ext_sem(&crate::semaphore::resolve(st, &sems)?, wait, &params)
        }
        Work::Conditional { .. } => invalid("a conditional node is expanded at launch"),
        Work::MemOps(ops) => ops
            .into_iter()
            .try_for_each(|op| crate::memop::enqueue(st, stream_key, op)),
    }
}
