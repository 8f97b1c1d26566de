//! `cuPointerGetAttribute(s)` in the worker: the driver's answer, with context
//! handles translated back to the client's context ids.

use std::ffi::{c_int, c_uint, c_void};

use super::exec::{ok, Reply};
use super::status::INVALID_VALUE;
use super::Session;
use crate::driver::{entry, DevPtr, Status};

/// `CU_POINTER_ATTRIBUTE_CONTEXT`: its value is a context handle.
const POINTER_ATTRIBUTE_CONTEXT: c_int = 1;
/// Most attributes one query may ask for.
const MAX_POINTER_ATTRIBUTES: usize = 32;

pub(super) fn attributes(
    s: &Session,
    ptr: DevPtr,
    single: bool,
    ids: &[u8],
) -> Result<Reply, Status> {
    if !ids.len().is_multiple_of(4) || ids.len() / 4 > MAX_POINTER_ATTRIBUTES || ids.is_empty() {
        return Err(INVALID_VALUE);
    }
    let mut attrs: Vec<c_int> = ids
        .chunks_exact(4)
        .map(|c| {
            c_int::try_from(u32::from_le_bytes(c.try_into().expect("4 bytes")))
                .map_err(|_| INVALID_VALUE)
        })
        .collect::<Result<_, _>>()?;
    // 16 bytes of storage per attribute: the largest value (P2P tokens) fits.
    let mut values = vec![[0u64; 2]; attrs.len()];
    let n = c_uint::try_from(attrs.len()).map_err(|_| INVALID_VALUE)?;
    // SAFETY: every data pointer has 16 writable bytes, enough for any attribute.
    ok(unsafe {
        if single {
            entry(s.driver.pointer_get_attribute)?(values[0].as_mut_ptr().cast(), attrs[0], ptr)
        } else {
            let mut data: Vec<*mut c_void> =
                values.iter_mut().map(|v| v.as_mut_ptr().cast()).collect();
            entry(s.driver.pointer_get_attributes)?(n, attrs.as_mut_ptr(), data.as_mut_ptr(), ptr)
        }
    })?;
    let t = s.tables();
    for (a, v) in attrs.iter().zip(values.iter_mut()) {
        if *a == POINTER_ATTRIBUTE_CONTEXT && v[0] != 0 {
            let real = usize::try_from(v[0]).unwrap_or(0);
            v[0] = t
                .ctxs
                .iter()
                .find(|(_, &r)| r == real)
                .map_or(0, |(&id, _)| id);
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
