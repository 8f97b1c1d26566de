//! [`Blob`]: a request's bytes, read again and again into one buffer.

use std::ops::{Deref, DerefMut};

/// A request's blob. A lane reads every request into one [`crate::Request`],
/// so the buffer behind it is reused: making room for a frame's bytes
/// zero-fills only bytes the buffer never held before, never the bytes it
/// is about to overwrite (for a 16 MiB copy piece, that fill took as long as
/// a third of the socket read). It reads as the `len` bytes of the current
/// frame, and keeps the larger buffer for the next one.
#[derive(Clone, Default)]
pub struct Blob {
    /// Every byte ever written; the blob is its first `len`.
    buf: Vec<u8>,
    len: usize,
}

impl Blob {
    /// An empty blob.
    pub const fn new() -> Blob {
        Blob {
            buf: Vec::new(),
            len: 0,
        }
    }

    /// Makes the blob `len` bytes long, for the caller to overwrite all of
    /// them: their values are whatever an earlier frame left (or zero).
    pub fn overwrite(&mut self, len: usize) -> &mut [u8] {
        if self.buf.len() < len {
            self.buf.resize(len, 0);
        }
        self.len = len;
        &mut self.buf[..len]
    }

    /// Makes the blob a copy of `bytes`.
    pub fn copy_from(&mut self, bytes: &[u8]) {
        self.overwrite(bytes.len()).copy_from_slice(bytes);
    }

    /// Empties the blob, keeping its buffer.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// The blob's bytes as a vector of their own.
    pub fn into_vec(mut self) -> Vec<u8> {
        self.buf.truncate(self.len);
        self.buf
    }
}

impl From<Vec<u8>> for Blob {
    fn from(buf: Vec<u8>) -> Blob {
        let len = buf.len();
        Blob { buf, len }
    }
}

impl Deref for Blob {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl DerefMut for Blob {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.buf[..self.len]
    }
}

impl PartialEq for Blob {
    fn eq(&self, other: &Blob) -> bool {
        **self == **other
    }
}

impl Eq for Blob {}

impl std::fmt::Debug for Blob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::Blob;

    #[test]
    fn reuses_its_buffer_without_clearing() {
        let mut b = Blob::new();
        b.overwrite(4).copy_from_slice(b"abcd");
        assert_eq!(&*b, b"abcd");
        // Shorter: the old bytes stay behind, unseen.
        b.copy_from(b"xy");
        assert_eq!(&*b, b"xy");
        assert_eq!(b.overwrite(4), b"xycd");
        // Longer than ever: the new bytes start as zero.
        assert_eq!(b.overwrite(6), b"xycd\0\0");
        b.clear();
        assert!(b.is_empty());
        assert_eq!(Blob::from(b"hi".to_vec()).into_vec(), b"hi");
        assert_eq!(Blob::from(vec![1, 2]), Blob::from(vec![1, 2]));
    }
}
