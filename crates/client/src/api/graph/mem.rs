//! Graph memory: the device's graph memory attributes (each a
//! `cuuint64_t`), and memory allocation nodes.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::Mutex;

use vgpu_abi::types::{
    CUdevice, CUgraph, CUgraphMem_attribute, CUgraphNode, CUmemAccessDesc, CUmemAccess_flags,
    CUmemAllocationHandleType, CUmemAllocationType, CUmemLocation, CUmemLocationType,
    CUDA_MEM_ALLOC_NODE_PARAMS,
};
use vgpu_proto::{device_graph_mem_attribute, graph_mem_alloc_node, graph_mem_alloc_node_params};
use zerocopy::little_endian::{I32, U32, U64};

use super::dependency_blob;
use crate::edge::{non_null, wire, write_out, CuError, CuResult};
use crate::runtime::runtime;

/// `cuDeviceGetGraphMemAttribute` (`set` false) or
/// `cuDeviceSetGraphMemAttribute` (`set` true) of `attr` on `dev`.
///
/// # Safety
/// `value` must be NULL or valid for a read and a write of a `cuuint64_t`.
pub unsafe fn graph_mem_attribute(
    dev: CUdevice,
    attr: CUgraphMem_attribute,
    value: *mut c_void,
    set: bool,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(value)?;
    let value = value.cast::<u64>();
    let given = match set {
        // SAFETY: checked non-NULL; the application's value.
        true => unsafe { value.read_unaligned() },
        false => 0,
    };
    let r = device_graph_mem_attribute::Request {
        set: u8::from(set),
        dev: I32::new(dev),
        attr: U32::new(attr.0),
        value: U64::new(given),
    };
    let (rep, _) = s.request(&r, &[])?;
    if set {
        return Ok(());
    }
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(value, rep.value.get()) }
}

/// One access descriptor on the wire: location type, location id, flags.
const ACCESS: usize = 12;

/// The access descriptors `cuGraphMemAllocNodeGetParams` handed out, by
/// node: the application's parameters point into them, so they are kept for
/// the life of the process.
static GIVEN: Mutex<BTreeMap<usize, Box<[CUmemAccessDesc]>>> = Mutex::new(BTreeMap::new());

/// `cuGraphAddMemAllocNode` in `graph` after `n` `deps`, the node written to
/// `ph` and the allocation's address to `p.dptr`.
///
/// # Safety
/// `ph` NULL or valid for a write; `deps` NULL or `n` handles; `p` NULL or
/// valid for a read and a write, its descriptors as its count says.
pub unsafe fn mem_alloc_node(
    ph: *mut CUgraphNode,
    graph: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    p: *mut CUDA_MEM_ALLOC_NODE_PARAMS,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(ph)?;
    non_null(p)?;
    // SAFETY: checked non-NULL; the application's parameters.
    let c = unsafe { p.read() };
    // SAFETY: forwarded from this function's contract.
    let (count, mut blob) = unsafe { dependency_blob(deps, None, n) }?;
    if c.accessDescCount > 0 {
        non_null(c.accessDescs)?;
        // SAFETY: checked non-NULL; `accessDescCount` descriptors by the contract.
        let descs = unsafe { std::slice::from_raw_parts(c.accessDescs, c.accessDescCount) };
        for d in descs {
            blob.extend_from_slice(&d.location.type_.0.to_le_bytes());
            blob.extend_from_slice(&d.location.id.to_le_bytes());
            blob.extend_from_slice(&d.flags.0.to_le_bytes());
        }
    }
    let props = c.poolProps;
    let r = graph_mem_alloc_node::Request {
        graph: U64::new(graph as usize as u64),
        deps: U32::new(count),
        alloc_type: U32::new(props.allocType.0),
        handle_types: U32::new(props.handleTypes.0),
        loc_type: U32::new(props.location.type_.0),
        loc_id: I32::new(props.location.id),
        bytes: U64::new(c.bytesize as u64),
        access: U32::new(u32::try_from(c.accessDescCount).map_err(|_| CuError::INVALID_VALUE)?),
    };
    let (rep, _) = s.request(&r, &blob)?;
    // SAFETY: checked non-NULL; the application's out-pointers.
    unsafe {
        write_out(ph, wire::handle(rep.node.get()))?;
        write_out(&raw mut (*p).dptr, rep.dptr.get())
    }
}

/// `cuGraphMemAllocNodeGetParams`.
///
/// # Safety
/// `p` must be NULL or valid for a write.
pub unsafe fn mem_alloc_node_params(
    node: CUgraphNode,
    p: *mut CUDA_MEM_ALLOC_NODE_PARAMS,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(p)?;
    let r = graph_mem_alloc_node_params::Request {
        node: U64::new(node as usize as u64),
    };
    let (rep, blob) = s.request(&r, &[])?;
    if blob.len() != rep.access.get() as usize * ACCESS {
        return Err(CuError::UNKNOWN);
    }
    let word = |c: &[u8], i: usize| u32::from_le_bytes([c[i], c[i + 1], c[i + 2], c[i + 3]]);
    let descs: Box<[CUmemAccessDesc]> = blob
        .chunks_exact(ACCESS)
        .map(|c| CUmemAccessDesc {
            location: CUmemLocation {
                type_: CUmemLocationType(word(c, 0)),
                id: word(c, 4).cast_signed(),
            },
            flags: CUmemAccess_flags(word(c, 8)),
        })
        .collect();
    // SAFETY: all-zero bytes are a valid `CUDA_MEM_ALLOC_NODE_PARAMS`.
    let mut c: CUDA_MEM_ALLOC_NODE_PARAMS = unsafe { std::mem::zeroed() };
    c.poolProps.allocType = CUmemAllocationType(rep.alloc_type.get());
    c.poolProps.handleTypes = CUmemAllocationHandleType(rep.handle_types.get());
    c.poolProps.location = CUmemLocation {
        type_: CUmemLocationType(rep.loc_type.get()),
        id: rep.loc_id.get(),
    };
    c.bytesize = usize::try_from(rep.bytes.get()).map_err(|_| CuError::UNKNOWN)?;
    c.dptr = rep.dptr.get();
    c.accessDescCount = descs.len();
    if !descs.is_empty() {
        c.accessDescs = descs.as_ptr();
        let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
        given.insert(node as usize, descs);
    }
    // SAFETY: checked non-NULL; the application's out-pointer.
    unsafe { write_out(p, c) }
}
