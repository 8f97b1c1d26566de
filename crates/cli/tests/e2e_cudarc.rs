//! The `cudarc` crate as a real Rust client of vgpu: its safe API and its
//! `result` layer drive the simulated device through the client library and a
//! real mediator. Each test re-executes this binary as the client child.

mod common;

use std::sync::Arc;

use common::{is_child, Harness};
use cudarc::driver::{
    result, sys, CudaContext, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg,
    ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx;

/// The simulator's module format (text); `cuModuleLoadData` takes it as a
/// NUL-terminated image.
const SIM_MODULE: &str = "VGPU-SIM-MODULE 1\nkernel vector_add\nkernel saxpy\nkernel fill_u32\n";

const N: usize = 10_000;

/// Runs the child of `test` with `VGPU_LOG=1` and asserts it passed and
/// printed `done`.
fn run_child(test: &str) -> common::Output {
    let mut h = Harness::start();
    h.env("VGPU_LOG", "1");
    let out = h.run(h.self_test(test));
    let unsupported: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("not supported") || l.contains("NOT_SUPPORTED"))
        .collect();
    assert!(
        out.status.success(),
        "cudarc child failed ({}); entry points vgpu called unsupported: {unsupported:#?}\n{out}",
        out.status
    );
    out.assert_line("done");
    out
}

#[test]
fn cudarc_safe_api() {
    if is_child() {
        return safe_api_child(Alloc::Stream);
    }
    run_child("cudarc_safe_api");
}

#[test]
fn cudarc_safe_api_sync_alloc() {
    if is_child() {
        return safe_api_child(Alloc::Sync);
    }
    run_child("cudarc_safe_api_sync_alloc");
}

#[test]
fn cudarc_result_api() {
    if is_child() {
        return result_api_child();
    }
    run_child("cudarc_result_api");
}

fn saxpy_expected(a: f32, x: &[f32], y: &[f32]) -> Vec<f32> {
    x.iter().zip(y).map(|(x, y)| a * x + y).collect()
}

/// How the safe-API child gets device memory.
#[derive(Clone, Copy)]
enum Alloc {
    /// `CudaStream::alloc_zeros`: what cudarc does by itself
    /// (`cuMemAllocAsync`/`cuMemFreeAsync` where the device has memory pools).
    Stream,
    /// `cuMemAlloc` wrapped with `upgrade_device_ptr`, freed with `cuMemFree`.
    Sync,
}

impl Alloc {
    fn zeros<T: DeviceRepr + ValidAsZeroBits>(
        self,
        stream: &Arc<CudaStream>,
        n: usize,
    ) -> CudaSlice<T> {
        match self {
            Alloc::Stream => stream.alloc_zeros(n).expect("alloc_zeros"),
            Alloc::Sync => {
                // SAFETY: cuMemAlloc returns n * size_of::<T>() fresh bytes,
                // handed to exactly one CudaSlice and zeroed before use.
                let mut s = unsafe {
                    let p = result::malloc_sync(n * std::mem::size_of::<T>()).expect("cuMemAlloc");
                    stream.upgrade_device_ptr(p, n)
                };
                stream.memset_zeros(&mut s).expect("memset_zeros");
                s
            }
        }
    }

    fn copy_of<T: DeviceRepr + ValidAsZeroBits>(
        self,
        stream: &Arc<CudaStream>,
        host: &[T],
    ) -> CudaSlice<T> {
        match self {
            Alloc::Stream => stream.clone_htod(host).expect("clone_htod"),
            Alloc::Sync => {
                let mut s = self.zeros(stream, host.len());
                stream.memcpy_htod(host, &mut s).expect("memcpy_htod");
                s
            }
        }
    }

    fn release<T>(self, s: CudaSlice<T>) {
        match self {
            Alloc::Stream => drop(s),
            Alloc::Sync => {
                let stream = s.stream().clone();
                let p = s.leak();
                stream.synchronize().expect("stream synchronize");
                // SAFETY: p came from cuMemAlloc and its slice was leaked.
                unsafe { result::free_sync(p) }.expect("cuMemFree");
            }
        }
    }
}

fn safe_api_child(alloc: Alloc) {
    assert!(CudaContext::device_count().expect("device_count") >= 1);
    let ctx = CudaContext::new(0).expect("CudaContext::new (primary context)");
    let name = ctx.name().expect("name");
    assert!(!name.is_empty());
    let total = ctx.total_mem().expect("total_mem");
    let (free, total2) = ctx.mem_get_info().expect("mem_get_info");
    assert!(
        total > 0 && free <= total2,
        "total {total}, free {free} of {total2}"
    );
    let cc = ctx.compute_capability().expect("compute_capability");
    println!("device {name:?} cc {cc:?} total {total}");

    let stream = ctx.default_stream();
    run_kernels(&ctx, &stream, alloc);
    let side = ctx.new_stream().expect("new_stream");
    run_kernels(&ctx, &side, alloc);
    stream.join(&side).expect("join streams");

    // Events: timing around a memset.
    let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let start = ctx.new_event(timing).expect("new_event");
    let end = ctx.new_event(timing).expect("new_event");
    start.record(&stream).expect("record start");
    let big = alloc.zeros::<u8>(&stream, 1 << 20);
    end.record(&stream).expect("record end");
    end.synchronize().expect("event synchronize");
    assert!(end.is_complete());
    let ms = start.elapsed_ms(&end).expect("elapsed_ms");
    assert!(ms >= 0.0, "elapsed {ms}");
    // cudarc's default events disable timing: the driver refuses to time them.
    let untimed = ctx.new_event(None).expect("new_event");
    untimed.record(&stream).expect("record untimed");
    let err = start
        .elapsed_ms(&untimed)
        .expect_err("timing an untimed event");
    assert_eq!(err.0, sys::CUresult::CUDA_ERROR_INVALID_HANDLE);
    let host = stream.clone_dtoh(&big).expect("clone_dtoh");
    assert!(host.iter().all(|&b| b == 0));
    alloc.release(big);
    ctx.synchronize().expect("ctx synchronize");
    ctx.check_err().expect("no error recorded by drops");
    println!("done");
}

/// Copies, memset, DtoD and the three simulator kernels on `stream`.
fn run_kernels(ctx: &Arc<CudaContext>, stream: &Arc<CudaStream>, alloc: Alloc) {
    let x_host: Vec<f32> = (0..N).map(|i| i as f32 * 0.5).collect();
    let y_host: Vec<f32> = (0..N).map(|i| 1000.0 - i as f32).collect();
    let x = alloc.copy_of(stream, &x_host);
    let mut y = alloc.copy_of(stream, &y_host);
    assert_eq!(stream.clone_dtoh(&x).expect("dtoh x"), x_host);

    let module = ctx
        .load_module(Ptx::from_src(SIM_MODULE))
        .expect("load_module (cuModuleLoadData)");
    let saxpy = module.load_function("saxpy").expect("saxpy");
    let vector_add = module.load_function("vector_add").expect("vector_add");
    let fill = module.load_function("fill_u32").expect("fill_u32");
    let n = i32::try_from(N).expect("N fits i32");
    let cfg = LaunchConfig::for_num_elems(u32::try_from(N).expect("N fits u32"));

    let a = 3.0f32;
    let mut launch = stream.launch_builder(&saxpy);
    launch.arg(&a).arg(&x).arg(&mut y).arg(&n);
    // SAFETY: saxpy(float, const float*, float*, int) matches the arguments;
    // x and y hold N floats.
    unsafe { launch.launch(cfg) }.expect("launch saxpy");
    let want = saxpy_expected(a, &x_host, &y_host);
    assert_eq!(stream.clone_dtoh(&y).expect("dtoh y"), want, "saxpy");

    let mut c = alloc.zeros::<f32>(stream, N);
    let mut launch = stream.launch_builder(&vector_add);
    launch.arg(&x).arg(&y).arg(&mut c).arg(&n);
    // SAFETY: vector_add(const float*, const float*, float*, int); all hold N floats.
    unsafe { launch.launch(cfg) }.expect("launch vector_add");
    let sum: Vec<f32> = x_host.iter().zip(&want).map(|(x, y)| x + y).collect();
    assert_eq!(stream.clone_dtoh(&c).expect("dtoh c"), sum, "vector_add");

    let mut u = alloc.zeros::<u32>(stream, N);
    let v = 0xC0FFEEu32;
    let mut launch = stream.launch_builder(&fill);
    launch.arg(&mut u).arg(&v).arg(&n);
    // SAFETY: fill_u32(unsigned*, unsigned, int); u holds N u32.
    unsafe { launch.launch(cfg) }.expect("launch fill_u32");
    assert!(stream
        .clone_dtoh(&u)
        .expect("dtoh u")
        .iter()
        .all(|&e| e == v));

    stream.memset_zeros(&mut u).expect("memset_zeros");
    assert!(stream
        .clone_dtoh(&u)
        .expect("dtoh u")
        .iter()
        .all(|&e| e == 0));

    let mut x2 = alloc.zeros::<f32>(stream, N);
    stream.memcpy_dtod(&x, &mut x2).expect("memcpy_dtod");
    assert_eq!(stream.clone_dtoh(&x2).expect("dtoh x2"), x_host, "dtod");
    stream.synchronize().expect("stream synchronize");
    for s in [x, y, c, x2] {
        alloc.release(s);
    }
    alloc.release(u);
}

fn ok(r: Result<(), result::DriverError>, what: &str) {
    if let Err(e) = r {
        panic!("{what}: {e:?}");
    }
}

fn result_api_child() {
    result::init().expect("cuInit");
    let count = result::device::get_count().expect("cuDeviceGetCount");
    assert!(count >= 1);
    let dev = result::device::get(0).expect("cuDeviceGet");
    let name = result::device::get_name(dev).expect("cuDeviceGetName");
    // SAFETY: dev is a valid device ordinal returned by cuDeviceGet.
    let total = unsafe { result::device::total_mem(dev) }.expect("cuDeviceTotalMem");
    // SAFETY: as above.
    let threads = unsafe {
        result::device::get_attribute(
            dev,
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
        )
    }
    .expect("cuDeviceGetAttribute");
    println!("device {name:?} total {total} threads {threads}");
    assert!(total > 0 && threads > 0);

    let ctx = common::cu::init_context();
    assert_eq!(
        result::ctx::get_current().expect("cuCtxGetCurrent"),
        Some(ctx)
    );
    let stream =
        result::stream::create(result::stream::StreamKind::NonBlocking).expect("cuStreamCreate");

    let bytes = N * 4;
    let x_host: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let y_host: Vec<f32> = (0..N).map(|i| 2.0 * i as f32 + 1.0).collect();
    let mut out = vec![0f32; N];
    // SAFETY: every device pointer below comes from cuMemAlloc with `bytes`
    // bytes and the host slices hold N f32 = `bytes` bytes; async copies are
    // followed by a stream synchronize before their host buffers are read or
    // dropped; kernel parameters point at live locals of the right types.
    unsafe {
        let x = result::malloc_sync(bytes).expect("cuMemAlloc x");
        let y = result::malloc_sync(bytes).expect("cuMemAlloc y");
        let z = result::malloc_sync(bytes).expect("cuMemAlloc z");
        result::memcpy_htod_sync(x, &x_host).expect("cuMemcpyHtoD x");
        result::memcpy_htod_async(y, &y_host, stream).expect("cuMemcpyHtoDAsync y");
        result::stream::synchronize(stream).expect("cuStreamSynchronize");
        result::memcpy_dtoh_sync(&mut out, y).expect("cuMemcpyDtoH y");
        assert_eq!(out, y_host);

        let image = std::ffi::CString::new(SIM_MODULE).expect("no NUL");
        let module = result::module::load_data(image.as_ptr().cast()).expect("cuModuleLoadData");
        let get = |name: &str| {
            let c = std::ffi::CString::new(name).expect("no NUL");
            result::module::get_function(module, c).expect("cuModuleGetFunction")
        };
        let (saxpy, vector_add, fill) = (get("saxpy"), get("vector_add"), get("fill_u32"));
        let mut n = i32::try_from(N).expect("N fits i32");
        let grid = (u32::try_from(N.div_ceil(256)).expect("grid"), 1, 1);
        let block = (256, 1, 1);

        let mut a = 2.5f32;
        let (mut px, mut py, mut pz) = (x, y, z);
        let mut params = [
            (&raw mut a).cast(),
            (&raw mut px).cast(),
            (&raw mut py).cast(),
            (&raw mut n).cast(),
        ];
        ok(
            result::launch_kernel(saxpy, grid, block, 0, stream, &mut params),
            "cuLaunchKernel saxpy",
        );
        result::memcpy_dtoh_async(&mut out, y, stream).expect("cuMemcpyDtoHAsync");
        result::stream::synchronize(stream).expect("cuStreamSynchronize");
        let y_new = saxpy_expected(a, &x_host, &y_host);
        assert_eq!(out, y_new, "saxpy");

        let mut params = [
            (&raw mut px).cast(),
            (&raw mut py).cast(),
            (&raw mut pz).cast(),
            (&raw mut n).cast(),
        ];
        ok(
            result::launch_kernel(
                vector_add,
                grid,
                block,
                0,
                std::ptr::null_mut(),
                &mut params,
            ),
            "cuLaunchKernel vector_add",
        );
        result::ctx::synchronize().expect("cuCtxSynchronize");
        result::memcpy_dtoh_sync(&mut out, z).expect("cuMemcpyDtoH z");
        let sum: Vec<f32> = x_host.iter().zip(&y_new).map(|(a, b)| a + b).collect();
        assert_eq!(out, sum, "vector_add");

        let mut v = 0xA5A5_0001u32;
        let mut params = [
            (&raw mut pz).cast(),
            (&raw mut v).cast(),
            (&raw mut n).cast(),
        ];
        ok(
            result::launch_kernel(fill, grid, block, 0, stream, &mut params),
            "cuLaunchKernel fill_u32",
        );
        let mut words = vec![0u32; N];
        result::memcpy_dtoh_async(&mut words, z, stream).expect("cuMemcpyDtoHAsync");
        result::stream::synchronize(stream).expect("cuStreamSynchronize");
        assert!(words.iter().all(|&w| w == v), "fill_u32");

        result::memset_d8_sync(z, 0x5A, bytes).expect("cuMemsetD8");
        let mut raw = vec![0u8; bytes];
        result::memcpy_dtoh_sync(&mut raw, z).expect("cuMemcpyDtoH");
        assert!(raw.iter().all(|&b| b == 0x5A), "memset");
        ok(
            sys::cuMemsetD32_v2(z, 0xDEAD_BEEF, N).result(),
            "cuMemsetD32",
        );
        result::memcpy_dtoh_sync(&mut words, z).expect("cuMemcpyDtoH");
        assert!(words.iter().all(|&w| w == 0xDEAD_BEEF), "memset d32");

        result::memcpy_dtod_sync(z, x, bytes).expect("cuMemcpyDtoD");
        result::memcpy_dtoh_sync(&mut out, z).expect("cuMemcpyDtoH");
        assert_eq!(out, x_host, "dtod");

        let start =
            result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT).expect("cuEventCreate");
        let end =
            result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT).expect("cuEventCreate");
        result::event::record(start, stream).expect("cuEventRecord");
        result::memset_d8_async(x, 0, bytes, stream).expect("cuMemsetD8Async");
        result::event::record(end, stream).expect("cuEventRecord");
        result::event::synchronize(end).expect("cuEventSynchronize");
        result::event::query(end).expect("cuEventQuery");
        let ms = result::event::elapsed(start, end).expect("cuEventElapsedTime");
        assert!(ms >= 0.0);
        result::event::destroy(start).expect("cuEventDestroy");
        result::event::destroy(end).expect("cuEventDestroy");

        for p in [x, y, z] {
            result::free_sync(p).expect("cuMemFree");
        }
        result::module::unload(module).expect("cuModuleUnload");
        result::stream::destroy(stream).expect("cuStreamDestroy");
        ok(sys::cuCtxDestroy_v2(ctx).result(), "cuCtxDestroy");
    }
    println!("done");
}
