//! Stream memory operations: `cuStreamWriteValue32/64`, `cuStreamWaitValue32/64`.
//!
//! A write stores a 32- or 64-bit value at a device address in stream order. A wait
//! holds its stream until the value at an address meets a condition. The simulator runs
//! work when it is enqueued, so everything ordered before a wait has already run when
//! the wait is checked: a met condition lets the stream go on. A condition that is not
//! met holds a created stream, as the driver's does: the wait succeeds, and the stream
//! answers `CUDA_ERROR_NOT_READY` to queries until a later write (from another stream or
//! the host) meets the condition. Limits of this test double: work enqueued on the
//! stream after the wait still runs at once (a batch's operations after it never run),
//! `cuStreamSynchronize` answers `CUDA_ERROR_NOT_READY` where the driver would block,
//! and on an implicit stream the unmet wait itself is reported as `CUDA_ERROR_NOT_READY`.
//! While the stream is capturing, each operation becomes a batch memory-operation node.

use crate::cu::{CUdeviceptr, CUresult};
use crate::error::{err, Error, Res};
use crate::graph::{captured, Work};
use crate::memory;
use crate::state::State;
use crate::stream;

/// `CU_STREAM_WAIT_VALUE_GEQ`: `(signed)(*addr - value) >= 0`, a cyclic comparison.
const WAIT_GEQ: u32 = 0;
/// `CU_STREAM_WAIT_VALUE_EQ`.
const WAIT_EQ: u32 = 1;
/// `CU_STREAM_WAIT_VALUE_AND`: `(*addr & value) != 0`.
const WAIT_AND: u32 = 2;
/// `CU_STREAM_WAIT_VALUE_NOR`: `~(*addr | value) != 0`.
const WAIT_NOR: u32 = 3;
/// `CU_STREAM_WAIT_VALUE_FLUSH`, which may be combined with a condition.
const WAIT_FLUSH: u32 = 1 << 30;
/// `CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER`.
#[cfg(test)]
const WRITE_NO_MEMORY_BARRIER: u32 = 1;

/// One memory operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemOp {
    /// Stores `value` (its low `width` bytes) at `addr`.
    Write { addr: u64, value: u64, width: usize },
    /// Waits until the `width`-byte value at `addr` meets `flags`' condition with `value`.
    Wait {
        addr: u64,
        value: u64,
        width: usize,
        flags: u32,
    },
}

fn invalid<T>(why: impl Into<std::borrow::Cow<'static, str>>) -> Res<T> {
    err(CUresult::CUDA_ERROR_INVALID_VALUE, why)
}

impl MemOp {
    /// A write of `width` (4 or 8) bytes, its flags checked.
    pub(crate) fn write(addr: CUdeviceptr, value: u64, width: usize, flags: u32) -> Res<Self> {
        // Driver 580 on an H100/H200 refuses NO_MEMORY_BARRIER too: no flag
        // is valid.
        if flags != 0 {
            return invalid(format!("write-value flags {flags:#x} are not valid"));
        }
        aligned(addr, width)?;
        Ok(MemOp::Write { addr, value, width })
    }

    /// A wait on `width` (4 or 8) bytes, its flags checked.
    pub(crate) fn wait(addr: CUdeviceptr, value: u64, width: usize, flags: u32) -> Res<Self> {
        if (flags & !WAIT_FLUSH) > WAIT_NOR {
            return invalid(format!("wait-value flags {flags:#x} are not valid"));
        }
        if flags & WAIT_FLUSH != 0 {
            // A device that cannot flush remote writes
            // (CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES 0, as on an H200).
            return err(
                CUresult::CUDA_ERROR_NOT_SUPPORTED,
                "CU_STREAM_WAIT_VALUE_FLUSH: the device cannot flush remote writes",
            );
        }
        aligned(addr, width)?;
        Ok(MemOp::Wait {
            addr,
            value,
            width,
            flags,
        })
    }

    /// Runs the operation on the device's memory: a write stores its value, a wait
    /// checks its condition (see the module documentation).
    pub(crate) fn run(self, st: &State) -> Res<()> {
        match self {
            MemOp::Write { addr, value, width } => {
                let p = memory::range(st, addr, width)?;
                let bytes = value.to_le_bytes();
                // SAFETY: `p` points at `width` (at most 8) bytes inside a live
                // allocation, checked by `memory::range`.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, width) };
                Ok(())
            }
            MemOp::Wait {
                addr,
                value,
                width,
                flags,
            } => {
                let p = memory::range(st, addr, width)?;
                let mut bytes = [0u8; 8];
                // SAFETY: as for the write, `width` bytes inside a live allocation.
                unsafe { std::ptr::copy_nonoverlapping(p, bytes.as_mut_ptr(), width) };
                let now = u64::from_le_bytes(bytes);
                if met(now, value, width, flags & !WAIT_FLUSH) {
                    Ok(())
                } else {
                    err(
                        CUresult::CUDA_ERROR_NOT_READY,
                        format!(
                            "wait on {addr:#x} (value {now:#x}, condition {flags:#x} with \
                             {value:#x}) is not met, and the simulator cannot hold a stream"
                        ),
                    )
                }
            }
        }
    }
}

/// The address must be aligned to the value's size.
fn aligned(addr: CUdeviceptr, width: usize) -> Res<()> {
    if !addr.is_multiple_of(width as u64) {
        return invalid(format!("{addr:#x} is not aligned to {width} bytes"));
    }
    Ok(())
}

/// Whether `now` meets `condition` with `value`, compared as `width`-byte values.
fn met(now: u64, value: u64, width: usize, condition: u32) -> bool {
    let (now, value) = if width == 4 {
        (now & 0xFFFF_FFFF, value & 0xFFFF_FFFF)
    } else {
        (now, value)
    };
    let mask = if width == 4 { 0xFFFF_FFFF } else { u64::MAX };
    match condition {
        // The difference's sign bit clear: `now` is at or after `value`, cyclically.
        WAIT_GEQ => now.wrapping_sub(value) & mask <= mask >> 1,
        WAIT_EQ => now == value,
        WAIT_AND => now & value != 0,
        _ => !(now | value) & mask != 0,
    }
}

/// Enqueues `op` on stream `stream_key`: recorded as a node while the stream is
/// capturing, run otherwise.
pub(crate) fn enqueue(st: &mut State, stream_key: usize, op: MemOp) -> Res<()> {
    stream::usable(st, stream_key)?;
    if captured(st, stream_key, || Work::MemOps(vec![op]))? {
        return Ok(());
    }
    let ran = op.run(st).map_err(|e| (op, e));
    hold_if_unmet(st, stream_key, ran)
}

/// A created stream whose wait is not met is held (see the module documentation) and
/// the wait succeeds; every other outcome is the operation's own.
fn hold_if_unmet(st: &mut State, stream_key: usize, ran: Result<(), (MemOp, Error)>) -> Res<()> {
    match (ran, st.streams.get_mut(&stream_key)) {
        (Err((wait, e)), Some(s)) if e.code == CUresult::CUDA_ERROR_NOT_READY => {
            s.stalled = Some(wait);
            Ok(())
        }
        (ran, _) => ran.map_err(|(_, e)| e),
    }
}

/// Enqueues a batch on stream `stream_key`: one node while the stream is capturing, each
/// operation run in order otherwise.
pub(crate) fn enqueue_all(st: &mut State, stream_key: usize, ops: Vec<MemOp>) -> Res<()> {
    stream::usable(st, stream_key)?;
    if captured(st, stream_key, || Work::MemOps(ops.clone()))? {
        return Ok(());
    }
    let ran = ops
        .into_iter()
        .try_for_each(|op| op.run(st).map_err(|e| (op, e)));
    hold_if_unmet(st, stream_key, ran)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_follow_the_driver() {
        assert!(met(5, 5, 4, WAIT_GEQ));
        assert!(met(6, 5, 4, WAIT_GEQ));
        assert!(!met(4, 5, 4, WAIT_GEQ));
        // Cyclic: 1 is "after" 0xFFFF_FFFF for 32-bit values.
        assert!(met(1, 0xFFFF_FFFF, 4, WAIT_GEQ));
        assert!(!met(1, 0xFFFF_FFFF, 8, WAIT_GEQ));
        assert!(met(7, 7, 8, WAIT_EQ));
        assert!(!met(7, 8, 8, WAIT_EQ));
        assert!(met(0b110, 0b010, 4, WAIT_AND));
        assert!(!met(0b100, 0b010, 4, WAIT_AND));
        assert!(met(0b100, 0b010, 4, WAIT_NOR));
        assert!(!met(0xFFFF_FFFF, 0, 4, WAIT_NOR));
    }

    #[test]
    fn flags_and_alignment_are_checked() {
        assert!(MemOp::write(0x1000, 1, 4, 2).is_err());
        assert!(MemOp::write(0x1002, 1, 4, 0).is_err());
        assert!(MemOp::write(0x1004, 1, 8, 0).is_err());
        assert!(MemOp::wait(0x1000, 1, 4, 4).is_err());
        assert!(MemOp::wait(0x1000, 1, 4, WAIT_AND).is_ok());
        assert!(MemOp::wait(0x1000, 1, 4, WAIT_FLUSH | WAIT_AND).is_err());
        assert!(MemOp::write(0x1000, 1, 4, WRITE_NO_MEMORY_BARRIER).is_err());
    }
}
