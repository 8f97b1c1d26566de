//! `cuda_exports!` lists exactly the table's symbols, with types that resolve.

macro_rules! collect {
    ($(fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?;)*) => {
        /// (name, parameter count) of every listed export.
        const LISTED: &[(&str, usize)] = &[$((stringify!($name), <[&str]>::len(&[$(stringify!($arg)),*]))),*];
        $(
            #[allow(non_snake_case, dead_code)]
            fn $name() -> Option<unsafe extern "C" fn($($ty),*) $(-> $ret)?> {
                None
            }
        )*
    };
}

vgpu_abi::cuda_exports!(collect);

#[test]
fn macro_lists_every_export_once_with_table_arity() {
    assert_eq!(LISTED.len(), vgpu_abi::FUNCTIONS.len());
    for ((name, n), f) in LISTED.iter().zip(vgpu_abi::FUNCTIONS) {
        assert_eq!(*name, f.name);
        assert_eq!(*n, f.params.len(), "{name}");
    }
    assert!(cuInit().is_none());
}

#[test]
fn core_types_exist() {
    use vgpu_abi::types::*;
    assert_eq!(CUresult::CUDA_ERROR_INVALID_VALUE.0, 1);
    assert_eq!(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE.0, 10);
    assert_eq!(core::mem::size_of::<CUdeviceptr>(), 8);
    assert_eq!(core::mem::size_of::<CUdevice>(), 4);
    assert_eq!(core::mem::size_of::<CUuuid>(), 16);
    let _: [CUcontext; 0] = [];
    let _: [CUstream; 0] = [];
    let _: [CUevent; 0] = [];
    let _: [CUmodule; 0] = [];
    let _: [CUfunction; 0] = [];
    let _ = CUjit_option::CU_JIT_MAX_REGISTERS;
    assert_eq!(CU_STREAM_PER_THREAD as usize, 2);
    assert_eq!(CU_DEVICE_CPU, -1);
    assert_eq!(CU_LAUNCH_PARAM_END as usize, 0);
    let _ = CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
}
