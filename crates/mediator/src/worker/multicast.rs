//! Multicast objects in the worker. A multicast handle joins the session's
//! allocation handles (`worker::vmm`) under an id minted here, so that
//! `cuMemRelease` releases it and the session's end gives it back; an id
//! this session was not given never reaches the driver
//! (`CUDA_ERROR_INVALID_VALUE`, the driver's answer to a handle it does not
//! know). A bound address must lie inside a reservation of this session.

use vgpu_abi::types::CUmulticastObjectProp;
use vgpu_abi::HandleKind;
use vgpu_proto::{
    multicast_add_device, multicast_bind_addr, multicast_bind_mem, multicast_create,
    multicast_unbind, Request,
};
use zerocopy::little_endian::U64;

use super::calls::{message, ok, record, size, Reply};
use super::exec::Lane;
use super::status::INVALID_VALUE;
use super::Session;
use crate::driver::{entry, Status};

/// `cuMulticastCreate`; the reply carries a fresh id for the driver's handle.
pub fn multicast_create(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &multicast_create::Request = message(req)?;
    // SAFETY: a C struct of integers: valid for any bytes.
    let prop: CUmulticastObjectProp = unsafe { record(&r.prop) };
    let mut h = 0;
    // SAFETY: live out-pointer and property struct.
    ok(unsafe { entry(s.driver.cuMulticastCreate)?(&mut h, &prop) })?;
    let mut t = s.tables();
    let id = t.mint(HandleKind::MemGenericAllocation);
    t.vmm.adopt(id, h);
    Ok(Reply::new(
        &multicast_create::Reply {
            handle: U64::new(id),
        },
        Vec::new(),
    ))
}

/// `cuMulticastAddDevice` of a handle id this session holds.
pub fn multicast_add_device(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &multicast_add_device::Request = message(req)?;
    let real = s.tables().vmm.real(r.handle.get())?;
    // SAFETY: a handle this session holds.
    ok(unsafe { entry(s.driver.cuMulticastAddDevice)?(real, r.device.get()) })?;
    Ok(Reply::default())
}

/// `cuMulticastBindMem` of two handle ids this session holds.
pub fn multicast_bind_mem(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &multicast_bind_mem::Request = message(req)?;
    let (mc, mem) = {
        let t = s.tables();
        (t.vmm.real(r.handle.get())?, t.vmm.real(r.mem.get())?)
    };
    let (mc_offset, mem_offset) = (size(r.mc_offset.get())?, size(r.mem_offset.get())?);
    // SAFETY: handles this session holds; the driver checks the offsets.
    ok(unsafe {
        entry(s.driver.cuMulticastBindMem)?(
            mc,
            mc_offset,
            mem,
            mem_offset,
            size(r.size.get())?,
            r.flags.get(),
        )
    })?;
    Ok(Reply::default())
}

/// `cuMulticastBindAddr` of memory inside a reservation of this session.
pub fn multicast_bind_addr(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &multicast_bind_addr::Request = message(req)?;
    let (ptr, bytes) = (r.ptr.get(), r.size.get());
    let mc = {
        let t = s.tables();
        if !t.vmm.reserved(ptr, bytes) {
            tracing::info!(
                "cuMulticastBindAddr({ptr:#x}, {bytes:#x}): not inside a reservation of this session"
            );
            return Err(INVALID_VALUE);
        }
        t.vmm.real(r.handle.get())?
    };
    // SAFETY: a handle this session holds; the range lies in its reservation.
    ok(unsafe {
        entry(s.driver.cuMulticastBindAddr)?(
            mc,
            size(r.mc_offset.get())?,
            ptr,
            size(bytes)?,
            r.flags.get(),
        )
    })?;
    Ok(Reply::default())
}

/// `cuMulticastUnbind` of a handle id this session holds.
pub fn multicast_unbind(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &multicast_unbind::Request = message(req)?;
    let real = s.tables().vmm.real(r.handle.get())?;
    // SAFETY: a handle this session holds; the driver checks the range.
    ok(unsafe {
        entry(s.driver.cuMulticastUnbind)?(
            real,
            r.device.get(),
            size(r.mc_offset.get())?,
            size(r.size.get())?,
        )
    })?;
    Ok(Reply::default())
}
