//! Executes one request on the driver.
//!
//! Each lane keeps the driver's current context in step with the calling
//! client thread's: the request carries that thread's context id, and the
//! lane calls `cuCtxSetCurrent` only when it changes.

use std::ffi::{c_int, c_uint, c_void, CString};
use std::ptr;
use std::sync::atomic::Ordering;

use vgpu_proto::{Op, Request, MAX_BLOB};

use super::status::{CONTEXT_IS_DESTROYED, INVALID_HANDLE, INVALID_VALUE, SUCCESS};
use super::tables::{as_handle, Owned, Range, RangeOwner, Tables};
use super::Session;
use super::{copy, host, launch, library, pointer};
use crate::driver::{entry, DevPtr, Handle, Status};

/// Scalar results and bulk bytes of a successful call.
#[derive(Debug, Default)]
pub struct Reply {
    pub outs: Vec<u64>,
    pub blob: Vec<u8>,
    /// A descriptor to send after the response (SCM_RIGHTS).
    pub fd: Option<std::os::fd::OwnedFd>,
}

impl Reply {
    pub(super) fn outs(outs: &[u64]) -> Reply {
        Reply {
            outs: outs.to_vec(),
            ..Reply::default()
        }
    }
}

pub(super) fn ok(st: Status) -> Result<(), Status> {
    if st == SUCCESS {
        Ok(())
    } else {
        Err(st)
    }
}

pub(super) fn int(v: u64) -> Result<c_int, Status> {
    // Arguments travel as u64; signed values are sign-extended by the client.
    c_int::try_from(v as i64).map_err(|_| INVALID_VALUE)
}

pub(super) fn uint(v: u64) -> Result<c_uint, Status> {
    c_uint::try_from(v).map_err(|_| INVALID_VALUE)
}

/// Narrows a memset value to its element width, as the C API's parameter
/// types do.
#[allow(clippy::cast_possible_truncation)]
fn narrow(value: u64) -> (u8, u16, u32) {
    (value as u8, value as u16, value as u32)
}

pub(super) fn size(v: u64) -> Result<usize, Status> {
    usize::try_from(v).map_err(|_| INVALID_VALUE)
}

pub(super) fn name(blob: &[u8]) -> Result<CString, Status> {
    CString::new(blob).map_err(|_| INVALID_VALUE)
}

/// Copies `bytes` into 8-byte-aligned storage, as driver images and kernel
/// parameter buffers expect.
pub(super) fn aligned(bytes: &[u8]) -> Vec<u64> {
    let mut v = vec![0u64; bytes.len().div_ceil(8)];
    // SAFETY: `v` holds at least `bytes.len()` bytes and the two do not overlap.
    unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), v.as_mut_ptr().cast::<u8>(), bytes.len()) };
    v
}

/// One lane's view of the driver's per-thread state.
#[derive(Debug, Default)]
pub struct Lane {
    /// The client context id current on this lane's thread, if known.
    current: Option<u64>,
    /// The session's context generation when `current` was last found live.
    checked_at: u64,
    /// Function and stream ids this lane launched with, translated.
    launches: launch::Translations,
}

impl Lane {
    /// Runs `req`, returning its results or the failing `CUresult`.
    pub fn execute(&mut self, s: &Session, req: &Request) -> Result<Reply, Status> {
        if needs_context(req.op) {
            self.bind(s, req.ctx)?;
        }
        let d = &s.driver;
        let a = &req.args;
        let tables = || {
            s.tables
                .lock()
                .expect("a lane panicked while holding the tables")
        };
        match req.op {
            Op::OpenLane => Err(INVALID_VALUE),

            Op::CtxCreate => {
                let (id, flags, dev) = (a[0], uint(a[1])?, int(a[2])?);
                Tables::fresh(&tables().ctxs, id)?;
                let mut ctx: Handle = ptr::null_mut();
                // SAFETY: the out-pointer is a live local.
                ok(unsafe { entry(d.ctx_create)?(&mut ctx, flags, dev) })?;
                tables().ctxs.insert(id, ctx as usize);
                s.contexts_changed.fetch_add(1, Ordering::SeqCst);
                self.current = Some(id);
                Ok(Reply::default())
            }
            Op::CtxDestroy => {
                let real = tables().ctx(a[0]).ok_or(INVALID_VALUE)?;
                // SAFETY: `real` is a live context created by this session.
                ok(unsafe { entry(d.ctx_destroy)?(as_handle(real)) })?;
                let mut t = tables();
                t.ctxs.remove(&a[0]);
                t.forget_context_resources(a[0]);
                s.contexts_changed.fetch_add(1, Ordering::SeqCst);
                if self.current == Some(a[0]) {
                    self.current = None;
                }
                Ok(Reply::default())
            }
            Op::CtxSynchronize => {
                // SAFETY: no arguments.
                ok(unsafe { entry(d.ctx_synchronize)?() })?;
                Ok(Reply::default())
            }
            Op::CtxGetLimit => {
                let mut v: usize = 0;
                // SAFETY: the out-pointer is a live local.
                ok(unsafe { entry(d.ctx_get_limit)?(&mut v, int(a[0])?) })?;
                Ok(Reply::outs(&[v as u64]))
            }
            Op::CtxSetLimit => {
                // SAFETY: scalar arguments only.
                ok(unsafe { entry(d.ctx_set_limit)?(int(a[0])?, size(a[1])?) })?;
                Ok(Reply::default())
            }
            Op::CtxGetStreamPriorityRange => {
                let (mut least, mut greatest): (c_int, c_int) = (0, 0);
                // SAFETY: both out-pointers are live locals.
                ok(unsafe { entry(d.ctx_get_stream_priority_range)?(&mut least, &mut greatest) })?;
                Ok(Reply::outs(&[least as i64 as u64, greatest as i64 as u64]))
            }
            Op::CtxGetFlags => {
                let mut f: c_uint = 0;
                // SAFETY: the out-pointer is a live local.
                ok(unsafe { entry(d.ctx_get_flags)?(&mut f) })?;
                Ok(Reply::outs(&[u64::from(f)]))
            }
            Op::CtxGetApiVersion => {
                let real = tables().ctx(req.ctx).unwrap_or(0);
                let mut v: c_uint = 0;
                // SAFETY: `real` is a live context of this session or NULL (current).
                ok(unsafe { entry(d.ctx_get_api_version)?(as_handle(real), &mut v) })?;
                Ok(Reply::outs(&[u64::from(v)]))
            }

            Op::PrimaryCtxRetain => {
                let (id, dev) = (a[0], int(a[1])?);
                let mut ctx: Handle = ptr::null_mut();
                // SAFETY: the out-pointer is a live local.
                ok(unsafe { entry(d.primary_ctx_retain)?(&mut ctx, dev) })?;
                tables().ctxs.insert(id, ctx as usize);
                s.contexts_changed.fetch_add(1, Ordering::SeqCst);
                Ok(Reply::default())
            }
            Op::StageBlob => library::stage(s, req),
            Op::ModuleKernelNames => {
                let real = tables().module(a[0])?;
                // SAFETY: `real` is a live module of this session.
                let kernels = unsafe { d.module_kernels(as_handle(real))? };
                let mut blob = Vec::new();
                for (_, name) in kernels {
                    blob.extend_from_slice(name.as_bytes());
                    blob.push(0);
                }
                Ok(Reply {
                    blob,
                    ..Reply::default()
                })
            }
            Op::EventRecordWithFlags => {
                let (ev, st) = {
                    let t = tables();
                    (t.event(a[0])?, t.stream(a[1])?)
                };
                // SAFETY: both handles are live objects of this session.
                ok(unsafe {
                    entry(d.event_record_with_flags)?(as_handle(ev), as_handle(st), uint(a[2])?)
                })?;
                Ok(Reply::default())
            }
            Op::MemAllocAsync => copy::alloc_async(s, req),
            Op::MemFreeAsync => copy::free_async(s, req),
            Op::Memcpy2D => {
                copy::memcpy_2d(s, req, |ranges, stream| self.checked(s, ranges, stream))
            }
            Op::PointerGetAttributes => pointer::attributes(s, a[0], a[1] != 0, &req.blob),
            Op::PrimaryCtxGet => {
                let (id, dev) = (a[0], int(a[1])?);
                let ctx = d.primary_context_unretained(dev)?;
                tables().ctxs.insert(id, ctx as usize);
                s.contexts_changed.fetch_add(1, Ordering::SeqCst);
                Ok(Reply::default())
            }
            Op::PrimaryCtxRelease => {
                let dev = int(a[0])?;
                // SAFETY: scalar argument.
                ok(unsafe { entry(d.primary_ctx_release)?(dev) })?;
                Ok(Reply::default())
            }
            Op::PrimaryCtxGetState => {
                let (mut flags, mut active): (c_uint, c_int) = (0, 0);
                // SAFETY: both out-pointers are live locals.
                ok(unsafe {
                    entry(d.primary_ctx_get_state)?(int(a[0])?, &mut flags, &mut active)
                })?;
                Ok(Reply::outs(&[u64::from(flags), active as i64 as u64]))
            }
            Op::PrimaryCtxSetFlags => {
                // SAFETY: scalar arguments.
                ok(unsafe { entry(d.primary_ctx_set_flags)?(int(a[0])?, uint(a[1])?) })?;
                Ok(Reply::default())
            }
            Op::PrimaryCtxReset => {
                // SAFETY: scalar argument.
                ok(unsafe { entry(d.primary_ctx_reset)?(int(a[0])?) })?;
                Ok(Reply::default())
            }

            Op::MemAlloc => {
                let mut p: DevPtr = 0;
                // SAFETY: the out-pointer is a live local.
                ok(unsafe { entry(d.mem_alloc)?(&mut p, size(a[0])?) })?;
                let owner = RangeOwner::Alloc { ctx: req.ctx };
                tables().ranges.insert(p, Range { size: a[0], owner });
                Ok(Reply::outs(&[p]))
            }
            Op::MemFree if a[0] == 0 => Ok(Reply::default()),
            Op::MemFree => {
                let known = matches!(
                    tables().ranges.get(&a[0]),
                    Some(Range {
                        owner: RangeOwner::Alloc { .. },
                        ..
                    })
                );
                if !known {
                    tracing::info!("cuMemFree({:#x}): not the base of a live allocation", a[0]);
                    return Err(INVALID_VALUE);
                }
                // SAFETY: `a[0]` is the base of a live allocation of this session.
                ok(unsafe { entry(d.mem_free)?(a[0]) })?;
                tables().ranges.remove(&a[0]);
                Ok(Reply::default())
            }
            Op::MemGetInfo => {
                let (mut free, mut total) = (0usize, 0usize);
                // SAFETY: both out-pointers are live locals.
                ok(unsafe { entry(d.mem_get_info)?(&mut free, &mut total) })?;
                Ok(Reply::outs(&[free as u64, total as u64]))
            }
            Op::MemGetAddressRange => {
                let (mut base, mut len): (DevPtr, usize) = (0, 0);
                // SAFETY: both out-pointers are live locals.
                ok(unsafe { entry(d.mem_get_address_range)?(&mut base, &mut len, a[0]) })?;
                Ok(Reply::outs(&[base, len as u64]))
            }

            Op::MemcpyHtoD => {
                let (dst, len) = (a[0], req.blob.len());
                let stream = self.checked(s, &[(dst, len as u64)], a[1])?;
                let src = req.blob.as_ptr().cast::<c_void>();
                // SAFETY: `dst..dst+len` lies in a live allocation (checked) and the
                // source is the request's own buffer of `len` bytes. A pageable
                // source is staged by the driver before the call returns.
                ok(unsafe {
                    if a[2] != 0 {
                        entry(d.memcpy_htod_async)?(dst, src, len, stream)
                    } else {
                        entry(d.memcpy_htod)?(dst, src, len)
                    }
                })?;
                Ok(Reply::default())
            }
            Op::MemcpyDtoH => {
                let (src, len) = (a[0], size(a[1])?);
                if len > MAX_BLOB {
                    return Err(INVALID_VALUE);
                }
                let stream = self.checked(s, &[(src, a[1])], a[2])?;
                let mut out = vec![0u8; len];
                let dst = out.as_mut_ptr().cast::<c_void>();
                // SAFETY: the source range is live (checked); `out` holds `len`
                // bytes. A pageable destination makes the async form complete
                // before it returns.
                ok(unsafe {
                    if a[3] != 0 {
                        entry(d.memcpy_dtoh_async)?(dst, src, len, stream)
                    } else {
                        entry(d.memcpy_dtoh)?(dst, src, len)
                    }
                })?;
                Ok(Reply {
                    blob: out,
                    ..Reply::default()
                })
            }
            Op::MemcpyDtoD => {
                let (dst, src, len) = (a[0], a[1], size(a[2])?);
                let stream = self.checked(s, &[(dst, a[2]), (src, a[2])], a[3])?;
                // SAFETY: both ranges lie in live allocations (checked).
                ok(unsafe {
                    if a[4] != 0 {
                        entry(d.memcpy_dtod_async)?(dst, src, len, stream)
                    } else {
                        entry(d.memcpy_dtod)?(dst, src, len)
                    }
                })?;
                Ok(Reply::default())
            }
            Op::Memset => {
                let (dst, value, elem, count) = (a[0], a[1], a[2], size(a[3])?);
                let bytes = elem.checked_mul(a[3]).ok_or(INVALID_VALUE)?;
                let stream = self.checked(s, &[(dst, bytes)], a[4])?;
                let is_async = a[5] != 0;
                let (v8, v16, v32) = narrow(value);
                // SAFETY: the range lies in a live allocation (checked); the
                // value is truncated to the element width as the C API does.
                ok(unsafe {
                    match (elem, is_async) {
                        (1, false) => entry(d.memset_d8)?(dst, v8, count),
                        (2, false) => entry(d.memset_d16)?(dst, v16, count),
                        (4, false) => entry(d.memset_d32)?(dst, v32, count),
                        (1, true) => entry(d.memset_d8_async)?(dst, v8, count, stream),
                        (2, true) => entry(d.memset_d16_async)?(dst, v16, count, stream),
                        (4, true) => entry(d.memset_d32_async)?(dst, v32, count, stream),
                        _ => INVALID_VALUE,
                    }
                })?;
                Ok(Reply::default())
            }

            Op::StreamCreate => {
                let id = a[0];
                tables().fresh_stream(id)?;
                let mut st: Handle = ptr::null_mut();
                // SAFETY: the out-pointer is a live local.
                ok(unsafe {
                    entry(d.stream_create_with_priority)?(&mut st, uint(a[1])?, int(a[2])?)
                })?;
                tables().insert_stream(
                    id,
                    Owned {
                        real: st as usize,
                        ctx: req.ctx,
                    },
                );
                Ok(Reply::default())
            }
            Op::StreamDestroy => {
                if a[0] < 3 {
                    return Err(INVALID_HANDLE);
                }
                let real = tables().stream(a[0])?;
                // SAFETY: `real` is a live stream of this session.
                ok(unsafe { entry(d.stream_destroy)?(as_handle(real)) })?;
                tables().forget_stream(a[0]);
                Ok(Reply::default())
            }
            Op::StreamSynchronize => {
                let real = tables().stream(a[0])?;
                // SAFETY: `real` is a live stream or a stream sentinel.
                ok(unsafe { entry(d.stream_synchronize)?(as_handle(real)) })?;
                Ok(Reply::default())
            }
            Op::StreamQuery => {
                let real = tables().stream(a[0])?;
                // SAFETY: `real` is a live stream or a stream sentinel.
                ok(unsafe { entry(d.stream_query)?(as_handle(real)) })?;
                Ok(Reply::default())
            }
            Op::StreamWaitEvent => {
                let (st, ev) = {
                    let t = tables();
                    (t.stream(a[0])?, t.event(a[1])?)
                };
                // SAFETY: both handles are live objects of this session.
                ok(unsafe {
                    entry(d.stream_wait_event)?(as_handle(st), as_handle(ev), uint(a[2])?)
                })?;
                Ok(Reply::default())
            }
            Op::StreamGetFlags => {
                let real = tables().stream(a[0])?;
                let mut f: c_uint = 0;
                // SAFETY: live stream; the out-pointer is a live local.
                ok(unsafe { entry(d.stream_get_flags)?(as_handle(real), &mut f) })?;
                Ok(Reply::outs(&[u64::from(f)]))
            }
            Op::StreamGetPriority => {
                let real = tables().stream(a[0])?;
                let mut p: c_int = 0;
                // SAFETY: live stream; the out-pointer is a live local.
                ok(unsafe { entry(d.stream_get_priority)?(as_handle(real), &mut p) })?;
                Ok(Reply::outs(&[p as i64 as u64]))
            }

            Op::EventCreate => {
                let id = a[0];
                Tables::fresh(&tables().events, id)?;
                let mut ev: Handle = ptr::null_mut();
                // SAFETY: the out-pointer is a live local.
                ok(unsafe { entry(d.event_create)?(&mut ev, uint(a[1])?) })?;
                tables().events.insert(
                    id,
                    Owned {
                        real: ev as usize,
                        ctx: req.ctx,
                    },
                );
                Ok(Reply::default())
            }
            Op::EventDestroy => {
                let real = tables().event(a[0])?;
                // SAFETY: `real` is a live event of this session.
                ok(unsafe { entry(d.event_destroy)?(as_handle(real)) })?;
                tables().events.remove(&a[0]);
                Ok(Reply::default())
            }
            Op::EventRecord => {
                let (ev, st) = {
                    let t = tables();
                    (t.event(a[0])?, t.stream(a[1])?)
                };
                // SAFETY: both handles are live objects of this session.
                ok(unsafe { entry(d.event_record)?(as_handle(ev), as_handle(st)) })?;
                Ok(Reply::default())
            }
            Op::EventSynchronize => {
                let real = tables().event(a[0])?;
                // SAFETY: `real` is a live event of this session.
                ok(unsafe { entry(d.event_synchronize)?(as_handle(real)) })?;
                Ok(Reply::default())
            }
            Op::EventQuery => {
                let real = tables().event(a[0])?;
                // SAFETY: `real` is a live event of this session.
                ok(unsafe { entry(d.event_query)?(as_handle(real)) })?;
                Ok(Reply::default())
            }
            Op::EventElapsedTime => {
                let (start, end) = {
                    let t = tables();
                    (t.event(a[0])?, t.event(a[1])?)
                };
                let mut ms: f32 = 0.0;
                // SAFETY: both events are live; the out-pointer is a live local.
                ok(unsafe {
                    entry(d.event_elapsed_time)?(&mut ms, as_handle(start), as_handle(end))
                })?;
                Ok(Reply::outs(&[u64::from(ms.to_bits())]))
            }

            Op::ModuleLoadData => library::module_load(s, req, self.current.unwrap_or(0)),
            Op::ModuleUnload => library::module_unload(s, a[0]),
            Op::ModuleGetFunction => library::module_get_function(s, req),
            Op::ModuleGetGlobal => library::get_global(s, req, false),
            Op::LaunchKernel => launch::launch(s, &mut self.launches, req),
            Op::LibraryLoadData => library::library_load(s, req, self.current.unwrap_or(0)),
            Op::LibraryUnload => library::library_unload(s, a[0]),
            Op::LibraryGetKernel => library::library_get_kernel(s, req),
            Op::LibraryGetGlobal => library::get_global(s, req, true),
            Op::LibraryGetModule => library::library_get_module(s, req, self.current.unwrap_or(0)),
            Op::KernelGetFunction => library::kernel_get_function(s, req),
            Op::FuncGetAttribute => library::func_get_attribute(s, a),
            Op::FuncSetAttribute => library::func_set_attribute(s, a),
            Op::KernelGetAttribute => library::kernel_get_attribute(s, a),
            Op::KernelSetAttribute => library::kernel_set_attribute(s, a),
            Op::OccupancyMaxActiveBlocks => library::occupancy_max_active_blocks(s, a),
            Op::OccupancyAvailableDynamicSMem => library::occupancy_available_dynamic_smem(s, a),
            Op::OccupancyMaxActiveClusters => {
                launch::occupancy_max_active_clusters(s, &mut self.launches, req)
            }
            Op::LaunchKernelEx => launch::launch_ex(s, &mut self.launches, req),
            Op::StreamIsCapturing => {
                let real = tables().stream(a[0])?;
                let mut st: c_int = 0;
                // SAFETY: live stream or sentinel; live out-pointer.
                ok(unsafe { entry(d.stream_is_capturing)?(as_handle(real), &mut st) })?;
                Ok(Reply::outs(&[st as i64 as u64]))
            }
            Op::ModuleGetLoadingMode => {
                let mut mode: c_int = 0;
                // SAFETY: live out-pointer.
                ok(unsafe { entry(d.module_get_loading_mode)?(&mut mode) })?;
                Ok(Reply::outs(&[mode as i64 as u64]))
            }
            Op::MemHostAlloc => {
                let (reply, fd) = host::alloc(s, a)?;
                Ok(Reply {
                    fd: Some(fd),
                    ..reply
                })
            }
            Op::MemFreeHost => host::free(s, a[0]),
            Op::MemcpyHtoDShared => {
                let (dst, len) = (a[0], size(a[2])?);
                let stream = self.checked(s, &[(dst, a[2])], a[3])?;
                let src = host::check(s, a[1], a[2])?;
                // SAFETY: both ranges are checked: the device range is live and
                // the source lies in a shared pinned allocation of this session.
                ok(unsafe {
                    if a[4] != 0 {
                        entry(d.memcpy_htod_async)?(dst, src, len, stream)
                    } else {
                        entry(d.memcpy_htod)?(dst, src, len)
                    }
                })?;
                Ok(Reply::default())
            }
            Op::MemcpyDtoHShared => {
                let (src, len) = (a[1], size(a[2])?);
                let stream = self.checked(s, &[(src, a[2])], a[3])?;
                let dst = host::check(s, a[0], a[2])?;
                // SAFETY: as for MemcpyHtoDShared, in the other direction.
                ok(unsafe {
                    if a[4] != 0 {
                        entry(d.memcpy_dtoh_async)?(dst, src, len, stream)
                    } else {
                        entry(d.memcpy_dtoh)?(dst, src, len)
                    }
                })?;
                Ok(Reply::default())
            }
        }
    }

    /// Makes the client thread's context current on this lane.
    fn bind(&mut self, s: &Session, ctx: u64) -> Result<(), Status> {
        // No context created or destroyed since `ctx` was found live and
        // made current here: nothing to look up.
        let generation = s.contexts_changed.load(Ordering::SeqCst);
        if self.current == Some(ctx) && self.checked_at == generation {
            return Ok(());
        }
        let real = if ctx == 0 {
            0
        } else {
            s.tables
                .lock()
                .expect("tables lock")
                .ctx(ctx)
                .ok_or(CONTEXT_IS_DESTROYED)?
        };
        if self.current != Some(ctx) {
            // SAFETY: `real` is a live context of this session, or NULL.
            ok(unsafe { entry(s.driver.ctx_set_current)?(as_handle(real)) })?;
            self.current = Some(ctx);
        }
        self.checked_at = generation;
        Ok(())
    }

    /// Checks device ranges against the session's live allocations and
    /// resolves the stream id.
    fn checked(
        &self,
        s: &Session,
        ranges: &[(DevPtr, u64)],
        stream: u64,
    ) -> Result<Handle, Status> {
        let t = s.tables.lock().expect("tables lock");
        for &(p, len) in ranges {
            if let Err(why) = t.check_range(p, len) {
                tracing::warn!("memory operation refused: {why}");
                return Err(INVALID_VALUE);
            }
        }
        Ok(as_handle(t.stream(stream)?))
    }
}

fn needs_context(op: Op) -> bool {
    !matches!(
        op,
        Op::OpenLane
            | Op::CtxCreate
            | Op::CtxDestroy
            | Op::PrimaryCtxRetain
            | Op::PrimaryCtxGet
            | Op::PointerGetAttributes
            | Op::StageBlob
            | Op::PrimaryCtxRelease
            | Op::PrimaryCtxGetState
            | Op::PrimaryCtxSetFlags
            | Op::PrimaryCtxReset
    )
}
