//! Tests through the exported C functions, called as Rust functions.
//!
//! The simulator has one global state, so every test takes `LOCK` and starts from reset
//! primary contexts. Tests run with 2 devices and a 64 MiB budget per device.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::ptr::{self, null_mut};
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use crate::config::Config;
use crate::cu::*;
use crate::exports::*;
use crate::state;

mod arrays;
mod external;
mod memory_rest;
mod peer;
mod pool;
mod runtime_api;
mod vmm;

const BUDGET: usize = 64 << 20;
static LOCK: Mutex<()> = Mutex::new(());

const OK: CUresult = CUresult::CUDA_SUCCESS;
const INVALID_VALUE: CUresult = CUresult::CUDA_ERROR_INVALID_VALUE;
const INVALID_CONTEXT: CUresult = CUresult::CUDA_ERROR_INVALID_CONTEXT;
const INVALID_HANDLE: CUresult = CUresult::CUDA_ERROR_INVALID_HANDLE;

/// Initialises the simulator, resets both primary contexts, and holds the test lock.
fn setup() -> MutexGuard<'static, ()> {
    let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    state::init_with(Config {
        devices: 2,
        memory_bytes: BUDGET as u64,
        log: false,
        ..Config::default()
    });
    assert_eq!(cuInit(0), OK);
    for dev in 0..2 {
        assert_eq!(cuDevicePrimaryCtxReset_v2(dev), OK);
    }
    guard
}

/// Retains device `dev`'s primary context and makes it current on this thread.
fn primary(dev: CUdevice) -> CUcontext {
    let mut ctx = null_mut();
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { cuDevicePrimaryCtxRetain(&mut ctx, dev) }, OK);
    assert_eq!(cuCtxSetCurrent(ctx), OK);
    ctx
}

fn alloc(bytes: usize) -> CUdeviceptr {
    let mut p = 0;
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { cuMemAlloc_v2(&mut p, bytes) }, OK);
    p
}

fn htod<T: Copy>(dst: CUdeviceptr, src: &[T]) -> CUresult {
    // SAFETY: `src` is valid for its byte length.
    unsafe { cuMemcpyHtoD_v2(dst, src.as_ptr().cast(), size_of_val(src)) }
}

fn dtoh<T: Copy>(dst: &mut [T], src: CUdeviceptr) -> CUresult {
    // SAFETY: `dst` is valid for its byte length.
    unsafe { cuMemcpyDtoH_v2(dst.as_mut_ptr().cast(), src, size_of_val(dst)) }
}

fn current() -> CUcontext {
    let mut c = ptr::dangling_mut();
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { cuCtxGetCurrent(&mut c) }, OK);
    c
}

fn mem_info() -> (usize, usize) {
    let (mut free, mut total) = (0, 0);
    // SAFETY: valid out-pointers.
    assert_eq!(unsafe { cuMemGetInfo_v2(&mut free, &mut total) }, OK);
    (free, total)
}

const MODULE: &CStr = c"VGPU-SIM-MODULE 1
# the three built-ins, one kernel the simulator lacks, and a global
kernel vector_add
kernel saxpy
kernel fill_u32
kernel not_builtin
global counter 4
";

fn load(image: &CStr) -> Result<CUmodule, CUresult> {
    let mut m = null_mut();
    // SAFETY: valid out-pointer and NUL-terminated image.
    match unsafe { cuModuleLoadData(&mut m, image.as_ptr().cast()) } {
        OK => Ok(m),
        e => Err(e),
    }
}

fn function(m: CUmodule, name: &CStr) -> Result<CUfunction, CUresult> {
    let mut f = null_mut();
    // SAFETY: valid out-pointer and NUL-terminated name.
    match unsafe { cuModuleGetFunction(&mut f, m, name.as_ptr()) } {
        OK => Ok(f),
        e => Err(e),
    }
}

/// Launches `f` with a 1-D geometry and the given argument pointers.
fn launch(f: CUfunction, grid: u32, block: u32, args: &mut [*mut c_void]) -> CUresult {
    // SAFETY: each argument pointer points to a live local of the kernel's parameter type.
    unsafe {
        cuLaunchKernel(
            f,
            grid,
            1,
            1,
            block,
            1,
            1,
            0,
            null_mut(),
            args.as_mut_ptr(),
            null_mut(),
        )
    }
}

fn arg<T>(v: &mut T) -> *mut c_void {
    ptr::from_mut(v).cast()
}

#[test]
fn devices_identity_and_attributes() {
    let _g = setup();
    assert_eq!(cuInit(1), INVALID_VALUE);
    let mut v = 0;
    // SAFETY: valid out-pointers, or NULL where the test wants the error.
    unsafe {
        assert_eq!(cuDriverGetVersion(&mut v), OK);
        assert_eq!(v, 13000);
        assert_eq!(cuDeviceGetCount(&mut v), OK);
        assert_eq!(v, 2);
        assert_eq!(cuDeviceGetCount(null_mut()), INVALID_VALUE);
        assert_eq!(cuDeviceGet(&mut v, 1), OK);
        assert_eq!(v, 1);
        assert_eq!(cuDeviceGet(&mut v, 2), CUresult::CUDA_ERROR_INVALID_DEVICE);
        assert_eq!(cuDeviceGet(&mut v, -1), CUresult::CUDA_ERROR_INVALID_DEVICE);

        let mut name = [0 as c_char; 64];
        assert_eq!(cuDeviceGetName(name.as_mut_ptr(), 64, 0), OK);
        let s = CStr::from_ptr(name.as_ptr()).to_str().expect("utf-8");
        assert_eq!(s, "vgpu simulated device (not a GPU)");
        assert_eq!(cuDeviceGetName(name.as_mut_ptr(), 5, 0), OK);
        assert_eq!(CStr::from_ptr(name.as_ptr()), c"vgpu");
        assert_eq!(
            cuDeviceGetName(name.as_mut_ptr(), 64, 7),
            CUresult::CUDA_ERROR_INVALID_DEVICE
        );

        let (mut u0, mut u1) = (CUuuid::default(), CUuuid::default());
        assert_eq!(cuDeviceGetUuid(&mut u0, 0), OK);
        assert_eq!(cuDeviceGetUuid_v2(&mut u1, 1), OK);
        assert_ne!(u0.bytes, u1.bytes);
        let mut again = CUuuid::default();
        assert_eq!(cuDeviceGetUuid_v2(&mut again, 0), OK);
        assert_eq!(again.bytes, u0.bytes);

        let mut bus = [0 as c_char; 16];
        for (dev, want) in [(0, c"0000:5E:00.0"), (1, c"0000:5F:00.0")] {
            assert_eq!(cuDeviceGetPCIBusId(bus.as_mut_ptr(), 16, dev), OK);
            assert_eq!(CStr::from_ptr(bus.as_ptr()), want);
            let mut id = 0;
            let a = CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID;
            assert_eq!(cuDeviceGetAttribute(&mut id, a, dev), OK);
            assert_eq!(id, 0x5E + dev);
        }

        let mut total = 0;
        assert_eq!(cuDeviceTotalMem_v2(&mut total, 0), OK);
        assert_eq!(total, BUDGET);

        use CUdevice_attribute as A;
        for (attr, want) in [
            (A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9),
            (A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0),
            (A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132),
            (A::CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32),
            (A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024),
            (A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 0),
            (A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 0),
        ] {
            assert_eq!(cuDeviceGetAttribute(&mut v, attr, 0), OK);
            assert_eq!(v, want, "{attr:?}");
        }
        for id in 1..A::CU_DEVICE_ATTRIBUTE_MAX.0 {
            assert_eq!(cuDeviceGetAttribute(&mut v, A(id), 1), OK, "attribute {id}");
        }
        assert_eq!(
            cuDeviceGetAttribute(&mut v, A::CU_DEVICE_ATTRIBUTE_MAX, 0),
            INVALID_VALUE
        );
        assert_eq!(cuDeviceGetAttribute(null_mut(), A(1), 0), INVALID_VALUE);
    }
}

#[test]
fn alloc_copy_free_round_trip() {
    let _g = setup();
    primary(0);
    let (free0, total) = mem_info();
    assert_eq!((free0, total), (BUDGET, BUDGET));

    let data: Vec<u32> = (0..1000).map(|i| i * 7 + 1).collect();
    let p = alloc(4000);
    assert_eq!(p % 256, 0);
    assert_eq!(mem_info().0, BUDGET - 4000);
    assert_eq!(htod(p, &data), OK);
    let mut back = vec![0u32; 1000];
    assert_eq!(dtoh(&mut back, p), OK);
    assert_eq!(back, data);

    // Device to device, sync and async, and unified cuMemcpy both ways.
    let q = alloc(4000);
    assert_eq!(cuMemcpyDtoD_v2(q, p, 4000), OK);
    assert_eq!(cuMemcpyDtoDAsync_v2(q + 4, p, 8, null_mut()), OK);
    let mut back = vec![0u32; 1000];
    assert_eq!(dtoh(&mut back, q), OK);
    assert_eq!(&back[..4], &[1, 1, 8, 22]);
    assert_eq!(&back[4..], &data[4..]);
    let mut host = [0u32; 4];
    // SAFETY: `host` is valid for 16 bytes; `p` is a live allocation.
    unsafe {
        assert_eq!(cuMemcpy(host.as_mut_ptr().addr() as u64, p + 4, 16), OK);
        assert_eq!(host, [8, 15, 22, 29]);
        let src = [9u32, 9];
        assert_eq!(
            cuMemcpyAsync(q, src.as_ptr().addr() as u64, 8, null_mut()),
            OK
        );
    }
    assert_eq!(dtoh(&mut host, q), OK);
    assert_eq!(host, [9, 9, 8, 22]);

    // Memsets.
    assert_eq!(cuMemsetD32_v2(q, 0xDEAD_BEEF, 2), OK);
    assert_eq!(cuMemsetD16_v2(q + 8, 0x1234, 2), OK);
    assert_eq!(cuMemsetD8Async(q + 12, 0xAB, 4, null_mut()), OK);
    assert_eq!(dtoh(&mut host, q), OK);
    assert_eq!(host, [0xDEAD_BEEF, 0xDEAD_BEEF, 0x1234_1234, 0xABAB_ABAB]);
    assert_eq!(cuMemsetD32_v2(q + 2, 0, 1), INVALID_VALUE);
    assert_eq!(cuMemsetD16Async(q + 1, 0, 1, null_mut()), INVALID_VALUE);

    // Address ranges.
    let (mut base, mut size) = (0, 0);
    // SAFETY: valid out-pointers.
    unsafe {
        assert_eq!(cuMemGetAddressRange_v2(&mut base, &mut size, p + 100), OK);
        assert_eq!((base, size), (p, 4000));
        assert_eq!(
            cuMemGetAddressRange_v2(&mut base, &mut size, p + 4000),
            CUresult::CUDA_ERROR_NOT_FOUND
        );
    }

    // Frees: interior pointer, double free, unknown pointer.
    assert_eq!(cuMemFree_v2(p + 256), INVALID_VALUE);
    assert_eq!(cuMemFree_v2(p), OK);
    assert_eq!(cuMemFree_v2(p), INVALID_VALUE);
    assert_eq!(cuMemFree_v2(0x1000), INVALID_VALUE);
    assert_eq!(cuMemFree_v2(q), OK);
    assert_eq!(mem_info().0, BUDGET);

    // Zero-byte and over-budget allocations; NULL out-pointer.
    let mut r = 0;
    // SAFETY: valid out-pointer, or NULL where the test wants the error.
    unsafe {
        assert_eq!(cuMemAlloc_v2(&mut r, 0), INVALID_VALUE);
        assert_eq!(
            cuMemAlloc_v2(&mut r, BUDGET + 1),
            CUresult::CUDA_ERROR_OUT_OF_MEMORY
        );
        assert_eq!(cuMemAlloc_v2(null_mut(), 16), INVALID_VALUE);
    }
    let all = alloc(BUDGET);
    assert_eq!(mem_info().0, 0);
    // SAFETY: valid out-pointer.
    let r = unsafe { cuMemAlloc_v2(&mut r, 1) };
    assert_eq!(r, CUresult::CUDA_ERROR_OUT_OF_MEMORY);
    assert_eq!(cuMemFree_v2(all), OK);
}

#[test]
fn out_of_bounds_copies_are_rejected_and_touch_nothing() {
    let _g = setup();
    primary(0);
    let p = alloc(16);
    let q = alloc(16);
    assert_eq!(htod(p, &[1u8; 16]), OK);
    assert_eq!(htod(q, &[2u8; 16]), OK);

    let big = [7u8; 32];
    assert_eq!(htod(p, &big), INVALID_VALUE);
    assert_eq!(htod(p + 8, &big[..9]), INVALID_VALUE);
    let mut out = [0u8; 32];
    assert_eq!(dtoh(&mut out, p), INVALID_VALUE);
    assert_eq!(out, [0u8; 32]);
    assert_eq!(cuMemcpyDtoD_v2(q, p, 17), INVALID_VALUE);
    assert_eq!(cuMemcpyDtoD_v2(q + 1, p, 16), INVALID_VALUE);
    // SAFETY: `big` is valid for 32 bytes (never read: the device end is rejected first).
    let r = unsafe { cuMemcpyHtoDAsync_v2(p + 1, big.as_ptr().cast(), 16, null_mut()) };
    assert_eq!(r, INVALID_VALUE);
    assert_eq!(cuMemsetD8_v2(p, 9, 17), INVALID_VALUE);
    assert_eq!(cuMemsetD32Async(p + 4, 9, 4, null_mut()), INVALID_VALUE);
    // A freed allocation is no longer device memory for the explicit copies.
    let r = alloc(16);
    assert_eq!(cuMemFree_v2(r), OK);
    assert_eq!(htod(r, &[0u8; 4]), INVALID_VALUE);

    let mut back = [0u8; 16];
    assert_eq!(dtoh(&mut back, p), OK);
    assert_eq!(back, [1u8; 16]);
    assert_eq!(dtoh(&mut back, q), OK);
    assert_eq!(back, [2u8; 16]);
    // NULL host pointers are rejected; zero-byte copies are no-ops.
    // SAFETY: NULL is rejected before use; zero bytes are never touched.
    unsafe {
        assert_eq!(cuMemcpyHtoD_v2(p, ptr::null(), 4), INVALID_VALUE);
        assert_eq!(cuMemcpyHtoD_v2(p + 4096, ptr::null(), 0), OK);
    }
}

#[test]
fn memory_needs_a_current_context() {
    let _g = setup();
    assert_eq!(current(), null_mut());
    let mut p = 0;
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { cuMemAlloc_v2(&mut p, 16) }, INVALID_CONTEXT);
    assert_eq!(cuCtxSynchronize(), INVALID_CONTEXT);
    let (mut f, mut t) = (0, 0);
    // SAFETY: valid out-pointers.
    assert_eq!(unsafe { cuMemGetInfo_v2(&mut f, &mut t) }, INVALID_CONTEXT);
}

#[test]
fn primary_context_reference_counts() {
    let _g = setup();
    let (mut flags, mut active): (c_uint, c_int) = (99, 99);
    let state = |flags: &mut c_uint, active: &mut c_int| {
        // SAFETY: valid out-pointers.
        assert_eq!(unsafe { cuDevicePrimaryCtxGetState(0, flags, active) }, OK);
    };
    state(&mut flags, &mut active);
    assert_eq!(active, 0);
    assert_eq!(cuDevicePrimaryCtxRelease_v2(0), INVALID_CONTEXT);

    let (mut a, mut b) = (null_mut(), null_mut());
    // SAFETY: valid out-pointers.
    unsafe {
        assert_eq!(cuDevicePrimaryCtxRetain(&mut a, 0), OK);
        assert_eq!(cuDevicePrimaryCtxRetain(&mut b, 0), OK);
        assert_eq!(cuDevicePrimaryCtxRetain(null_mut(), 0), INVALID_VALUE);
        assert_eq!(
            cuDevicePrimaryCtxRetain(&mut b, 5),
            CUresult::CUDA_ERROR_INVALID_DEVICE
        );
    }
    assert_eq!(a, b);
    assert!(!a.is_null());
    let mut other = null_mut();
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { cuDevicePrimaryCtxRetain(&mut other, 1) }, OK);
    assert_ne!(other, a);
    assert_eq!(cuDevicePrimaryCtxRelease_v2(1), OK);

    state(&mut flags, &mut active);
    assert_eq!(active, 1);
    // A primary context is not destroyed with cuCtxDestroy.
    assert_eq!(cuCtxDestroy_v2(a), INVALID_CONTEXT);

    // Memory allocated in it survives one release, not the last one.
    assert_eq!(cuCtxSetCurrent(a), OK);
    let p = alloc(64);
    assert_eq!(cuDevicePrimaryCtxRelease_v2(0), OK);
    state(&mut flags, &mut active);
    assert_eq!(active, 1);
    assert_eq!(htod(p, &[1u8; 64]), OK);
    assert_eq!(cuDevicePrimaryCtxRelease_v2(0), OK);
    state(&mut flags, &mut active);
    assert_eq!(active, 0);
    assert_eq!(cuDevicePrimaryCtxRelease_v2(0), INVALID_CONTEXT);
    // The (inactive) handle is still current here, but unusable.
    assert_eq!(current(), a);
    assert_eq!(cuCtxSynchronize(), INVALID_CONTEXT);

    // Flags persist across activation; bad flags are rejected.
    assert_eq!(cuDevicePrimaryCtxSetFlags_v2(0, 0x4), OK);
    assert_eq!(cuDevicePrimaryCtxSetFlags_v2(0, 0x3), INVALID_VALUE);
    assert_eq!(cuDevicePrimaryCtxSetFlags_v2(0, 0x100), INVALID_VALUE);
    primary(0);
    state(&mut flags, &mut active);
    assert_eq!((flags, active), (0x4, 1));
    let mut f = 0;
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { cuCtxGetFlags(&mut f) }, OK);
    assert_eq!(f, 0x4);
    // The old allocation died with the context.
    let (mut base, mut size) = (0, 0);
    // SAFETY: valid out-pointers.
    let r = unsafe { cuMemGetAddressRange_v2(&mut base, &mut size, p) };
    assert_eq!(r, CUresult::CUDA_ERROR_NOT_FOUND);

    // Reset deactivates regardless of the count.
    let mut c = null_mut();
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { cuDevicePrimaryCtxRetain(&mut c, 0) }, OK);
    assert_eq!(cuDevicePrimaryCtxReset_v2(0), OK);
    state(&mut flags, &mut active);
    assert_eq!(active, 0);
    assert_eq!(cuDevicePrimaryCtxSetFlags_v2(0, 0), OK);
}

#[test]
fn context_stack_push_pop_set() {
    let _g = setup();
    let (mut a, mut b) = (null_mut(), null_mut());
    // SAFETY: valid out-pointers.
    unsafe {
        assert_eq!(cuCtxCreate_v2(&mut a, 0, 0), OK);
        assert_eq!(current(), a);
        assert_eq!(cuCtxCreate_v2(&mut b, 0, 1), OK);
        assert_eq!(current(), b);
        assert_eq!(cuCtxCreate_v2(&mut b, 0x3, 0), INVALID_VALUE);
        assert_eq!(current(), b);
        let mut dev = -1;
        assert_eq!(cuCtxGetDevice(&mut dev), OK);
        assert_eq!(dev, 1);

        let mut popped = null_mut();
        assert_eq!(cuCtxPopCurrent_v2(&mut popped), OK);
        assert_eq!(popped, b);
        assert_eq!(current(), a);
        assert_eq!(cuCtxGetDevice(&mut dev), OK);
        assert_eq!(dev, 0);

        assert_eq!(cuCtxPushCurrent_v2(b), OK);
        assert_eq!(current(), b);
        // SetCurrent replaces the top: the stack is now [a, a].
        assert_eq!(cuCtxSetCurrent(a), OK);
        assert_eq!(current(), a);
        assert_eq!(cuCtxPopCurrent_v2(null_mut()), OK);
        assert_eq!(current(), a);

        // Another thread has its own, empty stack.
        let other = thread::spawn(|| current().addr()).join().expect("thread");
        assert_eq!(other, 0);

        let mut version = 0;
        assert_eq!(cuCtxGetApiVersion(b, &mut version), OK);
        assert_eq!(version, 3020);

        // Destroying the current context pops it; its handle is dead afterwards.
        assert_eq!(cuCtxDestroy_v2(a), OK);
        assert_eq!(current(), null_mut());
        assert_eq!(cuCtxDestroy_v2(a), INVALID_CONTEXT);
        assert_eq!(cuCtxPushCurrent_v2(a), INVALID_CONTEXT);
        assert_eq!(cuCtxSetCurrent(a), INVALID_CONTEXT);
        assert_eq!(cuCtxGetApiVersion(a, &mut version), INVALID_CONTEXT);
        assert_eq!(cuCtxPopCurrent_v2(&mut popped), INVALID_CONTEXT);
        assert_eq!(cuCtxPushCurrent_v2(null_mut()), INVALID_CONTEXT);
        assert_eq!(
            cuCtxPushCurrent_v2(ptr::without_provenance_mut(0x1234)),
            INVALID_CONTEXT
        );

        // Limits and priorities on a current context.
        assert_eq!(cuCtxPushCurrent_v2(b), OK);
        let mut v = 0;
        assert_eq!(cuCtxGetLimit(&mut v, CUlimit::CU_LIMIT_STACK_SIZE), OK);
        assert_eq!(v, 1024);
        assert_eq!(
            cuCtxSetLimit(CUlimit::CU_LIMIT_MALLOC_HEAP_SIZE, 1 << 24),
            OK
        );
        assert_eq!(
            cuCtxGetLimit(&mut v, CUlimit::CU_LIMIT_MALLOC_HEAP_SIZE),
            OK
        );
        assert_eq!(v, 1 << 24);
        assert_eq!(cuCtxGetLimit(&mut v, CUlimit::CU_LIMIT_MAX), INVALID_VALUE);
        let (mut least, mut greatest) = (9, 9);
        assert_eq!(cuCtxGetStreamPriorityRange(&mut least, &mut greatest), OK);
        assert_eq!((least, greatest), (0, -5));
        assert_eq!(cuCtxSynchronize(), OK);
        assert_eq!(cuCtxDestroy_v2(b), OK);
        assert_eq!(cuCtxSynchronize(), INVALID_CONTEXT);
    }
}

#[test]
fn streams_and_event_timing() {
    let _g = setup();
    primary(0);
    let (mut s, mut s2) = (null_mut(), null_mut());
    let (mut p, mut flags) = (7, 7);
    // SAFETY: valid out-pointers.
    unsafe {
        assert_eq!(cuStreamCreateWithPriority(&mut s, 1, -10), OK);
        assert_eq!(cuStreamGetPriority(s, &mut p), OK);
        assert_eq!(p, -5);
        assert_eq!(cuStreamGetFlags(s, &mut flags), OK);
        assert_eq!(flags, 1);
        assert_eq!(cuStreamCreateWithPriority(&mut s2, 0, 3), OK);
        assert_eq!(cuStreamGetPriority(s2, &mut p), OK);
        assert_eq!(p, 0);
        assert_eq!(cuStreamCreate(&mut s2, 2), INVALID_VALUE);
        for implicit in [0usize, 1, 2] {
            let h: CUstream = ptr::without_provenance_mut(implicit);
            assert_eq!(cuStreamQuery(h), OK);
            assert_eq!(cuStreamSynchronize(h), OK);
            assert_eq!(cuStreamGetPriority(h, &mut p), OK);
        }
    }

    let (mut start, mut end, mut untimed, mut never) =
        (null_mut(), null_mut(), null_mut(), null_mut());
    // SAFETY: valid out-pointers.
    unsafe {
        assert_eq!(cuEventCreate(&mut start, 0), OK);
        assert_eq!(cuEventCreate(&mut end, 1), OK);
        assert_eq!(cuEventCreate(&mut untimed, 2), OK);
        assert_eq!(cuEventCreate(&mut never, 0), OK);
        assert_eq!(cuEventCreate(&mut never, 4), INVALID_VALUE);
        assert_eq!(cuEventCreate(&mut never, 0x10), INVALID_VALUE);
    }
    assert_eq!(cuEventRecord(start, s), OK);
    thread::sleep(Duration::from_millis(20));
    assert_eq!(cuEventRecord(end, s), OK);
    assert_eq!(cuEventRecord(untimed, null_mut()), OK);
    assert_eq!(cuEventSynchronize(end), OK);
    assert_eq!(cuEventQuery(end), OK);
    assert_eq!(cuEventQuery(never), OK);
    assert_eq!(cuStreamWaitEvent(s, start, 0), OK);
    assert_eq!(cuStreamWaitEvent(s, start, 4), INVALID_VALUE);

    let mut ms = 0.0f32;
    // SAFETY: valid out-pointers, or NULL where the test wants the error.
    unsafe {
        assert_eq!(cuEventElapsedTime(&mut ms, start, end), OK);
        assert!((19.0..2000.0).contains(&ms), "elapsed {ms} ms");
        let mut back = 0.0f32;
        assert_eq!(cuEventElapsedTime_v2(&mut back, end, start), OK);
        assert!((back + ms).abs() < 1e-3, "{back} vs {ms}");
        assert_eq!(
            cuEventElapsedTime(&mut ms, start, never),
            CUresult::CUDA_ERROR_NOT_READY
        );
        assert_eq!(cuEventElapsedTime(&mut ms, start, untimed), INVALID_HANDLE);
        assert_eq!(cuEventElapsedTime(null_mut(), start, end), INVALID_VALUE);
        let bogus: CUevent = ptr::without_provenance_mut(0x7770);
        assert_eq!(cuEventElapsedTime(&mut ms, bogus, end), INVALID_HANDLE);
    }

    assert_eq!(cuEventDestroy_v2(start), OK);
    assert_eq!(cuEventDestroy_v2(start), INVALID_HANDLE);
    assert_eq!(cuEventRecord(start, s), INVALID_HANDLE);
    assert_eq!(cuStreamDestroy_v2(s), OK);
    assert_eq!(cuStreamDestroy_v2(s), INVALID_HANDLE);
    assert_eq!(cuStreamSynchronize(s), INVALID_HANDLE);
    assert_eq!(cuEventRecord(end, s), INVALID_HANDLE);
    assert_eq!(cuStreamDestroy_v2(null_mut()), INVALID_HANDLE);
    // Releasing the primary context takes its streams and events with it.
    assert_eq!(cuDevicePrimaryCtxRelease_v2(0), OK);
    assert_eq!(cuStreamQuery(s2), INVALID_HANDLE);
    assert_eq!(cuEventQuery(end), INVALID_HANDLE);
}

#[test]
fn module_load_and_builtin_kernels() {
    let _g = setup();
    primary(0);
    let m = load(MODULE).expect("module loads");
    assert_eq!(
        load(c"// PTX\n.version 8.0\n").err(),
        Some(CUresult::CUDA_ERROR_INVALID_IMAGE)
    );
    assert_eq!(
        load(c"VGPU-SIM-MODULE 1\nbogus\n").err(),
        Some(CUresult::CUDA_ERROR_INVALID_IMAGE)
    );
    assert_eq!(
        function(m, c"not_builtin").err(),
        Some(CUresult::CUDA_ERROR_NOT_FOUND)
    );
    assert_eq!(
        function(m, c"missing").err(),
        Some(CUresult::CUDA_ERROR_NOT_FOUND)
    );
    let add = function(m, c"vector_add").expect("vector_add");
    assert_eq!(function(m, c"vector_add"), Ok(add));
    let saxpy = function(m, c"saxpy").expect("saxpy");
    let fill = function(m, c"fill_u32").expect("fill_u32");

    // vector_add over 1000 elements with 4 blocks of 256 threads.
    let n = 1000usize;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| 0.5 * i as f32).collect();
    let (da, db, dc) = (alloc(4 * n), alloc(4 * n), alloc(4 * n));
    assert_eq!(htod(da, &a), OK);
    assert_eq!(htod(db, &b), OK);
    let (mut pa, mut pb, mut pc, mut nn) = (da, db, dc, 1000 as c_int);
    let r = launch(
        add,
        4,
        256,
        &mut [arg(&mut pa), arg(&mut pb), arg(&mut pc), arg(&mut nn)],
    );
    assert_eq!(r, OK);
    assert_eq!(cuCtxSynchronize(), OK);
    let mut c = vec![0f32; n];
    assert_eq!(dtoh(&mut c, dc), OK);
    assert!(c.iter().enumerate().all(|(i, &v)| v == 1.5 * i as f32));

    // saxpy: y = 2x + y, in place on c.
    let (mut alpha, mut px, mut py) = (2.0f32, da, dc);
    let r = launch(
        saxpy,
        8,
        128,
        &mut [arg(&mut alpha), arg(&mut px), arg(&mut py), arg(&mut nn)],
    );
    assert_eq!(r, OK);
    assert_eq!(dtoh(&mut c, dc), OK);
    assert!(c.iter().enumerate().all(|(i, &v)| v == 3.5 * i as f32));

    // fill_u32 runs only min(n, threads) elements: 2 blocks x 64 threads = 128 of 1000.
    let (mut p, mut v) = (dc, 0xC0FF_EE00u32);
    let r = launch(fill, 2, 64, &mut [arg(&mut p), arg(&mut v), arg(&mut nn)]);
    assert_eq!(r, OK);
    let mut u = vec![0u32; n];
    assert_eq!(dtoh(&mut u, dc), OK);
    assert!(u[..128].iter().all(|&x| x == 0xC0FF_EE00));
    assert_eq!(u[128], (3.5f32 * 128.0).to_bits());

    // The module global is device memory owned by the module.
    let (mut g, mut gsize) = (0, 0);
    // SAFETY: valid out-pointers and NUL-terminated names.
    unsafe {
        assert_eq!(
            cuModuleGetGlobal_v2(&mut g, &mut gsize, m, c"counter".as_ptr()),
            OK
        );
        assert_eq!(gsize, 4);
        assert_eq!(
            cuModuleGetGlobal_v2(&mut g, null_mut(), m, c"nope".as_ptr()),
            CUresult::CUDA_ERROR_NOT_FOUND
        );
    }
    let (mut gp, mut gv, mut one) = (g, 42u32, 1 as c_int);
    assert_eq!(
        launch(fill, 1, 1, &mut [arg(&mut gp), arg(&mut gv), arg(&mut one)]),
        OK
    );
    let mut gval = [0u32];
    assert_eq!(dtoh(&mut gval, g), OK);
    assert_eq!(gval, [42]);

    // Unloading frees the global and invalidates the functions.
    assert_eq!(cuModuleUnload(m), OK);
    assert_eq!(cuModuleUnload(m), INVALID_HANDLE);
    assert_eq!(dtoh(&mut gval, g), INVALID_VALUE);
    assert_eq!(
        launch(fill, 1, 1, &mut [arg(&mut gp), arg(&mut gv), arg(&mut one)]),
        INVALID_HANDLE
    );
    assert_eq!(function(m, c"fill_u32").err(), Some(INVALID_HANDLE));
    assert_eq!(cuCtxSynchronize(), OK);
}

#[test]
fn launch_argument_checks() {
    let _g = setup();
    primary(0);
    let m = load(MODULE).expect("module loads");
    let fill = function(m, c"fill_u32").expect("fill_u32");
    let d = alloc(64);
    let (mut p, mut v, mut n) = (d, 1u32, 16 as c_int);
    let mut args = [arg(&mut p), arg(&mut v), arg(&mut n)];
    assert_eq!(launch(fill, 0, 1, &mut args), INVALID_VALUE);
    assert_eq!(launch(fill, 1, 0, &mut args), INVALID_VALUE);
    assert_eq!(launch(fill, 1, 1025, &mut args), INVALID_VALUE);
    // SAFETY: the arguments are valid; `extra` and NULL kernelParams are rejected first.
    unsafe {
        let mut extra = [null_mut::<c_void>()];
        let r = cuLaunchKernel(
            fill,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            null_mut(),
            args.as_mut_ptr(),
            extra.as_mut_ptr(),
        );
        assert_eq!(r, INVALID_VALUE);
        let r = cuLaunchKernel(
            fill,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            null_mut(),
            null_mut(),
            null_mut(),
        );
        assert_eq!(r, INVALID_VALUE);
        // 32 x 32 x 1 = 1024 threads is fine; 32 x 32 x 2 is not.
        let r = cuLaunchKernel(
            fill,
            1,
            1,
            1,
            32,
            32,
            1,
            0,
            null_mut(),
            args.as_mut_ptr(),
            null_mut(),
        );
        assert_eq!(r, OK);
        let r = cuLaunchKernel(
            fill,
            1,
            1,
            1,
            32,
            32,
            2,
            0,
            null_mut(),
            args.as_mut_ptr(),
            null_mut(),
        );
        assert_eq!(r, INVALID_VALUE);
        let stale: CUstream = ptr::without_provenance_mut(0x9990);
        let r = cuLaunchKernel(
            fill,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            stale,
            args.as_mut_ptr(),
            null_mut(),
        );
        assert_eq!(r, INVALID_HANDLE);
    }
    let mut out = [0u32; 16];
    assert_eq!(dtoh(&mut out, d), OK);
    assert_eq!(out, [1u32; 16]);
}

#[test]
fn param_info_layouts() {
    let _g = setup();
    primary(0);
    let m = load(MODULE).expect("module loads");
    for (name, want) in [
        (c"vector_add", &[(0, 8), (8, 8), (16, 8), (24, 4)][..]),
        (c"saxpy", &[(0, 4), (8, 8), (16, 8), (24, 4)]),
        (c"fill_u32", &[(0, 8), (8, 4), (12, 4)]),
    ] {
        let f = function(m, name).expect("function");
        for (i, &(o, s)) in want.iter().enumerate() {
            let (mut off, mut size) = (99, 99);
            // SAFETY: valid out-pointers.
            assert_eq!(unsafe { cuFuncGetParamInfo(f, i, &mut off, &mut size) }, OK);
            assert_eq!((off, size), (o, s), "{name:?} parameter {i}");
        }
        let mut off = 0;
        // SAFETY: valid out-pointer.
        let past = unsafe { cuFuncGetParamInfo(f, want.len(), &mut off, null_mut()) };
        assert_eq!(past, INVALID_VALUE);
    }
    let bogus: CUfunction = ptr::without_provenance_mut(0x5550);
    let mut off = 0;
    // SAFETY: valid out-pointer.
    let r = unsafe { cuFuncGetParamInfo(bogus, 0, &mut off, null_mut()) };
    assert_eq!(r, INVALID_HANDLE);
}

#[test]
fn illegal_address_is_sticky() {
    let _g = setup();
    let ctx = primary(0);
    let m = load(MODULE).expect("module loads");
    let fill = function(m, c"fill_u32").expect("fill_u32");
    let mut s = null_mut();
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { cuStreamCreate(&mut s, 0) }, OK);
    let d = alloc(64);
    assert_eq!(htod(d, &[5u32; 16]), OK);

    // 17 elements into a 16-element allocation: the launch succeeds, nothing is written.
    let (mut p, mut v, mut n) = (d, 1u32, 17 as c_int);
    assert_eq!(
        launch(fill, 1, 32, &mut [arg(&mut p), arg(&mut v), arg(&mut n)]),
        OK
    );
    assert_eq!(cuCtxSynchronize(), CUresult::CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_eq!(cuCtxSynchronize(), CUresult::CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_eq!(cuStreamSynchronize(s), CUresult::CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_eq!(
        cuStreamQuery(null_mut()),
        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS
    );
    let mut out = [0u32; 16];
    assert_eq!(dtoh(&mut out, d), CUresult::CUDA_ERROR_ILLEGAL_ADDRESS);
    let mut q = 0;
    // SAFETY: valid out-pointer.
    let r = unsafe { cuMemAlloc_v2(&mut q, 4) };
    assert_eq!(r, CUresult::CUDA_ERROR_ILLEGAL_ADDRESS);

    // Resetting the primary context clears the error; the memory was never touched
    // (checked through a fresh allocation at the same budget, and through the sim tables).
    assert_eq!(cuDevicePrimaryCtxReset_v2(0), OK);
    assert_eq!(primary(0), ctx);
    assert_eq!(cuCtxSynchronize(), OK);

    // Untouched memory: a fresh run that faults on a wild pointer leaves data intact.
    let m = load(MODULE).expect("module loads");
    let fill = function(m, c"fill_u32").expect("fill_u32");
    let d = alloc(64);
    assert_eq!(htod(d, &[5u32; 16]), OK);
    let (mut p, mut v, mut n) = (d + 4, 1u32, 16 as c_int);
    assert_eq!(
        launch(fill, 1, 16, &mut [arg(&mut p), arg(&mut v), arg(&mut n)]),
        OK
    );
    assert_eq!(cuCtxSynchronize(), CUresult::CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_eq!(cuDevicePrimaryCtxReset_v2(0), OK);
    // The reset freed `d`; look at it through the tables directly.
    let sim = state::sim().expect("initialised");
    assert!(crate::memory::containing(&sim.lock(), d).is_none());

    primary(0);
    let m = load(MODULE).expect("module loads");
    let fill = function(m, c"fill_u32").expect("fill_u32");
    let d = alloc(64);
    assert_eq!(htod(d, &[5u32; 16]), OK);
    let (mut p, mut v, mut n) = (d + 2, 1u32, 4 as c_int);
    assert_eq!(
        launch(fill, 1, 4, &mut [arg(&mut p), arg(&mut v), arg(&mut n)]),
        OK
    );
    assert_eq!(cuCtxSynchronize(), CUresult::CUDA_ERROR_MISALIGNED_ADDRESS);
    let sim = state::sim().expect("initialised");
    let st = sim.lock();
    let base = crate::memory::range(&st, d, 64).expect("live");
    let mut seen = [0u32; 16];
    // SAFETY: `base` points to 64 live bytes; the state lock is held.
    unsafe { ptr::copy_nonoverlapping(base.cast::<u32>(), seen.as_mut_ptr(), 16) };
    assert_eq!(seen, [5u32; 16]);
}

#[test]
fn load_data_ex_writes_the_error_log() {
    let _g = setup();
    primary(0);
    let mut log = [0 as c_char; 256];
    let mut opts = [
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    let mut vals: [*mut c_void; 2] = [
        log.as_mut_ptr().cast(),
        ptr::without_provenance_mut(log.len()),
    ];
    let mut m = null_mut();
    // SAFETY: two valid options; the log buffer holds 256 bytes.
    let r = unsafe {
        cuModuleLoadDataEx(
            &mut m,
            c"\x7fELF".as_ptr().cast(),
            2,
            opts.as_mut_ptr(),
            vals.as_mut_ptr(),
        )
    };
    assert_eq!(r, CUresult::CUDA_ERROR_INVALID_IMAGE);
    // SAFETY: the log is NUL-terminated.
    let text = unsafe { CStr::from_ptr(log.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    assert!(
        text.starts_with("vgpu-sim: not a vgpu-sim module"),
        "{text}"
    );
    assert_eq!(vals[1].addr(), text.len() + 1);
    // SAFETY: as above, with a valid image.
    let r = unsafe {
        cuModuleLoadDataEx(
            &mut m,
            MODULE.as_ptr().cast(),
            2,
            opts.as_mut_ptr(),
            vals.as_mut_ptr(),
        )
    };
    assert_eq!(r, OK);
    assert!(!m.is_null());
}

#[test]
fn error_names_and_strings() {
    let _g = setup();
    let mut s: *const c_char = ptr::dangling();
    // SAFETY: valid out-pointers; returned strings are static.
    unsafe {
        assert_eq!(cuGetErrorName(INVALID_VALUE, &mut s), OK);
        assert_eq!(CStr::from_ptr(s), c"CUDA_ERROR_INVALID_VALUE");
        assert_eq!(cuGetErrorString(INVALID_VALUE, &mut s), OK);
        assert_eq!(CStr::from_ptr(s), c"invalid argument");
        assert_eq!(
            cuGetErrorString(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS, &mut s),
            OK
        );
        assert_eq!(
            CStr::from_ptr(s),
            c"an illegal memory access was encountered"
        );
        assert_eq!(cuGetErrorName(CUresult::CUDA_SUCCESS, &mut s), OK);
        assert_eq!(CStr::from_ptr(s), c"CUDA_SUCCESS");
        assert_eq!(cuGetErrorName(CUresult(4242), &mut s), INVALID_VALUE);
        assert!(s.is_null());
        s = ptr::dangling();
        assert_eq!(cuGetErrorString(CUresult(4242), &mut s), INVALID_VALUE);
        assert!(s.is_null());
        assert_eq!(cuGetErrorName(INVALID_VALUE, null_mut()), INVALID_VALUE);
    }
    // Every named code agrees with the generated constants.
    for (code, name) in [
        (
            CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            c"CUDA_ERROR_OUT_OF_MEMORY",
        ),
        (
            CUresult::CUDA_ERROR_NOT_INITIALIZED,
            c"CUDA_ERROR_NOT_INITIALIZED",
        ),
        (
            CUresult::CUDA_ERROR_INVALID_DEVICE,
            c"CUDA_ERROR_INVALID_DEVICE",
        ),
        (
            CUresult::CUDA_ERROR_INVALID_IMAGE,
            c"CUDA_ERROR_INVALID_IMAGE",
        ),
        (INVALID_CONTEXT, c"CUDA_ERROR_INVALID_CONTEXT"),
        (INVALID_HANDLE, c"CUDA_ERROR_INVALID_HANDLE"),
        (CUresult::CUDA_ERROR_NOT_FOUND, c"CUDA_ERROR_NOT_FOUND"),
        (CUresult::CUDA_ERROR_NOT_READY, c"CUDA_ERROR_NOT_READY"),
        (
            CUresult::CUDA_ERROR_MISALIGNED_ADDRESS,
            c"CUDA_ERROR_MISALIGNED_ADDRESS",
        ),
        (
            CUresult::CUDA_ERROR_UNSUPPORTED_LIMIT,
            c"CUDA_ERROR_UNSUPPORTED_LIMIT",
        ),
        (
            CUresult::CUDA_ERROR_NOT_SUPPORTED,
            c"CUDA_ERROR_NOT_SUPPORTED",
        ),
        (CUresult::CUDA_ERROR_UNKNOWN, c"CUDA_ERROR_UNKNOWN"),
    ] {
        assert_eq!(vgpu_abi::errors::name(code), Some(name));
    }
}

#[test]
fn panics_become_unknown() {
    let r = crate::ffi::run("test", || panic!("boom"));
    assert_eq!(r, CUresult::CUDA_ERROR_UNKNOWN);
}

#[test]
fn exports_are_driver_symbols() {
    let all: Vec<&str> = HAND_EXPORTS
        .iter()
        .chain(crate::exports::generated::EXPORTS)
        .copied()
        .collect();
    for name in &all {
        let desc = vgpu_abi::find(name).unwrap_or_else(|| panic!("{name} is not a driver export"));
        assert!(desc.signature_known, "{name}");
    }
    let mut unique = all.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), all.len(), "an export is listed twice");
    // Every remoting-table call has an export here.
    let table = vgpu_abi::remote::CALLS.len();
    assert_eq!(crate::exports::generated::EXPORTS.len(), table);
}

/// Host callbacks run at once, in stream order, with their data; the stream
/// callback gets the stream and `CUDA_SUCCESS`; bad arguments are refused.
#[test]
fn host_callbacks_run_in_stream_order() {
    unsafe extern "C" fn push(data: *mut c_void) {
        // SAFETY: the test passes a live `Vec<usize>` slot and its value.
        unsafe { (*data.cast::<Vec<usize>>()).push(1) };
    }
    unsafe extern "C" fn stream_cb(s: CUstream, status: CUresult, data: *mut c_void) {
        // SAFETY: as for `push`.
        unsafe { (*data.cast::<Vec<usize>>()).push(if status == OK { s as usize } else { 0 }) };
    }
    let _g = setup();
    primary(0);
    let mut s = null_mut();
    let mut seen: Vec<usize> = Vec::new();
    let data: *mut c_void = (&raw mut seen).cast();
    // SAFETY: valid out-pointers; the callbacks' data outlives the calls.
    unsafe {
        assert_eq!(cuStreamCreate(&mut s, 0), OK);
        assert_eq!(cuLaunchHostFunc(s, Some(push), data), OK);
        assert_eq!(cuStreamAddCallback(s, Some(stream_cb), data, 0), OK);
        assert_eq!(cuLaunchHostFunc_ptsz(null_mut(), Some(push), data), OK);
        assert_eq!(
            cuStreamAddCallback_ptsz(null_mut(), Some(stream_cb), data, 0),
            OK
        );
        assert_eq!(cuLaunchHostFunc(s, None, data), INVALID_VALUE);
        assert_eq!(
            cuStreamAddCallback(s, Some(stream_cb), data, 1),
            INVALID_VALUE
        );
        let forged: CUstream = ptr::without_provenance_mut(0xdead_0000);
        assert_eq!(cuLaunchHostFunc(forged, Some(push), data), INVALID_HANDLE);
        assert_eq!(cuStreamDestroy_v2(s), OK);
    }
    assert_eq!(seen, vec![1, s as usize, 1, 0]);
}
