//! Tests of the CUDA 12 entry points: libraries and kernels, attributes, occupancy,
//! `cuLaunchKernelEx`, stream-ordered allocation, 2D copies, page-locked host memory and
//! pointer attributes. They share the parent module's lock and set-up.

use std::ffi::{c_int, c_uint, c_void, CStr};
use std::ptr::{self, null, null_mut};

use super::*;

const NOT_FOUND: CUresult = CUresult::CUDA_ERROR_NOT_FOUND;
const CLUSTER: CUresult = CUresult::CUDA_ERROR_INVALID_CLUSTER_SIZE;
const TOO_LARGE: CUresult = CUresult::CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
const ALREADY: CUresult = CUresult::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
const NOT_REGISTERED: CUresult = CUresult::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
const BOGUS: usize = 0xdead_0000;

type FA = CUfunction_attribute;

fn library(image: &CStr) -> Result<CUlibrary, CUresult> {
    let mut l = null_mut();
    // SAFETY: valid out-pointer and NUL-terminated image; no options.
    let r = unsafe {
        cuLibraryLoadData(
            &mut l,
            image.as_ptr().cast(),
            null_mut(),
            null_mut(),
            0,
            null_mut(),
            null_mut(),
            0,
        )
    };
    match r {
        OK => Ok(l),
        e => Err(e),
    }
}

fn kernel(l: CUlibrary, name: &CStr) -> Result<CUkernel, CUresult> {
    let mut k = null_mut();
    // SAFETY: valid out-pointer and NUL-terminated name.
    match unsafe { cuLibraryGetKernel(&mut k, l, name.as_ptr()) } {
        OK => Ok(k),
        e => Err(e),
    }
}

fn kernel_function(k: CUkernel) -> Result<CUfunction, CUresult> {
    let mut f = null_mut();
    // SAFETY: valid out-pointer.
    match unsafe { cuKernelGetFunction(&mut f, k) } {
        OK => Ok(f),
        e => Err(e),
    }
}

fn func_attr(f: CUfunction, a: FA) -> Result<c_int, CUresult> {
    let mut v = 0;
    // SAFETY: valid out-pointer.
    match unsafe { cuFuncGetAttribute(&mut v, a, f) } {
        OK => Ok(v),
        e => Err(e),
    }
}

/// Runs `fill_u32(p, v, n)` as `f` (a function or kernel handle) with one block of `n`.
fn fill(f: CUfunction, p: CUdeviceptr, v: u32, n: c_int) -> CUresult {
    let (mut p, mut v, mut n) = (p, v, n);
    let threads = u32::try_from(n).expect("small n");
    launch(f, 1, threads, &mut [arg(&mut p), arg(&mut v), arg(&mut n)])
}

fn read_u32(d: CUdeviceptr, n: usize) -> Vec<u32> {
    let mut out = vec![0u32; n];
    assert_eq!(dtoh(&mut out, d), OK);
    out
}

#[test]
fn libraries_kernels_and_globals() {
    let _g = setup();
    assert_eq!(
        library(c"// PTX\n.version 8.0\n").err(),
        Some(CUresult::CUDA_ERROR_INVALID_IMAGE)
    );
    // SAFETY: NULL out-pointer or image, the cases under test.
    unsafe {
        let mut l = null_mut();
        let r = cuLibraryLoadData(
            null_mut(),
            MODULE.as_ptr().cast(),
            null_mut(),
            null_mut(),
            0,
            null_mut(),
            null_mut(),
            0,
        );
        assert_eq!(r, INVALID_VALUE);
        let r = cuLibraryLoadData(
            &mut l,
            null(),
            null_mut(),
            null_mut(),
            0,
            null_mut(),
            null_mut(),
            0,
        );
        assert_eq!(r, INVALID_VALUE);
        let mut key = CUlibraryOption(7);
        let mut val: *mut c_void = null_mut();
        let r = cuLibraryLoadData(
            &mut l,
            MODULE.as_ptr().cast(),
            null_mut(),
            null_mut(),
            0,
            &mut key,
            &mut val,
            1,
        );
        assert_eq!(r, INVALID_VALUE);
    }

    // Loading needs no context; using the library in one does.
    let lib = library(MODULE).expect("library loads");
    assert_eq!(kernel(lib, c"not_builtin").err(), Some(NOT_FOUND));
    assert_eq!(kernel(lib, c"missing").err(), Some(NOT_FOUND));
    assert_eq!(
        kernel(handle_of(BOGUS), c"fill_u32").err(),
        Some(INVALID_HANDLE)
    );
    let kfill = kernel(lib, c"fill_u32").expect("fill_u32");
    assert_eq!(kernel(lib, c"fill_u32"), Ok(kfill));
    assert_eq!(kernel_function(kfill).err(), Some(INVALID_CONTEXT));

    let ctx0 = primary(0);
    let f0 = kernel_function(kfill).expect("function in ctx 0");
    assert_eq!(kernel_function(kfill), Ok(f0));
    let mut m = null_mut();
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { cuLibraryGetModule(&mut m, lib) }, OK);
    assert_eq!(function(m, c"fill_u32"), Ok(f0));
    // SAFETY: NULL out-pointer, the case under test.
    let r = unsafe { cuLibraryGetModule(null_mut(), lib) };
    assert_eq!(r, INVALID_VALUE);

    // Parameter layouts, with and without a context, through either handle.
    let (mut off, mut size) = (0, 0);
    // SAFETY: valid out-pointers, or NULL where the test wants the error.
    unsafe {
        assert_eq!(cuKernelGetParamInfo(kfill, 2, &mut off, &mut size), OK);
        assert_eq!((off, size), (12, 4));
        assert_eq!(
            cuKernelGetParamInfo(kfill, 3, &mut off, &mut size),
            INVALID_VALUE
        );
        assert_eq!(
            cuKernelGetParamInfo(kfill, 0, null_mut(), &mut size),
            INVALID_VALUE
        );
        assert_eq!(
            cuKernelGetParamInfo(handle_of(BOGUS), 0, &mut off, &mut size),
            INVALID_HANDLE
        );
        assert_eq!(cuFuncGetParamInfo(kfill.cast(), 1, &mut off, &mut size), OK);
        assert_eq!((off, size), (8, 4));
    }

    // A kernel handle launches like a function, in the current context.
    let d = alloc(64);
    assert_eq!(fill(kfill.cast(), d, 7, 16), OK);
    assert_eq!(read_u32(d, 16), vec![7; 16]);
    assert_eq!(fill(f0, d, 9, 8), OK);
    assert_eq!(read_u32(d, 16)[..9], [9, 9, 9, 9, 9, 9, 9, 9, 7]);

    // Globals are per context.
    let (mut g0, mut gsize) = (0, 0);
    // SAFETY: valid out-pointers and NUL-terminated names.
    unsafe {
        assert_eq!(
            cuLibraryGetGlobal(&mut g0, &mut gsize, lib, c"counter".as_ptr()),
            OK
        );
        assert_eq!(gsize, 4);
        assert_eq!(
            cuLibraryGetGlobal(&mut g0, null_mut(), lib, c"nope".as_ptr()),
            NOT_FOUND
        );
        assert_eq!(
            cuLibraryGetGlobal(&mut g0, null_mut(), lib, null()),
            INVALID_VALUE
        );
    }
    assert_eq!(fill(kfill.cast(), g0, 42, 1), OK);
    assert_eq!(read_u32(g0, 1), [42]);

    let ctx1 = primary(1);
    assert_ne!(ctx0, ctx1);
    let f1 = kernel_function(kfill).expect("function in ctx 1");
    assert_ne!(f0, f1);
    let mut g1 = 0;
    // SAFETY: valid out-pointer and NUL-terminated name.
    let r = unsafe { cuLibraryGetGlobal(&mut g1, null_mut(), lib, c"counter".as_ptr()) };
    assert_eq!(r, OK);
    assert_ne!(g0, g1);
    assert_eq!(read_u32(g1, 1), [0]);

    // Unloading invalidates kernels, functions and globals in every context.
    assert_eq!(cuLibraryUnload(lib), OK);
    assert_eq!(cuLibraryUnload(lib), INVALID_HANDLE);
    assert_eq!(kernel_function(kfill).err(), Some(INVALID_HANDLE));
    assert_eq!(fill(f1, g1, 1, 1), INVALID_HANDLE);
    assert_eq!(dtoh(&mut [0u32], g1), INVALID_VALUE);
    assert_eq!(cuCtxSetCurrent(ctx0), OK);
    assert_eq!(fill(f0, d, 1, 1), INVALID_HANDLE);
    assert_eq!(dtoh(&mut [0u32], g0), INVALID_VALUE);
    assert_eq!(cuCtxSynchronize(), OK);
}

#[test]
fn library_load_writes_the_jit_info_log() {
    let _g = setup();
    let mut log = [0u8; 128];
    let mut keys = [
        CUjit_option::CU_JIT_INFO_LOG_BUFFER,
        CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
    ];
    let mut vals: [*mut c_void; 2] = [log.as_mut_ptr().cast(), ptr::without_provenance_mut(128)];
    let mut l = null_mut();
    // SAFETY: valid out-pointer, image, and option arrays of 2 entries; the log buffer
    // holds 128 bytes.
    let r = unsafe {
        cuLibraryLoadData(
            &mut l,
            MODULE.as_ptr().cast(),
            keys.as_mut_ptr(),
            vals.as_mut_ptr(),
            2,
            null_mut(),
            null_mut(),
            0,
        )
    };
    assert_eq!(r, OK);
    let text = CStr::from_bytes_until_nul(&log).expect("NUL-terminated");
    assert!(
        text.to_string_lossy().contains("library loaded"),
        "{text:?}"
    );
    assert_eq!(vals[1].addr(), text.to_bytes().len() + 1);
    assert_eq!(cuLibraryUnload(l), OK);
}

#[test]
fn function_and_kernel_attributes() {
    let _g = setup();
    primary(0);
    let m = load(MODULE).expect("module loads");
    let add = function(m, c"vector_add").expect("vector_add");
    for (a, want) in [
        (FA::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024),
        (FA::CU_FUNC_ATTRIBUTE_NUM_REGS, 16),
        (FA::CU_FUNC_ATTRIBUTE_PTX_VERSION, 90),
        (FA::CU_FUNC_ATTRIBUTE_BINARY_VERSION, 90),
        (FA::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, 0),
        (
            FA::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            48 << 10,
        ),
        (FA::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, -1),
        (FA::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 0),
    ] {
        assert_eq!(func_attr(add, a), Ok(want), "{a:?}");
    }
    assert_eq!(
        func_attr(add, FA::CU_FUNC_ATTRIBUTE_MAX).err(),
        Some(INVALID_VALUE)
    );
    assert_eq!(
        func_attr(
            handle_of(BOGUS),
            FA::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
        )
        .err(),
        Some(INVALID_HANDLE)
    );
    let max_threads = FA::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
    // SAFETY: NULL out-pointer, the case under test.
    let r = unsafe { cuFuncGetAttribute(null_mut(), max_threads, add) };
    assert_eq!(r, INVALID_VALUE);

    // 64 KiB of dynamic shared memory needs the opt-in.
    let dyn_smem = FA::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
    let d = alloc(16);
    let (mut a, mut b, mut c, mut n) = (d, d, d, 4 as c_int);
    let mut args = [arg(&mut a), arg(&mut b), arg(&mut c), arg(&mut n)];
    // SAFETY: argument pointers point to live locals of the parameter types.
    let launch_64k = |args: &mut [*mut c_void]| unsafe {
        cuLaunchKernel(
            add,
            1,
            1,
            1,
            4,
            1,
            1,
            64 << 10,
            null_mut(),
            args.as_mut_ptr(),
            null_mut(),
        )
    };
    assert_eq!(launch_64k(&mut args), INVALID_VALUE);
    assert_eq!(cuFuncSetAttribute(add, dyn_smem, 64 << 10), OK);
    assert_eq!(func_attr(add, dyn_smem), Ok(64 << 10));
    assert_eq!(launch_64k(&mut args), OK);
    assert_eq!(cuFuncSetAttribute(add, dyn_smem, 232_449), INVALID_VALUE);
    assert_eq!(cuFuncSetAttribute(add, dyn_smem, -1), INVALID_VALUE);
    assert_eq!(
        cuFuncSetAttribute(add, FA::CU_FUNC_ATTRIBUTE_NUM_REGS, 8),
        INVALID_VALUE
    );
    let carveout = FA::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
    assert_eq!(cuFuncSetAttribute(add, carveout, 50), OK);
    assert_eq!(func_attr(add, carveout), Ok(50));
    assert_eq!(cuFuncSetAttribute(add, carveout, 101), INVALID_VALUE);
    assert_eq!(
        cuFuncSetAttribute(handle_of(BOGUS), carveout, 1),
        INVALID_HANDLE
    );

    // Kernel attributes are per device and shared with the kernel's functions.
    let lib = library(MODULE).expect("library loads");
    let k = kernel(lib, c"saxpy").expect("saxpy");
    let mut v = 0;
    // SAFETY: valid out-pointers, or NULL where the test wants the error.
    unsafe {
        assert_eq!(cuKernelSetAttribute(dyn_smem, 100_000, k, 0), OK);
        assert_eq!(cuKernelGetAttribute(&mut v, dyn_smem, k, 0), OK);
        assert_eq!(v, 100_000);
        assert_eq!(cuKernelGetAttribute(&mut v, dyn_smem, k, 1), OK);
        assert_eq!(v, 48 << 10);
        assert_eq!(
            cuKernelGetAttribute(&mut v, dyn_smem, k, 5),
            CUresult::CUDA_ERROR_INVALID_DEVICE
        );
        assert_eq!(
            cuKernelGetAttribute(null_mut(), dyn_smem, k, 0),
            INVALID_VALUE
        );
        assert_eq!(
            cuKernelGetAttribute(&mut v, dyn_smem, handle_of(BOGUS), 0),
            INVALID_HANDLE
        );
        assert_eq!(
            cuKernelSetAttribute(FA::CU_FUNC_ATTRIBUTE_NUM_REGS, 1, k, 0),
            INVALID_VALUE
        );
    }
    let f = kernel_function(k).expect("saxpy in ctx 0");
    assert_eq!(func_attr(f, dyn_smem), Ok(100_000));
    assert_eq!(func_attr(k.cast(), dyn_smem), Ok(100_000));
    assert_eq!(cuFuncSetAttribute(f, dyn_smem, 1000), OK);
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { cuKernelGetAttribute(&mut v, dyn_smem, k, 0) }, OK);
    assert_eq!(v, 1000);
    assert_eq!(cuLibraryUnload(lib), OK);
}

fn occupancy(f: CUfunction, block: c_int, smem: usize, flags: c_uint) -> Result<c_int, CUresult> {
    let mut n = -1;
    // SAFETY: valid out-pointer.
    let r = unsafe {
        cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&mut n, f, block, smem, flags)
    };
    match r {
        OK => Ok(n),
        e => Err(e),
    }
}

fn available_smem(f: CUfunction, blocks: c_int, block: c_int) -> Result<usize, CUresult> {
    let mut n = 0;
    // SAFETY: valid out-pointer.
    match unsafe { cuOccupancyAvailableDynamicSMemPerBlock(&mut n, f, blocks, block) } {
        OK => Ok(n),
        e => Err(e),
    }
}

/// A launch configuration over `attrs`, on the NULL stream.
fn config(grid: u32, block: u32, smem: u32, attrs: &mut [CUlaunchAttribute]) -> CUlaunchConfig {
    CUlaunchConfig {
        gridDimX: grid,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: block,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: smem,
        hStream: null_mut(),
        attrs: attrs.as_mut_ptr(),
        numAttrs: u32::try_from(attrs.len()).expect("few attributes"),
    }
}

fn attribute(id: u32) -> CUlaunchAttribute {
    // SAFETY: the attribute is plain data; all-zero is a valid value.
    let mut a: CUlaunchAttribute = unsafe { std::mem::zeroed() };
    a.id = CUlaunchAttributeID(id);
    a
}

fn cluster(x: u32, y: u32, z: u32) -> CUlaunchAttribute {
    let mut a = attribute(4);
    a.value.clusterDim.x = x;
    a.value.clusterDim.y = y;
    a.value.clusterDim.z = z;
    a
}

fn cooperative() -> CUlaunchAttribute {
    let mut a = attribute(2);
    a.value.cooperative = 1;
    a
}

#[test]
fn occupancy_model() {
    let _g = setup();
    primary(0);
    let m = load(MODULE).expect("module loads");
    let add = function(m, c"vector_add").expect("vector_add");
    assert_eq!(occupancy(add, 256, 0, 0), Ok(8));
    assert_eq!(occupancy(add, 1024, 0, 1), Ok(2));
    assert_eq!(occupancy(add, 1025, 0, 0), Ok(0));
    assert_eq!(occupancy(add, 64, 64 << 10, 0), Ok(0));
    assert_eq!(occupancy(add, 0, 0, 0).err(), Some(INVALID_VALUE));
    assert_eq!(occupancy(add, -1, 0, 0).err(), Some(INVALID_VALUE));
    assert_eq!(occupancy(add, 256, 0, 2).err(), Some(INVALID_VALUE));
    assert_eq!(
        occupancy(handle_of(BOGUS), 256, 0, 0).err(),
        Some(INVALID_HANDLE)
    );
    let mut n = 0;
    // SAFETY: valid out-pointer, or NULL where the test wants the error.
    unsafe {
        assert_eq!(
            cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut n, add, 128, 0),
            OK
        );
        assert_eq!(n, 16);
        assert_eq!(
            cuOccupancyMaxActiveBlocksPerMultiprocessor(null_mut(), add, 128, 0),
            INVALID_VALUE
        );
    }

    // Capped by the function's limit until it opts in.
    assert_eq!(available_smem(add, 2, 256), Ok(48 << 10));
    let dyn_smem = FA::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
    assert_eq!(cuFuncSetAttribute(add, dyn_smem, 232_448), OK);
    assert_eq!(available_smem(add, 2, 256), Ok(116_736 - 1024));
    assert_eq!(available_smem(add, 1, 1024), Ok(232_448));
    assert_eq!(available_smem(add, 64, 256), Ok(0));
    assert_eq!(available_smem(add, 0, 256).err(), Some(INVALID_VALUE));
    assert_eq!(occupancy(add, 64, 100 << 10, 0), Ok(2));

    // Clusters.
    let mut n = 0;
    let mut attrs = [cluster(2, 1, 1)];
    let cfg = config(4, 1024, 0, &mut attrs);
    // SAFETY: valid out-pointer and configuration, or NULL where the test wants the error.
    unsafe {
        assert_eq!(cuOccupancyMaxActiveClusters(&mut n, add, &cfg), OK);
        assert_eq!(n, 128);
        assert_eq!(
            cuOccupancyMaxActiveClusters(&mut n, add, null()),
            INVALID_VALUE
        );
        assert_eq!(
            cuOccupancyMaxActiveClusters(null_mut(), add, &cfg),
            INVALID_VALUE
        );
        let none = config(4, 1024, 0, &mut []);
        assert_eq!(cuOccupancyMaxActiveClusters(&mut n, add, &none), CLUSTER);
        let mut big = [cluster(16, 1, 1)];
        let cfg = config(16, 1024, 0, &mut big);
        assert_eq!(cuOccupancyMaxActiveClusters(&mut n, add, &cfg), CLUSTER);
        let non_portable = FA::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED;
        assert_eq!(cuFuncSetAttribute(add, non_portable, 1), OK);
        assert_eq!(cuOccupancyMaxActiveClusters(&mut n, add, &cfg), OK);
        assert_eq!(n, 16);
    }
}

/// `cuLaunchKernelEx` of `vector_add` over `n` elements.
fn launch_add(
    f: CUfunction,
    grid: u32,
    block: u32,
    attrs: &mut [CUlaunchAttribute],
    bufs: [CUdeviceptr; 3],
    n: c_int,
) -> CUresult {
    let cfg = config(grid, block, 0, attrs);
    let [mut a, mut b, mut c] = bufs;
    let mut n = n;
    let mut args = [arg(&mut a), arg(&mut b), arg(&mut c), arg(&mut n)];
    // SAFETY: valid configuration; argument pointers point to live locals.
    unsafe { cuLaunchKernelEx(&cfg, f, args.as_mut_ptr(), null_mut()) }
}

#[test]
fn launch_kernel_ex_attributes() {
    let _g = setup();
    primary(0);
    let m = load(MODULE).expect("module loads");
    let add = function(m, c"vector_add").expect("vector_add");
    let n = 4096usize;
    let (da, db, dc) = (alloc(4 * n), alloc(4 * n), alloc(4 * n));
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    assert_eq!(htod(da, &a), OK);
    assert_eq!(htod(db, &a), OK);
    let bufs = [da, db, dc];
    let nn = c_int::try_from(n).expect("fits");

    assert_eq!(launch_add(add, 16, 256, &mut [], bufs, nn), OK);
    let mut c = vec![0f32; n];
    assert_eq!(dtoh(&mut c, dc), OK);
    assert!(c.iter().enumerate().all(|(i, &v)| v == 2.0 * i as f32));

    // Cooperative: at most 8 blocks of 256 per SM, 132 SMs.
    assert_eq!(launch_add(add, 16, 256, &mut [cooperative()], bufs, nn), OK);
    assert_eq!(
        launch_add(add, 1056, 256, &mut [cooperative()], bufs, nn),
        OK
    );
    assert_eq!(
        launch_add(add, 1057, 256, &mut [cooperative()], bufs, nn),
        TOO_LARGE
    );
    let mut off = cooperative();
    off.value.cooperative = 0;
    assert_eq!(launch_add(add, 1057, 256, &mut [off], bufs, nn), OK);
    let (mut pa, mut pb, mut pc, mut pn) = (da, db, dc, nn);
    let mut args = [arg(&mut pa), arg(&mut pb), arg(&mut pc), arg(&mut pn)];
    // SAFETY: argument pointers point to live locals of the parameter types.
    unsafe {
        assert_eq!(
            cuLaunchCooperativeKernel(add, 16, 1, 1, 256, 1, 1, 0, null_mut(), args.as_mut_ptr()),
            OK
        );
        assert_eq!(
            cuLaunchCooperativeKernel(add, 2000, 1, 1, 256, 1, 1, 0, null_mut(), args.as_mut_ptr()),
            TOO_LARGE
        );
    }

    // Clusters.
    assert_eq!(
        launch_add(add, 4, 256, &mut [cluster(2, 1, 1)], bufs, nn),
        OK
    );
    assert_eq!(
        launch_add(add, 4, 256, &mut [cluster(1, 1, 1)], bufs, nn),
        OK
    );
    for bad in [
        cluster(5, 1, 1),
        cluster(0, 1, 1),
        cluster(1, 2, 1),
        cluster(16, 1, 1),
    ] {
        assert_eq!(launch_add(add, 48, 256, &mut [bad], bufs, nn), CLUSTER);
    }
    let non_portable = FA::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED;
    assert_eq!(cuFuncSetAttribute(add, non_portable, 1), OK);
    assert_eq!(
        launch_add(add, 16, 256, &mut [cluster(16, 1, 1)], bufs, nn),
        OK
    );
    assert_eq!(
        launch_add(add, 32, 256, &mut [cluster(32, 1, 1)], bufs, nn),
        CLUSTER
    );
    let width = FA::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH;
    assert_eq!(cuFuncSetAttribute(add, width, 2), OK);
    for dim in [
        FA::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
        FA::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH,
    ] {
        assert_eq!(cuFuncSetAttribute(add, dim, 1), OK);
    }
    assert_eq!(
        launch_add(add, 4, 256, &mut [cluster(4, 1, 1)], bufs, nn),
        CLUSTER
    );
    assert_eq!(
        launch_add(add, 4, 256, &mut [cluster(2, 1, 1)], bufs, nn),
        OK
    );
    // Cooperative and cluster together; priority and ignored attributes.
    let mut prio = attribute(8);
    prio.value.priority = -3;
    let mut attrs = [cooperative(), cluster(2, 1, 1), prio, attribute(0)];
    assert_eq!(launch_add(add, 8, 256, &mut attrs, bufs, nn), OK);

    // Bad configurations.
    assert_eq!(
        launch_add(add, 4, 256, &mut [attribute(15)], bufs, nn),
        INVALID_VALUE
    );
    assert_eq!(
        launch_add(add, 4, 256, &mut [attribute(17)], bufs, nn),
        INVALID_VALUE
    );
    assert_eq!(
        launch_add(add, 4, 256, &mut [attribute(13)], bufs, nn),
        INVALID_VALUE
    );
    assert_eq!(launch_add(add, 0, 256, &mut [], bufs, nn), INVALID_VALUE);
    assert_eq!(launch_add(add, 4, 2048, &mut [], bufs, nn), INVALID_VALUE);
    assert_eq!(
        launch_add(handle_of(BOGUS), 4, 256, &mut [], bufs, nn),
        INVALID_HANDLE
    );
    let mut cfg = config(1, 1, 0, &mut []);
    cfg.numAttrs = 1;
    let (mut pa, mut pb, mut pc, mut pn) = (da, db, dc, nn);
    let mut args = [arg(&mut pa), arg(&mut pb), arg(&mut pc), arg(&mut pn)];
    let mut extra: [*mut c_void; 1] = [null_mut()];
    // SAFETY: NULL or inconsistent configurations, the cases under test; otherwise valid.
    unsafe {
        cfg.attrs = null_mut();
        assert_eq!(
            cuLaunchKernelEx(&cfg, add, args.as_mut_ptr(), null_mut()),
            INVALID_VALUE
        );
        assert_eq!(
            cuLaunchKernelEx(null(), add, args.as_mut_ptr(), null_mut()),
            INVALID_VALUE
        );
        cfg.numAttrs = 0;
        assert_eq!(
            cuLaunchKernelEx(&cfg, add, args.as_mut_ptr(), extra.as_mut_ptr()),
            INVALID_VALUE
        );
        let mut bad_stream = cfg;
        bad_stream.hStream = handle_of(BOGUS);
        assert_eq!(
            cuLaunchKernelEx(&bad_stream, add, args.as_mut_ptr(), null_mut()),
            INVALID_HANDLE
        );
    }

    // A launch-completion event is recorded on the launch's stream.
    let (mut start, mut done) = (null_mut(), null_mut());
    // SAFETY: valid out-pointers and handles.
    unsafe {
        assert_eq!(cuEventCreate(&mut start, 0), OK);
        assert_eq!(cuEventCreate(&mut done, 0), OK);
        assert_eq!(cuEventRecord(start, null_mut()), OK);
    }
    let mut ev = attribute(12);
    ev.value.launchCompletionEvent.event = done;
    assert_eq!(launch_add(add, 4, 256, &mut [ev], bufs, nn), OK);
    let mut ms = -1.0f32;
    // SAFETY: valid out-pointer and live events.
    assert_eq!(unsafe { cuEventElapsedTime(&mut ms, start, done) }, OK);
    assert!(ms >= 0.0);
    ev.value.launchCompletionEvent.event = handle_of(BOGUS);
    assert_eq!(launch_add(add, 4, 256, &mut [ev], bufs, nn), INVALID_HANDLE);

    // A library kernel through cuLaunchKernelEx.
    let lib = library(MODULE).expect("library loads");
    let k = kernel(lib, c"vector_add").expect("vector_add");
    assert_eq!(htod(dc, &vec![0f32; n]), OK);
    assert_eq!(
        launch_add(k.cast(), 16, 256, &mut [cluster(2, 1, 1)], bufs, nn),
        OK
    );
    assert_eq!(dtoh(&mut c, dc), OK);
    assert!(c.iter().enumerate().all(|(i, &v)| v == 2.0 * i as f32));
    assert_eq!(cuLibraryUnload(lib), OK);
    assert_eq!(cuCtxSynchronize(), OK);
}

#[test]
fn stream_ordered_allocation_and_capture() {
    let _g = setup();
    primary(0);
    let mut s = null_mut();
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { cuStreamCreate(&mut s, 0) }, OK);
    let (free0, _) = mem_info();
    let mut d = 0;
    // SAFETY: valid out-pointers, or NULL where the test wants the error.
    unsafe {
        assert_eq!(cuMemAllocAsync(&mut d, 1 << 20, s), OK);
        assert_eq!(cuMemAllocAsync(null_mut(), 64, s), INVALID_VALUE);
        let mut e = 0;
        assert_eq!(cuMemAllocAsync(&mut e, 0, s), INVALID_VALUE);
        assert_eq!(
            cuMemAllocAsync(&mut e, 64, handle_of(BOGUS)),
            INVALID_HANDLE
        );
        assert_eq!(
            cuMemAllocAsync(&mut e, 1 << 40, s),
            CUresult::CUDA_ERROR_OUT_OF_MEMORY
        );
    }
    assert_eq!(d % 256, 0);
    assert_eq!(mem_info().0, free0 - (1 << 20));
    assert_eq!(htod(d, &[1u32, 2, 3]), OK);
    assert_eq!(read_u32(d, 3), [1, 2, 3]);
    assert_eq!(cuMemFreeAsync(d, handle_of(BOGUS)), INVALID_HANDLE);
    assert_eq!(cuMemFreeAsync(d + 4, s), INVALID_VALUE);
    assert_eq!(cuMemFreeAsync(d, s), OK);
    assert_eq!(mem_info().0, free0);
    assert_eq!(cuMemFreeAsync(d, s), INVALID_VALUE);
    assert_eq!(cuMemFreeAsync(0, s), INVALID_VALUE);
    // A plain allocation may be freed in stream order too; the NULL stream works.
    let p = alloc(64);
    assert_eq!(cuMemFreeAsync(p, null_mut()), OK);

    let mut status = CUstreamCaptureStatus(7);
    // SAFETY: valid out-pointer, or NULL where the test wants the error.
    unsafe {
        assert_eq!(cuStreamIsCapturing(s, &mut status), OK);
        assert_eq!(status, CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE);
        status = CUstreamCaptureStatus(7);
        assert_eq!(cuStreamIsCapturing(null_mut(), &mut status), OK);
        assert_eq!(status, CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE);
        assert_eq!(cuStreamIsCapturing(s, null_mut()), INVALID_VALUE);
        assert_eq!(
            cuStreamIsCapturing(handle_of(BOGUS), &mut status),
            INVALID_HANDLE
        );
    }

    let mut mode = CUmoduleLoadingMode(0);
    // SAFETY: valid out-pointer, or NULL where the test wants the error.
    unsafe {
        assert_eq!(cuModuleGetLoadingMode(&mut mode), OK);
        assert_eq!(cuModuleGetLoadingMode(null_mut()), INVALID_VALUE);
    }
    let env = std::env::var(crate::loading::VARIABLE).ok();
    assert_eq!(mode, crate::loading::parse(env.as_deref()));
}

/// A 2D copy descriptor with both sides of type `kind` and every other field zero.
fn copy2d(w: usize, h: usize) -> CUDA_MEMCPY2D {
    // SAFETY: the descriptor is plain data; all-zero is a valid value.
    let mut c: CUDA_MEMCPY2D = unsafe { std::mem::zeroed() };
    c.WidthInBytes = w;
    c.Height = h;
    c
}

fn memcpy2d(c: &CUDA_MEMCPY2D) -> CUresult {
    // SAFETY: the descriptor's host sides hold their regions (or are the case under test).
    unsafe { cuMemcpy2D_v2(c) }
}

const HOST: CUmemorytype = CUmemorytype::CU_MEMORYTYPE_HOST;
const DEVICE: CUmemorytype = CUmemorytype::CU_MEMORYTYPE_DEVICE;
const UNIFIED: CUmemorytype = CUmemorytype::CU_MEMORYTYPE_UNIFIED;

#[test]
fn memcpy_2d_bounds() {
    let _g = setup();
    primary(0);
    // A 6x4 host image (pitch 6) into columns 2..6 of rows 1..5 of a 16x8 device image.
    let src: Vec<u8> = (0..24).collect();
    let d = alloc(16 * 8);
    assert_eq!(cuMemsetD8_v2(d, 0xEE, 16 * 8), OK);
    let mut c = copy2d(4, 4);
    (c.srcMemoryType, c.srcHost, c.srcPitch, c.srcXInBytes) = (HOST, src.as_ptr().cast(), 6, 1);
    (
        c.dstMemoryType,
        c.dstDevice,
        c.dstPitch,
        c.dstXInBytes,
        c.dstY,
    ) = (DEVICE, d, 16, 2, 1);
    assert_eq!(memcpy2d(&c), OK);
    let mut img = vec![0u8; 128];
    assert_eq!(dtoh(&mut img, d), OK);
    for (i, &b) in img.iter().enumerate() {
        let (row, col) = (i / 16, i % 16);
        let want = if (1..5).contains(&row) && (2..6).contains(&col) {
            u8::try_from((row - 1) * 6 + 1 + (col - 2)).expect("small")
        } else {
            0xEE
        };
        assert_eq!(b, want, "row {row} col {col}");
    }

    // Device to device (unified on both sides), then device to host.
    let d2 = alloc(64);
    let mut c2 = copy2d(4, 4);
    (
        c2.srcMemoryType,
        c2.srcDevice,
        c2.srcPitch,
        c2.srcXInBytes,
        c2.srcY,
    ) = (UNIFIED, d, 16, 2, 1);
    (c2.dstMemoryType, c2.dstDevice, c2.dstPitch) = (UNIFIED, d2, 4);
    assert_eq!(memcpy2d(&c2), OK);
    let mut back = [0u8; 32];
    let mut c3 = copy2d(4, 4);
    (c3.srcMemoryType, c3.srcDevice, c3.srcPitch) = (DEVICE, d2, 4);
    (c3.dstMemoryType, c3.dstHost, c3.dstPitch) = (HOST, back.as_mut_ptr().cast(), 8);
    // SAFETY: valid descriptor; `back` holds 4 rows of pitch 8.
    assert_eq!(unsafe { cuMemcpy2DAsync_v2(&c3, null_mut()) }, OK);
    for row in 0..4 {
        let want: Vec<u8> = (0..4)
            .map(|x| u8::try_from(row * 6 + 1 + x).expect("small"))
            .collect();
        assert_eq!(back[row * 8..row * 8 + 4], want[..], "row {row}");
        assert_eq!(back[row * 8 + 4..row * 8 + 8], [0; 4]);
    }

    // Every bound is checked and nothing moves when one fails.
    assert_eq!(cuMemsetD8_v2(d2, 0x11, 64), OK);
    let mut bad = c2;
    bad.Height = 17; // 17 rows of pitch 4 = 68 > 64 bytes of d2
    assert_eq!(memcpy2d(&bad), INVALID_VALUE);
    let mut bad = c2;
    bad.dstXInBytes = 1; // 1 + 4 > pitch 4
    assert_eq!(memcpy2d(&bad), INVALID_VALUE);
    let mut bad = c2;
    bad.srcY = 5; // rows 5..9 of a 8-row image
    assert_eq!(memcpy2d(&bad), INVALID_VALUE);
    let mut bad = c2;
    bad.srcY = usize::MAX / 8;
    assert_eq!(memcpy2d(&bad), INVALID_VALUE);
    let mut bad = c2;
    bad.dstPitch = 1 << 31;
    assert_eq!(memcpy2d(&bad), INVALID_VALUE);
    let mut bad = c2;
    bad.srcMemoryType = CUmemorytype::CU_MEMORYTYPE_ARRAY;
    assert_eq!(memcpy2d(&bad), INVALID_VALUE);
    let mut bad = c2;
    bad.dstMemoryType = CUmemorytype(0);
    assert_eq!(memcpy2d(&bad), INVALID_VALUE);
    let mut bad = c3;
    bad.dstHost = null_mut();
    assert_eq!(memcpy2d(&bad), INVALID_VALUE);
    let mut bad = c3;
    bad.srcDevice = d2 + 64;
    assert_eq!(memcpy2d(&bad), INVALID_VALUE);
    assert_eq!(read_u32(d2, 16), vec![0x1111_1111; 16]);
    // Empty copies succeed; a single row ignores the pitch.
    let mut empty = c2;
    empty.WidthInBytes = 0;
    assert_eq!(memcpy2d(&empty), OK);
    let mut one = c2;
    (one.Height, one.srcPitch, one.dstPitch) = (1, 0, 0);
    assert_eq!(memcpy2d(&one), OK);
    // SAFETY: NULL descriptor or unknown stream, the cases under test.
    unsafe {
        assert_eq!(cuMemcpy2D_v2(null()), INVALID_VALUE);
        assert_eq!(cuMemcpy2DAsync_v2(&c2, handle_of(BOGUS)), INVALID_HANDLE);
    }
    // Without a context.
    assert_eq!(cuCtxSetCurrent(null_mut()), OK);
    assert_eq!(memcpy2d(&c2), INVALID_CONTEXT);
}

#[test]
fn registered_and_allocated_host_memory() {
    let _g = setup();
    let ctx = primary(0);
    let m = load(MODULE).expect("module loads");
    let fillf = function(m, c"fill_u32").expect("fill_u32");
    let mut host = vec![0u32; 1024];
    let p: *mut c_void = host.as_mut_ptr().cast();
    let bytes = 4096;
    // SAFETY: `host` outlives its registration; NULL or bad arguments are the cases under
    // test.
    unsafe {
        assert_eq!(cuMemHostRegister_v2(p, bytes, 0x2), OK);
        assert_eq!(cuMemHostRegister_v2(p, bytes, 0x2), ALREADY);
        assert_eq!(cuMemHostRegister_v2(p.byte_add(4000), 8, 0), ALREADY);
        assert_eq!(cuMemHostRegister_v2(null_mut(), 64, 0), INVALID_VALUE);
        assert_eq!(cuMemHostRegister_v2(p, 0, 0), INVALID_VALUE);
        assert_eq!(cuMemHostRegister_v2(p, bytes, 0x10), INVALID_VALUE);
        assert_eq!(cuMemHostRegister_v2(p, bytes, 0x4), INVALID_VALUE);
    }
    let mut dp = 0;
    // SAFETY: valid out-pointer, or bad arguments where the test wants the error.
    unsafe {
        assert_eq!(cuMemHostGetDevicePointer_v2(&mut dp, p.byte_add(16), 0), OK);
        assert_eq!(dp, p.addr() as u64 + 16);
        assert_eq!(cuMemHostGetDevicePointer_v2(&mut dp, p, 0), OK);
        assert_eq!(cuMemHostGetDevicePointer_v2(&mut dp, p, 1), INVALID_VALUE);
        assert_eq!(
            cuMemHostGetDevicePointer_v2(null_mut(), p, 0),
            INVALID_VALUE
        );
        let other = [0u8; 8];
        assert_eq!(
            cuMemHostGetDevicePointer_v2(&mut dp, other.as_ptr().cast_mut().cast(), 0),
            INVALID_VALUE
        );
        assert_eq!(cuMemHostGetDevicePointer_v2(&mut dp, p, 0), OK);
    }

    // Kernels, memsets and device copies reach the registered pages at the same address.
    assert_eq!(fill(fillf, dp, 0xAB, 16), OK);
    assert_eq!(cuCtxSynchronize(), OK);
    let mut want = vec![0xABu32; 16];
    want.push(0);
    assert_eq!(host[..17], want[..]);
    assert_eq!(cuMemsetD32_v2(dp + 64, 5, 4), OK);
    assert_eq!(host[16..20], [5; 4]);
    let d = alloc(64);
    assert_eq!(cuMemcpyDtoD_v2(d, dp, 64), OK);
    assert_eq!(read_u32(d, 16), vec![0xAB; 16]);
    assert_eq!(cuMemcpyDtoD_v2(dp + 4092, d, 8), INVALID_VALUE);
    // A kernel reaching past the range faults.
    assert_eq!(fill(fillf, dp + 4000, 1, 32), OK);
    assert_eq!(cuCtxSynchronize(), CUresult::CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_eq!(cuDevicePrimaryCtxReset_v2(0), OK);
    assert_eq!(primary(0), ctx);
    // The reset dropped the registration.
    // SAFETY: valid out-pointer.
    let r = unsafe { cuMemHostGetDevicePointer_v2(&mut dp, p, 0) };
    assert_eq!(r, INVALID_VALUE);

    // SAFETY: `host` outlives its registration.
    unsafe {
        assert_eq!(cuMemHostRegister_v2(p, bytes, 0x1 | 0x8), OK);
        let mut registered = 0;
        assert_eq!(cuMemHostGetFlags(&mut registered, p.byte_add(8)), OK);
        assert_eq!(registered, 0x1 | 0x2, "PORTABLE | DEVICEMAP");
        assert_eq!(cuMemHostUnregister(p.byte_add(4)), INVALID_VALUE);
        assert_eq!(cuMemHostUnregister(p), OK);
        assert_eq!(cuMemHostUnregister(p), NOT_REGISTERED);
    }
    assert_eq!(cuMemsetD32_v2(p.addr() as u64, 5, 4), INVALID_VALUE);

    // Allocated page-locked memory.
    let (mut h, mut h2) = (null_mut(), null_mut());
    let mut flags = 0;
    // SAFETY: valid out-pointers, or bad arguments where the test wants the error.
    unsafe {
        assert_eq!(cuMemHostAlloc(&mut h, 10_000, 0x2 | 0x1), OK);
        assert_eq!(h.addr() % 4096, 0);
        assert_eq!(cuMemHostGetFlags(&mut flags, h.byte_add(9_999)), OK);
        assert_eq!(flags, 3);
        assert_eq!(cuMemAllocHost_v2(&mut h2, 100), OK);
        assert_eq!(cuMemHostGetFlags(&mut flags, h2), OK);
        assert_eq!(flags, 0);
        assert_eq!(cuMemHostGetFlags(&mut flags, p), INVALID_VALUE);
        assert_eq!(cuMemHostGetFlags(null_mut(), h), INVALID_VALUE);
        assert_eq!(cuMemHostAlloc(&mut h, 64, 0x8), INVALID_VALUE);
        assert_eq!(cuMemHostAlloc(&mut h2, 0, 0), INVALID_VALUE);
        assert_eq!(cuMemHostAlloc(null_mut(), 64, 0), INVALID_VALUE);
        assert_eq!(cuMemHostUnregister(h), INVALID_VALUE);
        assert_eq!(cuMemHostRegister_v2(h, 4096, 0), INVALID_VALUE);
        assert_eq!(cuMemHostGetDevicePointer_v2(&mut dp, h, 0), OK);
        assert_eq!(dp, h.addr() as u64);
    }
    assert_eq!(htod(dp, &[9u32; 4]), OK);
    // SAFETY: `h` holds 10000 zeroed bytes, of which the first 16 were just written.
    let seen = unsafe { std::slice::from_raw_parts(h.cast::<u32>(), 5) };
    assert_eq!(seen, [9, 9, 9, 9, 0]);
    assert_eq!(cuMemFreeHost(h), OK);
    assert_eq!(cuMemFreeHost(h), INVALID_VALUE);
    assert_eq!(cuMemFreeHost(p), INVALID_VALUE);

    // Destroying a context drops its page-locked memory.
    let mut own = null_mut();
    // SAFETY: valid out-pointer; `host` outlives its registration.
    unsafe {
        assert_eq!(cuCtxCreate_v2(&mut own, 0, 0), OK);
        assert_eq!(cuMemHostRegister_v2(p, bytes, 0), OK);
    }
    assert_eq!(cuCtxDestroy_v2(own), OK);
    assert_eq!(cuCtxSetCurrent(ctx), OK);
    // SAFETY: `host` outlives its registration.
    unsafe {
        assert_eq!(cuMemHostRegister_v2(p, bytes, 0), OK);
        assert_eq!(cuMemHostUnregister(p), OK);
    }
    assert_eq!(cuCtxSetCurrent(null_mut()), OK);
    // SAFETY: `host` outlives any registration.
    let r = unsafe { cuMemHostRegister_v2(p, bytes, 0) };
    assert_eq!(r, INVALID_CONTEXT);
}

fn pointer_attr<T: Default>(attr: u32, ptr: CUdeviceptr) -> Result<T, CUresult> {
    let mut v = T::default();
    // SAFETY: `v` has the attribute's value type, as the caller picks it.
    let r = unsafe {
        cuPointerGetAttribute(ptr::from_mut(&mut v).cast(), CUpointer_attribute(attr), ptr)
    };
    match r {
        OK => Ok(v),
        e => Err(e),
    }
}

#[test]
fn pointer_attributes() {
    let _g = setup();
    let ctx = primary(1);
    let d = alloc(1000);
    let d2 = alloc(64);
    assert_eq!(pointer_attr::<usize>(1, d + 10), Ok(ctx.addr()));
    assert_eq!(pointer_attr::<u32>(2, d + 10), Ok(2));
    assert_eq!(pointer_attr::<u64>(3, d + 10), Ok(d + 10));
    assert_eq!(pointer_attr::<u64>(4, d).err(), Some(INVALID_VALUE));
    assert_eq!(pointer_attr::<i32>(9, d + 999), Ok(1));
    assert_eq!(pointer_attr::<u32>(10, d), Ok(1));
    assert_eq!(pointer_attr::<u64>(11, d + 999), Ok(d));
    assert_eq!(pointer_attr::<u64>(12, d + 999), Ok(1000));
    assert_eq!(pointer_attr::<u32>(13, d), Ok(1));
    assert_eq!(pointer_attr::<u32>(16, d), Ok(3));
    assert_eq!(pointer_attr::<u64>(17, d), Ok(0));
    assert_eq!(pointer_attr::<u32>(8, d), Ok(0));
    let id = pointer_attr::<u64>(7, d).expect("buffer id");
    assert_eq!(pointer_attr::<u64>(7, d + 5), Ok(id));
    assert_ne!(pointer_attr::<u64>(7, d2), Ok(id));
    assert_eq!(pointer_attr::<u64>(3, d + 1000).err(), Some(INVALID_VALUE));
    assert_eq!(pointer_attr::<u64>(3, 0).err(), Some(INVALID_VALUE));
    assert_eq!(pointer_attr::<u64>(0, d).err(), Some(INVALID_VALUE));
    assert_eq!(pointer_attr::<u64>(22, d).err(), Some(INVALID_VALUE));
    // SAFETY: NULL data, the case under test.
    let r = unsafe { cuPointerGetAttribute(null_mut(), CUpointer_attribute(2), d) };
    assert_eq!(r, INVALID_VALUE);

    // Stream-ordered allocations report their pool and no legacy IPC.
    let mut a = 0;
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { cuMemAllocAsync(&mut a, 256, null_mut()) }, OK);
    let pool = pointer_attr::<u64>(17, a).expect("pool");
    assert_ne!(pool, 0);
    assert_eq!(pointer_attr::<u32>(10, a), Ok(0));
    assert_eq!(cuMemFreeAsync(a, null_mut()), OK);

    // Registered host memory.
    let mut host = vec![0u8; 256];
    let hp = host.as_mut_ptr();
    let h = hp.addr() as u64;
    // SAFETY: `host` outlives its registration.
    assert_eq!(unsafe { cuMemHostRegister_v2(hp.cast(), 256, 0) }, OK);
    assert_eq!(pointer_attr::<u32>(2, h + 8), Ok(1));
    assert_eq!(pointer_attr::<u64>(4, h + 8), Ok(h + 8));
    assert_eq!(pointer_attr::<u64>(3, h + 8), Ok(h + 8));
    assert_eq!(pointer_attr::<i32>(9, h), Ok(1));
    assert_eq!(pointer_attr::<usize>(1, h), Ok(ctx.addr()));
    assert_eq!(pointer_attr::<u64>(12, h + 8), Ok(256));

    // The plural form: defaults for what does not apply, and success.
    let ids = [1u32, 2, 3, 9, 12, 4];
    let mut attrs: Vec<CUpointer_attribute> = ids.iter().map(|&a| CUpointer_attribute(a)).collect();
    let (mut c, mut t, mut dptr, mut ord, mut size, mut hptr) =
        (1usize, 9u32, 1u64, 9i32, 1u64, 1u64);
    let mut data: [*mut c_void; 6] = [
        ptr::from_mut(&mut c).cast(),
        ptr::from_mut(&mut t).cast(),
        ptr::from_mut(&mut dptr).cast(),
        ptr::from_mut(&mut ord).cast(),
        ptr::from_mut(&mut size).cast(),
        ptr::from_mut(&mut hptr).cast(),
    ];
    // SAFETY: 6 attributes, 6 data pointers of the attributes' value types.
    let r = unsafe { cuPointerGetAttributes(6, attrs.as_mut_ptr(), data.as_mut_ptr(), 0x1000) };
    assert_eq!(r, OK);
    assert_eq!((c, t, dptr, ord, size, hptr), (0, 0, 0, -2, 0, 0));
    // SAFETY: as above.
    let r = unsafe { cuPointerGetAttributes(6, attrs.as_mut_ptr(), data.as_mut_ptr(), d + 1) };
    assert_eq!(r, OK);
    assert_eq!(
        (c, t, dptr, ord, size, hptr),
        (ctx.addr(), 2, d + 1, 1, 1000, 0)
    );
    // SAFETY: as above.
    let r = unsafe { cuPointerGetAttributes(6, attrs.as_mut_ptr(), data.as_mut_ptr(), h) };
    assert_eq!(r, OK);
    assert_eq!((t, hptr, size), (1, h, 256));
    // SAFETY: bad counts, NULL arrays and bad attributes, the cases under test; NULL
    // data entries are skipped.
    unsafe {
        assert_eq!(
            cuPointerGetAttributes(0, attrs.as_mut_ptr(), data.as_mut_ptr(), d),
            INVALID_VALUE
        );
        assert_eq!(
            cuPointerGetAttributes(1, null_mut(), data.as_mut_ptr(), d),
            INVALID_VALUE
        );
        assert_eq!(
            cuPointerGetAttributes(1, attrs.as_mut_ptr(), null_mut(), d),
            INVALID_VALUE
        );
        attrs[0] = CUpointer_attribute(99);
        assert_eq!(
            cuPointerGetAttributes(1, attrs.as_mut_ptr(), data.as_mut_ptr(), d),
            INVALID_VALUE
        );
        attrs[0] = CUpointer_attribute(2);
        let mut skip: [*mut c_void; 1] = [null_mut()];
        assert_eq!(
            cuPointerGetAttributes(1, attrs.as_mut_ptr(), skip.as_mut_ptr(), d),
            OK
        );
        assert_eq!(cuMemHostUnregister(hp.cast()), OK);
    }
    assert_eq!(pointer_attr::<u32>(2, h).err(), Some(INVALID_VALUE));
    drop(host);
}

#[test]
fn new_error_names() {
    for (code, name) in [
        (712, c"CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"),
        (713, c"CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"),
        (720, c"CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"),
        (912, c"CUDA_ERROR_INVALID_CLUSTER_SIZE"),
    ] {
        let mut s = null();
        // SAFETY: valid out-pointer.
        assert_eq!(unsafe { cuGetErrorName(CUresult(code), &mut s) }, OK);
        // SAFETY: the driver returned a static NUL-terminated string.
        assert_eq!(unsafe { CStr::from_ptr(s) }, name);
    }
}

/// A handle value no call returned.
fn handle_of<T>(v: usize) -> *mut T {
    ptr::without_provenance_mut(v)
}
