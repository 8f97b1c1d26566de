//! Graph memory: memory allocation and free nodes, and the device's graph memory
//! attributes and trim. The simulator allocates a graph allocation's memory when its
//! node is made and keeps it (see `crate::graph::Work::MemAlloc`), outside any graph
//! memory accounting: every attribute reads 0, and trimming has nothing to release.

use std::ffi::c_void;
use std::sync::Mutex;

use super::nodes::node_keys;
use crate::cu::{
    CUdeviceptr, CUgraph, CUgraphMem_attribute, CUgraphNode, CUmemAccessDesc, CUmemAccess_flags,
    CUmemAllocationType, CUmemLocation, CUmemLocationType, CUresult, CUDA_MEM_ALLOC_NODE_PARAMS,
};
use crate::error::{err, Res};
use crate::ffi::{handle, key, run, Out};
use crate::{graph, memory, state};

/// `CU_GRAPH_MEM_ATTR_USED_MEM_HIGH` and `CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH`:
/// the high watermarks, the only attributes that may be set (to 0, a reset).
const HIGH: [u32; 2] = [1, 3];
/// `CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH`, the last attribute.
const LAST: u32 = 3;

fn check(dev: i32, attr: CUgraphMem_attribute, value: *mut c_void) -> Res<()> {
    state::sim()?.check_device(dev)?;
    if value.is_null() || attr.0 > LAST {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!(
                "graph memory attribute {} or its value is not valid",
                attr.0
            ),
        );
    }
    Ok(())
}

/// `cuDeviceGetGraphMemAttribute`.
///
/// # Safety
/// `value` must be NULL or valid for a write of a `cuuint64_t`.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetGraphMemAttribute(
    dev: i32,
    attr: CUgraphMem_attribute,
    value: *mut c_void,
) -> CUresult {
    run("cuDeviceGetGraphMemAttribute", || {
        check(dev, attr, value)?;
        // SAFETY: checked non-NULL; valid by the contract.
        unsafe { value.cast::<u64>().write_unaligned(0) };
        Ok(())
    })
}

/// `cuDeviceSetGraphMemAttribute`: only a high watermark, only reset to 0.
///
/// # Safety
/// `value` must be NULL or valid for a read of a `cuuint64_t`.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceSetGraphMemAttribute(
    dev: i32,
    attr: CUgraphMem_attribute,
    value: *mut c_void,
) -> CUresult {
    run("cuDeviceSetGraphMemAttribute", || {
        check(dev, attr, value)?;
        // SAFETY: checked non-NULL; valid by the contract.
        let v = unsafe { value.cast::<u64>().read_unaligned() };
        if !HIGH.contains(&attr.0) || v != 0 {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("graph memory attribute {} cannot be set to {v}", attr.0),
            );
        }
        Ok(())
    })
}

/// `cuDeviceGraphMemTrim`: checks the device; there is nothing to release.
pub(crate) fn device_graph_mem_trim(dev: i32) -> Res<()> {
    state::sim()?.check_device(dev).map(drop)
}

/// `CU_MEM_ALLOCATION_TYPE_PINNED` and `CU_MEM_LOCATION_TYPE_DEVICE`, the only
/// kind and place of a graph allocation the simulator models.
const PINNED: u32 = 1;
const ON_DEVICE: u32 = 1;

/// `cuGraphAddMemAllocNode`: allocates `bytesize` bytes on the pool's device in
/// the current context, and writes the address to `p.dptr`.
///
/// # Safety
/// `ph` NULL or valid for a write, `deps` NULL or `n` handles, `p` NULL or valid
/// for a read and a write, with `accessDescCount` descriptors.
#[no_mangle]
pub unsafe extern "C" fn cuGraphAddMemAllocNode(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    p: *mut CUDA_MEM_ALLOC_NODE_PARAMS,
) -> CUresult {
    run("cuGraphAddMemAllocNode", || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let out = unsafe { Out::new(ph, "phGraphNode") }?;
        if p.is_null() {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                "the parameters are NULL",
            );
        }
        // SAFETY: checked non-NULL; valid by the contract.
        let c = unsafe { p.read_unaligned() };
        let props = c.poolProps;
        if props.allocType.0 != PINNED || props.location.type_.0 != ON_DEVICE || c.bytesize == 0 {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                "a graph allocation is pinned device memory of at least one byte",
            );
        }
        let access = match c.accessDescCount {
            0 => Vec::new(),
            _ if c.accessDescs.is_null() => {
                return err(
                    CUresult::CUDA_ERROR_INVALID_VALUE,
                    "the access descriptors are NULL",
                )
            }
            // SAFETY: `accessDescCount` descriptors by the contract.
            count => unsafe { std::slice::from_raw_parts(c.accessDescs, count) }
                .iter()
                .map(|d| (d.location.type_.0, d.location.id, d.flags.0))
                .collect(),
        };
        let sim = state::sim()?;
        sim.check_device(props.location.id)?;
        let mut st = sim.lock();
        // SAFETY: forwarded from this function's contract.
        let deps = unsafe { node_keys(deps, n) }?;
        let ctx = crate::context::current(&st)?;
        let dptr = memory::alloc(&mut st, sim.cfg.memory_bytes, ctx, c.bytesize)?;
        let work = graph::Work::MemAlloc {
            dptr,
            bytes: c.bytesize,
            device: props.location.id,
            access,
        };
        match graph::add_node_after(&mut st, key(g), &deps, work) {
            Ok(node) => {
                out.write(handle(node));
                // SAFETY: checked non-NULL; valid for a write by the contract.
                unsafe { (&raw mut (*p).dptr).write_unaligned(dptr) };
                Ok(())
            }
            Err(e) => {
                memory::free(&mut st, dptr)?;
                Err(e)
            }
        }
    })
}

/// The access descriptors `cuGraphMemAllocNodeGetParams` handed out, kept for the
/// process's life: the caller's parameters point into them.
static GIVEN: Mutex<Vec<Box<[CUmemAccessDesc]>>> = Mutex::new(Vec::new());

/// `cuGraphMemAllocNodeGetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn cuGraphMemAllocNodeGetParams(
    node: CUgraphNode,
    p: *mut CUDA_MEM_ALLOC_NODE_PARAMS,
) -> CUresult {
    run("cuGraphMemAllocNodeGetParams", || {
        // SAFETY: the caller's pointer, valid as the CUDA API requires.
        let out = unsafe { Out::new(p, "params_out") }?;
        let work = graph::mem_alloc_of(&state::sim()?.lock(), key(node))?;
        let graph::Work::MemAlloc {
            dptr,
            bytes,
            device,
            access,
        } = work
        else {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                "not a memory allocation node",
            );
        };
        // SAFETY: all-zero bytes are a valid `CUDA_MEM_ALLOC_NODE_PARAMS`.
        let mut c: CUDA_MEM_ALLOC_NODE_PARAMS = unsafe { std::mem::zeroed() };
        c.poolProps.allocType = CUmemAllocationType(PINNED);
        c.poolProps.location = CUmemLocation {
            type_: CUmemLocationType(ON_DEVICE),
            id: device,
        };
        c.bytesize = bytes;
        c.dptr = dptr;
        c.accessDescCount = access.len();
        if !access.is_empty() {
            let descs: Box<[CUmemAccessDesc]> = (access.iter())
                .map(|&(ty, id, flags)| CUmemAccessDesc {
                    location: CUmemLocation {
                        type_: CUmemLocationType(ty),
                        id,
                    },
                    flags: CUmemAccess_flags(flags),
                })
                .collect();
            c.accessDescs = descs.as_ptr();
            GIVEN.lock().unwrap_or_else(|e| e.into_inner()).push(descs);
        }
        out.write(c);
        Ok(())
    })
}

/// `cuGraphAddMemFreeNode`: `dptr` must be the address of an allocation node.
///
/// # Safety
/// `deps` must be NULL or `n` handles.
pub(crate) unsafe fn graph_add_mem_free_node(
    out: Out<CUgraphNode>,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    dptr: CUdeviceptr,
) -> Res<()> {
    let mut st = state::sim()?.lock();
    if !graph::is_graph_allocation(&st, dptr) {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{dptr:#x} is not the address of a memory allocation node"),
        );
    }
    // SAFETY: forwarded from this function's contract.
    let deps = unsafe { node_keys(deps, n) }?;
    let node = graph::add_node_after(&mut st, key(g), &deps, graph::Work::MemFree { dptr })?;
    out.write(handle(node));
    Ok(())
}

/// `cuGraphMemFreeNodeGetParams`.
pub(crate) fn graph_mem_free_node_get_params(node: CUgraphNode, out: Out<CUdeviceptr>) -> Res<()> {
    out.write(graph::mem_free_of(&state::sim()?.lock(), key(node))?);
    Ok(())
}
