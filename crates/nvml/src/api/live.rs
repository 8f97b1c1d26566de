//! Values asked of the worker at each call: the tenant's memory and
//! processes, and the host NVML's values.

use std::ffi::{c_char, c_int, c_uint, c_ulonglong};

use vgpu_proto::nvml::{self as q, Process};
use zerocopy::FromBytes;

use super::device::lookup;
use crate::edge::{arg_u32, non_null, write_out, write_str, write_u32, NvmlError, Res};
use crate::generated::types::{
    nvmlDevice_t, nvmlFieldValue_t, nvmlMemory_t, nvmlMemory_v2_t, nvmlProcessInfo_v1_t,
    nvmlProcessInfo_v2_t, nvmlTemperature_v1_t,
};
use crate::session::Answer;

/// `NVML_STRUCT_VERSION(Memory, 2)`: what `nvmlMemory_v2_t::version` must say.
#[allow(clippy::cast_possible_truncation)] // the structure is 40 bytes
const MEMORY_V2: c_uint = std::mem::size_of::<nvmlMemory_v2_t>() as c_uint | (2 << 24);

/// `(total, used)` of the tenant's view: the device's memory (as the host's
/// NVML counts it, else as the driver does) and the device memory its uid's
/// sessions hold.
fn tenant_memory(d: nvmlDevice_t) -> Res<(u64, u64)> {
    let (s, i) = lookup(d)?;
    let answer = s.query(i, q::MEMORY, 0)?;
    let total = match answer.b {
        0 => s.devices[i].total_mem.get(),
        host => host,
    };
    Ok((total, answer.a.min(total)))
}

/// `nvmlDeviceGetMemoryInfo`.
///
/// # Safety
/// `m` must be NULL or valid for a write.
pub unsafe fn memory_info(d: nvmlDevice_t, m: *mut nvmlMemory_t) -> Res<()> {
    let (total, used) = tenant_memory(d)?;
    let info = nvmlMemory_t {
        total,
        free: total - used,
        used,
    };
    // SAFETY: the caller's contract.
    unsafe { write_out(m, info) }
}

/// `nvmlDeviceGetMemoryInfo_v2`: as `nvmlDeviceGetMemoryInfo`, with nothing
/// reserved; a structure of another version is
/// `NVML_ERROR_ARGUMENT_VERSION_MISMATCH`.
///
/// # Safety
/// `m` must be NULL or valid for reads and writes of the structure.
pub unsafe fn memory_info_v2(d: nvmlDevice_t, m: *mut nvmlMemory_v2_t) -> Res<()> {
    lookup(d)?;
    non_null(m)?;
    // SAFETY: non-NULL and valid by the caller's contract.
    let version = unsafe { (&raw const (*m).version).read_unaligned() };
    if version != MEMORY_V2 {
        return Err(NvmlError::ARGUMENT_VERSION_MISMATCH);
    }
    let (total, used) = tenant_memory(d)?;
    let info = nvmlMemory_v2_t {
        version,
        total,
        reserved: 0,
        free: total - used,
        used,
    };
    // SAFETY: the caller's contract.
    unsafe { write_out(m, info) }
}

/// A process-info structure of any version.
pub trait ProcessInfo {
    fn new(pid: u32, memory: u64) -> Self;
}

impl ProcessInfo for nvmlProcessInfo_v1_t {
    fn new(pid: u32, memory: u64) -> Self {
        nvmlProcessInfo_v1_t {
            pid,
            usedGpuMemory: memory,
        }
    }
}

impl ProcessInfo for nvmlProcessInfo_v2_t {
    fn new(pid: u32, memory: u64) -> Self {
        nvmlProcessInfo_v2_t {
            pid,
            usedGpuMemory: memory,
            // Not a MIG device: NVML's "no instance".
            gpuInstanceId: c_uint::MAX,
            computeInstanceId: c_uint::MAX,
        }
    }
}

/// Writes `list` NVML's way: `*count` in, the number of processes out;
/// `NVML_ERROR_INSUFFICIENT_SIZE` when more are running than `*count`.
///
/// # Safety
/// `count` must be NULL or valid for a read and a write; `infos` NULL or
/// valid for `*count` writes.
unsafe fn write_processes<T: ProcessInfo>(
    list: &[(u32, u64)],
    count: *mut c_uint,
    infos: *mut T,
) -> Res<()> {
    non_null(count)?;
    // SAFETY: non-NULL and valid by the caller's contract.
    let room = unsafe { count.read_unaligned() };
    let n = c_uint::try_from(list.len()).unwrap_or(c_uint::MAX);
    // SAFETY: as above.
    unsafe { count.write_unaligned(n) };
    if n > room {
        return Err(NvmlError::INSUFFICIENT_SIZE);
    }
    if n > 0 {
        non_null(infos)?;
    }
    for (k, &(pid, memory)) in list.iter().enumerate() {
        // SAFETY: `k < n <= room`, and `infos` holds `room` entries.
        unsafe { infos.add(k).write_unaligned(T::new(pid, memory)) };
    }
    Ok(())
}

/// The CUDA clients of the caller's tenant on `d`: those holding memory or
/// a context there, with their pid and the device memory they hold there.
pub fn tenant_processes(d: nvmlDevice_t) -> Res<Vec<(u32, u64)>> {
    let (s, i) = lookup(d)?;
    let blob = s.query(i, q::PROCESSES, 0)?.blob;
    Ok(blob
        .chunks_exact(std::mem::size_of::<Process>())
        .filter_map(|c| Process::read_from_bytes(c).ok())
        .map(|p| (p.pid.get(), p.memory.get()))
        .collect())
}

/// `nvmlDeviceGetComputeRunningProcesses` (every version): the CUDA clients
/// of the caller's tenant on the device, with the device memory their
/// sessions hold there ([`tenant_processes`]).
///
/// # Safety
/// As [`write_processes`].
pub unsafe fn compute_processes<T: ProcessInfo>(
    d: nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut T,
) -> Res<()> {
    lookup(d)?;
    non_null(count)?;
    let list = tenant_processes(d)?;
    // SAFETY: the caller's contract.
    unsafe { write_processes(&list, count, infos) }
}

/// `nvmlDeviceGetGraphicsRunningProcesses` (every version): a vgpu session
/// runs no graphics.
///
/// # Safety
/// As [`write_processes`].
pub unsafe fn no_processes<T: ProcessInfo>(
    d: nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut T,
) -> Res<()> {
    lookup(d)?;
    // SAFETY: the caller's contract.
    unsafe { write_processes::<T>(&[], count, infos) }
}

/// `nvmlDeviceGetFieldValues`: the host NVML's, `values` sent and brought
/// back in pieces of at most [`q::MAX_FIELD_VALUES`].
///
/// # Safety
/// `values` must be NULL or valid for reads and writes of `count` entries.
pub unsafe fn field_values(
    d: nvmlDevice_t,
    count: c_int,
    values: *mut nvmlFieldValue_t,
) -> Res<()> {
    let (s, i) = lookup(d)?;
    non_null(values)?;
    let n = usize::try_from(count).map_err(|_| NvmlError::INVALID_ARGUMENT)?;
    const _: () = assert!(std::mem::size_of::<nvmlFieldValue_t>() == q::FIELD_VALUE_SIZE);
    for start in (0..n).step_by(q::MAX_FIELD_VALUES) {
        let len = (n - start).min(q::MAX_FIELD_VALUES) * q::FIELD_VALUE_SIZE;
        // SAFETY: entries `start..start + len / 40` lie inside the caller's
        // `count` entries.
        let first = unsafe { values.add(start) }.cast::<u8>();
        let mut bytes = vec![0u8; len];
        // SAFETY: as above; `bytes` holds `len` bytes.
        unsafe { std::ptr::copy_nonoverlapping(first, bytes.as_mut_ptr(), len) };
        let answer = s.query_with(i, q::FIELD_VALUES, 0, &bytes)?;
        if answer.blob.len() != len {
            return Err(NvmlError::UNKNOWN);
        }
        // SAFETY: as above; the entries are C structures of integers, valid
        // for any bytes.
        unsafe { std::ptr::copy_nonoverlapping(answer.blob.as_ptr(), first, len) };
    }
    Ok(())
}

/// Asks the worker for host function `name`'s values on `d`.
fn host(name: &str, d: nvmlDevice_t, arg: u32) -> Res<Answer> {
    let what = q::host_what(name).ok_or(NvmlError::NOT_SUPPORTED)?;
    let (s, i) = lookup(d)?;
    s.query(i, what, arg)
}

/// A host value `(device, unsigned int-sized *)`.
///
/// # Safety
/// `out` must be NULL or valid for a write.
pub unsafe fn host_u32<T>(name: &str, d: nvmlDevice_t, out: *mut T) -> Res<()> {
    lookup(d)?;
    non_null(out)?;
    let a = host(name, d, 0)?.a;
    // SAFETY: the caller's contract.
    unsafe { write_u32(out, u32::try_from(a).unwrap_or(u32::MAX)) }
}

/// A host value `(device, unsigned long long *)`.
///
/// # Safety
/// As [`host_u32`].
pub unsafe fn host_u64(name: &str, d: nvmlDevice_t, out: *mut c_ulonglong) -> Res<()> {
    lookup(d)?;
    non_null(out)?;
    let a = host(name, d, 0)?.a;
    // SAFETY: the caller's contract.
    unsafe { write_out(out, a) }
}

/// A host value `(device, unsigned int-sized *, unsigned int-sized *)`.
///
/// # Safety
/// `x` and `y` must be NULL or valid for a write.
pub unsafe fn host_pair<T>(name: &str, d: nvmlDevice_t, x: *mut T, y: *mut T) -> Res<()> {
    lookup(d)?;
    non_null(x)?;
    non_null(y)?;
    let r = host(name, d, 0)?;
    // SAFETY: the caller's contract.
    unsafe {
        write_u32(x, u32::try_from(r.a).unwrap_or(u32::MAX))?;
        write_u32(y, u32::try_from(r.b).unwrap_or(u32::MAX))
    }
}

/// A host value `(device, struct { unsigned int, unsigned int } *)`.
///
/// # Safety
/// `out` must be NULL or valid for a write of `T`.
pub unsafe fn host_struct2<T>(name: &str, d: nvmlDevice_t, out: *mut T) -> Res<()> {
    const { assert!(std::mem::size_of::<T>() == 8) };
    lookup(d)?;
    non_null(out)?;
    let r = host(name, d, 0)?;
    let pair = [r.a, r.b].map(|v| u32::try_from(v).unwrap_or(u32::MAX));
    // SAFETY: `T` is two unsigned ints (8 bytes, checked); the caller's
    // contract covers the write.
    unsafe { write_out(out.cast::<[u32; 2]>(), pair) }
}

/// A host value `(device, unsigned int-sized argument, unsigned int *)`.
///
/// # Safety
/// `out` must be NULL or valid for a write.
pub unsafe fn host_arg_u32<A: Copy, T>(
    name: &str,
    d: nvmlDevice_t,
    arg: A,
    out: *mut T,
) -> Res<()> {
    lookup(d)?;
    non_null(out)?;
    let a = host(name, d, arg_u32(arg))?.a;
    // SAFETY: the caller's contract.
    unsafe { write_u32(out, u32::try_from(a).unwrap_or(u32::MAX)) }
}

/// A host value `(device, enum x, enum y, unsigned long long *)`.
///
/// # Safety
/// `out` must be NULL or valid for a write.
pub unsafe fn host_arg2_u64<X: Copy, Y: Copy>(
    name: &str,
    d: nvmlDevice_t,
    x: X,
    y: Y,
    out: *mut c_ulonglong,
) -> Res<()> {
    lookup(d)?;
    non_null(out)?;
    let (x, y) = (arg_u32(x), arg_u32(y));
    if x > 0xffff || y > 0xffff {
        return Err(NvmlError::INVALID_ARGUMENT);
    }
    let a = host(name, d, x << 16 | y)?.a;
    // SAFETY: the caller's contract.
    unsafe { write_out(out, a) }
}

/// A host string `(device, unsigned int-sized argument, char *, unsigned int
/// length)`.
///
/// # Safety
/// `buf` must be NULL or valid for `len` bytes.
pub unsafe fn host_arg_string<A: Copy>(
    name: &str,
    d: nvmlDevice_t,
    arg: A,
    buf: *mut c_char,
    len: c_uint,
) -> Res<()> {
    lookup(d)?;
    non_null(buf)?;
    let blob = host(name, d, arg_u32(arg))?.blob;
    // SAFETY: the caller's contract.
    unsafe { write_str(buf, len, &blob) }
}

/// A host structure `(device, T *)`, whose bytes the worker brings back.
///
/// # Safety
/// `out` must be NULL or valid for a write of `T`.
pub unsafe fn host_struct<T: Copy>(name: &str, d: nvmlDevice_t, out: *mut T) -> Res<()> {
    lookup(d)?;
    non_null(out)?;
    let blob = host(name, d, 0)?.blob;
    if blob.len() != std::mem::size_of::<T>() {
        return Err(NvmlError::UNKNOWN);
    }
    // SAFETY: `out` is valid for `size_of::<T>()` bytes (the caller's
    // contract), which is the blob's length; `T` is a C structure of
    // integers, valid for any bytes.
    unsafe { std::ptr::copy_nonoverlapping(blob.as_ptr(), out.cast::<u8>(), blob.len()) };
    Ok(())
}

/// A host versioned structure `(device, T *)`: the caller's version must be
/// the one the worker asks for, else `NVML_ERROR_ARGUMENT_VERSION_MISMATCH`.
///
/// # Safety
/// `out` must be NULL or valid for reads and writes of `T`.
pub unsafe fn host_versioned<T: Copy>(name: &str, d: nvmlDevice_t, out: *mut T) -> Res<()> {
    lookup(d)?;
    non_null(out)?;
    let what = q::host_what(name).ok_or(NvmlError::NOT_SUPPORTED)?;
    let Some((_, q::Shape::Versioned(size, version))) = q::host_entry(what) else {
        return Err(NvmlError::NOT_SUPPORTED);
    };
    // SAFETY: non-NULL and valid by the caller's contract; every versioned
    // structure starts with its `unsigned int` version.
    let asked = unsafe { out.cast::<u32>().read_unaligned() };
    if size != std::mem::size_of::<T>() || asked != q::struct_version(size, version) {
        return Err(NvmlError::ARGUMENT_VERSION_MISMATCH);
    }
    // SAFETY: the caller's contract.
    unsafe { host_struct(name, d, out) }
}

/// `nvmlDeviceGetTemperatureV`: the host's `nvmlDeviceGetTemperature` of the
/// structure's sensor.
///
/// # Safety
/// `t` must be NULL or valid for reads and writes of the structure.
pub unsafe fn temperature_v(d: nvmlDevice_t, t: *mut nvmlTemperature_v1_t) -> Res<()> {
    lookup(d)?;
    non_null(t)?;
    // SAFETY: non-NULL and valid by the caller's contract.
    let mut v = unsafe { t.read_unaligned() };
    let expected = q::struct_version(std::mem::size_of::<nvmlTemperature_v1_t>(), 1);
    if v.version != expected {
        return Err(NvmlError::ARGUMENT_VERSION_MISMATCH);
    }
    let degrees = host("nvmlDeviceGetTemperature", d, v.sensorType.0)?.a;
    v.temperature = c_int::try_from(degrees).unwrap_or(c_int::MAX);
    // SAFETY: the caller's contract.
    unsafe { write_out(t, v) }
}

/// A host string `(device, char *, unsigned int length)`.
///
/// # Safety
/// `buf` must be NULL or valid for `len` bytes.
pub unsafe fn host_string(name: &str, d: nvmlDevice_t, buf: *mut c_char, len: c_uint) -> Res<()> {
    lookup(d)?;
    non_null(buf)?;
    let blob = host(name, d, 0)?.blob;
    // SAFETY: the caller's contract.
    unsafe { write_str(buf, len, &blob) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_structures_are_the_sizes_the_worker_brings() {
        use crate::generated::types::nvmlBAR1Memory_t;
        let (_, shape) =
            q::host_entry(q::host_what("nvmlDeviceGetBAR1MemoryInfo").expect("listed"))
                .expect("listed");
        assert_eq!(
            shape,
            q::Shape::Struct(std::mem::size_of::<nvmlBAR1Memory_t>())
        );
    }

    #[test]
    fn memory_v2_version_is_nvmls() {
        // sizeof(nvmlMemory_v2_t) is 40: version, padding, four u64.
        assert_eq!(MEMORY_V2, 40 | (2 << 24));
    }

    #[test]
    fn process_lists_follow_nvml() {
        let list = [(10, 1 << 20), (11, 0)];
        let mut n: c_uint = 1;
        let mut out = [nvmlProcessInfo_v2_t::default(); 2];
        // SAFETY: live locals.
        let r = unsafe { write_processes(&list, &mut n, out.as_mut_ptr()) };
        assert_eq!((r, n), (Err(NvmlError::INSUFFICIENT_SIZE), 2));
        // SAFETY: live locals.
        unsafe { write_processes(&list, &mut n, out.as_mut_ptr()) }.expect("room for two");
        assert_eq!(
            (out[0].pid, out[0].usedGpuMemory, out[1].pid),
            (10, 1 << 20, 11)
        );
        assert_eq!(out[1].gpuInstanceId, c_uint::MAX);
        let mut n: c_uint = 0;
        // SAFETY: no entries are written.
        let r =
            unsafe { write_processes::<nvmlProcessInfo_v1_t>(&[], &mut n, std::ptr::null_mut()) };
        assert_eq!((r, n), (Ok(()), 0));
        let mut n: c_uint = 4;
        // SAFETY: NULL `infos` is refused before any write through it.
        let r =
            unsafe { write_processes::<nvmlProcessInfo_v1_t>(&list, &mut n, std::ptr::null_mut()) };
        assert_eq!(r, Err(NvmlError::INVALID_ARGUMENT));
        // SAFETY: NULL `count` is refused first.
        let r = unsafe {
            write_processes::<nvmlProcessInfo_v1_t>(
                &list,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        assert_eq!(r, Err(NvmlError::INVALID_ARGUMENT));
    }
}
