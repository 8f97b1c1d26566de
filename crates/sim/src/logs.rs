//! Driver logs (`cuLogs*`): every failed call of the simulator leaves a
//! line `[vgpu-sim][E][ENTRY POINT] reason`, kept in a buffer of at most
//! 25600 bytes (the driver's), oldest lines dropped first. An iterator is
//! the number of lines logged before the one it points at.
//!
//! Functions registered with `cuLogsRegisterCallback` get each new line
//! (without its newline) at level `CU_LOG_LEVEL_ERROR` inside the failed
//! call, on its thread, once the simulator's lock is released and before
//! the call returns, as driver 580 runs them: a function that blocks holds
//! the call (`tests/log_callbacks.rs`).

use std::collections::{BTreeMap, VecDeque};
use std::ffi::{c_char, c_void};

use crate::cu::{CUlogLevel, CUresult};
use crate::error::{err, Res};

/// Bytes of log the buffer keeps, as the driver's.
pub(crate) const MAX_BYTES: usize = 25600;

/// A registered log callback: `fn(userData, level, message, length)`.
pub(crate) type LogFn = unsafe extern "C" fn(*mut c_void, CUlogLevel, *mut c_char, usize);

#[derive(Debug, Default)]
pub(crate) struct Logs {
    /// (iterator value, line with its newline), oldest first.
    lines: VecDeque<(u32, String)>,
    next: u32,
    bytes: usize,
    /// Registered callbacks and their user data, by handle, in
    /// registration order.
    callbacks: BTreeMap<usize, (LogFn, usize)>,
}

/// A logged line and the callbacks to call with it.
pub(crate) struct Logged {
    line: String,
    callbacks: Vec<(LogFn, usize)>,
}

impl Logged {
    /// Calls each registered callback with the line. Call it with no lock
    /// held: a callback may block.
    pub(crate) fn deliver(self) {
        let mut text = self.line.into_bytes();
        let length = text.len();
        text.push(0);
        for (f, data) in self.callbacks {
            let mut copy = text.clone();
            // SAFETY: the application's function with its own user data, as
            // it registered them; `copy` holds `length` bytes and a NUL.
            unsafe {
                f(
                    data as *mut c_void,
                    CUlogLevel::CU_LOG_LEVEL_ERROR,
                    copy.as_mut_ptr().cast(),
                    length,
                );
            }
        }
    }
}

impl Logs {
    /// Registers a callback under `handle`.
    pub(crate) fn register(&mut self, handle: usize, f: LogFn, data: usize) {
        self.callbacks.insert(handle, (f, data));
    }

    /// Unregisters the callback under `handle`: an unknown one is
    /// `CUDA_ERROR_INVALID_VALUE`.
    pub(crate) fn unregister(&mut self, handle: usize) -> Res<()> {
        match self.callbacks.remove(&handle) {
            Some(_) => Ok(()),
            None => err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                "no log callback is registered under this handle",
            ),
        }
    }

    /// Logs a failed call; the line goes to the registered callbacks when
    /// the caller delivers it.
    pub(crate) fn record(&mut self, entry: &str, why: &str) -> Logged {
        let line = format!("[vgpu-sim][E][{entry}] {why}\n");
        let logged = Logged {
            line: line.trim_end().to_owned(),
            callbacks: self.callbacks.values().copied().collect(),
        };
        self.bytes += line.len();
        self.lines.push_back((self.next, line));
        self.next = self.next.wrapping_add(1);
        while self.bytes > MAX_BYTES {
            match self.lines.pop_front() {
                Some((_, old)) => self.bytes -= old.len(),
                None => break,
            }
        }
        logged
    }

    /// `cuLogsCurrent`: where the next line will be.
    pub(crate) fn current(&self) -> u32 {
        self.next
    }

    /// `cuLogsDumpToMemory`: the whole lines from `from` (all kept lines
    /// when `None`) that fit in `cap` bytes with a NUL, and the iterator
    /// after the last of them. Lines exist but none fits:
    /// `CUDA_ERROR_INVALID_VALUE`.
    pub(crate) fn dump(&self, from: Option<u32>, cap: usize) -> Res<(String, u32)> {
        let mut out = String::new();
        let mut after = from.unwrap_or(self.next);
        let mut any = false;
        for (i, line) in &self.lines {
            if from.is_some_and(|f| i.wrapping_sub(f) >= 1 << 31) {
                continue;
            }
            any = true;
            if out.len() + line.len() + 1 > cap {
                break;
            }
            out.push_str(line);
            after = i.wrapping_add(1);
        }
        if any && out.is_empty() {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                "buffer too small for any log line",
            );
        }
        Ok((out, after))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static SEEN: std::sync::Mutex<Vec<(usize, String)>> = std::sync::Mutex::new(Vec::new());

    unsafe extern "C" fn seen(data: *mut c_void, _: CUlogLevel, msg: *mut c_char, len: usize) {
        // SAFETY: the caller passes `len` bytes of message.
        let text = unsafe { std::slice::from_raw_parts(msg.cast::<u8>(), len) };
        let text = String::from_utf8_lossy(text).into_owned();
        SEEN.lock().expect("lock").push((data as usize, text));
    }

    #[test]
    fn registered_callbacks_get_each_new_line_until_unregistered() {
        let mut l = Logs::default();
        l.record("cuA", "before").deliver();
        l.register(0x100, seen, 1);
        l.register(0x110, seen, 2);
        l.record("cuB", "both").deliver();
        l.unregister(0x100).expect("registered");
        assert!(l.unregister(0x100).is_err());
        l.record("cuC", "one").deliver();
        let line = |s: &str| s.to_owned();
        assert_eq!(
            *SEEN.lock().expect("lock"),
            vec![
                (1, line("[vgpu-sim][E][cuB] both")),
                (2, line("[vgpu-sim][E][cuB] both")),
                (2, line("[vgpu-sim][E][cuC] one")),
            ]
        );
    }

    #[test]
    fn dumps_from_an_iterator_and_advances() {
        let mut l = Logs::default();
        l.record("cuA", "first");
        let it = l.current();
        l.record("cuB", "second");
        let (all, end) = l.dump(None, 1024).expect("fits");
        assert_eq!(all, "[vgpu-sim][E][cuA] first\n[vgpu-sim][E][cuB] second\n");
        assert_eq!(end, 2);
        let (tail, _) = l.dump(Some(it), 1024).expect("fits");
        assert_eq!(tail, "[vgpu-sim][E][cuB] second\n");
        assert!(l.dump(Some(it), 4).is_err());
        assert_eq!(l.dump(Some(end), 4).expect("nothing to dump").0, "");
    }
}
