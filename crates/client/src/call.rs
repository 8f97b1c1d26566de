//! Typed calls: a request is its operation's message (`vgpu_proto::<op>::Request`),
//! and its reply is decoded and checked as that operation's reply before
//! anything reads it. Also the conversions the generated stubs
//! (`generated/mod.rs`) make between application memory and the wire.

use std::ffi::{c_char, CStr};
use std::os::fd::OwnedFd;
use std::ptr;

use vgpu_proto::RequestMessage;

use crate::edge::{non_null, CuError, CuResult};
use crate::lane::Follows;
use crate::runtime::Session;

impl Session {
    /// Sends `m` (and `blob`) on the calling thread's lane and waits for
    /// its reply: the reply's fixed part and its blob.
    pub fn request<M: RequestMessage>(&self, m: &M, blob: &[u8]) -> CuResult<(M::Reply, Vec<u8>)> {
        self.request_in(crate::context::current(), m, blob)
    }

    /// [`Session::request`] under context `ctx` instead of the thread's current one.
    pub fn request_in<M: RequestMessage>(
        &self,
        ctx: u64,
        m: &M,
        blob: &[u8],
    ) -> CuResult<(M::Reply, Vec<u8>)> {
        let (fixed, back) = self.exchange(ctx, M::OP, m.as_bytes(), blob, None, None)?;
        Ok((self.reply::<M>(&fixed, back.len())?, back))
    }

    /// [`Session::request`] whose successful reply is followed by a
    /// descriptor (SCM_RIGHTS).
    pub fn request_fd<M: RequestMessage>(&self, m: &M) -> CuResult<(M::Reply, OwnedFd)> {
        let mut fd = None;
        let ctx = crate::context::current();
        let (fixed, back) = self.exchange(ctx, M::OP, m.as_bytes(), &[], None, Some(&mut fd))?;
        let reply = self.reply::<M>(&fixed, back.len())?;
        Ok((reply, fd.ok_or(CuError::UNKNOWN)?))
    }

    /// [`Session::request`] that passes `fd` (SCM_RIGHTS) after the request.
    pub fn request_passing<M: RequestMessage>(
        &self,
        m: &M,
        fd: std::os::fd::BorrowedFd<'_>,
    ) -> CuResult<M::Reply> {
        let ctx = crate::context::current();
        let (fixed, back) =
            self.exchange_passing(ctx, M::OP, m.as_bytes(), &[], None, Some(fd), None)?;
        self.reply::<M>(&fixed, back.len())
    }

    /// Posts `m` ([`Session::post`]) when `postable` (the caller checked
    /// locally everything the driver would refuse at once), else sends it
    /// and waits for its answer.
    pub fn post_or_request<M: RequestMessage>(
        &self,
        m: &M,
        blob: &[u8],
        postable: bool,
        follows: Follows,
    ) -> CuResult<()> {
        if postable {
            self.post(M::OP, m.as_bytes(), blob, follows)
        } else {
            self.request(m, blob).map(drop)
        }
    }

    /// A reply's fixed part, checked as `M`'s reply; one that is not loses
    /// the session (the worker speaks another protocol).
    fn reply<M: RequestMessage>(&self, fixed: &[u8], blob_len: usize) -> CuResult<M::Reply> {
        vgpu_proto::message::decode::<M::Reply>(fixed, blob_len)
            .copied()
            .map_err(|e| self.fail(M::OP.name(), e))
    }
}

/// The bytes of a `T` the application passes by pointer (checked non-NULL
/// by the caller), for the wire.
///
/// # Safety
/// `p` must be valid for a read of one `T`.
pub unsafe fn record_bytes_at<T, const N: usize>(p: *const T) -> [u8; N] {
    const { assert!(N == core::mem::size_of::<T>()) };
    // SAFETY: the caller's promise; `[u8; N]` has no alignment need.
    unsafe { ptr::read_unaligned(p.cast::<[u8; N]>()) }
}

/// The bytes of a NUL-terminated string the application passes (checked
/// non-NULL by the caller), without the NUL.
///
/// # Safety
/// `p` must point to a NUL-terminated string.
pub unsafe fn c_string<'a>(p: *const c_char) -> &'a [u8] {
    // SAFETY: the caller's promise.
    unsafe { CStr::from_ptr(p) }.to_bytes()
}

/// A length as the wire's u32; longer is `CUDA_ERROR_INVALID_VALUE`.
pub fn len_u32(n: usize) -> CuResult<u32> {
    u32::try_from(n).map_err(|_| CuError::INVALID_VALUE)
}

/// The bytes of `n` elements of `T` the application passes: none when `n`
/// is 0, `CUDA_ERROR_INVALID_VALUE` for NULL otherwise.
///
/// # Safety
/// `p` must be NULL or valid for reads of `n` elements.
pub unsafe fn elements_at<'a, T>(p: *const T, n: usize) -> CuResult<&'a [u8]> {
    if n == 0 {
        return Ok(&[]);
    }
    non_null(p)?;
    let len = n
        .checked_mul(core::mem::size_of::<T>())
        .ok_or(CuError::INVALID_VALUE)?;
    // SAFETY: the caller's promise: `n` readable elements at `p`.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

pub use vgpu_proto::span::product;

/// [`vgpu_proto::span::pitched`] of a width that may itself have
/// overflowed (`None`).
pub fn pitched(pitch: u64, width: Option<u64>, height: u64) -> Option<u64> {
    vgpu_proto::span::pitched(pitch, width?, height)
}

/// The next `len` bytes of a reply's blob; a shorter blob loses the session.
pub fn part<'a>(s: &Session, blob: &'a [u8], at: &mut usize, len: usize) -> CuResult<&'a [u8]> {
    let bytes = at
        .checked_add(len)
        .and_then(|end| blob.get(*at..end))
        .ok_or_else(|| s.fail("reply", "a blob shorter than its parts"))?;
    *at += len;
    Ok(bytes)
}

/// Every byte of a reply's blob was read; more loses the session.
pub fn all_read(s: &Session, blob: &[u8], at: usize) -> CuResult<()> {
    if blob.len() != at {
        return Err(s.fail("reply", "a blob longer than its parts"));
    }
    Ok(())
}

/// Writes a `T`'s bytes from the wire through an application pointer.
///
/// # Safety
/// `p` must be NULL or valid for a write of one `T`.
pub unsafe fn write_record<T, const N: usize>(p: *mut T, bytes: &[u8; N]) -> CuResult<()> {
    const { assert!(N == core::mem::size_of::<T>()) };
    non_null(p)?;
    // SAFETY: the caller's promise; exactly `size_of::<T>()` bytes.
    unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), p.cast::<u8>(), N) };
    Ok(())
}

/// Writes bytes from the wire into application memory.
///
/// # Safety
/// `p` must be NULL or valid for writes of `bytes.len()` bytes.
pub unsafe fn write_bytes(p: *mut u8, bytes: &[u8]) -> CuResult<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    non_null(p)?;
    // SAFETY: the caller's promise.
    unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len()) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(product(&[2, 3]), Some(6));
        assert_eq!(product(&[u64::MAX, 2]), None);
        assert_eq!(pitched(64, Some(16), 4), Some(3 * 64 + 16));
        assert_eq!(pitched(64, None, 4), None);
        assert_eq!(pitched(64, Some(16), 0), Some(0));
    }

    #[test]
    fn application_memory() {
        let v: u32 = 7;
        // SAFETY: a live u32.
        assert_eq!(unsafe { record_bytes_at::<u32, 4>(&v) }, 7u32.to_le_bytes());
        let xs = [1u16, 2];
        // SAFETY: two live u16s.
        let two = unsafe { elements_at(xs.as_ptr(), 2) }.expect("two");
        assert_eq!(two.len(), 4);
        // SAFETY: NULL is checked.
        assert!(unsafe { elements_at::<u16>(ptr::null(), 1) }.is_err());
        let mut out = [0u8; 3];
        // SAFETY: three writable bytes.
        unsafe { write_bytes(out.as_mut_ptr(), b"abc") }.expect("written");
        assert_eq!(&out, b"abc");
        // SAFETY: NULL is checked.
        assert!(unsafe { write_record::<u32, 4>(ptr::null_mut(), &[0; 4]) }.is_err());
        assert_eq!(len_u32(5), Ok(5));
    }
}
