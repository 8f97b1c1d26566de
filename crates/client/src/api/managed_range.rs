//! `cuMemRangeGetAttribute(s)` and the batched prefetch and discard calls
//! over managed ranges, from what [`super::managed`] recorded.

use std::collections::BTreeMap;
use std::ffi::{c_ulonglong, c_void};

use vgpu_abi::types::{CUdeviceptr, CUmemLocation, CUmem_range_attribute};

use super::managed::{
    check_stream, holder, prefetch_to, Loc, Page, DEVICE_CPU, LOC_DEVICE, LOC_HOST, LOC_INVALID,
    PAGE,
};
use crate::edge::{non_null, CuError, CuResult};
use crate::runtime::{runtime, Session};

/// `CU_DEVICE_INVALID`.
const DEVICE_INVALID: i32 = -2;
/// Most attributes one `cuMemRangeGetAttributes` may ask for.
const MAX_ATTRIBUTES: usize = 64;

/// What the driver keeps about the pages of one managed allocation, as runs
/// of pages that agree, so a large allocation costs a few entries.
#[derive(Debug)]
pub(crate) struct Pages {
    /// How many pages the allocation has.
    count: u64,
    /// First page of each run → what its pages share; a run ends where the
    /// next begins. Page 0 always starts one.
    runs: BTreeMap<u64, Page>,
}

impl Pages {
    /// `count` pages with nothing recorded.
    pub(crate) fn new(count: u64) -> Self {
        Pages {
            count,
            runs: BTreeMap::from([(0, Page::default())]),
        }
    }

    /// Makes a run start at page `at` (inside the allocation).
    fn split(&mut self, at: u64) {
        if at >= self.count || self.runs.contains_key(&at) {
            return;
        }
        if let Some((_, &p)) = self.runs.range(..at).next_back() {
            self.runs.insert(at, p);
        }
    }

    /// Applies `f` to pages `first..last`, then joins runs that agree.
    pub(crate) fn update(&mut self, first: u64, last: u64, mut f: impl FnMut(&mut Page)) {
        self.split(first);
        self.split(last);
        for p in self
            .runs
            .range_mut(first..last.min(self.count))
            .map(|(_, p)| p)
        {
            f(p);
        }
        let mut prev: Option<Page> = None;
        self.runs.retain(|_, p| {
            let same = prev == Some(*p);
            prev = Some(*p);
            !same
        });
    }

    /// What pages `first..last` hold, one entry per run they meet.
    pub(crate) fn slice(&self, first: u64, last: u64) -> Vec<Page> {
        let head = self.runs.range(..=first).next_back().map(|(_, &p)| p);
        let rest = self.runs.range(first + 1..last).map(|(_, &p)| p);
        head.into_iter().chain(rest).collect()
    }
}

/// The pages of `[ptr, ptr + count)`, which must lie in one managed allocation.
fn pages(s: &Session, ptr: u64, count: usize) -> CuResult<Vec<Page>> {
    let base = holder(s, ptr, count)?;
    let o = s.objects();
    let m = o.managed.get(&base).ok_or(CuError::INVALID_VALUE)?;
    let first = (ptr - base) / PAGE;
    let last = (ptr - base + count as u64).div_ceil(PAGE);
    Ok(m.pages.slice(first, last))
}

/// How many devices the session has.
fn device_count(s: &Session) -> i32 {
    i32::try_from(s.devices.len()).unwrap_or(i32::MAX)
}

/// The location every page gives, if they all agree.
fn common(pages: &[Page], f: impl Fn(&Page) -> Loc) -> Option<Loc> {
    let first = f(pages.first()?);
    pages.iter().all(|p| f(p) == first).then_some(first)
}

/// A location as a first-form device id: the device's ordinal, the host as
/// `CU_DEVICE_CPU`, none or a mix as `CU_DEVICE_INVALID`.
fn as_device(loc: Option<Loc>) -> i32 {
    match loc {
        Some(l) if l.kind == LOC_DEVICE => l.id,
        Some(l) if l.kind != LOC_INVALID => DEVICE_CPU,
        _ => DEVICE_INVALID,
    }
}

/// A location's id as the `_ID` attributes give it (driver 580): a device
/// ordinal or a NUMA node, `CU_DEVICE_CPU` for the host, `CU_DEVICE_INVALID`
/// for none or a mix.
fn location_id(loc: Option<Loc>) -> i32 {
    match loc {
        Some(l) if l.kind == LOC_HOST => DEVICE_CPU,
        Some(l) if l.kind != LOC_INVALID => l.id,
        _ => DEVICE_INVALID,
    }
}

/// One attribute's value as 32-bit integers, for `size` bytes of data.
fn value(pages: &[Page], attr: u32, size: usize, devices: i32) -> CuResult<Vec<i32>> {
    let one = |v: i32| {
        if size == 4 {
            Ok(vec![v])
        } else {
            Err(CuError::INVALID_VALUE)
        }
    };
    let preferred = || common(pages, |p| p.preferred);
    let prefetched = || common(pages, |p| p.last_prefetch);
    match attr {
        1 => one(i32::from(pages.iter().all(|p| p.read_mostly))),
        2 => one(as_device(preferred())),
        3 => {
            if size == 0 || !size.is_multiple_of(4) {
                return Err(CuError::INVALID_VALUE);
            }
            let all = pages.iter().fold(u64::MAX, |acc, p| acc & p.accessed_by);
            // Devices first, then the host, as driver 580 lists them.
            let set = (0..devices.min(63))
                .chain([DEVICE_CPU])
                .filter(|&d| all & (1u64 << (d + 1)) != 0);
            let mut list = vec![DEVICE_INVALID; size / 4];
            for (slot, d) in list.iter_mut().zip(set) {
                *slot = d;
            }
            Ok(list)
        }
        4 => one(as_device(prefetched())),
        5 => one(preferred().map_or(0, |l| l.kind as i32)),
        6 => one(location_id(preferred())),
        7 => one(prefetched().map_or(0, |l| l.kind as i32)),
        8 => one(location_id(prefetched())),
        _ => Err(CuError::INVALID_VALUE),
    }
}

/// # Safety
/// `data` must be NULL or writable for `size` bytes.
unsafe fn write(data: *mut c_void, values: &[i32]) {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
    // SAFETY: the caller's contract; `values` hold exactly `size` bytes.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), data.cast::<u8>(), bytes.len()) };
}

/// `cuMemRangeGetAttribute`.
///
/// # Safety
/// `data` must be NULL or writable for `size` bytes.
pub unsafe fn get_attribute(
    data: *mut c_void,
    size: usize,
    attr: CUmem_range_attribute,
    ptr: CUdeviceptr,
    count: usize,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(data)?;
    let pages = pages(s, ptr, count)?;
    let v = value(&pages, attr.0, size, device_count(s))?;
    // SAFETY: `value` gives exactly `size` bytes; the caller's contract.
    unsafe { write(data, &v) };
    Ok(())
}

/// `cuMemRangeGetAttributes`: every attribute checked before any is written.
///
/// # Safety
/// `data`, `sizes` and `attrs` must hold `n` entries each; every data
/// pointer must be writable for its size.
pub unsafe fn get_attributes(
    data: *mut *mut c_void,
    sizes: *mut usize,
    attrs: *mut CUmem_range_attribute,
    n: usize,
    ptr: CUdeviceptr,
    count: usize,
) -> CuResult<()> {
    let s = runtime().session()?;
    non_null(data)?;
    non_null(sizes)?;
    non_null(attrs)?;
    if n == 0 || n > MAX_ATTRIBUTES {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: the application passes `n` entries in each array.
    let (data, sizes, attrs) = unsafe {
        (
            std::slice::from_raw_parts(data, n),
            std::slice::from_raw_parts(sizes, n),
            std::slice::from_raw_parts(attrs, n),
        )
    };
    let pages = pages(s, ptr, count)?;
    let mut values = Vec::with_capacity(n);
    for ((&d, &size), a) in data.iter().zip(sizes).zip(attrs) {
        non_null(d)?;
        values.push(value(&pages, a.0, size, device_count(s))?);
    }
    for (&d, v) in data.iter().zip(&values) {
        // SAFETY: each data pointer is writable for its size, which its
        // value fills exactly.
        unsafe { write(d, v) };
    }
    Ok(())
}

/// The ranges of a batch: `count` pointers and sizes.
///
/// # Safety
/// `dptrs` and `sizes` must hold `count` entries.
unsafe fn ranges(
    dptrs: *mut CUdeviceptr,
    sizes: *mut usize,
    count: usize,
) -> CuResult<Vec<(u64, usize)>> {
    non_null(dptrs)?;
    non_null(sizes)?;
    if count == 0 {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: the application passes `count` entries in each array.
    let (d, z) = unsafe {
        (
            std::slice::from_raw_parts(dptrs, count),
            std::slice::from_raw_parts(sizes, count),
        )
    };
    Ok(d.iter().copied().zip(z.iter().copied()).collect())
}

/// `cuMemPrefetchBatchAsync`: range `i` goes to `locs[j]` for the last `j`
/// whose `loc_idxs[j]` is at most `i`; `loc_idxs` starts at 0 and rises.
///
/// # Safety
/// Each array must hold the entries its count says.
#[allow(clippy::too_many_arguments)]
pub unsafe fn prefetch_batch(
    dptrs: *mut CUdeviceptr,
    sizes: *mut usize,
    count: usize,
    locs: *mut CUmemLocation,
    loc_idxs: *mut usize,
    n_locs: usize,
    flags: c_ulonglong,
    stream: u64,
) -> CuResult<()> {
    // SAFETY: forwarded from this function's contract.
    let ranges = unsafe { ranges(dptrs, sizes, count) }?;
    non_null(locs)?;
    non_null(loc_idxs)?;
    if flags != 0 || n_locs == 0 || n_locs > count {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: the application passes `n_locs` entries in each array.
    let (locs, idxs) = unsafe {
        (
            std::slice::from_raw_parts(locs, n_locs),
            std::slice::from_raw_parts(loc_idxs, n_locs),
        )
    };
    if idxs[0] != 0 || idxs.windows(2).any(|w| w[0] >= w[1]) || idxs[n_locs - 1] >= count {
        return Err(CuError::INVALID_VALUE);
    }
    let s = runtime().session()?;
    check_stream(s, stream)?;
    for &(p, n) in &ranges {
        holder(s, p, n)?;
    }
    for (i, &(p, n)) in ranges.iter().enumerate() {
        let j = idxs.partition_point(|&x| x <= i) - 1;
        let loc = Loc {
            kind: locs[j].type_.0,
            id: locs[j].id,
        };
        prefetch_to(p, n, loc, 0, stream)?;
    }
    Ok(())
}

/// `cuMemDiscardBatchAsync`: the ranges' contents become undefined. The
/// pages stay where both sides see them and keep their bytes, which is
/// one of the contents the driver allows.
///
/// # Safety
/// `dptrs` and `sizes` must hold `count` entries.
pub unsafe fn discard_batch(
    dptrs: *mut CUdeviceptr,
    sizes: *mut usize,
    count: usize,
    flags: c_ulonglong,
    stream: u64,
) -> CuResult<()> {
    // SAFETY: forwarded from this function's contract.
    let ranges = unsafe { ranges(dptrs, sizes, count) }?;
    if flags != 0 {
        return Err(CuError::INVALID_VALUE);
    }
    let s = runtime().session()?;
    check_stream(s, stream)?;
    for &(p, n) in &ranges {
        holder(s, p, n)?;
    }
    Ok(())
}

/// `cuMemDiscardAndPrefetchBatchAsync`: a discard, then the prefetches.
///
/// # Safety
/// Each array must hold the entries its count says.
#[allow(clippy::too_many_arguments)]
pub unsafe fn discard_and_prefetch_batch(
    dptrs: *mut CUdeviceptr,
    sizes: *mut usize,
    count: usize,
    locs: *mut CUmemLocation,
    loc_idxs: *mut usize,
    n_locs: usize,
    flags: c_ulonglong,
    stream: u64,
) -> CuResult<()> {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        discard_batch(dptrs, sizes, count, flags, stream)?;
        prefetch_batch(dptrs, sizes, count, locs, loc_idxs, n_locs, flags, stream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::managed::LOC_HOST_NUMA_CURRENT;

    const DEVICE_0: Loc = Loc {
        kind: LOC_DEVICE,
        id: 0,
    };
    const HOST: Loc = Loc {
        kind: LOC_HOST,
        id: 0,
    };

    fn page(read_mostly: bool, preferred: Loc, accessed_by: u64, last_prefetch: Loc) -> Page {
        Page {
            read_mostly,
            preferred,
            accessed_by,
            last_prefetch,
        }
    }

    #[test]
    fn fresh_pages_answer_as_the_driver() {
        let pages = vec![Page::default(); 4];
        assert_eq!(value(&pages, 1, 4, 1), Ok(vec![0]));
        assert_eq!(value(&pages, 2, 4, 1), Ok(vec![DEVICE_INVALID]));
        assert_eq!(value(&pages, 4, 4, 1), Ok(vec![DEVICE_INVALID]));
        assert_eq!(value(&pages, 3, 16, 1), Ok(vec![DEVICE_INVALID; 4]));
        assert_eq!(value(&pages, 5, 4, 1), Ok(vec![0]));
    }

    #[test]
    fn mixed_pages_answer_invalid_and_agreeing_pages_their_location() {
        let a = page(true, DEVICE_0, 0b10, HOST);
        let b = page(false, HOST, 0b11, HOST);
        assert_eq!(value(&[a, a], 1, 4, 2), Ok(vec![1]));
        assert_eq!(value(&[a, b], 1, 4, 2), Ok(vec![0]));
        assert_eq!(value(&[a, a], 2, 4, 2), Ok(vec![0]));
        assert_eq!(value(&[b, b], 2, 4, 2), Ok(vec![DEVICE_CPU]));
        assert_eq!(value(&[a, b], 2, 4, 2), Ok(vec![DEVICE_INVALID]));
        assert_eq!(value(&[a, b], 5, 4, 2), Ok(vec![LOC_INVALID as i32]));
        assert_eq!(value(&[a, a], 6, 4, 2), Ok(vec![0]));
        assert_eq!(value(&[a, b], 4, 4, 2), Ok(vec![DEVICE_CPU]));
        assert_eq!(value(&[b, b], 7, 4, 2), Ok(vec![LOC_HOST as i32]));
        // Device 0 is accessed-by on both; the host on one only.
        assert_eq!(
            value(&[a, b], 3, 12, 2),
            Ok(vec![0, DEVICE_INVALID, DEVICE_INVALID])
        );
        // Devices first, then the host.
        assert_eq!(value(&[b, b], 3, 4, 2), Ok(vec![0]));
        assert_eq!(
            value(&[b, b], 3, 12, 2),
            Ok(vec![0, DEVICE_CPU, DEVICE_INVALID])
        );
        assert_eq!(value(&[b, b], 6, 4, 2), Ok(vec![DEVICE_CPU]));
        let numa = page(
            false,
            Loc {
                kind: LOC_HOST_NUMA_CURRENT,
                id: 0,
            },
            0,
            HOST,
        );
        assert_eq!(value(&[numa], 2, 4, 1), Ok(vec![DEVICE_CPU]));
    }

    #[test]
    fn runs_split_and_join() {
        let mut pages = Pages::new(10);
        pages.update(2, 5, |p| p.read_mostly = true);
        assert_eq!(pages.runs.len(), 3);
        assert_eq!(pages.slice(0, 2), vec![Page::default()]);
        assert_eq!(pages.slice(3, 4).len(), 1);
        assert!(pages.slice(3, 4)[0].read_mostly);
        assert_eq!(pages.slice(1, 6).len(), 3);
        pages.update(0, 10, |p| p.read_mostly = true);
        assert_eq!(pages.runs.len(), 1);
        pages.update(9, 12, |p| p.accessed_by = 1);
        assert_eq!(pages.runs.len(), 2);
        assert_eq!(pages.slice(9, 10)[0].accessed_by, 1);
    }

    #[test]
    fn sizes_and_attributes_are_checked() {
        let pages = vec![Page::default()];
        for (attr, size) in [(1, 8), (2, 0), (3, 0), (3, 6), (4, 2), (9, 4), (0, 4)] {
            assert_eq!(
                value(&pages, attr, size, 1),
                Err(CuError::INVALID_VALUE),
                "{attr}/{size}"
            );
        }
    }
}
