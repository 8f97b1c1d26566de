//! The implemented entry points: one `implement!` line each, mapping the raw
//! export to a typed function in its area module.

mod context;
mod copy;
mod dark;
mod device;
mod errors;
mod files;
mod host;
mod host_local;
mod init;
mod integrity;
mod library;
mod memory;
mod module;
mod options;
mod pointer;
mod procaddr;
mod stream;

pub use errors::error_name;
pub(crate) use host::map_shared;

use vgpu_abi::types::*;
use vgpu_proto::Op;

/// `implement! { cuX(a, b) => area::x(a, b); }` gives `exports::cuX::Probe`
/// its inherent `call`, which takes precedence over the not-supported fallback.
macro_rules! implement {
    ($( $name:ident ( $($arg:ident),* ) => $body:expr; )*) => {
        $(
            impl crate::exports::$name::Probe {
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
    cuDevicePrimaryCtxRelease(dev) => context::primary_release(dev);
    cuDevicePrimaryCtxRelease_v2(dev) => context::primary_release(dev);
    cuDevicePrimaryCtxGetState(dev, flags, active) => context::primary_state(dev, flags, active);
    cuDevicePrimaryCtxSetFlags(dev, flags) => context::primary_set_flags(dev, flags);
    cuDevicePrimaryCtxSetFlags_v2(dev, flags) => context::primary_set_flags(dev, flags);
    cuDevicePrimaryCtxReset(dev) => context::primary_reset(dev);
    cuDevicePrimaryCtxReset_v2(dev) => context::primary_reset(dev);
    cuCtxCreate_v2(pctx, flags, dev) => context::create(pctx, flags, dev);
    cuCtxCreate_v4(pctx, params, flags, dev) => context::create_v4(pctx, params, flags, dev);
    cuCtxDestroy_v2(ctx) => context::destroy(ctx);
    cuCtxPushCurrent_v2(ctx) => context::push(ctx);
    cuCtxPopCurrent_v2(pctx) => context::pop(pctx);
    cuCtxSetCurrent(ctx) => context::set_current(ctx);
    cuCtxGetCurrent(pctx) => context::get_current(pctx);
    cuCtxGetDevice(dev) => context::get_device(dev);
    cuCtxGetDevice_v2(dev, ctx) => context::get_device_of(dev, ctx);
    cuCtxSynchronize() => context::synchronize();
    cuCtxSynchronize_v2(ctx) => context::synchronize_ctx(ctx);
    cuCtxGetFlags(flags) => context::get_flags(flags);
    cuCtxGetId(ctx, id) => context::get_id(ctx, id);
    cuCtxGetApiVersion(ctx, v) => context::api_version(ctx, v);
    cuCtxGetLimit(v, limit) => context::get_limit(v, limit);
    cuCtxSetLimit(limit, v) => context::set_limit(limit, v);
    cuCtxGetStreamPriorityRange(least, greatest) => context::priority_range(least, greatest);

    cuMemAlloc_v2(dptr, size) => memory::alloc(dptr, size);
    cuMemFree_v2(dptr) => memory::free(dptr);
    cuMemGetInfo_v2(free, total) => memory::info(free, total);
    cuMemGetAddressRange_v2(base, size, dptr) => memory::address_range(base, size, dptr);
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
    cuMemsetD8_v2(dst, v, n) => memory::memset(dst, u64::from(v), 1, n, memory::Sync::Blocking);
    cuMemsetD16_v2(dst, v, n) => memory::memset(dst, u64::from(v), 2, n, memory::Sync::Blocking);
    cuMemsetD32_v2(dst, v, n) => memory::memset(dst, u64::from(v), 4, n, memory::Sync::Blocking);
    cuMemsetD8_v2_ptds(dst, v, n) => memory::memset(dst, u64::from(v), 1, n, memory::Sync::PerThread);
    cuMemsetD16_v2_ptds(dst, v, n) => memory::memset(dst, u64::from(v), 2, n, memory::Sync::PerThread);
    cuMemsetD32_v2_ptds(dst, v, n) => memory::memset(dst, u64::from(v), 4, n, memory::Sync::PerThread);
    cuMemsetD8Async(dst, v, n, s) => memory::memset(dst, u64::from(v), 1, n, memory::Sync::Stream(stream::id(s)));
    cuMemsetD16Async(dst, v, n, s) => memory::memset(dst, u64::from(v), 2, n, memory::Sync::Stream(stream::id(s)));
    cuMemsetD32Async(dst, v, n, s) => memory::memset(dst, u64::from(v), 4, n, memory::Sync::Stream(stream::id(s)));
    cuMemsetD8Async_ptsz(dst, v, n, s) => memory::memset(dst, u64::from(v), 1, n, memory::Sync::Stream(stream::id_ptsz(s)));
    cuMemsetD16Async_ptsz(dst, v, n, s) => memory::memset(dst, u64::from(v), 2, n, memory::Sync::Stream(stream::id_ptsz(s)));
    cuMemsetD32Async_ptsz(dst, v, n, s) => memory::memset(dst, u64::from(v), 4, n, memory::Sync::Stream(stream::id_ptsz(s)));

    cuStreamCreate(ph, flags) => stream::create(ph, flags, 0);
    cuStreamCreateWithPriority(ph, flags, prio) => stream::create(ph, flags, prio);
    cuStreamDestroy_v2(s) => stream::destroy(s);
    cuStreamSynchronize(s) => stream::synchronize(stream::id(s));
    cuStreamSynchronize_ptsz(s) => stream::synchronize(stream::id_ptsz(s));
    cuStreamQuery(s) => stream::query(stream::id(s));
    cuStreamQuery_ptsz(s) => stream::query(stream::id_ptsz(s));
    cuStreamWaitEvent(s, e, flags) => stream::wait_event(stream::id(s), e, flags);
    cuStreamWaitEvent_ptsz(s, e, flags) => stream::wait_event(stream::id_ptsz(s), e, flags);
    cuStreamGetFlags(s, flags) => stream::get_flags(stream::id(s), flags);
    cuStreamGetFlags_ptsz(s, flags) => stream::get_flags(stream::id_ptsz(s), flags);
    cuStreamGetPriority(s, prio) => stream::get_priority(stream::id(s), prio);
    cuStreamGetPriority_ptsz(s, prio) => stream::get_priority(stream::id_ptsz(s), prio);
    cuEventCreate(ph, flags) => stream::event_create(ph, flags);
    cuEventDestroy_v2(e) => stream::event_destroy(e);
    cuEventRecord(e, s) => stream::event_record(e, stream::id(s));
    cuEventRecord_ptsz(e, s) => stream::event_record(e, stream::id_ptsz(s));
    cuEventRecordWithFlags(e, s, flags) => stream::event_record_with_flags(e, stream::id(s), flags);
    cuEventRecordWithFlags_ptsz(e, s, flags) => stream::event_record_with_flags(e, stream::id_ptsz(s), flags);
    cuEventSynchronize(e) => stream::event_synchronize(e);
    cuEventQuery(e) => stream::event_query(e);
    cuEventElapsedTime(ms, start, end) => stream::elapsed(ms, start, end);
    cuEventElapsedTime_v2(ms, start, end) => stream::elapsed(ms, start, end);

    cuModuleLoadData(m, image) => module::load_data(m, image, 0, std::ptr::null_mut(), std::ptr::null_mut());
    cuModuleLoadDataEx(m, image, n, opts, vals) => module::load_data(m, image, n, opts, vals);
    cuModuleUnload(m) => module::unload(m);
    cuModuleGetFunction(f, m, name) => module::get_function(f, m, name);
    cuModuleGetGlobal_v2(dptr, bytes, m, name) => module::get_global(dptr, bytes, module::module_id(m), name, Op::ModuleGetGlobal);
    cuModuleLoad(m, name) => files::module_load(m, name);
    cuModuleLoadFatBinary(m, fat) => files::module_load_fat_binary(m, fat);
    cuLibraryLoadFromFile(l, name, jk, jv, nj, lk, lv, nl) => files::library_load_from_file(l, name, jk, jv, nj, lk, lv, nl);
    cuMemcpy3D_v2(p) => copy::memcpy_3d(p, None);
    cuMemcpy3D_v2_ptds(p) => copy::memcpy_3d(p, Some(2));
    cuMemcpy3DAsync_v2(p, s) => copy::memcpy_3d(p, Some(stream::id(s)));
    cuMemcpy3DAsync_v2_ptsz(p, s) => copy::memcpy_3d(p, Some(stream::id_ptsz(s)));
    cuModuleGetLoadingMode(mode) => library::loading_mode(mode);

    cuLibraryLoadData(l, code, jk, jv, nj, lk, lv, nl) => library::load_data(l, code, jk, jv, nj, lk, lv, nl);
    cuLibraryUnload(l) => library::unload(l);
    cuLibraryGetKernel(k, l, name) => library::get_kernel(k, l, name);
    cuLibraryGetModule(m, l) => library::get_module(m, l);
    cuLibraryGetGlobal(dptr, bytes, l, name) => module::get_global(dptr, bytes, l as usize as u64, name, Op::LibraryGetGlobal);
    cuKernelGetFunction(f, k) => library::kernel_get_function(f, k);
    cuKernelGetParamInfo(k, i, off, size) => library::kernel_param_info(k, i, off, size);
    cuKernelGetAttribute(pi, attr, k, dev) => library::kernel_get_attribute(pi, attr, k, dev);
    cuKernelSetAttribute(attr, v, k, dev) => library::kernel_set_attribute(attr, v, k, dev);
    cuFuncGetAttribute(pi, attr, f) => library::func_get_attribute(pi, attr, f);
    cuFuncSetAttribute(f, attr, v) => library::func_set_attribute(f, attr, v);
    cuOccupancyMaxActiveBlocksPerMultiprocessor(n, f, block, smem) => library::occupancy_blocks(n, f, block, smem, 0);
    cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(n, f, block, smem, flags) => library::occupancy_blocks(n, f, block, smem, flags);
    cuOccupancyAvailableDynamicSMemPerBlock(out, f, blocks, block) => library::occupancy_dynamic_smem(out, f, blocks, block);
    cuOccupancyMaxActiveClusters(n, f, config) => library::occupancy_clusters(n, f, config);
    cuLaunchKernelEx(config, f, params, extra) => library::launch_ex(config, f, params, extra, stream::id);
    cuLaunchKernelEx_ptsz(config, f, params, extra) => library::launch_ex(config, f, params, extra, stream::id_ptsz);
    cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params) =>
        library::launch_cooperative(f, [gx, gy, gz, bx, by, bz], shmem, s, params, stream::id);
    cuLaunchCooperativeKernel_ptsz(f, gx, gy, gz, bx, by, bz, shmem, s, params) =>
        library::launch_cooperative(f, [gx, gy, gz, bx, by, bz], shmem, s, params, stream::id_ptsz);
    cuStreamIsCapturing(s, st) => library::is_capturing(stream::id(s), st);
    cuStreamIsCapturing_ptsz(s, st) => library::is_capturing(stream::id_ptsz(s), st);

    cuMemAllocAsync(dptr, size, s) => copy::alloc_async(dptr, size, stream::id(s));
    cuMemAllocAsync_ptsz(dptr, size, s) => copy::alloc_async(dptr, size, stream::id_ptsz(s));
    cuMemFreeAsync(dptr, s) => copy::free_async(dptr, stream::id(s));
    cuMemFreeAsync_ptsz(dptr, s) => copy::free_async(dptr, stream::id_ptsz(s));
    cuMemcpy2D_v2(p) => copy::memcpy_2d(p, None);
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
    cuFuncGetParamInfo(f, i, off, size) => module::param_info(f, i, off, size);
    cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra) =>
        module::launch(f, [gx, gy, gz, bx, by, bz], shmem, stream::id(s), params, extra);
    cuLaunchKernel_ptsz(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra) =>
        module::launch(f, [gx, gy, gz, bx, by, bz], shmem, stream::id_ptsz(s), params, extra);
}
