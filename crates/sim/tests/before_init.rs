//! A fresh process: calls before `cuInit`, then the environment configuration.
//! One test function, so nothing else touches the global state or the environment.

use std::ffi::{c_char, CStr};
use std::ptr::{self, null_mut};

use vgpu_abi::types::CUresult;
use vgpu_sim::exports::*;

#[test]
fn not_initialized_until_cu_init_then_env_config() {
    let mut n = -1;
    let mut ctx = ptr::dangling_mut();
    let mut p = 0;
    let mut s: *const c_char = ptr::null();
    // SAFETY: valid out-pointers.
    unsafe {
        assert_eq!(
            cuDeviceGetCount(&mut n),
            CUresult::CUDA_ERROR_NOT_INITIALIZED
        );
        assert_eq!(
            cuCtxGetCurrent(&mut ctx),
            CUresult::CUDA_ERROR_NOT_INITIALIZED
        );
        assert_eq!(
            cuMemAlloc_v2(&mut p, 16),
            CUresult::CUDA_ERROR_NOT_INITIALIZED
        );
        assert_eq!(cuCtxSynchronize(), CUresult::CUDA_ERROR_NOT_INITIALIZED);
        // Version and error strings need no initialisation, as with the real driver.
        assert_eq!(cuDriverGetVersion(&mut n), CUresult::CUDA_SUCCESS);
        assert_eq!(n, 13000);
        assert_eq!(
            cuGetErrorName(CUresult::CUDA_ERROR_NOT_INITIALIZED, &mut s),
            CUresult::CUDA_SUCCESS
        );
        assert_eq!(CStr::from_ptr(s), c"CUDA_ERROR_NOT_INITIALIZED");
    }

    // Edition 2021: setting the environment is safe; no other thread is running here.
    std::env::set_var("VGPU_SIM_DEVICES", "3");
    std::env::set_var("VGPU_SIM_MEMORY_MB", "8");
    assert_eq!(cuInit(0), CUresult::CUDA_SUCCESS);
    // Read once: later changes are ignored.
    std::env::set_var("VGPU_SIM_DEVICES", "1");
    assert_eq!(cuInit(0), CUresult::CUDA_SUCCESS);

    let mut total = 0;
    // SAFETY: valid out-pointers.
    unsafe {
        assert_eq!(cuDeviceGetCount(&mut n), CUresult::CUDA_SUCCESS);
        assert_eq!(n, 3);
        assert_eq!(cuDeviceTotalMem_v2(&mut total, 2), CUresult::CUDA_SUCCESS);
        assert_eq!(total, 8 << 20);
        assert_eq!(cuCtxGetCurrent(&mut ctx), CUresult::CUDA_SUCCESS);
        assert!(ctx.is_null());
        assert_eq!(
            cuDevicePrimaryCtxRetain(&mut ctx, 2),
            CUresult::CUDA_SUCCESS
        );
        assert_eq!(cuCtxSetCurrent(ctx), CUresult::CUDA_SUCCESS);
        assert_eq!(
            cuMemAlloc_v2(&mut p, 9 << 20),
            CUresult::CUDA_ERROR_OUT_OF_MEMORY
        );
        assert_eq!(cuMemAlloc_v2(&mut p, 8 << 20), CUresult::CUDA_SUCCESS);
        assert_eq!(cuMemFree_v2(p), CUresult::CUDA_SUCCESS);
        assert_eq!(
            cuDeviceGetCount(null_mut()),
            CUresult::CUDA_ERROR_INVALID_VALUE
        );
    }
}
