//! `cuPointerGetAttribute(s)` in the worker: the driver's answer, with context
//! handles translated back to the client's context ids and memory-pool
//! handles to the session's pool ids.

use std::ffi::{c_uint, c_void};

use vgpu_abi::types::CUpointer_attribute;
use vgpu_abi::HandleKind;
use vgpu_proto::{pointer_get_attributes, pointer_set_sync_memops, Request};

use super::calls::{message, ok, Reply};
use super::exec::Lane;
use super::status::INVALID_VALUE;
use super::Session;
use crate::driver::{entry, Status};

/// Most attributes one query may ask for.
const MAX_POINTER_ATTRIBUTES: usize = 32;

/// `cuPointerGetAttribute` (`single`) or `cuPointerGetAttributes` for the
/// attribute ids of the blob.
pub fn pointer_get_attributes(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &pointer_get_attributes::Request = message(req)?;
    let (ptr, single, ids) = (r.pointer.get(), r.single != 0, &req.blob[..]);
    if !ids.len().is_multiple_of(4) || ids.len() / 4 > MAX_POINTER_ATTRIBUTES || ids.is_empty() {
        return Err(INVALID_VALUE);
    }
    let mut attrs: Vec<CUpointer_attribute> = ids
        .chunks_exact(4)
        .map(|c| CUpointer_attribute(u32::from_le_bytes(c.try_into().expect("4 bytes"))))
        .collect();
    // 16 bytes of storage per attribute: the largest value (P2P tokens) fits.
    let mut values = vec![[0u64; 2]; attrs.len()];
    let n = c_uint::try_from(attrs.len()).map_err(|_| INVALID_VALUE)?;
    // SAFETY: every data pointer has 16 writable bytes, enough for any attribute.
    ok(unsafe {
        if single {
            entry(s.driver.cuPointerGetAttribute)?(values[0].as_mut_ptr().cast(), attrs[0], ptr)
        } else {
            let mut data: Vec<*mut c_void> =
                values.iter_mut().map(|v| v.as_mut_ptr().cast()).collect();
            entry(s.driver.cuPointerGetAttributes)?(n, attrs.as_mut_ptr(), data.as_mut_ptr(), ptr)
        }
    })?;
    let mut t = s.tables();
    for (a, v) in attrs.iter().zip(values.iter_mut()) {
        let real = usize::try_from(v[0]).unwrap_or(0);
        if *a == CUpointer_attribute::CU_POINTER_ATTRIBUTE_CONTEXT && v[0] != 0 {
            v[0] = t
                .ctxs
                .iter()
                .find(|(_, &r)| r == real)
                .map_or(0, |(&id, _)| id);
        } else if *a == CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE && v[0] != 0 {
            v[0] = t.id_of(HandleKind::MemPool, real, req.ctx);
        }
    }
    Ok(Reply {
        blob: values
            .iter()
            .flat_map(|v| v.iter().flat_map(|w| w.to_le_bytes()))
            .collect(),
        ..Reply::default()
    })
}

/// `cuPointerSetAttribute(CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)`: the driver
/// decides which memory takes it.
pub fn pointer_set_sync_memops(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &pointer_set_sync_memops::Request = message(req)?;
    let value: c_uint = r.value.get();
    let attr = CUpointer_attribute::CU_POINTER_ATTRIBUTE_SYNC_MEMOPS;
    // SAFETY: `value` is a live local of the attribute's type (unsigned int).
    ok(unsafe {
        entry(s.driver.cuPointerSetAttribute)?((&raw const value).cast(), attr, r.pointer.get())
    })?;
    Ok(Reply::default())
}
