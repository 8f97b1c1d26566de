//! CUDA arrays against a tenant's quota: their size, from the descriptor a
//! creation request carries, and the bytes each live array was charged.
//!
//! An array's size is its elements' bytes: width × height × depth (each at
//! least 1) × channels × the format's bytes per channel, summed over the
//! levels of a mipmapped array. The driver's footprint adds alignment and
//! padding that the request does not show; formats whose element size is
//! not a plain 1, 2 or 4 bytes per channel (block-compressed, NV12, packed
//! normalised formats) are counted at 4 bytes per channel.

use std::collections::HashMap;
use std::sync::Mutex;

use vgpu_proto::{Op, Request};

/// Bytes charged for each live array and mipmapped array, by the id the
/// client knows it by.
static LIVE: Mutex<Option<HashMap<u64, u64>>> = Mutex::new(None);

/// Bytes per channel of an element of `CUarray_format` `format`.
fn channel_bytes(format: u32) -> u64 {
    match format {
        0x01 | 0x08 => 1,
        0x02 | 0x09 | 0x10 => 2,
        _ => 4,
    }
}

fn word(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, |s| u64::from(u32::from_le_bytes(s)))
}

fn dword(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// The bytes of `levels` levels of a `w` × `h` × `d` array whose elements
/// have `channels` channels of `format`.
fn size(w: u64, h: u64, d: u64, format: u32, channels: u64, levels: u32) -> u64 {
    let element = channel_bytes(format).saturating_mul(channels.max(1));
    (0..levels.clamp(1, 32))
        .map(|l| {
            let dim = |v: u64| (v >> l).max(1);
            dim(w).saturating_mul(dim(h)).saturating_mul(dim(d))
        })
        .fold(0u64, u64::saturating_add)
        .saturating_mul(element)
}

/// The bytes a request that creates an array asks for (the request's fixed
/// part is its descriptor, as `CUDA_ARRAY_DESCRIPTOR` or
/// `CUDA_ARRAY3D_DESCRIPTOR`, v1 with 32-bit sizes or v2 with 64-bit ones).
pub fn asks_for(req: &Request) -> Option<u64> {
    let b = &req.fixed[..];
    let fmt = |at| u32::try_from(word(b, at)).unwrap_or(0);
    Some(match req.op {
        Op::ArrayCreate => size(word(b, 0), word(b, 4), 1, fmt(8), word(b, 12), 1),
        Op::ArrayCreate_v2 => size(dword(b, 0), dword(b, 8), 1, fmt(16), word(b, 20), 1),
        Op::Array3DCreate => size(word(b, 0), word(b, 4), word(b, 8), fmt(12), word(b, 16), 1),
        Op::Array3DCreate_v2 | Op::MipmappedArrayCreate => {
            let levels = match req.op {
                // The level count follows the 40-byte descriptor.
                Op::MipmappedArrayCreate => u32::try_from(word(b, 40)).unwrap_or(1),
                _ => 1,
            };
            let (w, h, d) = (dword(b, 0), dword(b, 8), dword(b, 16));
            size(w, h, d, fmt(24), word(b, 28), levels)
        }
        _ => return None,
    })
}

/// Whether `op` creates an array whose charge lasts until it is destroyed.
pub fn creates(op: Op) -> bool {
    matches!(
        op,
        Op::ArrayCreate
            | Op::ArrayCreate_v2
            | Op::Array3DCreate
            | Op::Array3DCreate_v2
            | Op::MipmappedArrayCreate
    )
}

/// The array `id` was created with `bytes` charged.
pub fn created(id: u64, bytes: u64) {
    let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    live.get_or_insert_with(HashMap::new).insert(id, bytes);
}

/// The bytes to give back once `req` (a destruction) succeeded: the array's
/// charge, or 0 for a request that destroys no array of ours.
pub fn destroyed(req: &Request) -> u64 {
    if !matches!(req.op, Op::ArrayDestroy | Op::MipmappedArrayDestroy) {
        return 0;
    }
    let id = dword(&req.fixed, 0);
    // Only destructions get here: the lock is off every other request's path.
    let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    live.as_mut().and_then(|m| m.remove(&id)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_of_arrays() {
        // 1024 × 768 float4.
        assert_eq!(size(1024, 768, 0, 0x20, 4, 1), 1024 * 768 * 16);
        // A 1D array of bytes: height 0 counts as 1.
        assert_eq!(size(4096, 0, 0, 0x01, 1, 1), 4096);
        // Three levels of 64 × 64 half2: 64², 32², 16².
        assert_eq!(size(64, 64, 0, 0x10, 2, 3), (4096 + 1024 + 256) * 4);
        assert_eq!(size(u64::MAX, u64::MAX, 2, 0x20, 4, 1), u64::MAX);
        assert_eq!(channel_bytes(0xc0), 4, "other formats: 4 bytes a channel");
    }
}
