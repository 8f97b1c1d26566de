//! The exported CUDA Driver API, under the real symbol names and C signatures.
//!
//! Each export checks initialisation, converts raw arguments (out-pointers, handles),
//! calls the typed implementation in the crate's area modules, and maps the result to a
//! `CUresult` inside [`crate::ffi::run`], which also contains panics.
//!
//! Each file is named after an area of the remoting table (`crates/abi/src/remote/table.rs`),
//! as in the client's `api/` and the worker's `worker/`: every export of an entry point the
//! table lists is in its area's file, where the generated stubs (`generated/mod.rs`) also
//! find their model functions. Exports the table does not list sit in the area they belong
//! to (`cuMemHostRegister_v2` and `cuMemHostUnregister` in `host`).

mod array;
mod callback;
mod checkpoint;
mod context;
mod copy;
mod coredump;
mod decompress;
mod device;
mod errors;
mod event;
mod external;
// The generator writes zero-argument calls as closures (`|| f()`); until it emits this
// allow itself, it is granted here, for the generated module only.
#[allow(clippy::redundant_closure)]
pub(crate) mod generated;
mod graph;
mod green;
mod host;
mod init;
mod ipc;
mod launch;
mod library;
mod link;
mod logs;
mod memop;
mod memory;
mod module;
mod multicast;
mod notify;
mod peer;
mod pointer;
mod pool;
mod profiler;
mod stream;
mod tensormap;
mod texref;
mod texture;
mod vmm;

pub use array::*;
pub use callback::*;
pub use checkpoint::*;
pub use context::*;
pub use copy::*;
pub use coredump::*;
pub use decompress::*;
pub use device::*;
pub use errors::*;
pub use event::*;
pub use external::*;
pub use generated::*;
pub use graph::*;
pub use host::*;
pub use init::*;
pub use ipc::*;
pub use launch::*;
pub use library::*;
pub use link::*;
pub use logs::*;
pub use memop::*;
pub use memory::*;
pub use module::*;
pub use notify::*;
pub use pointer::*;
pub use pool::*;
pub use stream::*;
pub use tensormap::*;
pub use texture::*;
pub use vmm::*;

/// The real driver's C signature of every export, as a function-pointer type named after
/// it, from the generated ABI table.
#[allow(non_camel_case_types, dead_code)]
pub(crate) mod signature {
    macro_rules! signatures {
        ($(fn $name:ident($($p:ident: $t:ty),* $(,)?) -> $r:ty;)*) => {
            $(pub type $name = unsafe extern "C" fn($($t),*) -> $r;)*
        };
    }
    vgpu_abi::cuda_exports!(signatures);
}

macro_rules! exports {
    ($($name:ident),* $(,)?) => {
        /// Every symbol this library exports by hand; the table calls'
        /// exports are listed in [`generated::EXPORTS`].
        pub const HAND_EXPORTS: &[&str] = &[$(stringify!($name)),*];
        // Compile-time ABI check: each export has exactly the driver's signature.
        $(const _: signature::$name = $name;)*
    };
}

exports!(
    cuInit,
    cuDriverGetVersion,
    cuDeviceGetCount,
    cuDeviceGet,
    cuDeviceGetName,
    cuDeviceGetUuid,
    cuDeviceGetUuid_v2,
    cuDeviceGetPCIBusId,
    cuDeviceTotalMem_v2,
    cuDeviceGetAttribute,
    cuDevicePrimaryCtxRetain,
    cuCtxCreate_v2,
    cuCtxDestroy_v2,
    cuCtxPushCurrent_v2,
    cuCtxPopCurrent_v2,
    cuCtxSetCurrent,
    cuCtxGetCurrent,
    cuCtxGetDevice,
    cuMemAlloc_v2,
    cuMemFree_v2,
    cuMemcpyHtoD_v2,
    cuMemcpyDtoH_v2,
    cuMemcpyDtoD_v2,
    cuMemcpyHtoDAsync_v2,
    cuMemcpyDtoHAsync_v2,
    cuMemcpyDtoDAsync_v2,
    cuMemcpy,
    cuMemcpyAsync,
    cuMemsetD8_v2,
    cuMemsetD16_v2,
    cuMemsetD32_v2,
    cuMemsetD8Async,
    cuMemsetD16Async,
    cuMemsetD32Async,
    cuStreamCreate,
    cuStreamCreateWithPriority,
    cuStreamDestroy_v2,
    cuLaunchHostFunc,
    cuLaunchHostFunc_ptsz,
    cuStreamAddCallback,
    cuStreamAddCallback_ptsz,
    cuEventCreate,
    cuEventDestroy_v2,
    cuModuleLoadData,
    cuModuleLoadDataEx,
    cuModuleGetFunction,
    cuModuleGetGlobal_v2,
    cuModuleUnload,
    cuFuncGetParamInfo,
    cuLaunchKernel,
    cuGetErrorName,
    cuGetErrorString,
    cuLibraryLoadData,
    cuLibraryUnload,
    cuLibraryGetKernel,
    cuLibraryGetModule,
    cuLibraryGetGlobal,
    cuKernelGetFunction,
    cuKernelGetParamInfo,
    cuLaunchKernelEx,
    cuLaunchCooperativeKernel,
    cuOccupancyMaxActiveClusters,
    cuMemAllocAsync,
    cuMemFreeAsync,
    cuMemcpy2D_v2,
    cuMemcpy2DAsync_v2,
    cuMemHostRegister_v2,
    cuMemHostUnregister,
    cuMemHostGetDevicePointer_v2,
    cuMemHostAlloc,
    cuMemAllocHost_v2,
    cuMemFreeHost,
    cuMemHostGetFlags,
    cuPointerGetAttribute,
    cuPointerGetAttributes,
    cuMemPoolDestroy,
    cuMemPoolGetAttribute,
    cuMemPoolSetAttribute,
    cuMemAllocFromPoolAsync,
    cuMemAllocFromPoolAsync_ptsz,
    cuMemAddressReserve,
    cuMemAddressFree,
    cuMemCreate,
    cuMemRelease,
    cuMemMap,
    cuMemUnmap,
    cuMemSetAccess,
    cuMemRetainAllocationHandle,
    cuMemGetAllocationPropertiesFromHandle,
    cuArrayDestroy,
    cuMipmappedArrayDestroy,
    cuMemBatchDecompressAsync,
    cuMemBatchDecompressAsync_ptsz,
    cuMemcpyHtoA_v2,
    cuMemcpyHtoAAsync_v2,
    cuMemcpyAtoH_v2,
    cuMemcpyAtoHAsync_v2,
    cuMemcpy3D_v2,
    cuMemcpy3DAsync_v2,
    cuTexObjectCreate,
    cuTexObjectDestroy,
    cuTexObjectGetResourceDesc,
    cuTexObjectGetTextureDesc,
    cuTexObjectGetResourceViewDesc,
    cuSurfObjectCreate,
    cuSurfObjectDestroy,
    cuSurfObjectGetResourceDesc,
    cuTensorMapEncodeTiled,
    cuTensorMapEncodeIm2col,
    cuTensorMapEncodeIm2colWide,
    cuTensorMapReplaceAddress,
);
