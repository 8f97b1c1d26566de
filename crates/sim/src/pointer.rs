//! `cuPointerGetAttribute(s)`: what the simulator knows about an address: a device
//! allocation, a page-locked host range, or nothing.

use crate::cu::CUresult;
use crate::error::{err, Res};
use crate::hostmem;
use crate::memory;
use crate::state::State;
use crate::vmm;

/// `CU_MEMORYTYPE_HOST` and `CU_MEMORYTYPE_DEVICE`.
const MEMORY_TYPE_HOST: u32 = 1;
const MEMORY_TYPE_DEVICE: u32 = 2;
/// `CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE`.
const ACCESS_READWRITE: u32 = 3;
/// `CU_POINTER_ATTRIBUTE_DEVICE_POINTER`.
const ATTRIBUTE_DEVICE_POINTER: u32 = 3;
/// The device ordinal reported for an address no device knows (`cudaInvalidDeviceId`).
const NO_DEVICE: i32 = -2;
/// Attributes run from `CU_POINTER_ATTRIBUTE_CONTEXT` (1) to
/// `CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE` (21).
const ATTRIBUTE_LAST: u32 = 21;

/// What an address is.
#[derive(Clone, Copy, Debug)]
enum Found {
    Device {
        base: u64,
        size: u64,
        ctx: usize,
        device: usize,
        stream_ordered: bool,
    },
    Host {
        base: u64,
        size: u64,
        ctx: usize,
        device: usize,
        managed: bool,
    },
    /// A `cuMemMap`ped range: no context owns it.
    Mapped {
        base: u64,
        size: u64,
        device: usize,
        access: u32,
        buffer_id: u64,
        handle_types: u32,
    },
    Unknown,
}

fn find(st: &State, ptr: u64) -> Found {
    if let Some((base, a)) = memory::containing(st, ptr) {
        return Found::Device {
            base,
            size: a.size as u64,
            ctx: a.ctx,
            device: a.device,
            stream_ordered: st.ext.facts.is_stream_ordered(base),
        };
    }
    if let Some((base, size, device, access, buffer_id, handle_types)) = vmm::facts(st, ptr) {
        return Found::Mapped {
            base,
            size,
            device,
            access,
            buffer_id,
            handle_types,
        };
    }
    if let Some((base, r)) = hostmem::containing(st, ptr) {
        return Found::Host {
            base,
            size: r.len as u64,
            ctx: r.ctx,
            device: r.device,
            managed: r.managed,
        };
    }
    Found::Unknown
}

/// One attribute's value: its bytes (little-endian) and their count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Value {
    pub bytes: [u8; 16],
    pub len: usize,
}

impl Value {
    fn u32(v: u32) -> Self {
        let mut bytes = [0; 16];
        bytes[..4].copy_from_slice(&v.to_ne_bytes());
        Self { bytes, len: 4 }
    }
    fn i32(v: i32) -> Self {
        Self::u32(u32::from_ne_bytes(v.to_ne_bytes()))
    }
    fn u64(v: u64) -> Self {
        let mut bytes = [0; 16];
        bytes[..8].copy_from_slice(&v.to_ne_bytes());
        Self { bytes, len: 8 }
    }
    fn flag(b: bool) -> Self {
        Self::u32(u32::from(b))
    }
}

/// The size of attribute `attr`'s value, or `CUDA_ERROR_INVALID_VALUE` if it is not one.
pub(crate) fn value_size(attr: u32) -> Res<usize> {
    match attr {
        5 => Ok(16),
        1 | 3 | 4 | 7 | 11 | 12 | 14 | 17..=20 => Ok(8),
        2 | 6 | 8..=10 | 13 | 15 | 16 | 21 => Ok(4),
        _ => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{attr} is not a CUpointer_attribute (1..={ATTRIBUTE_LAST})"),
        ),
    }
}

/// The pool a stream-ordered allocation came from.
fn pool(st: &mut State, base: u64, device: usize) -> u64 {
    let p = crate::pool::origin(st, base).unwrap_or_else(|| crate::pool::default_pool(st, device));
    p as u64
}

/// The value of `attr` for `ptr`. `single` is `cuPointerGetAttribute`, which fails where
/// the plural form reports a default. The single form's device pointer is the one
/// valid in the calling thread's current context, so with no context current it fails
/// with `CUDA_ERROR_INVALID_CONTEXT`, as driver 580 does.
pub(crate) fn attribute(st: &mut State, ptr: u64, attr: u32, single: bool) -> Res<Value> {
    value_size(attr)?;
    if single && attr == ATTRIBUTE_DEVICE_POINTER {
        crate::context::current(st)?;
    }
    let found = find(st, ptr);
    let no_value = |why: &str| -> Res<Value> {
        if single {
            err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("{ptr:#x}: {why}"),
            )
        } else {
            Ok(default(attr))
        }
    };
    let v = match found {
        Found::Unknown => return no_value("not device memory nor page-locked host memory"),
        Found::Device {
            base,
            size,
            ctx,
            device,
            stream_ordered,
        } => match attr {
            1 => Value::u64(ctx as u64),
            2 => Value::u32(MEMORY_TYPE_DEVICE),
            ATTRIBUTE_DEVICE_POINTER => Value::u64(ptr),
            4 => return no_value("device memory has no host pointer"),
            7 | 20 => Value::u64(st.ext.facts.id(base)),
            9 => Value::i32(i32::try_from(device).unwrap_or(NO_DEVICE)),
            10 => Value::flag(!stream_ordered),
            11 | 19 => Value::u64(base),
            12 | 18 => Value::u64(size),
            13 | 15 => Value::flag(true),
            16 => Value::u32(ACCESS_READWRITE),
            17 if stream_ordered => Value::u64(pool(st, base, device)),
            6 => Value::flag(st.ext.facts.sync_memops(base)),
            // cuMemAlloc memory serves the simulated decompression engine
            // (`crate::decompress`); pool memory needs a usage flag the
            // simulated pools never have.
            21 => Value::flag(!stream_ordered),
            // P2P tokens, IS_MANAGED, handle types, pool of a plain
            // allocation.
            _ => default(attr),
        },
        Found::Mapped {
            base,
            size,
            device,
            access,
            buffer_id,
            handle_types,
        } => match attr {
            1 => Value::u64(0),
            2 => Value::u32(MEMORY_TYPE_DEVICE),
            ATTRIBUTE_DEVICE_POINTER => Value::u64(ptr),
            4 => return no_value("device memory has no host pointer"),
            7 | 20 => Value::u64(buffer_id),
            9 => Value::i32(i32::try_from(device).unwrap_or(NO_DEVICE)),
            11 | 19 => Value::u64(base),
            12 | 18 => Value::u64(size),
            13 => Value::flag(true),
            14 => Value::u64(u64::from(handle_types)),
            16 => Value::u32(access),
            _ => default(attr),
        },
        Found::Host {
            base,
            size,
            ctx,
            device,
            managed,
        } => match attr {
            1 => Value::u64(ctx as u64),
            // Managed memory reads as device memory, as driver 580 reports it.
            2 if managed => Value::u32(MEMORY_TYPE_DEVICE),
            2 => Value::u32(MEMORY_TYPE_HOST),
            6 | 8 => Value::flag(managed),
            3 | 4 => Value::u64(ptr),
            5 => return no_value("host memory has no P2P tokens"),
            7 | 20 => Value::u64(st.ext.facts.id(base)),
            9 => Value::i32(i32::try_from(device).unwrap_or(NO_DEVICE)),
            11 | 19 => Value::u64(base),
            12 | 18 => Value::u64(size),
            13 => Value::flag(true),
            16 => Value::u32(ACCESS_READWRITE),
            _ => default(attr),
        },
    };
    Ok(v)
}

/// The value the plural form reports for an attribute that does not apply.
fn default(attr: u32) -> Value {
    match attr {
        9 => Value::i32(NO_DEVICE),
        5 => Value {
            bytes: [0; 16],
            len: 16,
        },
        1 | 3 | 4 | 7 | 11 | 12 | 14 | 17..=20 => Value::u64(0),
        _ => Value::u32(0),
    }
}

/// `cuPointerSetAttribute`: `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS` (the only
/// settable attribute) on a device allocation of the simulated device; any
/// other attribute or address gives `CUDA_ERROR_INVALID_VALUE`.
pub(crate) fn set_sync_memops(st: &mut State, ptr: u64, attr: u32, on: bool) -> Res<()> {
    if attr != 6 {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("pointer attribute {attr} cannot be set"),
        );
    }
    match find(st, ptr) {
        Found::Device { base, .. } => {
            st.ext.facts.set_sync_memops(base, on);
            Ok(())
        }
        _ => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{ptr:#x} is not a device allocation"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_match_the_driver() {
        assert_eq!(value_size(1), Ok(8));
        assert_eq!(value_size(2), Ok(4));
        assert_eq!(value_size(5), Ok(16));
        assert_eq!(value_size(9), Ok(4));
        assert_eq!(value_size(17), Ok(8));
        assert_eq!(value_size(21), Ok(4));
        assert!(value_size(0).is_err());
        assert!(value_size(22).is_err());
        for a in 1..=ATTRIBUTE_LAST {
            assert_eq!(default(a).len, value_size(a).expect("valid"), "{a}");
        }
        assert_eq!(default(9).bytes[..4], (-2i32).to_ne_bytes());
    }
}
