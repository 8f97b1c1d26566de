//! `cuPointerGetAttribute(s)`: asked of the worker, whose driver knows every
//! device allocation; host pointers in shared pinned memory are translated
//! to the worker's address and back.

use std::ffi::{c_uint, c_void};

use vgpu_abi::types::{CUdeviceptr, CUpointer_attribute};
use vgpu_proto::pointer_get_attributes;
use zerocopy::little_endian::U64;

use crate::edge::{non_null, CuError, CuResult};
use crate::runtime::runtime;

const MAX_ATTRIBUTES: usize = 32;
/// Attributes whose value is a host address.
const HOST_POINTER: u32 = 4;
const RANGE_START_ADDR: u32 = 11;
const RANGE_SIZE: u32 = 12;
const MAPPING_BASE_ADDR: u32 = 19;

/// The size of each attribute's value, as the driver writes it.
pub(super) fn value_size(attr: u32) -> CuResult<usize> {
    Ok(match attr {
        2 | 6 | 8 | 9 | 10 | 13 | 15 | 16 | 21 => 4,
        1 | 3 | 4 | 7 | 11 | 12 | 14 | 17 | 18 | 19 | 20 => 8,
        5 => 16,
        _ => return Err(CuError::INVALID_VALUE),
    })
}

/// Asks the worker; writes each value through its data pointer.
///
/// # Safety
/// Each data pointer must be writable for its attribute's value.
unsafe fn query(
    ptr: CUdeviceptr,
    attrs: &[u32],
    data: &[*mut c_void],
    single: bool,
) -> CuResult<()> {
    let s = runtime().session()?;
    // A host pointer into shared pinned memory means the worker's mapping.
    let shared = s.objects().host_range(ptr, 1);
    if let Some(local) = shared.filter(|(_, info)| info.local) {
        // SAFETY: each data pointer holds its attribute's value.
        return unsafe { local_attributes(s, ptr, local, attrs, data, single) };
    }
    let managed = shared.and_then(|(base, _)| super::managed::pointer_facts(s, base));
    let registration = shared
        .filter(|(_, i)| matches!(i.kind, crate::objects::HostKind::Registered { .. }))
        .and_then(|(base, i)| {
            let o = s.objects();
            // A pointer in a moved page but outside every registration's
            // bytes answers for the registration that moved the page.
            o.registration_at(ptr).or(match i.kind {
                crate::objects::HostKind::Registered { start, .. } => o
                    .registrations
                    .get(&start)
                    .map(|&r| (start, r))
                    .or_else(|| o.registration_at(base)),
                _ => None,
            })
        });
    let asked = shared.map_or(ptr, |(base, info)| info.worker + (ptr - base));
    let ids: Vec<u8> = attrs.iter().flat_map(|a| a.to_le_bytes()).collect();
    let r = pointer_get_attributes::Request {
        pointer: U64::new(asked),
        single: u8::from(single),
    };
    let (_, values) = s.request(&r, &ids)?;
    if values.len() != attrs.len() * 16 {
        return Err(CuError::UNKNOWN);
    }
    for ((&attr, &out), v) in attrs.iter().zip(data).zip(values.chunks_exact(16)) {
        if out.is_null() {
            continue;
        }
        let mut bytes: [u8; 16] = v.try_into().expect("16-byte chunks");
        if let (HOST_POINTER | RANGE_START_ADDR | MAPPING_BASE_ADDR, Some((base, info))) =
            (attr, shared)
        {
            let addr = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
            if addr >= info.worker && addr - info.worker < info.len {
                bytes[..8].copy_from_slice(&(base + (addr - info.worker)).to_le_bytes());
            }
        }
        // The registered bytes, as the driver reports them, not the whole
        // pages vgpu shares around them (which registrations may share).
        let registered = registration.and_then(|(start, r)| match attr {
            RANGE_START_ADDR => Some(start),
            RANGE_SIZE => Some(r.len),
            _ => None,
        });
        if let Some(v) = managed.and_then(|m| m.value(attr, ptr)).or(registered) {
            bytes = [0; 16];
            bytes[..8].copy_from_slice(&v.to_le_bytes());
        }
        let n = value_size(attr)?;
        // SAFETY: the application's data pointer holds this attribute's value.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.cast::<u8>(), n) };
    }
    Ok(())
}

/// # Safety
/// `data` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
pub unsafe fn get_attribute(
    data: *mut c_void,
    attr: CUpointer_attribute,
    ptr: CUdeviceptr,
) -> CuResult<()> {
    non_null(data)?;
    value_size(attr.0)?;
    // SAFETY: the application's data pointer holds the attribute's value.
    unsafe { query(ptr, &[attr.0], &[data], true) }
}

/// # Safety
/// `attrs` must hold `n` attribute ids and `data` `n` pointers, each NULL or
/// writable for its attribute's value.
pub unsafe fn get_attributes(
    n: c_uint,
    attrs: *mut CUpointer_attribute,
    data: *mut *mut c_void,
    ptr: CUdeviceptr,
) -> CuResult<()> {
    let n = n as usize;
    if n == 0 || n > MAX_ATTRIBUTES {
        return Err(CuError::INVALID_VALUE);
    }
    non_null(attrs)?;
    non_null(data)?;
    // SAFETY: the application passes `n` attributes and `n` data pointers.
    let (attrs, data) = unsafe {
        (
            std::slice::from_raw_parts(attrs, n),
            std::slice::from_raw_parts(data, n),
        )
    };
    let ids: Vec<u32> = attrs.iter().map(|a| a.0).collect();
    for &a in &ids {
        value_size(a)?;
    }
    // SAFETY: each data pointer holds its attribute's value.
    unsafe { query(ptr, &ids, data, false) }
}

/// `cuPointerGetAttribute(s)` for a pointer into local pages, answered
/// here: the worker knows nothing of them. One attribute alone
/// (`single`) that has no value here fails with `CUDA_ERROR_INVALID_VALUE`
/// and a logged reason; in a list it reads as zeros, the driver's value for
/// memory it does not know.
///
/// # Safety
/// Each non-NULL data pointer must be writable for its attribute's value.
unsafe fn local_attributes(
    s: &crate::runtime::Session,
    ptr: u64,
    (base, info): (u64, crate::objects::HostInfo),
    attrs: &[u32],
    data: &[*mut c_void],
    single: bool,
) -> CuResult<()> {
    for (&attr, &out) in attrs.iter().zip(data) {
        let n = value_size(attr)?;
        let v = match super::host_local::value(s, attr, ptr, base, &info) {
            Some(v) => v,
            None if single && attr == 3 => {
                return Err(super::host_local::no_device_address(
                    "cuPointerGetAttribute",
                    ptr,
                ))
            }
            None if single => {
                crate::log::line(format_args!(
                    "cuPointerGetAttribute: attribute {attr} has no value for {ptr:#x}, pinned \
                     host memory of a TCP session that lives only in this process"
                ));
                return Err(CuError::INVALID_VALUE);
            }
            None => 0,
        };
        if out.is_null() {
            continue;
        }
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&v.to_le_bytes());
        // SAFETY: the application's data pointer holds this attribute's
        // value of `n` (at most 16) bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.cast::<u8>(), n) };
    }
    Ok(())
}

/// `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS`, the only attribute that can be set.
const SYNC_MEMOPS: u32 = 6;

/// `cuPointerSetAttribute`: only `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS`.
/// Managed memory takes it here (its pages are coherent whatever it says);
/// anything else is the worker's driver's to accept, at the worker's
/// address of shared pinned memory.
///
/// # Safety
/// `value` must be NULL or readable for an `unsigned int`.
pub unsafe fn set_attribute(
    value: *const c_void,
    attr: CUpointer_attribute,
    ptr: CUdeviceptr,
) -> CuResult<()> {
    let s = runtime().session()?;
    if value.is_null() || attr.0 != SYNC_MEMOPS {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: the application's value of the attribute's type.
    let v = unsafe { value.cast::<c_uint>().read_unaligned() };
    let shared = s.objects().host_range(ptr, 1);
    if let Some((base, _)) = shared {
        if super::managed::set_sync_memops(s, base, v != 0) {
            return Ok(());
        }
    }
    let asked = shared.map_or(ptr, |(base, info)| info.worker + (ptr - base));
    let r = vgpu_proto::pointer_set_sync_memops::Request {
        pointer: U64::new(asked),
        value: zerocopy::little_endian::U32::new(v),
    };
    s.request(&r, &[]).map(drop)
}
