//! Virtual memory management in the worker: every reservation, allocation
//! handle and mapping the session made, so that copies and memsets reach a
//! mapped range only while it is mapped and its access is set, and nothing
//! outlives the session.
//!
//! Allocation handles (`CUmemGenericAllocationHandle`, a 64-bit value) are
//! ids minted here, as for every other handle: the client never sees the
//! driver's value, and an id this session was not given never reaches the
//! driver (`CUDA_ERROR_INVALID_VALUE`, the driver's answer to a handle it
//! does not know). A reservation, mapping or access change that is not
//! inside a reservation of this session is refused the same way.

pub(super) mod share;

use std::collections::{BTreeMap, HashMap};

use vgpu_abi::types::{
    CUarrayMapInfo, CUmemAccessDesc, CUmemAllocationProp, CUmemHandleType, CUmemLocationType,
    CUmemOperationType, CUresourcetype,
};
use vgpu_abi::HandleKind;
use vgpu_proto::vmm::Mappings;
use vgpu_proto::{
    mem_address_free, mem_address_reserve, mem_create, mem_get_allocation_properties, mem_map,
    mem_map_array_async, mem_release, mem_retain_allocation_handle, mem_set_access, mem_unmap,
    Request,
};
use zerocopy::little_endian::U64;

use super::calls::{as_ptr, elements, message, ok, record, record_bytes, size, Reply};
use super::exec::Lane;
use super::status::INVALID_VALUE;
use super::Session;
use crate::driver::{entry, DevPtr, Driver, Status};

pub use share::{
    mem_export_fd, mem_export_shareable, mem_import_fd, mem_import_shareable, mem_range_handle_fd,
};

/// Most access descriptors one `cuMemSetAccess` may carry.
const MAX_ACCESS_DESCS: usize = 64;
/// The bytes of a `CUmemAllocationProp` that hold a host pointer (Windows
/// metadata): never passed on from the client.
const PROP_HOST_POINTER: std::ops::Range<usize> = 16..24;

/// An allocation handle the session holds.
#[derive(Debug, Clone, Copy)]
struct Allocation {
    /// The driver's handle.
    real: u64,
    /// References: `cuMemCreate` and each `cuMemRetainAllocationHandle`
    /// add one, `cuMemRelease` takes one.
    refs: u64,
    /// The size given to `cuMemCreate` (0 for a handle imported or adopted:
    /// memory another owner made, and for memory located on the host).
    bytes: u64,
    /// The session's ordinal of the device the memory is on, from the
    /// location `cuMemCreate` was given.
    device: Option<u32>,
}

/// The session's virtual memory: reservations, handles and mappings.
#[derive(Debug, Default)]
pub struct Vmm {
    /// Reservations: base → size.
    reserved: BTreeMap<DevPtr, u64>,
    /// Allocation handles by id.
    handles: HashMap<u64, Allocation>,
    /// Mapped ranges and whether their access was set.
    mappings: Mappings,
}

impl Vmm {
    /// Whether `[ptr, ptr + len)` lies inside one reservation.
    pub fn reserved(&self, ptr: DevPtr, len: u64) -> bool {
        let Some((&base, &size)) = self.reserved.range(..=ptr).next_back() else {
            return false;
        };
        ptr.checked_add(len).is_some_and(|end| end <= base + size)
    }

    /// Whether `[ptr, ptr + len)` is mapped throughout, by adjacent
    /// mappings whose access was set.
    pub fn accessible(&self, ptr: DevPtr, len: u64) -> bool {
        self.mappings.accessible(ptr, len)
    }

    /// Records a handle the driver just gave under id `id`, with one
    /// reference (a multicast object's, which `cuMemRelease` releases).
    pub fn adopt(&mut self, id: u64, real: u64) {
        self.handles.insert(
            id,
            Allocation {
                real,
                refs: 1,
                bytes: 0,
                device: None,
            },
        );
    }

    /// Adds to `held` the device memory of the handles the session made
    /// with `cuMemCreate` and still holds: counted from `cuMemCreate` to
    /// its last `cuMemRelease`, on the device of its location.
    pub fn add_created(&self, held: &mut super::held::Held) {
        for a in self.handles.values() {
            held.add(a.device, a.bytes);
        }
    }

    /// The driver's handle behind id `id`.
    pub fn real(&self, id: u64) -> Result<u64, Status> {
        self.handles.get(&id).map(|a| a.real).ok_or_else(|| {
            tracing::info!("allocation handle {id:#x} is not one of this session's");
            INVALID_VALUE
        })
    }

    /// Gives back to the driver everything the session still holds: the
    /// mappings, the handles' references, the reservations. Failures are
    /// logged; the worker is ending anyway.
    pub fn release_all(&mut self, driver: &Driver) {
        let refs: u64 = self.handles.values().map(|a| a.refs).sum();
        let mappings = self.mappings.ranges().count();
        if mappings + self.reserved.len() != 0 || refs != 0 {
            tracing::info!(
                mappings,
                references = refs,
                reservations = self.reserved.len(),
                "session end: giving back the virtual memory the client left"
            );
        }
        let report = |what: &str, st: Status| {
            if ok(st).is_err() {
                tracing::warn!(?st, "session end: {what} failed");
            }
        };
        for (base, len) in std::mem::take(&mut self.mappings).ranges() {
            if let (Ok(f), Ok(n)) = (entry(driver.cuMemUnmap), size(len)) {
                // SAFETY: a range this session mapped and has not unmapped.
                report("cuMemUnmap", unsafe { f(base, n) });
            }
        }
        for (_, a) in std::mem::take(&mut self.handles) {
            for _ in 0..a.refs {
                if let Ok(f) = entry(driver.cuMemRelease) {
                    // SAFETY: a handle this session holds a reference to.
                    report("cuMemRelease", unsafe { f(a.real) });
                }
            }
        }
        for (base, len) in std::mem::take(&mut self.reserved) {
            if let (Ok(f), Ok(n)) = (entry(driver.cuMemAddressFree), size(len)) {
                // SAFETY: a reservation of this session, nothing mapped in it now.
                report("cuMemAddressFree", unsafe { f(base, n) });
            }
        }
    }
}

/// Refuses a range outside the session's reservations before the driver sees it.
fn inside(v: &Vmm, what: &str, ptr: DevPtr, len: u64) -> Result<(), Status> {
    if v.reserved(ptr, len) {
        return Ok(());
    }
    tracing::info!("{what}({ptr:#x}, {len:#x}): not inside a reservation of this session");
    Err(INVALID_VALUE)
}

/// `cuMemAddressReserve`; the range joins the session's reservations.
pub fn mem_address_reserve(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_address_reserve::Request = message(req)?;
    let bytes = r.size.get();
    let mut p: DevPtr = 0;
    // SAFETY: the out-pointer is a live local; the address is only a hint.
    ok(unsafe {
        entry(s.driver.cuMemAddressReserve)?(
            &mut p,
            size(bytes)?,
            size(r.alignment.get())?,
            r.addr.get(),
            r.flags.get(),
        )
    })?;
    s.tables().vmm.reserved.insert(p, bytes);
    Ok(Reply::new(
        &mem_address_reserve::Reply { ptr: U64::new(p) },
        Vec::new(),
    ))
}

/// `cuMemAddressFree` of a reservation of this session; mappings left in it
/// (the driver unmaps them) stop serving copies.
pub fn mem_address_free(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_address_free::Request = message(req)?;
    let (p, bytes) = (r.ptr.get(), r.size.get());
    inside(&s.tables().vmm, "cuMemAddressFree", p, bytes)?;
    // SAFETY: the range lies inside a reservation of this session.
    ok(unsafe { entry(s.driver.cuMemAddressFree)?(p, size(bytes)?) })?;
    let mut t = s.tables();
    t.vmm.mappings.unmap(p, bytes);
    t.vmm.reserved.remove(&p);
    Ok(Reply::default())
}

/// `cuMemCreate`; the reply carries a fresh id for the driver's handle.
pub fn mem_create(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_create::Request = message(req)?;
    let mut bytes = r.prop;
    bytes[PROP_HOST_POINTER].fill(0);
    // SAFETY: a C struct of integers and one (zeroed) pointer: valid for any bytes.
    let prop: CUmemAllocationProp = unsafe { record(&bytes) };
    let mut h = 0;
    // SAFETY: live out-pointer and property struct.
    ok(unsafe { entry(s.driver.cuMemCreate)?(&mut h, size(r.size.get())?, &prop, r.flags.get()) })?;
    let mut t = s.tables();
    let id = t.mint(HandleKind::MemGenericAllocation);
    // Memory located on a device counts there; on the host, it is no
    // device's memory.
    let on_device = prop.location.type_ == CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    let device = u32::try_from(prop.location.id).ok().filter(|_| on_device);
    t.vmm.handles.insert(
        id,
        Allocation {
            real: h,
            refs: 1,
            bytes: if on_device { r.size.get() } else { 0 },
            device,
        },
    );
    t.publish_memory();
    Ok(Reply::new(
        &mem_create::Reply {
            handle: U64::new(id),
        },
        Vec::new(),
    ))
}

/// `cuMemRelease` of a handle id: one reference fewer; at none the id is
/// forgotten (the memory lives on in the driver while mapped).
pub fn mem_release(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_release::Request = message(req)?;
    let id = r.handle.get();
    let real = s.tables().vmm.real(id)?;
    // SAFETY: a handle this session holds a reference to.
    ok(unsafe { entry(s.driver.cuMemRelease)?(real) })?;
    let mut t = s.tables();
    if let Some(a) = t.vmm.handles.get_mut(&id) {
        a.refs = a.refs.saturating_sub(1);
        if a.refs == 0 {
            t.vmm.handles.remove(&id);
            t.publish_memory();
        }
    }
    Ok(Reply::default())
}

/// `cuMemMap` of a handle id inside a reservation of this session; the range
/// serves copies once its access is set.
pub fn mem_map(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_map::Request = message(req)?;
    let (p, bytes) = (r.ptr.get(), r.size.get());
    let real = {
        let t = s.tables();
        inside(&t.vmm, "cuMemMap", p, bytes)?;
        t.vmm.real(r.handle.get())?
    };
    // SAFETY: the range lies inside a reservation of this session; the
    // handle is one it holds.
    ok(unsafe {
        entry(s.driver.cuMemMap)?(p, size(bytes)?, size(r.offset.get())?, real, r.flags.get())
    })?;
    let mut t = s.tables();
    t.vmm.mappings.map(p, bytes);
    Ok(Reply::default())
}

/// `cuMemUnmap` inside a reservation of this session; the mappings in the
/// range stop serving copies.
pub fn mem_unmap(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_unmap::Request = message(req)?;
    let (p, bytes) = (r.ptr.get(), r.size.get());
    inside(&s.tables().vmm, "cuMemUnmap", p, bytes)?;
    // SAFETY: the range lies inside a reservation of this session.
    ok(unsafe { entry(s.driver.cuMemUnmap)?(p, size(bytes)?) })?;
    s.tables().vmm.mappings.unmap(p, bytes);
    Ok(Reply::default())
}

/// `cuMemSetAccess` inside a reservation of this session: the blob holds
/// `count` `CUmemAccessDesc`s. The mappings in the range serve copies while
/// some device may read them.
pub fn mem_set_access(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_set_access::Request = message(req)?;
    let (p, bytes) = (r.ptr.get(), r.size.get());
    let count = size(u64::from(r.count.get()))?;
    if count > MAX_ACCESS_DESCS || req.blob.len() != count * size_of::<CUmemAccessDesc>() {
        return Err(INVALID_VALUE);
    }
    inside(&s.tables().vmm, "cuMemSetAccess", p, bytes)?;
    // SAFETY: a C struct of integers and enums: valid for any bytes.
    let descs: Vec<CUmemAccessDesc> = unsafe { elements(&req.blob) };
    let desc = if descs.is_empty() {
        std::ptr::null()
    } else {
        descs.as_ptr()
    };
    // SAFETY: the range lies inside a reservation of this session; `desc`
    // holds `count` descriptors (or is NULL for none, which the driver judges).
    ok(unsafe { entry(s.driver.cuMemSetAccess)?(p, size(bytes)?, desc, count) })?;
    let access = descs.iter().any(|d| d.flags.0 != 0);
    s.tables().vmm.mappings.set_access(p, bytes, access);
    Ok(Reply::default())
}

/// `cuMemRetainAllocationHandle` of a mapped address of this session: the
/// handle's id, with one reference more.
pub fn mem_retain_allocation_handle(
    _: &mut Lane,
    s: &Session,
    req: &Request,
) -> Result<Reply, Status> {
    let r: &mem_retain_allocation_handle::Request = message(req)?;
    let addr = r.addr.get();
    if !s.tables().vmm.reserved(addr, 1) {
        tracing::info!(
            "cuMemRetainAllocationHandle({addr:#x}): not in a reservation of this session"
        );
        return Err(INVALID_VALUE);
    }
    let mut h = 0;
    let p = as_ptr::<std::ffi::c_void>(size(addr)?);
    // SAFETY: live out-pointer; the driver only looks the address up.
    ok(unsafe { entry(s.driver.cuMemRetainAllocationHandle)?(&mut h, p) })?;
    let mut t = s.tables();
    let known = t
        .vmm
        .handles
        .iter_mut()
        .find(|(_, a)| a.real == h)
        .map(|(&id, a)| {
            a.refs += 1;
            id
        });
    let id = known.unwrap_or_else(|| {
        // Released while mapped: the handle is live again under a new id.
        let id = t.mint(HandleKind::MemGenericAllocation);
        t.vmm.adopt(id, h);
        id
    });
    Ok(Reply::new(
        &mem_retain_allocation_handle::Reply {
            handle: U64::new(id),
        },
        Vec::new(),
    ))
}

/// `cuMemGetAllocationPropertiesFromHandle` of a handle id.
pub fn mem_get_allocation_properties(
    _: &mut Lane,
    s: &Session,
    req: &Request,
) -> Result<Reply, Status> {
    let r: &mem_get_allocation_properties::Request = message(req)?;
    let real = s.tables().vmm.real(r.handle.get())?;
    // SAFETY: all-zero bytes are a valid property struct (integers, NULL).
    let mut prop: CUmemAllocationProp = unsafe { record(&[0u8; 32]) };
    // SAFETY: live out-struct; a handle this session holds.
    ok(unsafe { entry(s.driver.cuMemGetAllocationPropertiesFromHandle)?(&mut prop, real) })?;
    let mut bytes: [u8; 32] = record_bytes(&prop);
    bytes[PROP_HOST_POINTER].fill(0);
    Ok(Reply::new(
        &mem_get_allocation_properties::Reply { prop: bytes },
        Vec::new(),
    ))
}

/// The most mappings one `cuMemMapArrayAsync` may carry.
const MAX_ARRAY_MAPS: usize = 1024;

/// `cuMemMapArrayAsync`: each map info's array (or mipmapped array) and,
/// for a mapping of an allocation handle, its handle are translated from
/// this session's ids; an id it was not given never reaches the driver.
pub fn mem_map_array_async(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &mem_map_array_async::Request = message(req)?;
    let count = r.count.get() as usize;
    let size = size_of::<CUarrayMapInfo>();
    if count == 0 || count > MAX_ARRAY_MAPS || req.blob.len() != count * size {
        return Err(INVALID_VALUE);
    }
    // SAFETY: map infos are integers, unions of integers and handles, which
    // are replaced below before the driver sees them.
    let mut infos: Vec<CUarrayMapInfo> = unsafe { elements(&req.blob) };
    {
        let t = s.tables();
        for info in &mut infos {
            // SAFETY: both union members are handles; the id is in either.
            let id = unsafe { info.resource.array } as usize as u64;
            let kind = if info.resourceType == CUresourcetype::CU_RESOURCE_TYPE_MIPMAPPED_ARRAY {
                HandleKind::MipmappedArray
            } else {
                HandleKind::Array
            };
            info.resource.array = as_ptr(t.handle(kind, id)?);
            let generic = info.memHandleType == CUmemHandleType::CU_MEM_HANDLE_TYPE_GENERIC;
            let map = info.memOperationType == CUmemOperationType::CU_MEM_OPERATION_TYPE_MAP;
            info.memHandle.memHandle = if generic && map {
                // SAFETY: the union's one member.
                t.vmm.real(unsafe { info.memHandle.memHandle })?
            } else {
                0
            };
        }
    }
    let stream = super::exec::checked(s, &[], r.stream.get())?;
    let n = r.count.get();
    // SAFETY: `infos` holds `n` map infos whose handles are this session's.
    ok(unsafe {
        if r.per_thread != 0 {
            entry(s.driver.cuMemMapArrayAsync_ptsz)?(infos.as_mut_ptr(), n, stream.cast())
        } else {
            entry(s.driver.cuMemMapArrayAsync)?(infos.as_mut_ptr(), n, stream.cast())
        }
    })?;
    Ok(Reply::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_bound_every_range() {
        let mut v = Vmm::default();
        v.reserved.insert(0x10_0000, 0x40_0000);
        assert!(v.reserved(0x40_0000, 0x10_0000));
        assert!(!v.reserved(0x40_0000, 0x10_0001), "past the reservation");
        assert!(!v.reserved(0xf_ffff, 1), "below it");
        assert!(!v.reserved(u64::MAX, 2), "wraps");
    }

    #[test]
    fn unmapping_revokes_and_forgets() {
        let mut v = Vmm::default();
        v.mappings.map(0x10_0000, 0x20_0000);
        assert!(!v.accessible(0x10_0000, 1), "no access yet");
        v.mappings.set_access(0x10_0000, 0x20_0000, true);
        assert!(v.accessible(0x10_0000, 0x20_0000));
        v.mappings.unmap(0x10_0000, 0x20_0000);
        assert!(!v.accessible(0x10_0000, 1));
        assert_eq!(v.mappings.ranges().count(), 0, "nothing left to give back");
    }

    #[test]
    fn unknown_handle_ids_are_refused() {
        let mut v = Vmm::default();
        v.handles.insert(
            7,
            Allocation {
                real: 0x99,
                refs: 1,
                bytes: 0,
                device: None,
            },
        );
        assert_eq!(v.real(7), Ok(0x99));
        assert_eq!(v.real(8), Err(INVALID_VALUE));
    }
}
