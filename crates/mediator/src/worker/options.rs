//! Options of module and library loads on the wire: 16-byte (option, flags,
//! value) records, decoded for the driver, with JIT log buffers that live in
//! the worker and travel back in the reply.

use std::ffi::{c_int, c_uint, c_void};
use std::ptr;

use super::calls::size;
use super::status::INVALID_VALUE;
use super::tables::as_handle;
use crate::driver::Status;

/// JIT options whose values are log buffers or their sizes.
const JIT_INFO_LOG_BUFFER: u32 = 3;
const JIT_INFO_LOG_BUFFER_SIZE: u32 = 4;
const JIT_ERROR_LOG_BUFFER: u32 = 5;
const JIT_ERROR_LOG_BUFFER_SIZE: u32 = 6;
const MAX_JIT_LOG: usize = 1 << 20;
const MAX_OPTIONS: usize = 64;

/// Options of a load call, decoded from 16-byte (option, pad, value) records,
/// with the log buffers living in the worker.
#[derive(Debug)]
pub(super) struct Options {
    pub(super) keys: Vec<c_int>,
    pub(super) values: Vec<*mut c_void>,
    /// The application passed no values array (flags bit 0 on every record).
    pub(super) no_values: bool,
    pub(super) info_log: Vec<u8>,
    pub(super) error_log: Vec<u8>,
}

impl Options {
    pub(super) fn parse(bytes: &[u8]) -> Result<Options, Status> {
        let n = bytes.len() / 16;
        if n > MAX_OPTIONS || !bytes.len().is_multiple_of(16) {
            return Err(INVALID_VALUE);
        }
        let mut o = Options {
            keys: Vec::with_capacity(n),
            values: Vec::with_capacity(n),
            no_values: n > 0,
            info_log: Vec::new(),
            error_log: Vec::new(),
        };
        for rec in bytes.chunks_exact(16) {
            let key = u32::from_le_bytes(rec[..4].try_into().expect("4 bytes"));
            let flags = u32::from_le_bytes(rec[4..8].try_into().expect("4 bytes"));
            o.no_values &= flags & 1 != 0;
            let val = u64::from_le_bytes(rec[8..].try_into().expect("8 bytes"));
            o.keys
                .push(c_int::try_from(key).map_err(|_| INVALID_VALUE)?);
            o.values.push(as_handle(size(val)?));
        }
        Ok(o)
    }

    /// Points the log-buffer options at worker buffers of the requested sizes.
    pub(super) fn with_jit_logs(mut self) -> Options {
        for i in 0..self.keys.len() {
            let (size_key, info) = match self.keys[i] as u32 {
                JIT_INFO_LOG_BUFFER => (JIT_INFO_LOG_BUFFER_SIZE, true),
                JIT_ERROR_LOG_BUFFER => (JIT_ERROR_LOG_BUFFER_SIZE, false),
                _ => continue,
            };
            let len = self
                .keys
                .iter()
                .position(|&k| k as u32 == size_key)
                .map_or(0, |j| self.values[j] as usize)
                .min(MAX_JIT_LOG);
            let buf = if info {
                &mut self.info_log
            } else {
                &mut self.error_log
            };
            buf.resize(len, 0);
            self.values[i] = buf.as_mut_ptr().cast();
        }
        self
    }

    /// The values array to hand the driver: NULL when the application passed none.
    pub(super) fn values_ptr(&mut self) -> *mut *mut c_void {
        if self.no_values {
            ptr::null_mut()
        } else {
            self.values.as_mut_ptr()
        }
    }

    pub(super) fn count(&self) -> Result<c_uint, Status> {
        c_uint::try_from(self.keys.len()).map_err(|_| INVALID_VALUE)
    }

    /// Final option values, then both logs NUL-terminated.
    pub(super) fn reply(&self) -> Vec<u8> {
        let mut blob: Vec<u8> = self
            .values
            .iter()
            .flat_map(|v| (*v as u64).to_le_bytes())
            .collect();
        for log in [&self.info_log, &self.error_log] {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            blob.extend_from_slice(&log[..end]);
            blob.push(0);
        }
        blob
    }
}
