//! The implemented entry points: one `implement!` line each, mapping the raw
//! export to a typed function in its area module.

mod array;
mod batch;
mod batch3d;
mod callback;
mod checkpoint;
pub(crate) mod context;
mod copy;
mod coredump;
mod dark;
mod decompress;
mod device;
mod errors;
pub(crate) mod event;
pub(crate) mod external;
pub(crate) mod graph;
pub(crate) mod green;
mod host;
mod host_local;
mod host_register;
mod init;
mod integrity;
mod ipc;
mod launch;
pub(crate) mod library;
mod link;
mod logs;
pub(crate) mod managed;
mod managed_range;
mod memop;
pub(crate) mod memory;
mod module;
mod multicast;
mod notify;
mod occupancy;
mod options;
mod peer;
mod pointer;
mod pool;
mod procaddr;
pub(crate) mod stream;
mod tensormap;
mod texture;
mod vmm;

/// A count as the wire's u32; more is `CUDA_ERROR_INVALID_VALUE`.
fn call_len(n: usize) -> crate::edge::CuResult<u32> {
    u32::try_from(n).map_err(|_| crate::edge::CuError::INVALID_VALUE)
}
pub(crate) use host::map_shared;

use vgpu_abi::types::*;

/// `implement! { cuX(a, b) => area::x(a, b); }` gives `exports::cuX::Probe`
/// its inherent `call`, which takes precedence over the not-supported fallback.
/// The lines of the remoting table's calls are generated
/// (`crate::generated`); the hand-written entry points are listed below,
/// each also named by the table's `manual` section.
macro_rules! implement {
    ($( $name:ident ( $($arg:ident),* ) => $body:expr; )*) => {
        $(
            impl crate::exports::$name::Probe {
                /// # Safety
                /// The arguments must be what the CUDA API requires of its caller.
                #[allow(non_snake_case, unused_parens, unused_unsafe)]
                pub unsafe fn call(self, ($($arg,)*): crate::exports::$name::Args) -> CUresult {
                    // SAFETY: the arguments come straight from the application,
                    // which must pass values valid for this entry point.
                    crate::edge::to_curesult(unsafe { $body })
                }
            }
        )*
    };
}
pub(crate) use implement;

implement! {
    cuInit(flags) => init::init(flags);
    cuDriverGetVersion(v) => init::driver_version(v);
    cuGetErrorName(e, s) => errors::get_name(e, s);
    cuGetErrorString(e, s) => errors::get_string(e, s);
    cuGetExportTable(table, id) => dark::get(table, id);
    cuGetProcAddress(sym, pfn, v, flags) => procaddr::get(sym, pfn, v, flags, None);
    cuGetProcAddress_v2(sym, pfn, v, flags, st) => procaddr::get(sym, pfn, v, flags, Some(st));

    cuDeviceGet(d, ordinal) => device::get(d, ordinal);
    cuDeviceGetCount(n) => device::count(n);
    cuDeviceGetName(name, len, dev) => device::name(name, len, dev);
    cuDeviceGetUuid(uuid, dev) => device::uuid(uuid, dev);
    cuDeviceGetUuid_v2(uuid, dev) => device::uuid(uuid, dev);
    cuDeviceGetPCIBusId(buf, len, dev) => device::pci_bus_id(buf, len, dev);
    cuDeviceTotalMem_v2(bytes, dev) => device::total_mem(bytes, dev);
    cuDeviceTotalMem(bytes, dev) => device::total_mem_v1(bytes, dev);
    cuDeviceGetAttribute(pi, attr, dev) => device::attribute(pi, attr, dev);
    cuDeviceComputeCapability(major, minor, dev) => device::compute_capability(major, minor, dev);

    cuDevicePrimaryCtxRetain(pctx, dev) => context::primary_retain(pctx, dev);
    cuDevicePrimaryCtxRelease(dev) => context::device_primary_ctx_release_v2(dev);
    cuDevicePrimaryCtxSetFlags(dev, flags) => context::device_primary_ctx_set_flags_v2(dev, flags);
    cuDevicePrimaryCtxReset(dev) => context::device_primary_ctx_reset_v2(dev);
    cuCtxCreate_v2(pctx, flags, dev) => context::create(pctx, flags, dev, &[]);
    cuCtxCreate(pctx, flags, dev) => context::create(pctx, flags, dev, &[]);
    cuCtxCreate_v3(pctx, params, n, flags, dev) => context::create_v3(pctx, params, n, flags, dev);
    cuCtxCreate_v4(pctx, params, flags, dev) => context::create_v4(pctx, params, flags, dev);
    cuCtxDestroy_v2(ctx) => context::destroy(ctx);
    cuCtxDestroy(ctx) => context::destroy(ctx);
    cuCtxPushCurrent_v2(ctx) => context::push(ctx);
    cuCtxPushCurrent(ctx) => context::push(ctx);
    cuCtxPopCurrent_v2(pctx) => context::pop(pctx);
    cuCtxPopCurrent(pctx) => context::pop(pctx);
    cuCtxSetCurrent(ctx) => context::set_current(ctx);
    cuCtxGetCurrent(pctx) => context::get_current(pctx);
    cuCtxGetDevice(dev) => context::get_device(dev);
    cuCtxGetDevice_v2(dev, ctx) => context::get_device_of(dev, ctx);
    cuCtxGetId(ctx, id) => context::get_id(ctx, id);

    cuMemAlloc_v2(dptr, size) => memory::alloc(dptr, size);
    cuMemFree_v2(dptr) => memory::free(dptr);
    cuMemcpyHtoD_v2(dst, src, n) => memory::htod(dst, src, n, memory::Sync::Blocking);
    cuMemcpyDtoH_v2(dst, src, n) => memory::dtoh(dst, src, n, memory::Sync::Blocking);
    cuMemcpyDtoD_v2(dst, src, n) => memory::dtod(dst, src, n, memory::Sync::Blocking);
    cuMemcpyHtoD_v2_ptds(dst, src, n) => memory::htod(dst, src, n, memory::Sync::PerThread);
    cuMemcpyDtoH_v2_ptds(dst, src, n) => memory::dtoh(dst, src, n, memory::Sync::PerThread);
    cuMemcpyDtoD_v2_ptds(dst, src, n) => memory::dtod(dst, src, n, memory::Sync::PerThread);
    cuMemcpyHtoDAsync_v2(dst, src, n, s) => memory::htod(dst, src, n, memory::Sync::Stream(stream::id(s)));
    cuMemcpyDtoHAsync_v2(dst, src, n, s) => memory::dtoh(dst, src, n, memory::Sync::Stream(stream::id(s)));
    cuMemcpyDtoDAsync_v2(dst, src, n, s) => memory::dtod(dst, src, n, memory::Sync::Stream(stream::id(s)));
    cuMemcpyHtoDAsync_v2_ptsz(dst, src, n, s) => memory::htod(dst, src, n, memory::Sync::Stream(stream::id_ptsz(s)));
    cuMemcpyDtoHAsync_v2_ptsz(dst, src, n, s) => memory::dtoh(dst, src, n, memory::Sync::Stream(stream::id_ptsz(s)));
    cuMemcpyDtoDAsync_v2_ptsz(dst, src, n, s) => memory::dtod(dst, src, n, memory::Sync::Stream(stream::id_ptsz(s)));
    cuMemcpy(dst, src, n) => memory::unified(dst, src, n, memory::Sync::Blocking);
    cuMemcpy_ptds(dst, src, n) => memory::unified(dst, src, n, memory::Sync::PerThread);
    cuMemcpyAsync(dst, src, n, s) => memory::unified(dst, src, n, memory::Sync::Stream(stream::id(s)));
    cuMemcpyAsync_ptsz(dst, src, n, s) => memory::unified(dst, src, n, memory::Sync::Stream(stream::id_ptsz(s)));
    cuMemcpyHtoD(dst, src, n) => memory::htod(u64::from(dst), src, n as usize, memory::Sync::Blocking);
    cuMemcpyDtoH(dst, src, n) => memory::dtoh(dst, u64::from(src), n as usize, memory::Sync::Blocking);
    cuMemcpyDtoD(dst, src, n) => memory::dtod(u64::from(dst), u64::from(src), n as usize, memory::Sync::Blocking);
    cuMemcpyHtoDAsync(dst, src, n, s) => memory::htod(u64::from(dst), src, n as usize, memory::Sync::Stream(stream::id(s)));
    cuMemcpyDtoHAsync(dst, src, n, s) => memory::dtoh(dst, u64::from(src), n as usize, memory::Sync::Stream(stream::id(s)));
    cuMemcpyDtoDAsync(dst, src, n, s) => memory::dtod(u64::from(dst), u64::from(src), n as usize, memory::Sync::Stream(stream::id(s)));
    cuMemsetD8(dst, v, n) => memory::memset(u64::from(dst), u32::from(v), 1, n as usize, memory::Sync::Blocking);
    cuMemsetD16(dst, v, n) => memory::memset(u64::from(dst), u32::from(v), 2, n as usize, memory::Sync::Blocking);
    cuMemsetD32(dst, v, n) => memory::memset(u64::from(dst), v, 4, n as usize, memory::Sync::Blocking);
    cuMemsetD8_v2(dst, v, n) => memory::memset(dst, u32::from(v), 1, n, memory::Sync::Blocking);
    cuMemsetD16_v2(dst, v, n) => memory::memset(dst, u32::from(v), 2, n, memory::Sync::Blocking);
    cuMemsetD32_v2(dst, v, n) => memory::memset(dst, v, 4, n, memory::Sync::Blocking);
    cuMemsetD8_v2_ptds(dst, v, n) => memory::memset(dst, u32::from(v), 1, n, memory::Sync::PerThread);
    cuMemsetD16_v2_ptds(dst, v, n) => memory::memset(dst, u32::from(v), 2, n, memory::Sync::PerThread);
    cuMemsetD32_v2_ptds(dst, v, n) => memory::memset(dst, v, 4, n, memory::Sync::PerThread);
    cuMemsetD8Async(dst, v, n, s) => memory::memset(dst, u32::from(v), 1, n, memory::Sync::Stream(stream::id(s)));
    cuMemsetD16Async(dst, v, n, s) => memory::memset(dst, u32::from(v), 2, n, memory::Sync::Stream(stream::id(s)));
    cuMemsetD32Async(dst, v, n, s) => memory::memset(dst, v, 4, n, memory::Sync::Stream(stream::id(s)));
    cuMemsetD8Async_ptsz(dst, v, n, s) => memory::memset(dst, u32::from(v), 1, n, memory::Sync::Stream(stream::id_ptsz(s)));
    cuMemsetD16Async_ptsz(dst, v, n, s) => memory::memset(dst, u32::from(v), 2, n, memory::Sync::Stream(stream::id_ptsz(s)));
    cuMemsetD32Async_ptsz(dst, v, n, s) => memory::memset(dst, v, 4, n, memory::Sync::Stream(stream::id_ptsz(s)));

    cuStreamCreate(ph, flags) => stream::create(ph, flags, 0);
    cuStreamCreateWithPriority(ph, flags, prio) => stream::create(ph, flags, prio);
    cuStreamDestroy_v2(s) => stream::destroy(s);
    cuStreamDestroy(s) => stream::destroy(s);
    cuEventCreate(ph, flags) => event::create(ph, flags);
    cuLaunchHostFunc(s, f, d) => callback::launch_host_func(stream::id(s), f, d);
    cuLaunchHostFunc_ptsz(s, f, d) => callback::launch_host_func(stream::id_ptsz(s), f, d);
    cuStreamAddCallback(s, f, d, flags) => callback::add_callback(stream::id(s), s, f, d, flags);
    cuStreamAddCallback_ptsz(s, f, d, flags) => callback::add_callback(stream::id_ptsz(s), s, f, d, flags);
    cuEventDestroy_v2(e) => event::destroy(e);
    cuEventDestroy(e) => event::destroy(e);

    cuModuleLoadData(m, image) => module::load_data(m, image, 0, std::ptr::null_mut(), std::ptr::null_mut());
    cuModuleLoadDataEx(m, image, n, opts, vals) => module::load_data(m, image, n, opts, vals);
    cuModuleUnload(m) => module::unload(m);
    cuModuleGetFunction(f, m, name) => module::get_function(f, m, name);
    cuModuleGetGlobal_v2(dptr, bytes, m, name) => module::get_global(dptr, bytes, module::Owner::Module(module::module_id(m)), name);
    cuModuleLoad(m, name) => module::module_load(m, name);
    cuModuleLoadFatBinary(m, fat) => module::module_load_fat_binary(m, fat);
    cuCheckpointProcessGetState(pid, state) => checkpoint::get_state(pid, state);
    cuCheckpointProcessGetRestoreThreadId(pid, tid) => checkpoint::get_restore_thread_id(pid, tid);
    cuCheckpointProcessLock(pid, args) => checkpoint::lock(pid, args);
    cuCheckpointProcessCheckpoint(pid, args) => checkpoint::checkpoint(pid, args);
    cuCheckpointProcessRestore(pid, args) => checkpoint::restore(pid, args);
    cuCheckpointProcessUnlock(pid, args) => checkpoint::unlock(pid, args);
    cuCoredumpGetAttribute(a, v, size) => coredump::get(a, v, size, false);
    cuCoredumpGetAttributeGlobal(a, v, size) => coredump::get(a, v, size, true);
    cuCoredumpSetAttribute(a, v, size) => coredump::set(a, v, size, false);
    cuCoredumpSetAttributeGlobal(a, v, size) => coredump::set(a, v, size, true);
    cuLogsDumpToMemory(it, buf, size, flags) => logs::dump_to_memory(it, buf, size, flags);
    cuLogsDumpToFile(it, path, flags) => logs::dump_to_file(it, path, flags);
    cuLogsRegisterCallback(f, data, out) => notify::logs_register_callback(f, data, out);
    cuLogsUnregisterCallback(h) => notify::logs_unregister_callback(h);
    cuDeviceRegisterAsyncNotification(dev, f, data, out) => notify::device_register_async_notification(dev, f, data, out);
    cuDeviceUnregisterAsyncNotification(dev, h) => notify::device_unregister_async_notification(dev, h);
    cuLinkCreate(n, opts, vals, st) => link::create(n, opts, vals, st);
    cuLinkCreate_v2(n, opts, vals, st) => link::create(n, opts, vals, st);
    cuLinkAddData(st, ty, data, size, name, n, opts, vals) => link::add_data(st, ty, data, size, name, n, opts, vals);
    cuLinkAddData_v2(st, ty, data, size, name, n, opts, vals) => link::add_data(st, ty, data, size, name, n, opts, vals);
    cuLinkAddFile(st, ty, path, n, opts, vals) => link::add_file(st, ty, path, n, opts, vals);
    cuLinkAddFile_v2(st, ty, path, n, opts, vals) => link::add_file(st, ty, path, n, opts, vals);
    cuLinkComplete(st, cubin, size) => link::complete(st, cubin, size);
    cuLinkDestroy(st) => link::destroy(st);
    cuLibraryLoadFromFile(l, name, jk, jv, nj, lk, lv, nl) => library::library_load_from_file(l, name, jk, jv, nj, lk, lv, nl);
    cuMemcpy3D_v2(p) => copy::memcpy_3d(p, None);
    cuMemcpy3D_v2_ptds(p) => copy::memcpy_3d(p, Some(2));
    cuMemcpy3DAsync_v2(p, s) => copy::memcpy_3d(p, Some(stream::id(s)));
    cuMemcpy3DAsync_v2_ptsz(p, s) => copy::memcpy_3d(p, Some(stream::id_ptsz(s)));

    cuLibraryLoadData(l, code, jk, jv, nj, lk, lv, nl) => library::load_data(l, code, jk, jv, nj, lk, lv, nl);
    cuLibraryUnload(l) => library::unload(l);
    cuLibraryGetKernel(k, l, name) => library::get_kernel(k, l, name);
    cuLibraryGetModule(m, l) => library::get_module(m, l);
    cuLibraryGetGlobal(dptr, bytes, l, name) => library::get_global(dptr, bytes, l, name);
    cuLibraryGetUnifiedFunction(f, l, name) => library::get_unified_function(f, l, name);
    cuKernelGetFunction(f, k) => library::kernel_get_function(f, k);
    cuKernelGetParamInfo(k, i, off, size) => library::kernel_param_info(k, i, off, size);
    cuOccupancyMaxActiveClusters(n, f, config) => launch::occupancy_clusters(n, f, config);
    cuOccupancyMaxPotentialClusterSize(n, f, config) => launch::occupancy_cluster_size(n, f, config);
    cuParamSetv(f, offset, ptr, n) => launch::param_setv(f, offset, ptr, n);
    cuOccupancyMaxPotentialBlockSize(grid, block, f, smem_of, smem, limit) =>
        occupancy::max_potential_block_size(grid, block, f, smem_of, smem, limit, 0);
    cuOccupancyMaxPotentialBlockSizeWithFlags(grid, block, f, smem_of, smem, limit, flags) =>
        occupancy::max_potential_block_size(grid, block, f, smem_of, smem, limit, flags);
    cuLaunchKernelEx(config, f, params, extra) => launch::launch_ex(config, f, params, extra, stream::id);
    cuLaunchKernelEx_ptsz(config, f, params, extra) => launch::launch_ex(config, f, params, extra, stream::id_ptsz);
    cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params) =>
        launch::launch_cooperative(f, [gx, gy, gz, bx, by, bz], shmem, s, params, stream::id);
    cuLaunchCooperativeKernel_ptsz(f, gx, gy, gz, bx, by, bz, shmem, s, params) =>
        launch::launch_cooperative(f, [gx, gy, gz, bx, by, bz], shmem, s, params, stream::id_ptsz);
    cuLaunchCooperativeKernelMultiDevice(list, n, flags) => launch::launch_multi_device(list, n, flags);

    cuMemAllocAsync(dptr, size, s) => memory::alloc_async(dptr, size, stream::id(s));
    cuMemAllocAsync_ptsz(dptr, size, s) => memory::alloc_async(dptr, size, stream::id_ptsz(s));
    cuMemFreeAsync(dptr, s) => memory::free_async(dptr, stream::id(s));
    cuMemFreeAsync_ptsz(dptr, s) => memory::free_async(dptr, stream::id_ptsz(s));
    cuMemPoolDestroy(p) => pool::destroy(pool::id(p));
    cuMemPoolGetAttribute(p, attr, v) => pool::get_attribute(pool::id(p), attr, v);
    cuMemPoolSetAttribute(p, attr, v) => pool::set_attribute(pool::id(p), attr, v);
    cuMemAllocFromPoolAsync(dptr, size, p, s) => pool::alloc_async(dptr, size, pool::id(p), stream::id(s));
    cuMemAllocFromPoolAsync_ptsz(dptr, size, p, s) => pool::alloc_async(dptr, size, pool::id(p), stream::id_ptsz(s));
    cuMemcpy2D_v2(p) => copy::memcpy_2d(p, None);
    cuMemcpy2D(p) => copy::memcpy_2d_v1(p, None);
    cuMemcpy2DUnaligned(p) => copy::memcpy_2d_v1(p, None);
    cuMemcpy2DAsync(p, s) => copy::memcpy_2d_v1(p, Some(stream::id(s)));
    cuMemcpy3D(p) => copy::memcpy_3d_v1(p, None);
    cuMemcpy3DAsync(p, s) => copy::memcpy_3d_v1(p, Some(stream::id(s)));
    cuMemcpy2DUnaligned_v2(p) => copy::memcpy_2d(p, None);
    cuMemcpy2D_v2_ptds(p) => copy::memcpy_2d(p, Some(2));
    cuMemcpy2DUnaligned_v2_ptds(p) => copy::memcpy_2d(p, Some(2));
    cuMemcpy2DAsync_v2(p, s) => copy::memcpy_2d(p, Some(stream::id(s)));
    cuMemcpy2DAsync_v2_ptsz(p, s) => copy::memcpy_2d(p, Some(stream::id_ptsz(s)));
    cuPointerGetAttribute(data, attr, ptr) => pointer::get_attribute(data, attr, ptr);
    cuPointerGetAttributes(n, attrs, data, ptr) => pointer::get_attributes(n, attrs, data, ptr);
    cuMemHostAlloc(pp, len, flags) => host::alloc(pp, len, flags);
    cuMemAllocHost_v2(pp, len) => host::alloc(pp, len, 0);
    cuMemFreeHost(p) => host::free(p);
    cuMemHostGetDevicePointer_v2(pdptr, p, flags) => host::device_pointer(pdptr, p, flags);
    cuMemHostGetFlags(pflags, p) => host::get_flags(pflags, p);
    cuMemAllocHost(_pp, _len) => host::first_form();
    cuMemAlloc(_dptr, _len) => host::first_form();
    cuMemFree(_dptr) => host::first_form();
    cuMemAllocPitch(_dptr, _pitch, _width, _height, _element) => host::first_form();
    cuMemGetAddressRange(_base, _size, _dptr) => host::first_form();
    cuMemHostGetDevicePointer(_dptr, _p, _flags) => host::first_form();
    cuMemAllocPitch_v2(dptr, pitch, w, h, e) => memory::alloc_pitch(dptr, pitch, w, h, e);
    cuPointerSetAttribute(value, attr, ptr) => pointer::set_attribute(value, attr, ptr);
    cuMemHostRegister(p, len, flags) => host_register::register(p, len, flags);
    cuMemHostRegister_v2(p, len, flags) => host_register::register(p, len, flags);
    cuMemHostUnregister(p) => host_register::unregister(p);
    cuMemAllocManaged(dptr, len, flags) => managed::alloc(dptr, len, flags);
    cuMemPrefetchAsync(p, n, dev, s) => managed::prefetch(p, n, dev, stream::id(s));
    cuMemPrefetchAsync_ptsz(p, n, dev, s) => managed::prefetch(p, n, dev, stream::id_ptsz(s));
    cuMemPrefetchAsync_v2(p, n, loc, flags, s) => managed::prefetch_v2(p, n, loc, flags, stream::id(s));
    cuMemPrefetchAsync_v2_ptsz(p, n, loc, flags, s) =>
        managed::prefetch_v2(p, n, loc, flags, stream::id_ptsz(s));
    cuMemPrefetchBatchAsync(d, z, n, locs, idx, nl, flags, s) =>
        managed_range::prefetch_batch(d, z, n, locs, idx, nl, flags, stream::id(s));
    cuMemPrefetchBatchAsync_ptsz(d, z, n, locs, idx, nl, flags, s) =>
        managed_range::prefetch_batch(d, z, n, locs, idx, nl, flags, stream::id_ptsz(s));
    cuMemDiscardBatchAsync(d, z, n, flags, s) => managed_range::discard_batch(d, z, n, flags, stream::id(s));
    cuMemDiscardBatchAsync_ptsz(d, z, n, flags, s) =>
        managed_range::discard_batch(d, z, n, flags, stream::id_ptsz(s));
    cuMemDiscardAndPrefetchBatchAsync(d, z, n, locs, idx, nl, flags, s) =>
        managed_range::discard_and_prefetch_batch(d, z, n, locs, idx, nl, flags, stream::id(s));
    cuMemDiscardAndPrefetchBatchAsync_ptsz(d, z, n, locs, idx, nl, flags, s) =>
        managed_range::discard_and_prefetch_batch(d, z, n, locs, idx, nl, flags, stream::id_ptsz(s));
    cuMemAdvise(p, n, advice, dev) => managed::advise(p, n, advice, dev);
    cuMemAdvise_v2(p, n, advice, loc) => managed::advise_v2(p, n, advice, loc);
    cuMemRangeGetAttribute(data, size, attr, p, n) => managed_range::get_attribute(data, size, attr, p, n);
    cuMemRangeGetAttributes(data, sizes, attrs, na, p, n) =>
        managed_range::get_attributes(data, sizes, attrs, na, p, n);
    cuThreadExchangeStreamCaptureMode(mode) => graph::exchange_capture_mode(mode);
    cuStreamGetCaptureInfo_v2(s, st, id, g, deps, n) =>
        graph::capture_info(s, false, false, [st.cast(), id.cast(), g.cast(), deps.cast(), std::ptr::null_mut(), n.cast()]);
    cuStreamGetCaptureInfo_v2_ptsz(s, st, id, g, deps, n) =>
        graph::capture_info(s, true, false, [st.cast(), id.cast(), g.cast(), deps.cast(), std::ptr::null_mut(), n.cast()]);
    cuStreamGetCaptureInfo_v3(s, st, id, g, deps, e, n) =>
        graph::capture_info(s, false, true, [st.cast(), id.cast(), g.cast(), deps.cast(), e.cast(), n.cast()]);
    cuStreamGetCaptureInfo_v3_ptsz(s, st, id, g, deps, e, n) =>
        graph::capture_info(s, true, true, [st.cast(), id.cast(), g.cast(), deps.cast(), e.cast(), n.cast()]);
    cuStreamUpdateCaptureDependencies(s, deps, n, flags) =>
        graph::update_dependencies(s, false, deps, None, n, flags);
    cuStreamUpdateCaptureDependencies_ptsz(s, deps, n, flags) =>
        graph::update_dependencies(s, true, deps, None, n, flags);
    cuStreamUpdateCaptureDependencies_v2(s, deps, e, n, flags) =>
        graph::update_dependencies(s, false, deps, Some(e), n, flags);
    cuStreamUpdateCaptureDependencies_v2_ptsz(s, deps, e, n, flags) =>
        graph::update_dependencies(s, true, deps, Some(e), n, flags);
    cuGraphGetNodes(g, nodes, n) =>
        graph::query(0, g as usize as u64, nodes, std::ptr::null_mut(), std::ptr::null_mut(), false, n);
    cuGraphGetRootNodes(g, nodes, n) =>
        graph::query(1, g as usize as u64, nodes, std::ptr::null_mut(), std::ptr::null_mut(), false, n);
    cuGraphNodeGetDependencies(node, deps, n) =>
        graph::query(2, node as usize as u64, deps, std::ptr::null_mut(), std::ptr::null_mut(), false, n);
    cuGraphNodeGetDependentNodes(node, deps, n) =>
        graph::query(3, node as usize as u64, deps, std::ptr::null_mut(), std::ptr::null_mut(), false, n);
    cuGraphGetEdges(g, from, to, n) =>
        graph::query(4, g as usize as u64, from, to, std::ptr::null_mut(), false, n);
    cuGraphNodeGetDependencies_v2(node, deps, e, n) =>
        graph::query(2, node as usize as u64, deps, std::ptr::null_mut(), e, true, n);
    cuGraphNodeGetDependentNodes_v2(node, deps, e, n) =>
        graph::query(3, node as usize as u64, deps, std::ptr::null_mut(), e, true, n);
    cuGraphGetEdges_v2(g, from, to, e, n) => graph::query(4, g as usize as u64, from, to, e, true, n);
    cuGraphAddDependencies_v2(g, from, to, e, n) => graph::edges_v2(true, g, from, to, e, n);
    cuGraphRemoveDependencies_v2(g, from, to, e, n) => graph::edges_v2(false, g, from, to, e, n);
    cuGraphAddKernelNode_v2(ph, g, deps, n, p) =>
        graph::kernel_node(ph, g, std::ptr::null_mut(), std::ptr::null_mut(), deps, n, p);
    cuGraphKernelNodeSetParams_v2(node, p) =>
        graph::kernel_node(std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), node,
            std::ptr::null(), 0, p);
    cuGraphExecKernelNodeSetParams_v2(e, node, p) => graph::kernel_node(std::ptr::null_mut(),
        std::ptr::null_mut(), e, node, std::ptr::null(), 0, p);
    cuGraphAddKernelNode(ph, g, deps, n, p) =>
        graph::kernel_node_v1(ph, g, std::ptr::null_mut(), std::ptr::null_mut(), deps, n, p);
    cuGraphKernelNodeSetParams(node, p) => graph::kernel_node_v1(std::ptr::null_mut(),
        std::ptr::null_mut(), std::ptr::null_mut(), node, std::ptr::null(), 0, p);
    cuGraphExecKernelNodeSetParams(e, node, p) => graph::kernel_node_v1(std::ptr::null_mut(),
        std::ptr::null_mut(), e, node, std::ptr::null(), 0, p);
    cuGraphKernelNodeGetParams(node, p) => graph::kernel_node_params_v1(node, p);
    cuGraphExecUpdate_v2(e, g, info) => graph::exec_update(e, g, info);
    cuGraphExecUpdate(e, g, node, result) => graph::exec_update_v1(e, g, node, result);
    cuGraphKernelNodeGetParams_v2(node, p) => graph::kernel_node_params(node, p);
    cuStreamBatchMemOp(s, n, p, flags) => memop::batch_mem_op(stream::id(s), n, p, flags);
    cuStreamBatchMemOp_ptsz(s, n, p, flags) => memop::batch_mem_op(stream::id_ptsz(s), n, p, flags);
    cuStreamBatchMemOp_v2(s, n, p, flags) => memop::batch_mem_op(stream::id(s), n, p, flags);
    cuStreamBatchMemOp_v2_ptsz(s, n, p, flags) =>
        memop::batch_mem_op(stream::id_ptsz(s), n, p, flags);
    cuMemBatchDecompressAsync(p, n, flags, idx, s) =>
        decompress::batch_decompress(p, n, flags, idx, stream::id(s));
    cuMemBatchDecompressAsync_ptsz(p, n, flags, idx, s) =>
        decompress::batch_decompress(p, n, flags, idx, stream::id_ptsz(s));
    cuGraphAddMemsetNode(ph, g, deps, n, p, ctx) => graph::memset_node(0, ph, g, std::ptr::null_mut(),
        std::ptr::null_mut(), deps, n, p, ctx);
    cuGraphMemsetNodeSetParams(node, p) => graph::memset_node(1, std::ptr::null_mut(),
        std::ptr::null_mut(), std::ptr::null_mut(), node, std::ptr::null(), 0, p,
        std::ptr::null_mut());
    cuGraphExecMemsetNodeSetParams(e, node, p, ctx) => graph::memset_node(2, std::ptr::null_mut(),
        std::ptr::null_mut(), e, node, std::ptr::null(), 0, p, ctx);
    cuGraphMemsetNodeGetParams(node, p) => graph::memset_node_params(node, p);
    cuGraphAddHostNode(ph, g, deps, n, p) => graph::host_node(
        graph::HostNodeCall::Add, ph, g, std::ptr::null_mut(), std::ptr::null_mut(), deps, n, p);
    cuGraphHostNodeSetParams(node, p) => graph::host_node(graph::HostNodeCall::Set,
        std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), node, std::ptr::null(), 0, p);
    cuGraphExecHostNodeSetParams(e, node, p) => graph::host_node(graph::HostNodeCall::ExecSet,
        std::ptr::null_mut(), std::ptr::null_mut(), e, node, std::ptr::null(), 0, p);
    cuGraphHostNodeGetParams(node, p) => graph::host_node_params(node, p);
    cuUserObjectCreate(out, ptr, destroy, count, flags) =>
        graph::user_object_create(out, ptr, destroy, count, flags);
    cuGraphAddMemcpyNode(ph, g, deps, n, p, ctx) => graph::memcpy_node(graph::MemcpyNodeCall::Add,
        ph, g, std::ptr::null_mut(), std::ptr::null_mut(), deps, n, p, ctx);
    cuGraphMemcpyNodeSetParams(node, p) => graph::memcpy_node(graph::MemcpyNodeCall::Set,
        std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), node, std::ptr::null(), 0,
        p, std::ptr::null_mut());
    cuGraphExecMemcpyNodeSetParams(e, node, p, ctx) => graph::memcpy_node(
        graph::MemcpyNodeCall::ExecSet, std::ptr::null_mut(), std::ptr::null_mut(), e, node,
        std::ptr::null(), 0, p, ctx);
    cuGraphMemcpyNodeGetParams(node, p) => graph::memcpy_node_params(node, p);
    cuGraphAddMemAllocNode(ph, g, deps, n, p) => graph::mem_alloc_node(ph, g, deps, n, p);
    cuGraphMemAllocNodeGetParams(node, p) => graph::mem_alloc_node_params(node, p);
    cuGraphAddBatchMemOpNode(ph, g, deps, n, p) => graph::batch_mem_op_node(0, ph, g,
        std::ptr::null_mut(), std::ptr::null_mut(), deps, n, p);
    cuGraphBatchMemOpNodeSetParams(node, p) => graph::batch_mem_op_node(1, std::ptr::null_mut(),
        std::ptr::null_mut(), std::ptr::null_mut(), node, std::ptr::null(), 0, p);
    cuGraphExecBatchMemOpNodeSetParams(e, node, p) => graph::batch_mem_op_node(2,
        std::ptr::null_mut(), std::ptr::null_mut(), e, node, std::ptr::null(), 0, p);
    cuGraphBatchMemOpNodeGetParams(node, p) => graph::batch_mem_op_node_params(node, p);
    cuGraphAddExternalSemaphoresSignalNode(ph, g, deps, n, p) => graph::ext_sem_node(
        graph::ExtSemNodeCall::Add, false, ph, g, std::ptr::null_mut(), std::ptr::null_mut(), deps,
        n, p);
    cuGraphAddExternalSemaphoresWaitNode(ph, g, deps, n, p) => graph::ext_sem_node(
        graph::ExtSemNodeCall::Add, true, ph, g, std::ptr::null_mut(), std::ptr::null_mut(), deps,
        n, p.cast());
    cuGraphExternalSemaphoresSignalNodeSetParams(node, p) => graph::ext_sem_node(
        graph::ExtSemNodeCall::Set, false, std::ptr::null_mut(), std::ptr::null_mut(),
        std::ptr::null_mut(), node, std::ptr::null(), 0, p);
    cuGraphExternalSemaphoresWaitNodeSetParams(node, p) => graph::ext_sem_node(
        graph::ExtSemNodeCall::Set, true, std::ptr::null_mut(), std::ptr::null_mut(),
        std::ptr::null_mut(), node, std::ptr::null(), 0, p.cast());
    cuGraphExecExternalSemaphoresSignalNodeSetParams(e, node, p) => graph::ext_sem_node(
        graph::ExtSemNodeCall::ExecSet, false, std::ptr::null_mut(), std::ptr::null_mut(), e, node,
        std::ptr::null(), 0, p);
    cuGraphExecExternalSemaphoresWaitNodeSetParams(e, node, p) => graph::ext_sem_node(
        graph::ExtSemNodeCall::ExecSet, true, std::ptr::null_mut(), std::ptr::null_mut(), e, node,
        std::ptr::null(), 0, p.cast());
    cuGraphExternalSemaphoresSignalNodeGetParams(node, p) =>
        graph::ext_sem_node_params(node, false, p);
    cuGraphExternalSemaphoresWaitNodeGetParams(node, p) =>
        graph::ext_sem_node_params(node, true, p.cast());
    cuGraphAddNode(ph, g, deps, n, p) => graph::node_params(
        graph::NodeCall::Add { ph, graph: g, deps, edges: None, n }, p);
    cuGraphAddNode_v2(ph, g, deps, e, n, p) => graph::node_params(
        graph::NodeCall::Add { ph, graph: g, deps, edges: Some(e), n }, p);
    cuGraphNodeSetParams(node, p) => graph::node_params(graph::NodeCall::Set { node }, p);
    cuGraphExecNodeSetParams(e, node, p) =>
        graph::node_params(graph::NodeCall::ExecSet { exec: e, node }, p);
    cuDeviceGetGraphMemAttribute(dev, attr, value) =>
        graph::graph_mem_attribute(dev, attr, value, false);
    cuDeviceSetGraphMemAttribute(dev, attr, value) =>
        graph::graph_mem_attribute(dev, attr, value, true);
    cuGraphDebugDotPrint(g, path, flags) => graph::debug_dot_print(g, path, flags);
    cuGraphInstantiateWithParams(ph, g, p) => graph::instantiate_with_params(ph, g, p, false);
    cuGraphInstantiateWithParams_ptsz(ph, g, p) => graph::instantiate_with_params(ph, g, p, true);
    cuStreamBeginCaptureToGraph(s, g, deps, e, n, mode) =>
        graph::begin_capture_to_graph(s, false, g, deps, e, n, mode);
    cuStreamBeginCaptureToGraph_ptsz(s, g, deps, e, n, mode) =>
        graph::begin_capture_to_graph(s, true, g, deps, e, n, mode);
    cuFuncGetParamInfo(f, i, off, size) => module::param_info(f, i, off, size);
    cuFuncGetName(name, f) => module::function_name(name, f as usize as u64, false);
    cuKernelGetName(name, k) => module::function_name(name, k as usize as u64, true);
    cuModuleEnumerateFunctions(fns, n, m) => module::enumerate(fns.cast(), n, module::module_id(m), false);
    cuLibraryEnumerateKernels(ks, n, l) => module::enumerate(ks.cast(), n, l as usize as u64, true);
    cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra) =>
        launch::launch(f, [gx, gy, gz, bx, by, bz], shmem, stream::id(s), params, extra);
    cuLaunchKernel_ptsz(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra) =>
        launch::launch(f, [gx, gy, gz, bx, by, bz], shmem, stream::id_ptsz(s), params, extra);

    cuMemAddressReserve(ptr, size, align, addr, flags) => vmm::address_reserve(ptr, size, align, addr, flags);
    cuMemAddressFree(ptr, size) => vmm::address_free(ptr, size);
    cuMemCreate(handle, size, prop, flags) => vmm::create(handle, size, prop, flags);
    cuMemRelease(handle) => vmm::release(handle);
    cuMemMap(ptr, size, offset, handle, flags) => vmm::map(ptr, size, offset, handle, flags);
    cuMemUnmap(ptr, size) => vmm::unmap(ptr, size);
    cuMemSetAccess(ptr, size, desc, count) => vmm::set_access(ptr, size, desc, count);
    cuMemRetainAllocationHandle(handle, addr) => vmm::retain_allocation_handle(handle, addr);
    cuMemGetAllocationPropertiesFromHandle(prop, handle) => vmm::allocation_properties(prop, handle);
    cuMemMapArrayAsync(infos, n, s) => vmm::map_array_async(infos, n, s, false);
    cuMemMapArrayAsync_ptsz(infos, n, s) => vmm::map_array_async(infos, n, s, true);
    cuMulticastCreate(handle, prop) => multicast::create(handle, prop);
    cuMulticastAddDevice(handle, dev) => multicast::add_device(handle, dev);
    cuMulticastBindMem(handle, mc_off, mem, mem_off, size, flags) => multicast::bind_mem(handle, mc_off, mem, mem_off, size, flags);
    cuMulticastBindAddr(handle, mc_off, ptr, size, flags) => multicast::bind_addr(handle, mc_off, ptr, size, flags);
    cuMulticastUnbind(handle, dev, mc_off, size) => multicast::unbind(handle, dev, mc_off, size);
    cuGreenCtxDestroy(g) => green::green_ctx_destroy(g);
    cuMemcpyBatchAsync(d, s, n, count, attrs, idxs, num, fail, st) => batch::memcpy_batch(d, s, n, count, attrs, idxs, num, Some(fail), batch::stream_of(st, false));
    cuMemcpyBatchAsync_ptsz(d, s, n, count, attrs, idxs, num, fail, st) => batch::memcpy_batch(d, s, n, count, attrs, idxs, num, Some(fail), batch::stream_of(st, true));
    cuMemcpyBatchAsync_v2(d, s, n, count, attrs, idxs, num, st) => batch::memcpy_batch(d, s, n, count, attrs, idxs, num, None, batch::stream_of(st, false));
    cuMemcpyBatchAsync_v2_ptsz(d, s, n, count, attrs, idxs, num, st) => batch::memcpy_batch(d, s, n, count, attrs, idxs, num, None, batch::stream_of(st, true));
    cuMemcpy3DBatchAsync(n, ops, fail, flags, st) => batch3d::memcpy_3d_batch(n, ops, Some(fail), flags, st, false);
    cuMemcpy3DBatchAsync_ptsz(n, ops, fail, flags, st) => batch3d::memcpy_3d_batch(n, ops, Some(fail), flags, st, true);
    cuMemcpy3DBatchAsync_v2(n, ops, flags, st) => batch3d::memcpy_3d_batch(n, ops, None, flags, st, false);
    cuMemcpy3DBatchAsync_v2_ptsz(n, ops, flags, st) => batch3d::memcpy_3d_batch(n, ops, None, flags, st, true);
    cuMemcpy3DPeer(p) => peer::memcpy_3d_peer(p, None);
    cuMemcpy3DPeer_ptds(p) => peer::memcpy_3d_peer(p, Some(2));
    cuMemcpy3DPeerAsync(p, s) => peer::memcpy_3d_peer(p, Some(stream::id(s)));
    cuMemcpy3DPeerAsync_ptsz(p, s) => peer::memcpy_3d_peer(p, Some(stream::id_ptsz(s)));
    cuDevSmResourceSplitByCount(result, n, input, rem, flags, min) => green::dev_sm_resource_split_by_count(result, n, input, rem, flags, min);
    cuMemPoolExportToShareableHandle(out, pool, kind, flags) =>
        pool::export_to_shareable_handle(out, pool, kind, flags);
    cuMemPoolImportFromShareableHandle(pool, h, kind, flags) =>
        pool::import_from_shareable_handle(pool, h, kind, flags);
    cuMemPoolExportPointer(out, dptr) => pool::export_pointer(out, dptr);
    cuMemPoolImportPointer(dptr, pool, data) => pool::import_pointer(dptr, pool, data);
    cuMemExportToShareableHandle(sh, handle, kind, flags) => vmm::export_to_shareable_handle(sh, handle, kind, flags);
    cuMemImportFromShareableHandle(handle, os, kind) => vmm::import_from_shareable_handle(handle, os, kind);
    cuMemGetHandleForAddressRange(h, dptr, size, kind, flags) =>
        vmm::handle_for_address_range(h, dptr, size, kind, flags);
    cuImportExternalMemory(out, desc) => external::import(out, desc);
    cuExternalMemoryGetMappedBuffer(dptr, mem, desc) => external::mapped_buffer(dptr, mem, desc);
    cuDestroyExternalMemory(mem) => external::destroy(mem);
    cuImportExternalSemaphore(out, desc) => external::import_semaphore(out, desc);
    cuSignalExternalSemaphoresAsync(sems, params, n, s) =>
        external::semaphores(sems, params.cast(), n, stream::id(s), false);
    cuSignalExternalSemaphoresAsync_ptsz(sems, params, n, s) =>
        external::semaphores(sems, params.cast(), n, stream::id_ptsz(s), false);
    cuWaitExternalSemaphoresAsync(sems, params, n, s) =>
        external::semaphores(sems, params.cast(), n, stream::id(s), true);
    cuWaitExternalSemaphoresAsync_ptsz(sems, params, n, s) =>
        external::semaphores(sems, params.cast(), n, stream::id_ptsz(s), true);
    cuDestroyExternalSemaphore(sem) => external::destroy_semaphore(sem);
    cuIpcGetMemHandle(h, dptr) => ipc::get_mem_handle(h, dptr);
    cuIpcOpenMemHandle(dptr, h, flags) => ipc::open_mem_handle(dptr, h, flags);
    cuIpcOpenMemHandle_v2(dptr, h, flags) => ipc::open_mem_handle(dptr, h, flags);
    cuIpcCloseMemHandle(dptr) => ipc::close_mem_handle(dptr);
    cuIpcGetEventHandle(h, e) => ipc::get_event_handle(h, e);
    cuIpcOpenEventHandle(e, h) => ipc::open_event_handle(e, h);
    cuArrayDestroy(a) => array::destroy(a);
    cuMipmappedArrayDestroy(m) => array::destroy_mipmapped(m);
    cuMemcpyHtoA_v2(a, off, src, n) => array::htoa(a, off, src, n, None);
    cuMemcpyAtoH_v2(dst, a, off, n) => array::atoh(dst, a, off, n, None);
    cuMemcpyHtoAAsync_v2(a, off, src, n, s) => array::htoa(a, off, src, n, Some(stream::id(s)));
    cuMemcpyAtoHAsync_v2(dst, a, off, n, s) => array::atoh(dst, a, off, n, Some(stream::id(s)));
    cuMemcpyHtoA(a, off, src, n) => array::htoa_first_form(a, off, src, n, None);
    cuMemcpyAtoH(dst, a, off, n) => array::atoh_first_form(dst, a, off, n, None);
    cuMemcpyHtoAAsync(a, off, src, n, s) => array::htoa_first_form(a, off, src, n, Some(stream::id(s)));
    cuMemcpyAtoHAsync(dst, a, off, n, s) => array::atoh_first_form(dst, a, off, n, Some(stream::id(s)));
    cuMemcpyHtoA_v2_ptds(a, off, src, n) => array::htoa(a, off, src, n, Some(2));
    cuMemcpyAtoH_v2_ptds(dst, a, off, n) => array::atoh(dst, a, off, n, Some(2));
    cuMemcpyHtoAAsync_v2_ptsz(a, off, src, n, s) => array::htoa(a, off, src, n, Some(stream::id_ptsz(s)));
    cuMemcpyAtoHAsync_v2_ptsz(dst, a, off, n, s) => array::atoh(dst, a, off, n, Some(stream::id_ptsz(s)));
    cuTexObjectCreate(p, res, tex, view) => texture::create(p, res, tex, view);
    cuTexObjectDestroy(t) => texture::destroy(t, false);
    cuTexObjectGetResourceDesc(d, t) => texture::describe(d.cast(), t, false, texture::What::Resource);
    cuTexObjectGetTextureDesc(d, t) => texture::describe(d.cast(), t, false, texture::What::Texture);
    cuTexObjectGetResourceViewDesc(d, t) => texture::describe(d.cast(), t, false, texture::What::View);
    cuSurfObjectCreate(p, res) => texture::create_surface(p, res);
    cuSurfObjectDestroy(t) => texture::destroy(t, true);
    cuSurfObjectGetResourceDesc(d, t) => texture::describe(d.cast(), t, true, texture::What::Resource);
    cuTensorMapEncodeTiled(map, ty, rank, addr, dim, strides, box_dim, es, il, sw, l2, oob) =>
        tensormap::encode(map, tensormap::Common { data_type: ty, rank, address: addr, global_dim: dim,
            global_strides: strides, element_strides: es, interleave: il, swizzle: sw, l2_promotion: l2,
            oob_fill: oob }, tensormap::Form::Tiled { box_dim }, 0, 0);
    cuTensorMapEncodeIm2col(map, ty, rank, addr, dim, strides, lower, upper, cpp, ppc, es, il, sw, l2, oob) =>
        tensormap::encode(map, tensormap::Common { data_type: ty, rank, address: addr, global_dim: dim,
            global_strides: strides, element_strides: es, interleave: il, swizzle: sw, l2_promotion: l2,
            oob_fill: oob }, tensormap::Form::Im2col { lower, upper }, cpp, ppc);
    cuTensorMapEncodeIm2colWide(map, ty, rank, addr, dim, strides, lower, upper, cpp, ppc, es, il, mode, sw, l2, oob) =>
        tensormap::encode(map, tensormap::Common { data_type: ty, rank, address: addr, global_dim: dim,
            global_strides: strides, element_strides: es, interleave: il, swizzle: sw, l2_promotion: l2,
            oob_fill: oob }, tensormap::Form::Wide { lower, upper, mode }, cpp, ppc);
    cuTensorMapReplaceAddress(map, addr) => tensormap::replace_address(map, addr);
}
