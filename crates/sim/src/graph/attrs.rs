//! Kernel node launch attributes (`cuGraphKernelNode{Get,Set,Copy}Attribute[s]`).
//!
//! A kernel node keeps the attributes set on it; one never set reads as its default.
//! The simulator models the attributes a kernel node shares with a stream (access
//! policy window, priority, memory synchronisation domain and map), checked as for a
//! stream, and the cooperative flag; any other attribute is refused with
//! `CUDA_ERROR_INVALID_VALUE`. Attributes change nothing in how the simulator runs a
//! kernel. Conditional handles are made here too (`cuGraphConditionalHandleCreate`).

use super::{invalid, Work};
use crate::cu::CUstreamAttrValue;
use crate::error::Res;
use crate::state::stream::AttrValue;
use crate::state::State;
use crate::stream::{
    default_value, normalize, zeroed, ATTR_ACCESS_POLICY_WINDOW, ATTR_MEM_SYNC_DOMAIN,
    ATTR_MEM_SYNC_DOMAIN_MAP, ATTR_PRIORITY,
};

/// `CU_LAUNCH_ATTRIBUTE_COOPERATIVE`.
const ATTR_COOPERATIVE: u32 = 2;

/// Checks that `node` is a kernel node.
fn kernel_node(st: &State, node: usize) -> Res<()> {
    match st.ext.graphs.nodes.get(&node) {
        Some(n) if matches!(n.work, Work::Kernel { .. }) => Ok(()),
        Some(_) => invalid(format!("node {node:#x} is not a kernel node")),
        None => invalid(format!("node {node:#x} does not exist")),
    }
}

/// Checks `attr` and returns a value holding only the field it selects.
fn checked(attr: u32, v: &CUstreamAttrValue) -> Res<CUstreamAttrValue> {
    match attr {
        ATTR_PRIORITY => {
            let mut out = zeroed();
            // SAFETY: an int; every bit pattern is a valid value.
            out.priority = unsafe { v.priority };
            Ok(out)
        }
        ATTR_COOPERATIVE => {
            let mut out = zeroed();
            // SAFETY: an int; every bit pattern is a valid value.
            out.cooperative = i32::from(unsafe { v.cooperative } != 0);
            Ok(out)
        }
        ATTR_ACCESS_POLICY_WINDOW | ATTR_MEM_SYNC_DOMAIN_MAP | ATTR_MEM_SYNC_DOMAIN => {
            normalize(attr, v)
        }
        _ => invalid(format!("{attr} is not a kernel node attribute")),
    }
}

/// `cuGraphKernelNodeGetAttribute`: the value last set, or the attribute's default.
pub(crate) fn kernel_attr(st: &State, node: usize, attr: u32) -> Res<CUstreamAttrValue> {
    kernel_node(st, node)?;
    checked(attr, &zeroed())?;
    let set = st.ext.graphs.kernel_attrs.get(&node);
    Ok(set
        .and_then(|a| a.get(&attr))
        .map_or_else(|| default_value(attr), |a| a.0))
}

/// `cuGraphKernelNodeSetAttribute`: checks and keeps the value.
pub(crate) fn set_kernel_attr(
    st: &mut State,
    node: usize,
    attr: u32,
    v: &CUstreamAttrValue,
) -> Res<()> {
    kernel_node(st, node)?;
    let value = checked(attr, v)?;
    let attrs = st.ext.graphs.kernel_attrs.entry(node).or_default();
    attrs.insert(attr, AttrValue(value));
    Ok(())
}

/// `cuGraphKernelNodeCopyAttributes`: `dst` takes every attribute of `src`; both must be
/// kernel nodes.
pub(crate) fn copy_kernel_attrs(st: &mut State, dst: usize, src: usize) -> Res<()> {
    kernel_node(st, dst)?;
    kernel_node(st, src)?;
    let g = &mut st.ext.graphs;
    match g.kernel_attrs.get(&src).cloned() {
        Some(attrs) => g.kernel_attrs.insert(dst, attrs),
        None => g.kernel_attrs.remove(&dst),
    };
    Ok(())
}

/// `CU_GRAPH_COND_ASSIGN_DEFAULT`: the handle takes its default value at each launch.
const COND_ASSIGN_DEFAULT: u32 = 1;

/// `cuGraphConditionalHandleCreate`: a new handle of graph `key` in context `ctx`,
/// unique in the process, whose value is `default` (see `super::cond`).
pub(crate) fn conditional_handle(
    st: &mut State,
    key: usize,
    ctx: usize,
    default: u32,
    flags: u32,
) -> Res<u64> {
    if !st.ext.graphs.graphs.contains_key(&key) {
        return invalid(format!("graph {key:#x} does not exist"));
    }
    crate::context::live(st, ctx)?;
    if flags & !COND_ASSIGN_DEFAULT != 0 {
        return invalid(format!("conditional handle flags {flags:#x} are not valid"));
    }
    st.ext.graphs.conditionals += 1;
    let h = st.ext.graphs.conditionals;
    st.ext.graphs.handles.insert(h, (key, default));
    Ok(h)
}
