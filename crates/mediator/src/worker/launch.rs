//! Kernel launches (`cuLaunchKernel`, `cuLaunchKernelEx`) and the occupancy
//! query that takes a launch configuration.
//!
//! A launch is the hottest request there is: empty-kernel throughput is
//! bounded by the driver's ~2.5 µs per launch, so every shared cache line the
//! worker touches on the way shows. Each lane therefore keeps its own
//! [`Translations`] of function and stream ids, and takes the session's table
//! lock only for ids it has not seen since a stream or function last left the
//! tables ([`super::Session::handles_gone`]). Four lanes launching the same
//! kernel then share nothing but the driver.

use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;
use vgpu_abi::types::{CUlaunchAttribute, CUlaunchAttributeID, CUlaunchConfig, CUDA_LAUNCH_PARAMS};
use vgpu_proto::{
    launch_kernel, launch_kernel_ex, launch_multi_device, occupancy_max_active_clusters,
    occupancy_max_potential_cluster_size, param_setv, Request,
};
use zerocopy::little_endian::{I32, U32, U64};

use super::calls::{aligned, message, ok, size, split, Reply};
use super::exec::Lane;
use super::status::{INVALID_HANDLE, INVALID_VALUE, NOT_SUPPORTED};
use super::tables::{as_handle, Raw, Tables};
use super::Session;
use crate::driver::{entry, Status};

/// Most launch attributes one launch may carry.
const MAX_LAUNCH_ATTRS: usize = 32;
/// Bytes of one `CUlaunchAttribute`: its id, padding, and a 64-byte value.
const LAUNCH_ATTRIBUTE_SIZE: usize = std::mem::size_of::<CUlaunchAttribute>();
const _: () = assert!(LAUNCH_ATTRIBUTE_SIZE == 72);

/// Each kernel parameter's (offset, size), in order.
type Layout = [(u32, u32)];

/// One lane's translations of the function and stream ids it launched with.
///
/// Valid while [`super::Session::handles_gone`] keeps the value it had when
/// they were taken: every removal of a stream or function bumps it under the
/// table lock ([`super::tables::Tables`]), so a lane never launches with a
/// handle the tables no longer hold. (A launch cannot race with the removal of
/// what it uses: stream destruction is a barrier in the session's order, and
/// unloading a module a concurrent thread still launches from is the
/// program's own race, as it is with the driver.)
#[derive(Debug, Default)]
pub struct Translations {
    /// `handles_gone` when the maps were last emptied.
    generation: u64,
    /// Function id → real function and its parameter layout.
    functions: FxHashMap<u64, (Raw, Arc<Layout>)>,
    /// Stream id → real stream (the sentinels map to themselves).
    streams: FxHashMap<u64, Raw>,
    /// The last launch's (function id, stream id) and their translations:
    /// a loop of launches finds them here without touching the maps.
    last: Option<(u64, u64, Raw, Arc<Layout>, Raw)>,
}

impl Translations {
    /// The real function, its parameter layout and the real stream for the
    /// client's `function` and `stream`; `CUDA_ERROR_INVALID_HANDLE` if the
    /// tables hold either no longer (or never did).
    fn get(
        &mut self,
        s: &Session,
        function: u64,
        stream: u64,
    ) -> Result<(Raw, &Layout, Raw), Status> {
        self.translate(&s.handles_gone, &s.tables, function, stream)
    }

    /// [`Translations::get`], given the session's counter and tables.
    fn translate(
        &mut self,
        gone: &AtomicU64,
        tables: &Mutex<Tables>,
        function: u64,
        stream: u64,
    ) -> Result<(Raw, &Layout, Raw), Status> {
        // Read before the tables: a removal after this load is seen next time.
        let now = gone.load(Ordering::SeqCst);
        if now != self.generation {
            self.functions.clear();
            self.streams.clear();
            self.last = None;
            self.generation = now;
        }
        if matches!(&self.last, Some((f, st, ..)) if (*f, *st) == (function, stream)) {
            let (_, _, real, params, real_stream) = self.last.as_ref().expect("matched above");
            return Ok((*real, params, *real_stream));
        }
        if !self.functions.contains_key(&function) || !self.streams.contains_key(&stream) {
            let t = tables.lock().unwrap_or_else(|e| e.into_inner());
            let f = t.function(function)?;
            let real_stream = t.stream(stream)?;
            self.functions
                .insert(function, (f.real, Arc::clone(&f.params)));
            self.streams.insert(stream, real_stream);
        }
        let (real, params, real_stream) =
            match (self.functions.get(&function), self.streams.get(&stream)) {
                (Some((real, params)), Some(&real_stream)) => (*real, params, real_stream),
                _ => return Err(INVALID_HANDLE),
            };
        let last = (function, stream, real, Arc::clone(params), real_stream);
        let (.., params, _) = self.last.insert(last);
        Ok((real, params, real_stream))
    }
}

/// A decoded launch configuration.
struct Launch<'a> {
    function: Raw,
    params: &'a Layout,
    config: CUlaunchConfig,
    /// The attribute records, 8-byte aligned, event handles translated.
    attrs: Vec<u64>,
    /// The blob after the attributes: the kernel parameters.
    rest: &'a [u8],
}

/// The fields `cuLaunchKernelEx` and `cuOccupancyMaxActiveClusters`
/// requests share.
struct ConfigFields {
    function: U64,
    dims: [U32; 7],
    stream: U64,
    attributes: U32,
}

impl ConfigFields {
    fn ex(r: &launch_kernel_ex::Request) -> ConfigFields {
        ConfigFields {
            function: r.function,
            dims: [
                r.grid_x, r.grid_y, r.grid_z, r.block_x, r.block_y, r.block_z, r.shared,
            ],
            stream: r.stream,
            attributes: r.attributes,
        }
    }

    fn clusters(r: &occupancy_max_active_clusters::Request) -> ConfigFields {
        ConfigFields {
            function: r.function,
            dims: [
                r.grid_x, r.grid_y, r.grid_z, r.block_x, r.block_y, r.block_z, r.shared,
            ],
            stream: r.stream,
            attributes: r.attributes,
        }
    }

    fn cluster_size(r: &occupancy_max_potential_cluster_size::Request) -> ConfigFields {
        ConfigFields {
            function: r.function,
            dims: [
                r.grid_x, r.grid_y, r.grid_z, r.block_x, r.block_y, r.block_z, r.shared,
            ],
            stream: r.stream,
            attributes: r.attributes,
        }
    }
}

/// Decodes a launch configuration and the attribute records at the head of
/// the blob, translating event handles.
fn launch_config<'a>(
    s: &Session,
    lane: &'a mut Translations,
    c: &ConfigFields,
    blob: &'a [u8],
) -> Result<Launch<'a>, Status> {
    let nattrs = size(u64::from(c.attributes.get()))?;
    if nattrs > MAX_LAUNCH_ATTRS {
        return Err(INVALID_VALUE);
    }
    let (attr_bytes, rest) = split(blob, nattrs * LAUNCH_ATTRIBUTE_SIZE)?;
    let mut attrs = aligned(attr_bytes);
    for i in 0..nattrs {
        let word = i * LAUNCH_ATTRIBUTE_SIZE / 8;
        let id = CUlaunchAttributeID(
            u32::try_from(attrs[word] & 0xFFFF_FFFF).expect("masked to 32 bits"),
        );
        match id {
            CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT
            | CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT => {
                attrs[word + 1] = s.tables().event(attrs[word + 1])? as u64;
            }
            // It writes a device-side node handle back into the attribute.
            CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE => {
                return Err(NOT_SUPPORTED)
            }
            _ => {}
        }
    }
    let (function, params, stream) = lane.get(s, c.function.get(), c.stream.get())?;
    let d = c.dims.map(|v| v.get());
    let config = CUlaunchConfig {
        gridDimX: d[0],
        gridDimY: d[1],
        gridDimZ: d[2],
        blockDimX: d[3],
        blockDimY: d[4],
        blockDimZ: d[5],
        sharedMemBytes: d[6],
        hStream: as_handle(stream).cast(),
        attrs: ptr::null_mut(),
        numAttrs: c.attributes.get(),
    };
    Ok(Launch {
        function,
        params,
        config,
        attrs,
        rest,
    })
}

/// `cuOccupancyMaxActiveClusters` for a launch configuration.
pub fn occupancy_max_active_clusters(
    lane: &mut Lane,
    s: &Session,
    req: &Request,
) -> Result<Reply, Status> {
    let r: &occupancy_max_active_clusters::Request = message(req)?;
    let mut l = launch_config(s, &mut lane.launches, &ConfigFields::clusters(r), &req.blob)?;
    l.config.attrs = l.attrs.as_mut_ptr().cast();
    let mut n: std::ffi::c_int = 0;
    // SAFETY: live function; the config's attribute array lives in `l.attrs`.
    ok(unsafe {
        entry(s.driver.cuOccupancyMaxActiveClusters)?(
            &mut n,
            as_handle(l.function).cast(),
            &l.config,
        )
    })?;
    let reply = occupancy_max_active_clusters::Reply {
        clusters: I32::new(n),
    };
    Ok(Reply::new(&reply, Vec::new()))
}

/// `cuOccupancyMaxPotentialClusterSize` for a launch configuration.
pub fn occupancy_max_potential_cluster_size(
    lane: &mut Lane,
    s: &Session,
    req: &Request,
) -> Result<Reply, Status> {
    let r: &occupancy_max_potential_cluster_size::Request = message(req)?;
    let fields = ConfigFields::cluster_size(r);
    let mut l = launch_config(s, &mut lane.launches, &fields, &req.blob)?;
    l.config.attrs = l.attrs.as_mut_ptr().cast();
    let mut n: std::ffi::c_int = 0;
    // SAFETY: live function; the config's attribute array lives in `l.attrs`.
    ok(unsafe {
        entry(s.driver.cuOccupancyMaxPotentialClusterSize)?(
            &mut n,
            as_handle(l.function).cast(),
            &l.config,
        )
    })?;
    let reply = occupancy_max_potential_cluster_size::Reply {
        cluster_size: I32::new(n),
    };
    Ok(Reply::new(&reply, Vec::new()))
}

/// `cuParamSetv` (deprecated): the bytes go into the function's legacy
/// parameter buffer in the driver.
pub fn param_setv(lane: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &param_setv::Request = message(req)?;
    let (function, _, _) = lane.launches.get(s, r.function.get(), 0)?;
    let n = std::ffi::c_uint::try_from(req.blob.len()).map_err(|_| INVALID_VALUE)?;
    let mut bytes = req.blob.clone();
    // SAFETY: a live function of this session; `bytes` holds `n` bytes the
    // driver only reads.
    ok(unsafe {
        entry(s.driver.cuParamSetv)?(
            as_handle(function).cast(),
            r.offset.get(),
            bytes.as_mut_ptr().cast(),
            n,
        )
    })?;
    Ok(Reply::default())
}

thread_local! {
    /// Each lane thread's scratch space for launches: the 8-byte-aligned
    /// parameter copy and the pointer array. Reused, so a launch allocates
    /// nothing once the lane has warmed up.
    static LAUNCH_SCRATCH: std::cell::RefCell<(Vec<u64>, Vec<usize>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Runs `launch` with `kernelParams` for `blob` laid out by `layout`: an
/// aligned copy of the blob and one pointer per parameter (NULL when there
/// are none). Every parameter must lie inside the blob.
pub(super) fn with_params(
    layout: &Layout,
    blob: &[u8],
    launch: impl FnOnce(*mut *mut c_void) -> Status,
) -> Result<(), Status> {
    if layout.is_empty() {
        // No parameters: nothing to copy, no scratch to borrow.
        return ok(launch(ptr::null_mut()));
    }
    // The bytes may stop short of the last parameter's end: the `extra`
    // form's buffer covers only what the kernel reads (NCCL declares a
    // 4 KiB argument and passes less), as the driver allows. The rest of
    // the copy is zeros.
    let end = layout
        .iter()
        .map(|&(off, sz)| off as usize + sz as usize)
        .max()
        .unwrap_or(0);
    LAUNCH_SCRATCH.with(|scratch| {
        let (words, ptrs) = &mut *scratch.borrow_mut();
        words.clear();
        words.resize(blob.len().max(end).div_ceil(8), 0);
        // SAFETY: `words` holds at least `blob.len()` bytes; no overlap.
        unsafe {
            ptr::copy_nonoverlapping(blob.as_ptr(), words.as_mut_ptr().cast::<u8>(), blob.len())
        };
        let base = words.as_mut_ptr().cast::<u8>() as usize;
        ptrs.clear();
        ptrs.extend(layout.iter().map(|&(off, _)| base + off as usize));
        let kernel_params = if ptrs.is_empty() {
            ptr::null_mut()
        } else {
            ptrs.as_mut_ptr().cast::<*mut c_void>()
        };
        ok(launch(kernel_params))
    })
}

/// `cuLaunchKernel`: the configuration, and the parameter bytes as the blob.
pub fn launch_kernel(lane: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &launch_kernel::Request = message(req)?;
    let (real, layout, stream) = lane.launches.get(s, r.function.get(), r.stream.get())?;
    let dims = [
        r.grid_x, r.grid_y, r.grid_z, r.block_x, r.block_y, r.block_z, r.shared,
    ]
    .map(|v| v.get());
    let f = entry(s.driver.cuLaunchKernel)?;
    with_params(layout, &req.blob, |kernel_params| {
        // SAFETY: live function and stream; every parameter pointer points
        // into the aligned copy, which outlives the call (the driver copies
        // the values).
        unsafe {
            f(
                as_handle(real).cast(),
                dims[0],
                dims[1],
                dims[2],
                dims[3],
                dims[4],
                dims[5],
                dims[6],
                as_handle(stream).cast(),
                kernel_params,
                ptr::null_mut(),
            )
        }
    })?;
    Ok(Reply::default())
}

/// `cuLaunchKernelEx`: the configuration as [`launch_config`] decodes it,
/// then the parameter bytes.
pub fn launch_kernel_ex(lane: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &launch_kernel_ex::Request = message(req)?;
    let mut l = launch_config(s, &mut lane.launches, &ConfigFields::ex(r), &req.blob)?;
    l.config.attrs = l.attrs.as_mut_ptr().cast();
    let f = entry(s.driver.cuLaunchKernelEx)?;
    let real = l.function;
    with_params(l.params, l.rest, |kernel_params| {
        // SAFETY: live function and stream; the attributes live in `l.attrs`
        // and the parameters in the aligned copy for the duration of the call.
        unsafe {
            f(
                &l.config,
                as_handle(real).cast(),
                kernel_params,
                ptr::null_mut(),
            )
        }
    })?;
    Ok(Reply::default())
}

/// Bytes of one entry's head in a `LaunchMultiDevice` blob.
pub const MULTI_HEAD: usize = 48;

/// The little-endian u32 at `at` in `head` (a [`MULTI_HEAD`]-byte slice).
fn u32_at(head: &[u8], at: usize) -> u32 {
    let mut b = [0; 4];
    b.copy_from_slice(&head[at..at + 4]);
    u32::from_le_bytes(b)
}

/// The little-endian u64 at `at` in `head`.
fn u64_at(head: &[u8], at: usize) -> u64 {
    let mut b = [0; 8];
    b.copy_from_slice(&head[at..at + 8]);
    u64::from_le_bytes(b)
}

/// `cuLaunchCooperativeKernelMultiDevice`: each entry's function and
/// stream translated, its parameters in an aligned copy of their own; the
/// driver checks the rest (device count, flags, one entry per device).
pub fn launch_multi_device(lane: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &launch_multi_device::Request = message(req)?;
    let mut rest = &req.blob[..];
    let mut list: Vec<CUDA_LAUNCH_PARAMS> = Vec::new();
    // Per entry: the aligned parameter bytes and the pointers into them.
    let mut storage: Vec<(Vec<u64>, Vec<*mut c_void>)> = Vec::new();
    for _ in 0..r.devices.get() {
        let (head, tail) = rest.split_at_checked(MULTI_HEAD).ok_or(INVALID_VALUE)?;
        let len = u32_at(head, 44) as usize;
        let (bytes, tail) = tail.split_at_checked(len).ok_or(INVALID_VALUE)?;
        rest = tail;
        let (real, layout, stream) = lane.launches.get(s, u64_at(head, 0), u64_at(head, 8))?;
        if layout
            .iter()
            .any(|&(off, sz)| off as usize + sz as usize > bytes.len())
        {
            return Err(INVALID_VALUE);
        }
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        // SAFETY: `words` holds at least `bytes.len()` bytes; no overlap.
        unsafe {
            ptr::copy_nonoverlapping(bytes.as_ptr(), words.as_mut_ptr().cast::<u8>(), bytes.len())
        };
        let base = words.as_mut_ptr().cast::<u8>();
        // SAFETY: every offset lies inside `words`, checked above.
        let ptrs = layout
            .iter()
            .map(|&(off, _)| unsafe { base.add(off as usize) }.cast::<c_void>())
            .collect();
        let dim = |i: usize| u32_at(head, 16 + 4 * i);
        list.push(CUDA_LAUNCH_PARAMS {
            function: as_handle(real).cast(),
            gridDimX: dim(0),
            gridDimY: dim(1),
            gridDimZ: dim(2),
            blockDimX: dim(3),
            blockDimY: dim(4),
            blockDimZ: dim(5),
            sharedMemBytes: dim(6),
            hStream: as_handle(stream).cast(),
            kernelParams: ptr::null_mut(),
        });
        storage.push((words, ptrs));
    }
    if !rest.is_empty() {
        return Err(INVALID_VALUE);
    }
    // The vectors' buffers stay where they are while `storage` grows.
    for (p, (_, ptrs)) in list.iter_mut().zip(&mut storage) {
        if !ptrs.is_empty() {
            p.kernelParams = ptrs.as_mut_ptr();
        }
    }
    let list_ptr = if list.is_empty() {
        ptr::null_mut()
    } else {
        list.as_mut_ptr()
    };
    // SAFETY: live functions and streams; the parameters live in `storage`
    // for the duration of the call (the driver copies the values).
    ok(unsafe {
        entry(s.driver.cuLaunchCooperativeKernelMultiDevice)?(
            list_ptr,
            r.devices.get(),
            r.flags.get(),
        )
    })?;
    Ok(Reply::default())
}

#[cfg(test)]
mod tests {
    use super::super::tables::{Function, Owned};
    use super::*;

    fn tables() -> (Mutex<Tables>, Arc<AtomicU64>) {
        let mut t = Tables::default();
        for (id, real, module) in [(10, 0x100, 5), (11, 0x110, 6)] {
            t.insert_function(
                id,
                Function {
                    real,
                    module,
                    params: vec![(0, 8)].into(),
                },
            );
        }
        for (id, real) in [(20, 0x200), (21, 0x210)] {
            t.insert_stream(id, Owned { real, ctx: 1 });
        }
        let gone = t.gone_counter();
        (Mutex::new(t), gone)
    }

    #[test]
    fn a_short_parameter_buffer_is_zero_filled_to_the_last_parameter() {
        // A pointer and a 4 KiB argument, launched with 24 bytes (NCCL's
        // `extra` form): each parameter gets a whole, aligned copy.
        let layout = [(0, 8), (8, 4096)];
        let blob: Vec<u8> = (1..=24).collect();
        let mut seen = Vec::new();
        with_params(&layout, &blob, |params| {
            // SAFETY: `with_params` passes one pointer per parameter, each to
            // that parameter's bytes.
            unsafe {
                let first = *params.cast::<*const u8>();
                let second = *params.cast::<*const u8>().add(1);
                seen.extend_from_slice(std::slice::from_raw_parts(first, 8));
                seen.extend_from_slice(std::slice::from_raw_parts(second, 4096));
                assert_eq!(first as usize % 8, 0, "aligned");
            }
            vgpu_abi::types::CUresult::CUDA_SUCCESS
        })
        .expect("a short buffer is accepted");
        assert_eq!(&seen[..24], &blob[..]);
        assert!(seen[24..].iter().all(|&b| b == 0), "the rest is zeros");
    }

    #[test]
    fn translations_are_kept_until_a_stream_or_function_leaves() {
        let (t, gone) = tables();
        let mut lane = Translations::default();
        let got = lane
            .translate(&gone, &t, 10, 20)
            .map(|(f, l, s)| (f, l.to_vec(), s));
        assert_eq!(got, Ok((0x100, vec![(0, 8)], 0x200)));
        assert_eq!(
            lane.translate(&gone, &t, 10, 1).map(|(_, _, s)| s),
            Ok(1),
            "a sentinel"
        );
        assert_eq!(
            lane.translate(&gone, &t, 99, 20).map(|_| ()),
            Err(INVALID_HANDLE)
        );
        assert_eq!(
            lane.translate(&gone, &t, 10, 99).map(|_| ()),
            Err(INVALID_HANDLE)
        );

        // Kept: a launch after a stream is destroyed finds it gone, though
        // this lane translated it before.
        t.lock().expect("tables").forget_stream(20);
        assert_eq!(
            lane.translate(&gone, &t, 10, 20).map(|_| ()),
            Err(INVALID_HANDLE)
        );
        assert_eq!(
            lane.translate(&gone, &t, 10, 21).map(|(f, _, s)| (f, s)),
            Ok((0x100, 0x210))
        );
        assert_eq!(
            lane.translate(&gone, &t, 11, 21).map(|(f, _, s)| (f, s)),
            Ok((0x110, 0x210))
        );

        // The same for a module's functions, and for everything a context owned.
        t.lock().expect("tables").forget_module(5);
        assert_eq!(
            lane.translate(&gone, &t, 10, 21).map(|_| ()),
            Err(INVALID_HANDLE)
        );
        assert_eq!(
            lane.translate(&gone, &t, 11, 21).map(|(f, _, _)| f),
            Ok(0x110)
        );
        t.lock().expect("tables").forget_context_resources(1);
        assert_eq!(
            lane.translate(&gone, &t, 11, 21).map(|_| ()),
            Err(INVALID_HANDLE)
        );
        assert_eq!(
            lane.translate(&gone, &t, 11, 0).map(|(f, _, _)| f),
            Ok(0x110)
        );
        t.lock().expect("tables").forget_library(6);
        assert_eq!(
            lane.translate(&gone, &t, 11, 0).map(|_| ()),
            Err(INVALID_HANDLE)
        );
    }

    #[test]
    fn an_id_made_again_after_it_left_is_translated_afresh() {
        let (t, gone) = tables();
        let mut lane = Translations::default();
        assert_eq!(
            lane.translate(&gone, &t, 10, 20).map(|(_, _, s)| s),
            Ok(0x200)
        );
        let mut tables = t.lock().expect("tables");
        tables.forget_stream(20);
        tables.insert_stream(
            20,
            Owned {
                real: 0x300,
                ctx: 1,
            },
        );
        drop(tables);
        assert_eq!(
            lane.translate(&gone, &t, 10, 20).map(|(_, _, s)| s),
            Ok(0x300)
        );
    }
}
