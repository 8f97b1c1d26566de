//! Virtual memory management (`cuMemAddressReserve`, `cuMemCreate`, `cuMemMap`, …) over
//! the simulated address space: reservations are address ranges no host block can
//! occupy, physical allocations are zeroed host blocks charged to their device's budget,
//! and a mapped range serves copies and memsets once its access is set.
//!
//! Every size, address and offset must be a multiple of [`GRANULARITY`], as on the real
//! driver (whose minimum granularity for device memory is also 2 MiB); bad input gives
//! `CUDA_ERROR_INVALID_VALUE`. `cuMemAddressFree` of a reservation with mappings left in
//! it unmaps them, as the real driver lets it (applications release and free without
//! unmapping). The simulator's own choice, where the documentation says nothing:
//! `cuMemSetAccess` or `cuMemUnmap` of a range that is not a run of whole mappings is
//! refused.

use crate::cu::{
    CUmemAccessDesc, CUmemAllocationHandleType, CUmemAllocationProp, CUmemAllocationType,
    CUmemLocation, CUmemLocationType, CUresult,
};
use crate::error::{err, Res};
use crate::ffi::us;
use crate::state::memory::Allocation;
use crate::state::vmm::{Mapping, Physical};
use crate::state::{Sim, State};

/// The minimum and recommended granularity of device memory.
pub(crate) const GRANULARITY: u64 = 2 << 20;

/// `CU_MEM_ACCESS_FLAGS_PROT_READ` and `…_READWRITE`.
const PROT_READ: u32 = 1;
const PROT_READWRITE: u32 = 3;

fn bad<T>(why: impl Into<std::borrow::Cow<'static, str>>) -> Res<T> {
    err(CUresult::CUDA_ERROR_INVALID_VALUE, why)
}

fn aligned(v: u64) -> bool {
    v.is_multiple_of(GRANULARITY)
}

/// The device a `CUmemLocation` names; only device locations are simulated.
fn device(sim: &Sim, loc: &CUmemLocation) -> Res<usize> {
    if loc.type_ != CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE {
        return bad(format!("location type {} is not a device", loc.type_.0));
    }
    sim.check_device(loc.id)
}

/// Checks an allocation's properties: pinned device memory, shareable as nothing or a
/// POSIX file descriptor. Gives the device.
fn check_prop(sim: &Sim, prop: &CUmemAllocationProp) -> Res<usize> {
    if prop.type_ != CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED {
        return bad(format!("allocation type {} is not PINNED", prop.type_.0));
    }
    let posix = CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR.0;
    let fabric = CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_FABRIC.0;
    if prop.requestedHandleTypes.0 & fabric != 0 {
        // Driver 580 without an IMEX channel for the process.
        return err(
            CUresult::CUDA_ERROR_NOT_PERMITTED,
            "fabric handles need an IMEX channel, which the simulated device has not",
        );
    }
    if prop.requestedHandleTypes.0 & !posix != 0 {
        return err(
            CUresult::CUDA_ERROR_NOT_SUPPORTED,
            format!(
                "handle types {:#x}: only POSIX file descriptors are simulated",
                prop.requestedHandleTypes.0
            ),
        );
    }
    device(sim, &prop.location)
}

/// `cuMemGetAllocationGranularity`: `option` 0 (minimum) or 1 (recommended).
pub(crate) fn granularity(sim: &Sim, prop: &CUmemAllocationProp, option: u32) -> Res<u64> {
    if option > 1 {
        return bad(format!("granularity option {option}"));
    }
    check_prop(sim, prop)?;
    Ok(GRANULARITY)
}

/// `cuMemAddressReserve`: a fresh range; `addr` is a hint the simulator never honours
/// (the driver may not either).
pub(crate) fn reserve(st: &mut State, size: u64, align: u64, flags: u64) -> Res<u64> {
    if size == 0 || !aligned(size) || flags != 0 {
        return bad(format!(
            "reserve of {size:#x} bytes (flags {flags:#x}): size must be a nonzero multiple of {GRANULARITY:#x}"
        ));
    }
    if align != 0 && !align.is_power_of_two() {
        return bad(format!("alignment {align:#x} is not a power of two"));
    }
    let Some(base) = st.ext.vmm.carve(size, align.max(GRANULARITY)) else {
        return err(
            CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            "simulated address space spent",
        );
    };
    st.ext.vmm.reserved.insert(base, size);
    Ok(base)
}

/// `cuMemAddressFree`: a whole reservation; what is still mapped in it is unmapped.
pub(crate) fn address_free(st: &mut State, ptr: u64, size: u64) -> Res<()> {
    if st.ext.vmm.reserved.get(&ptr) != Some(&size) {
        return bad(format!("{ptr:#x}+{size:#x} is not a reservation"));
    }
    for base in st.ext.vmm.overlapping(ptr, ptr + size) {
        drop_mapping(st, base);
    }
    st.ext.vmm.reserved.remove(&ptr);
    Ok(())
}

/// Removes the mapping at `base`; its physical memory is freed if already released.
fn drop_mapping(st: &mut State, base: u64) {
    if let Some(m) = st.ext.vmm.mappings.remove(&base) {
        st.ext.facts.forget(base);
        reap(st, m.handle);
    }
}

/// `cuMemCreate`: a zeroed physical allocation of `size` bytes (a multiple of the
/// granularity) on the device `prop` names; its handle.
pub(crate) fn create(
    sim: &Sim,
    st: &mut State,
    size: u64,
    prop: &CUmemAllocationProp,
    bytes: [u8; 32],
    flags: u64,
) -> Res<u64> {
    let device = check_prop(sim, prop)?;
    if size == 0 || !aligned(size) || flags != 0 {
        return bad(format!(
            "create of {size:#x} bytes (flags {flags:#x}): size must be a nonzero multiple of {GRANULARITY:#x}"
        ));
    }
    let budget = sim.cfg.memory_bytes;
    if size > budget - st.used[device] {
        return err(
            CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            format!(
                "{size} bytes requested, {} of the simulated budget left",
                budget - st.used[device]
            ),
        );
    }
    let Some(block) = Allocation::new(0, device, us(size)) else {
        return err(CUresult::CUDA_ERROR_OUT_OF_MEMORY, "host allocation failed");
    };
    st.used[device] += size;
    let handle = st.mint() as u64;
    let p = Physical {
        block,
        prop: bytes,
        refs: 1,
        imported: false,
    };
    st.ext.vmm.physical.insert(handle, p);
    Ok(handle)
}

/// The live physical allocation behind `handle`.
fn physical(st: &State, handle: u64) -> Res<&Physical> {
    match st.ext.vmm.physical.get(&handle) {
        Some(p) if p.refs > 0 => Ok(p),
        _ => bad(format!("{handle:#x} is not a live allocation handle")),
    }
}

/// Frees the physical allocation `handle` once it has no reference and no mapping.
fn reap(st: &mut State, handle: u64) {
    let vmm = &mut st.ext.vmm;
    let done = vmm.physical.get(&handle).is_some_and(|p| p.refs == 0) && !vmm.mapped(handle);
    if done {
        if let Some(p) = vmm.physical.remove(&handle).filter(|p| !p.imported) {
            st.used[p.block.device] -= p.block.size as u64;
        }
    }
}

/// `cuMemRelease`: one reference fewer; the memory lives on while mapped.
pub(crate) fn release(st: &mut State, handle: u64) -> Res<()> {
    physical(st, handle)?;
    if let Some(p) = st.ext.vmm.physical.get_mut(&handle) {
        p.refs -= 1;
    }
    reap(st, handle);
    Ok(())
}

/// `cuMemMap`: `size` bytes of `handle` from `offset` at `ptr`, inside one reservation
/// where nothing is mapped yet. The new range has no access until `cuMemSetAccess`.
pub(crate) fn map(
    st: &mut State,
    ptr: u64,
    size: u64,
    offset: u64,
    handle: u64,
    flags: u64,
) -> Res<()> {
    let p = physical(st, handle)?;
    if size == 0 || flags != 0 || !aligned(ptr) || !aligned(size) || !aligned(offset) {
        return bad(format!(
            "map {ptr:#x}+{size:#x} at offset {offset:#x} (flags {flags:#x}): not granularity-aligned"
        ));
    }
    if offset
        .checked_add(size)
        .is_none_or(|e| e > p.block.size as u64)
    {
        return bad(format!(
            "offset {offset:#x} + size {size:#x} exceeds the allocation's {:#x} bytes",
            p.block.size
        ));
    }
    let vmm = &mut st.ext.vmm;
    if vmm.reservation(ptr, size).is_none() {
        return bad(format!("{ptr:#x}+{size:#x} is not inside one reservation"));
    }
    if !vmm.overlapping(ptr, ptr + size).is_empty() {
        return bad(format!("{ptr:#x}+{size:#x} is already mapped"));
    }
    let buffer_id = st.mint() as u64;
    let m = Mapping {
        size,
        handle,
        offset,
        access: Vec::new(),
        buffer_id,
    };
    st.ext.vmm.mappings.insert(ptr, m);
    Ok(())
}

/// Checks that `[ptr, ptr + size)` is a run of whole mappings; gives its end.
fn whole(st: &State, ptr: u64, size: u64, what: &str) -> Res<u64> {
    let end = ptr.checked_add(size).filter(|_| size != 0);
    match end {
        Some(end) if st.ext.vmm.whole_mappings(ptr, end) => Ok(end),
        _ => bad(format!(
            "{what} {ptr:#x}+{size:#x}: not a run of whole mappings"
        )),
    }
}

/// `cuMemUnmap`: whole mappings; their physical memory is freed if already released.
pub(crate) fn unmap(st: &mut State, ptr: u64, size: u64) -> Res<()> {
    let end = whole(st, ptr, size, "unmap")?;
    for base in st.ext.vmm.overlapping(ptr, end) {
        drop_mapping(st, base);
    }
    Ok(())
}

/// `cuMemSetAccess`: each descriptor sets its device's access to whole mappings.
pub(crate) fn set_access(
    sim: &Sim,
    st: &mut State,
    ptr: u64,
    size: u64,
    descs: &[CUmemAccessDesc],
) -> Res<()> {
    if descs.is_empty() {
        return bad("no access descriptor");
    }
    let end = whole(st, ptr, size, "set access on")?;
    let mut set = Vec::with_capacity(descs.len());
    for d in descs {
        let dev = device(sim, &d.location)?;
        if ![0, PROT_READ, PROT_READWRITE].contains(&d.flags.0) {
            return bad(format!("access flags {}", d.flags.0));
        }
        set.push((i32::try_from(dev).unwrap_or(i32::MAX), d.flags.0));
    }
    for base in st.ext.vmm.overlapping(ptr, end) {
        if let Some(m) = st.ext.vmm.mappings.get_mut(&base) {
            for &(dev, flags) in &set {
                m.access.retain(|(d, _)| *d != dev);
                m.access.push((dev, flags));
            }
        }
    }
    Ok(())
}

/// `cuMemGetAccess`: the flags set for `location` on the mapping holding `ptr`.
pub(crate) fn get_access(sim: &Sim, st: &State, loc: &CUmemLocation, ptr: u64) -> Res<u64> {
    let dev = device(sim, loc)?;
    match st.ext.vmm.mapping(ptr) {
        Some((_, m)) => Ok(u64::from(m.flags(i32::try_from(dev).unwrap_or(i32::MAX)))),
        None => bad(format!("{ptr:#x} is not mapped")),
    }
}

/// `cuMemRetainAllocationHandle`: the handle mapped at `addr`, with one reference more.
pub(crate) fn retain(st: &mut State, addr: u64) -> Res<u64> {
    let Some((_, m)) = st.ext.vmm.mapping(addr) else {
        return bad(format!("{addr:#x} is not mapped"));
    };
    let handle = m.handle;
    if let Some(p) = st.ext.vmm.physical.get_mut(&handle) {
        p.refs += 1;
    }
    Ok(handle)
}

/// `cuMemGetAllocationPropertiesFromHandle`: the properties `handle` was created with.
pub(crate) fn properties(st: &State, handle: u64) -> Res<[u8; 32]> {
    physical(st, handle).map(|p| p.prop)
}

/// A pointer to `len` bytes at `addr`, which must lie inside one mapping whose access
/// is set.
pub(crate) fn try_range(st: &State, addr: u64, len: usize) -> Option<*mut u8> {
    let (base, m) = st.ext.vmm.mapping(addr)?;
    let off = addr - base;
    if !m.accessible() || (len as u64) > m.size - off {
        return None;
    }
    let p = st.ext.vmm.physical.get(&m.handle)?;
    // SAFETY: `m.offset + off + len <= m.offset + m.size <= block size` (checked at map).
    Some(unsafe { p.block.ptr().add(us(m.offset + off)) })
}

/// Whether `addr` lies in a reservation (mapped or not): device memory, never host.
pub(crate) fn reserved(st: &State, addr: u64) -> bool {
    st.ext.vmm.reservation(addr, 1).is_some()
}

/// What the pointer attributes report for a mapped address: (base, size, device,
/// access flags of that device, buffer id, requested handle types).
pub(crate) fn facts(st: &State, addr: u64) -> Option<(u64, u64, usize, u32, u64, u32)> {
    let (base, m) = st.ext.vmm.mapping(addr)?;
    let p = st.ext.vmm.physical.get(&m.handle)?;
    let device = p.block.device;
    let flags = m.flags(i32::try_from(device).unwrap_or(i32::MAX));
    let types = u32::from_le_bytes([p.prop[4], p.prop[5], p.prop[6], p.prop[7]]);
    Some((base, m.size, device, flags, m.buffer_id, types))
}
