//! `nvmlInternalGetExportTable`: the private table of entry points that
//! `nvidia-smi` asks NVML for, by id, and calls instead of some public
//! functions: it takes device handles (slot 81) and the process lists of its
//! "Processes" views (slots 213 to 215) from there, and it stops unless a
//! check it makes at start (slot 26) succeeds.
//!
//! The table is a size in bytes followed by function pointers; slot `n` sits
//! at byte `8 * n`. Each slot here is its own function, so a call knows its
//! slot. The two kinds above are answered as their public counterparts are;
//! every other slot is `NVML_ERROR_NOT_SUPPORTED` and, with `VGPU_LOG` set,
//! names itself. Another table id is `NVML_ERROR_FUNCTION_NOT_FOUND`, as the
//! real library answers it.

use std::ffi::{c_uint, c_void};
use std::ops::RangeInclusive;

use super::device;
use super::live::tenant_processes;
use super::system::program_of;
use crate::edge::{non_null, to_return, write_out, NvmlError, Res};
use crate::generated::types::{nvmlDevice_t, nvmlReturn_t};

/// The table `nvidia-smi` asks for, 6c3efec4-8fc9-4e6c-a327-ee696e12f7c4, as
/// its 16 bytes lie in memory (the first three groups little-endian).
const SMI_TABLE_ID: [u8; 16] = [
    0xc4, 0xfe, 0x3e, 0x6c, 0xc9, 0x8f, 0x6c, 0x4e, 0xa3, 0x27, 0xee, 0x69, 0x6e, 0x12, 0xf7, 0xc4,
];
/// `(unsigned int index, nvmlDevice_t *device, tag)`: a handle by index.
const SLOT_HANDLE_BY_INDEX: usize = 81;
/// A check `nvidia-smi` makes as it starts: it must succeed.
const SLOT_STARTUP_CHECK: usize = 26;
/// The tag `nvidia-smi` passes with a handle lookup.
const HANDLE_BY_INDEX_TAG: u32 = 0x22;
/// `(nvmlDevice_t, unsigned int *count, SmiProcess *entries)`: a process
/// list; `*count` holds the room on entry and the number of entries after.
/// The three are the compute, graphics and MPS processes, in that order (the
/// real library, with one CUDA process on the GPU, counts 1, 0 and 0; the
/// table prints a process found in all three as type "M+C+G").
const SLOTS_PROCESSES: RangeInclusive<usize> = 213..=215;
/// The compute processes: a tenant's sessions. vgpu has no graphics or MPS
/// clients, so the other two lists are empty.
const SLOT_COMPUTE_PROCESSES: usize = 213;
/// The most entries a process list may ask room for.
const MAX_ROOM: c_uint = 65536;

/// A slot's entry point: up to three arguments, pointers or integers.
type Entry = unsafe extern "C" fn(usize, usize, usize) -> nvmlReturn_t;

/// The table: its size in bytes, then slots 1 to 256.
#[repr(C)]
struct Table {
    size: usize,
    slots: [[Entry; 16]; 16],
}

/// One entry of a process list.
#[repr(C)]
struct SmiProcess {
    pid: u32,
    reserved: u32,
    memory: u64,
    gpu_instance: u32,
    compute_instance: u32,
    protected_memory: u64,
    /// The program, NUL-terminated.
    name: [u8; 4096],
}

const _: () = assert!(std::mem::size_of::<SmiProcess>() == 4128);

/// Slot `N`'s entry point.
unsafe extern "C" fn slot<const N: usize>(a0: usize, a1: usize, a2: usize) -> nvmlReturn_t {
    crate::edge::guard("nvmlInternalGetExportTable", || {
        // SAFETY: `nvidia-smi` calls each slot with the arguments its entry
        // point takes (see `call`).
        to_return(unsafe { call(N, a0, a1, a2) })
    })
}

macro_rules! row {
    ($hi:literal) => {
        row!(@ $hi; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (@ $hi:literal; $($lo:literal)*) => {
        [$(slot::<{ $hi * 16 + $lo + 1 }> as Entry),*]
    };
}

static TABLE: Table = Table {
    size: std::mem::size_of::<Table>(),
    slots: [
        row!(0),
        row!(1),
        row!(2),
        row!(3),
        row!(4),
        row!(5),
        row!(6),
        row!(7),
        row!(8),
        row!(9),
        row!(10),
        row!(11),
        row!(12),
        row!(13),
        row!(14),
        row!(15),
    ],
};

/// The low half of a register that carried an `unsigned int` argument (the
/// upper half is undefined).
#[allow(clippy::cast_possible_truncation)]
fn low(v: usize) -> u32 {
    v as u32
}

/// Runs slot `n` with its arguments.
///
/// # Safety
/// The arguments must be what the slot's entry point takes: for the handle
/// lookup a pointer valid for a write of a handle, for a process list a
/// count pointer and room for `*count` entries.
unsafe fn call(n: usize, a0: usize, a1: usize, a2: usize) -> Res<()> {
    match n {
        SLOT_HANDLE_BY_INDEX if low(a2) == HANDLE_BY_INDEX_TAG => {
            // SAFETY: the caller's contract.
            unsafe { device::by_index(low(a0), a1 as *mut nvmlDevice_t) }
        }
        n if SLOTS_PROCESSES.contains(&n) => {
            // SAFETY: the caller's contract.
            unsafe {
                processes(
                    a0 as nvmlDevice_t,
                    a1 as *mut c_uint,
                    a2 as *mut SmiProcess,
                    n == SLOT_COMPUTE_PROCESSES,
                )
            }
        }
        // nvidia-smi (580.159.04) calls it once as it starts, with two of its
        // own strings and a pointer, and stops with "Internal NVML error" if it
        // fails. It asks nothing of a device, and nothing is written back.
        SLOT_STARTUP_CHECK => {
            crate::config::log(format_args!(
                "nvmlInternalGetExportTable: slot {n} answered NVML_SUCCESS \
                 (arguments {a0:#x}, {a1:#x}, {a2:#x})"
            ));
            Ok(())
        }
        _ => {
            crate::config::log(format_args!(
                "nvmlInternalGetExportTable: slot {n} is not implemented \
                 (NVML_ERROR_NOT_SUPPORTED; arguments {a0:#x}, {a1:#x}, {a2:#x})"
            ));
            Err(NvmlError::NOT_SUPPORTED)
        }
    }
}

/// The tenant's processes on `d`, with their programs, or none where
/// `compute` is false (the graphics and MPS lists).
///
/// # Safety
/// `count` must be NULL or valid for a read and a write, `entries` NULL or
/// valid for `*count` writes.
unsafe fn processes(
    d: nvmlDevice_t,
    count: *mut c_uint,
    entries: *mut SmiProcess,
    compute: bool,
) -> Res<()> {
    let mut list = tenant_processes(d)?;
    if !compute {
        list.clear();
    }
    non_null(count)?;
    non_null(entries)?;
    // SAFETY: non-NULL, valid by the caller's contract.
    let room = unsafe { count.read_unaligned() };
    if !(1..=MAX_ROOM).contains(&room) {
        return Err(NvmlError::INVALID_ARGUMENT);
    }
    let n = c_uint::try_from(list.len()).unwrap_or(c_uint::MAX);
    // SAFETY: as above.
    unsafe { count.write_unaligned(n) };
    if n > room {
        return Err(NvmlError::INSUFFICIENT_SIZE);
    }
    for (k, &(pid, memory)) in list.iter().enumerate() {
        let mut e = SmiProcess {
            pid,
            reserved: 0,
            memory,
            gpu_instance: u32::MAX,
            compute_instance: u32::MAX,
            protected_memory: 0,
            name: [0; 4096],
        };
        let program = program_of(pid).unwrap_or_default();
        let len = program.len().min(e.name.len() - 1);
        e.name[..len].copy_from_slice(&program[..len]);
        // SAFETY: `k < n <= room`, and `entries` holds `room` entries.
        unsafe { entries.add(k).write_unaligned(e) };
    }
    Ok(())
}

/// `nvmlInternalGetExportTable`.
///
/// # Safety
/// `table` must be NULL or valid for a write of a pointer; `id` NULL or
/// valid for a read of 16 bytes.
pub unsafe fn get(table: *mut *const c_void, id: *const c_void) -> Res<()> {
    non_null(table)?;
    non_null(id)?;
    // SAFETY: non-NULL and 16 bytes long by the caller's contract.
    let id = unsafe { id.cast::<[u8; 16]>().read_unaligned() };
    if id != SMI_TABLE_ID {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        crate::config::log(format_args!(
            "nvmlInternalGetExportTable: table {hex} is unknown (NVML_ERROR_FUNCTION_NOT_FOUND)"
        ));
        return Err(NvmlError::FUNCTION_NOT_FOUND);
    }
    // SAFETY: the caller's contract.
    unsafe { write_out(table, (&raw const TABLE).cast::<c_void>()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_sit_at_eight_bytes_each() {
        let base = (&raw const TABLE) as usize;
        let at = |n: usize| base + 8 * n;
        assert_eq!(TABLE.size, 8 + 256 * 8);
        assert_eq!((&raw const TABLE.slots[5][1]) as usize, at(5 * 16 + 1 + 1));
        assert_eq!(
            TABLE.slots[5][0] as usize, slot::<SLOT_HANDLE_BY_INDEX> as Entry as usize,
            "slot 81 is the handle lookup's"
        );
    }

    #[test]
    fn other_tables_are_not_found() {
        let mut table: *const c_void = std::ptr::null();
        let other = [0u8; 16];
        // SAFETY: live locals.
        let r = unsafe { get(&mut table, other.as_ptr().cast()) };
        assert_eq!(r, Err(NvmlError::FUNCTION_NOT_FOUND));
        // SAFETY: live locals.
        unsafe { get(&mut table, SMI_TABLE_ID.as_ptr().cast()) }.expect("nvidia-smi's table");
        assert_eq!(table, (&raw const TABLE).cast());
        // SAFETY: NULL is refused before any access.
        let r = unsafe { get(std::ptr::null_mut(), SMI_TABLE_ID.as_ptr().cast()) };
        assert_eq!(r, Err(NvmlError::INVALID_ARGUMENT));
    }
}
