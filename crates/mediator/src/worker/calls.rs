//! What every worker call uses: the reply, the typed request, status
//! checks, and the conversions the generated calls (`generated/mod.rs`)
//! make between wire fields and driver arguments.

use std::ffi::CString;
use std::ptr;

use vgpu_proto::{Message, Request, MAX_BLOB};

use super::status::{INVALID_VALUE, SUCCESS};
use crate::driver::Status;

/// A successful call's reply: its fixed part, its blob, and a descriptor
/// to send after it.
#[derive(Debug, Default)]
pub struct Reply {
    pub fixed: Vec<u8>,
    pub blob: Vec<u8>,
    /// A descriptor to send after the response (SCM_RIGHTS).
    pub fd: Option<std::os::fd::OwnedFd>,
}

impl Reply {
    /// A reply with fixed part `m` and `blob`.
    pub fn new<M: Message>(m: &M, blob: Vec<u8>) -> Reply {
        Reply {
            fixed: m.as_bytes().to_vec(),
            blob,
            fd: None,
        }
    }
}

/// `Ok` for `CUDA_SUCCESS`, the status otherwise.
pub fn ok(st: Status) -> Result<(), Status> {
    if st == SUCCESS {
        Ok(())
    } else {
        Err(st)
    }
}

/// The request's typed fixed part. The lane checked it on receipt, so a
/// failure here means a request was read as another operation's.
pub fn message<M: Message>(req: &Request) -> Result<&M, Status> {
    req.message::<M>().map_err(|e| {
        tracing::error!("{}: {e}", req.op.name());
        INVALID_VALUE
    })
}

/// A `u64` from the wire as `usize` (vgpu supports 64-bit targets only).
pub fn size(v: u64) -> Result<usize, Status> {
    usize::try_from(v).map_err(|_| INVALID_VALUE)
}

/// A stored handle as the driver's pointer type.
pub fn as_ptr<T>(raw: usize) -> *mut T {
    raw as *mut T
}

/// A C value from its bytes on the wire.
///
/// # Safety
/// `T` must be valid for any bytes (integers, enum newtypes, raw pointers,
/// and structs and unions of those).
pub unsafe fn record<T, const N: usize>(bytes: &[u8; N]) -> T {
    const { assert!(N == core::mem::size_of::<T>()) };
    // SAFETY: `bytes` holds exactly `size_of::<T>()` bytes, and the caller
    // promises any bytes are a valid `T`.
    unsafe { ptr::read_unaligned(bytes.as_ptr().cast::<T>()) }
}

/// A C value's bytes for the wire. The value was zero-initialised before
/// the driver wrote it, so its padding bytes are initialised too.
pub fn record_bytes<T, const N: usize>(v: &T) -> [u8; N] {
    const { assert!(N == core::mem::size_of::<T>()) };
    let mut out = [0u8; N];
    // SAFETY: `out` holds exactly `size_of::<T>()` bytes; `v` is a live value
    // whose bytes were all written (see above).
    unsafe { ptr::copy_nonoverlapping(ptr::from_ref(v).cast::<u8>(), out.as_mut_ptr(), N) };
    out
}

/// The next `len` bytes of a request's blob.
pub fn part<'a>(blob: &'a [u8], at: &mut usize, len: usize) -> Result<&'a [u8], Status> {
    let end = at.checked_add(len).ok_or(INVALID_VALUE)?;
    let bytes = blob.get(*at..end).ok_or(INVALID_VALUE)?;
    *at = end;
    Ok(bytes)
}

/// A string from the wire, NUL-terminated for the driver; one with a NUL
/// inside is refused.
pub fn string(bytes: &[u8]) -> Result<CString, Status> {
    CString::new(bytes).map_err(|_| INVALID_VALUE)
}

/// Elements of `T` from their bytes on the wire.
///
/// # Safety
/// As for [`record`]: `T` must be valid for any bytes.
pub unsafe fn elements<T: Copy>(bytes: &[u8]) -> Vec<T> {
    let n = bytes.len() / core::mem::size_of::<T>().max(1);
    let mut v: Vec<T> = Vec::with_capacity(n);
    // SAFETY: the vector has room for `n` elements, which the copy fills
    // (the caller promises any bytes are valid elements).
    unsafe {
        ptr::copy_nonoverlapping(
            bytes.as_ptr(),
            v.as_mut_ptr().cast::<u8>(),
            n * core::mem::size_of::<T>(),
        );
        v.set_len(n);
    }
    v
}

/// Elements' bytes for the wire (zero-initialised before the driver wrote
/// them: see [`buffer`]).
pub fn elements_bytes<T: Copy>(v: &[T]) -> Vec<u8> {
    let len = core::mem::size_of_val(v);
    let mut out = vec![0u8; len];
    // SAFETY: `out` holds exactly the slice's bytes; no overlap.
    unsafe { ptr::copy_nonoverlapping(v.as_ptr().cast::<u8>(), out.as_mut_ptr(), len) };
    out
}

/// `n` zeroed elements for the driver to write, at most a blob's worth.
pub fn buffer<T: Copy>(n: usize) -> Result<Vec<T>, Status> {
    let bytes = n
        .checked_mul(core::mem::size_of::<T>())
        .ok_or(INVALID_VALUE)?;
    if bytes > MAX_BLOB {
        return Err(INVALID_VALUE);
    }
    let mut v: Vec<T> = Vec::with_capacity(n);
    // SAFETY: zero bytes are a valid value of every C type the generated
    // calls ask for (integers, enum newtypes, pointers, structs of those).
    unsafe {
        ptr::write_bytes(v.as_mut_ptr(), 0, n);
        v.set_len(n);
    }
    Ok(v)
}

/// The out-pointer for an optional output: NULL unless the application
/// asked for it.
pub fn wanted<T>(want: u8, slot: &mut T) -> *mut T {
    if want == 0 {
        ptr::null_mut()
    } else {
        slot
    }
}

/// [`vgpu_proto::span::product`]; `CUDA_ERROR_INVALID_VALUE` on overflow.
pub fn product(factors: &[u64]) -> Result<u64, Status> {
    vgpu_proto::span::product(factors).ok_or(INVALID_VALUE)
}

/// [`vgpu_proto::span::pitched`]; `CUDA_ERROR_INVALID_VALUE` on overflow.
pub fn pitched(pitch: u64, width: u64, height: u64) -> Result<u64, Status> {
    vgpu_proto::span::pitched(pitch, width, height).ok_or(INVALID_VALUE)
}

/// Copies `bytes` into 8-byte-aligned storage, as driver images and kernel
/// parameter buffers expect.
pub fn aligned(bytes: &[u8]) -> Vec<u64> {
    let mut v = vec![0u64; bytes.len().div_ceil(8)];
    // SAFETY: `v` holds at least `bytes.len()` bytes and the two do not overlap.
    unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), v.as_mut_ptr().cast::<u8>(), bytes.len()) };
    v
}

/// Splits `blob` at `at`.
pub fn split(blob: &[u8], at: usize) -> Result<(&[u8], &[u8]), Status> {
    if at > blob.len() {
        return Err(INVALID_VALUE);
    }
    Ok(blob.split_at(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_multiply_and_span_rows() {
        assert_eq!(product(&[3, 4, 2]), Ok(24));
        assert_eq!(product(&[]), Ok(1));
        assert!(product(&[u64::MAX, 2]).is_err());
        assert_eq!(pitched(64, 16, 4), Ok(3 * 64 + 16));
        assert_eq!(pitched(64, 0, 4), Ok(0));
        assert_eq!(pitched(64, 16, 0), Ok(0));
        assert!(pitched(u64::MAX, 1, 3).is_err());
    }

    #[test]
    fn blob_parts_are_bounded() {
        let blob = [1u8, 2, 3, 4, 5];
        let mut at = 0;
        assert_eq!(part(&blob, &mut at, 2), Ok(&[1u8, 2][..]));
        assert_eq!(part(&blob, &mut at, 3), Ok(&[3u8, 4, 5][..]));
        assert!(part(&blob, &mut at, 1).is_err());
        assert!(part(&blob, &mut at, usize::MAX).is_err());
        assert!(string(b"a\0b").is_err());
    }

    #[test]
    fn records_and_elements_round_trip() {
        let v: u32 = 0x0102_0304;
        let bytes: [u8; 4] = record_bytes(&v);
        // SAFETY: any bytes are a valid u32.
        assert_eq!(unsafe { record::<u32, 4>(&bytes) }, v);
        let xs = [1u16, 2, 3];
        let b = elements_bytes(&xs);
        // SAFETY: any bytes are valid u16s.
        assert_eq!(unsafe { elements::<u16>(&b) }, xs);
        assert_eq!(buffer::<u64>(3).expect("small"), vec![0; 3]);
        assert!(buffer::<u64>(usize::MAX / 4).is_err());
        let mut x = 5;
        assert!(wanted(0, &mut x).is_null());
        assert!(!wanted(1, &mut x).is_null());
    }
}
