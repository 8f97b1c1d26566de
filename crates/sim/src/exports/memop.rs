//! Stream memory operations: the model functions of the generated exports
//! (`generated/mod.rs`). The `_ptsz` forms read NULL as the per-thread stream; the first
//! and `_v2` forms are the same operation on driver 580.

use crate::cu::{CUdeviceptr, CUstream};
use crate::error::Res;
use crate::ffi::key;
use crate::memop::{enqueue, MemOp};
use crate::state;

use super::stream::ptsz;

fn write(stream: usize, addr: CUdeviceptr, value: u64, width: usize, flags: u32) -> Res<()> {
    let op = MemOp::write(addr, value, width, flags)?;
    enqueue(&mut state::sim()?.lock(), stream, op)
}

fn wait(stream: usize, addr: CUdeviceptr, value: u64, width: usize, flags: u32) -> Res<()> {
    let op = MemOp::wait(addr, value, width, flags)?;
    enqueue(&mut state::sim()?.lock(), stream, op)
}

/// Defines the model functions of one operation's four forms.
macro_rules! forms {
    ($op:ident, $width:literal, $ty:ty: $first:ident, $first_ptsz:ident, $v2:ident, $v2_ptsz:ident) => {
        #[doc = concat!("`cuStream", stringify!($op), "` of ", stringify!($width), " bytes, first form.")]
        pub(crate) fn $first(s: CUstream, addr: CUdeviceptr, value: $ty, flags: u32) -> Res<()> {
            $op(key(s), addr, u64::from(value), $width, flags)
        }
        #[doc = "The `_ptsz` first form."]
        pub(crate) fn $first_ptsz(s: CUstream, addr: CUdeviceptr, value: $ty, flags: u32) -> Res<()> {
            $op(ptsz(s), addr, u64::from(value), $width, flags)
        }
        #[doc = "The `_v2` form."]
        pub(crate) fn $v2(s: CUstream, addr: CUdeviceptr, value: $ty, flags: u32) -> Res<()> {
            $op(key(s), addr, u64::from(value), $width, flags)
        }
        #[doc = "The `_v2_ptsz` form."]
        pub(crate) fn $v2_ptsz(s: CUstream, addr: CUdeviceptr, value: $ty, flags: u32) -> Res<()> {
            $op(ptsz(s), addr, u64::from(value), $width, flags)
        }
    };
}

forms!(write, 4, u32: stream_write_value32, stream_write_value32_ptsz,
    stream_write_value32_v2, stream_write_value32_v2_ptsz);
forms!(write, 8, u64: stream_write_value64, stream_write_value64_ptsz,
    stream_write_value64_v2, stream_write_value64_v2_ptsz);
forms!(wait, 4, u32: stream_wait_value32, stream_wait_value32_ptsz,
    stream_wait_value32_v2, stream_wait_value32_v2_ptsz);
forms!(wait, 8, u64: stream_wait_value64, stream_wait_value64_ptsz,
    stream_wait_value64_v2, stream_wait_value64_v2_ptsz);
