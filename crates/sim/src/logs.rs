//! Driver logs (`cuLogs*`): every failed call of the simulator leaves a
//! line `[vgpu-sim][E][ENTRY POINT] reason`, kept in a buffer of at most
//! 25600 bytes (the driver's), oldest lines dropped first. An iterator is
//! the number of lines logged before the one it points at.

use std::collections::VecDeque;

use crate::cu::CUresult;
use crate::error::{err, Res};

/// Bytes of log the buffer keeps, as the driver's.
pub(crate) const MAX_BYTES: usize = 25600;

#[derive(Debug, Default)]
pub(crate) struct Logs {
    /// (iterator value, line with its newline), oldest first.
    lines: VecDeque<(u32, String)>,
    next: u32,
    bytes: usize,
}

impl Logs {
    /// Logs a failed call.
    pub(crate) fn record(&mut self, entry: &str, why: &str) {
        let line = format!("[vgpu-sim][E][{entry}] {why}\n");
        self.bytes += line.len();
        self.lines.push_back((self.next, line));
        self.next = self.next.wrapping_add(1);
        while self.bytes > MAX_BYTES {
            match self.lines.pop_front() {
                Some((_, old)) => self.bytes -= old.len(),
                None => break,
            }
        }
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
