//! # vgpu-sim: a SIMULATED CUDA device on host memory (a test double, not a GPU)
//!
//! `libvgpu-sim.so` exports a subset of the CUDA Driver API under the real export names
//! (`cuMemAlloc_v2`, `cuLaunchKernel`, …) with the real C ABI. The vgpu worker loads it by
//! absolute path exactly as it loads NVIDIA's `libcuda.so.1`, so CI machines and demo
//! laptops without a GPU exercise the same code path. Nothing here touches a GPU: "device"
//! memory is host memory, "kernels" are CPU functions, and every stream runs its work
//! synchronously at enqueue time.
//!
//! ## Contract
//! - **Loading does nothing.** No constructors, threads, I/O or environment reads happen at
//!   `dlopen`. `cuInit(0)` reads the configuration once (see [`config`]) and prints
//!   `vgpu-sim: SIMULATED CUDA device on host memory (a test double, not a GPU)` to stderr.
//! - **Faithful error codes.** Calls before `cuInit` give `CUDA_ERROR_NOT_INITIALIZED`,
//!   NULL out-pointers `CUDA_ERROR_INVALID_VALUE`, bad ordinals `CUDA_ERROR_INVALID_DEVICE`,
//!   a missing current context `CUDA_ERROR_INVALID_CONTEXT`, unknown handles
//!   `CUDA_ERROR_INVALID_HANDLE` (`CUDA_ERROR_INVALID_CONTEXT` for contexts). Every export
//!   catches panics and returns `CUDA_ERROR_UNKNOWN`.
//! - **Handles are table keys.** Contexts, streams, events, modules, functions and CUDA
//!   arrays are small nonzero integers cast to pointers, looked up in tables and never
//!   dereferenced. An array's bytes are a host block of its own, outside the device
//!   address space; every copy into or out of it is bounded by its extent
//!   (`array.rs`).
//! - **Device pointers** are addresses of real, 256-byte aligned host allocations. Every
//!   copy, memset and kernel access is checked against the live allocations: a range not
//!   fully inside one live allocation is rejected before any byte is touched. Host
//!   pointers handed in by the caller are the caller's responsibility, as with the real
//!   driver.
//! - **Async errors are sticky.** A kernel that would touch memory outside the live
//!   allocations touches nothing and sets the context's sticky error
//!   (`CUDA_ERROR_ILLEGAL_ADDRESS`, or `CUDA_ERROR_MISALIGNED_ADDRESS`). The launch itself
//!   succeeds; later synchronising calls, and every later memory, launch and module call in
//!   that context, return the sticky error until the context is destroyed or the primary
//!   context is reset.
//! - **Events carry real time.** `cuEventRecord` stamps a monotonic clock, and
//!   `cuEventElapsedTime` returns the milliseconds between two stamps.
//!
//! ## Module format
//! `cuModuleLoadData`/`cuModuleLoadDataEx` accept only this format; any other image
//! (PTX, cubin, fatbin) gives `CUDA_ERROR_INVALID_IMAGE`. An image is NUL-terminated
//! UTF-8 text of at most 1 MiB, one directive per line:
//!
//! ```text
//! VGPU-SIM-MODULE 1
//! # comments and blank lines are ignored
//! kernel vector_add
//! kernel saxpy
//! global counter 4
//! ```
//!
//! - The first line is exactly `VGPU-SIM-MODULE 1`.
//! - `kernel <name>` declares a kernel. Only the built-in CPU kernels can be fetched with
//!   `cuModuleGetFunction`; any other name gives `CUDA_ERROR_NOT_FOUND` there, like a
//!   kernel missing from a real image.
//! - `global <name> <bytes>` declares a zero-initialised device global of `bytes` bytes
//!   (1 ..= 1 GiB), allocated at load, owned by the module and freed by `cuModuleUnload`.
//! - Names are 1..=255 characters of `[A-Za-z0-9_]` and are unique per kind.
//!
//! ## Built-in kernels
//! | name | parameters (offset/size in the parameter buffer) |
//! |---|---|
//! | `vector_add` | `const float* a` 0/8, `const float* b` 8/8, `float* c` 16/8, `int n` 24/4: `c[i] = a[i] + b[i]` |
//! | `saxpy` | `float a` 0/4, `const float* x` 8/8, `float* y` 16/8, `int n` 24/4: `y[i] = a * x[i] + y[i]` |
//! | `fill_u32` | `unsigned* p` 0/8, `unsigned v` 8/4, `int n` 12/4: `p[i] = v` |
//! | `print_u32` | `unsigned v` 0/4, `int n` 4/4: device `printf` of `thread {i} value {v}` |
//! | `assert_lt` | `unsigned v` 0/4, `int n` 4/4: device `assert(i < v)`; a failure is `CUDA_ERROR_ASSERT` |
//!
//! Each kernel runs for global thread indices `i` in `0..min(n, total threads of the grid)`.
//! `cuLaunchKernel` takes arguments through `kernelParams` only; a non-NULL `extra` gives
//! `CUDA_ERROR_INVALID_VALUE`.
//!
//! ## Libraries, launch attributes and memory beyond `cuMemAlloc`
//! - **Libraries** (`cuLibraryLoadData`) take the module format above and load into a
//!   context on first use there; a `CUkernel` is accepted wherever a `CUfunction` is
//!   (`library.rs`). Function attributes are plausible compute capability 9.0 values;
//!   the settable ones (dynamic shared memory, carveout, cluster attributes) are honoured
//!   by launches and by the occupancy model of an H100 (`funcattr.rs`).
//! - **`cuLaunchKernelEx`** honours grid, block and shared memory, checks cluster
//!   dimensions (`CUDA_ERROR_INVALID_CLUSTER_SIZE`) and the residency of cooperative
//!   launches (`CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE`) (`launch.rs`).
//!   `cuLaunchCooperativeKernelMultiDevice` takes one entry (one device) on a created
//!   stream and launches it cooperatively.
//! - **Unified functions**: the module format declares none, so
//!   `cuLibraryGetUnifiedFunction` is `CUDA_ERROR_NOT_FOUND` for every name.
//! - **Stream-ordered allocation** takes effect at enqueue time, like all stream work.
//! - **`cuMemcpy2D`** checks every bound before a byte moves (`copy2d.rs`).
//! - **Page-locked host memory** (`cuMemHostRegister`, `cuMemHostAlloc`) is valid for
//!   copies, memsets and kernels at its own address, as with unified addressing
//!   (`hostmem.rs`); `cuPointerGetAttribute(s)` describes it and device allocations.
//! - **Host callbacks** (`cuLaunchHostFunc`, `cuStreamAddCallback`) run at enqueue time
//!   on the calling thread, with no lock held, with status `CUDA_SUCCESS`.
//! - **Device `printf`** output is kept until a flush point of the driver (context,
//!   stream and event synchronization, module unload, context destruction), then written
//!   to standard output (`printf.rs`); the messages of failed device assertions go to
//!   standard error at the same points.
//! - **The JIT linker** (`cuLink*`) takes module-format inputs and merges them into one
//!   image; input in no known format is `CUDA_ERROR_INVALID_IMAGE`, with the reason in the
//!   link's error log (`link.rs`).
//! - **Legacy launches** (`cuParamSet*`, `cuLaunch`, `cuLaunchGrid`, `cuLaunchGridAsync`)
//!   read the function's parameter buffer, block shape and shared size (`legacy.rs`).
//! - No stream is ever capturing; `cuModuleGetLoadingMode` follows `CUDA_MODULE_LOADING`.
//! - **Peer access** between distinct simulated devices is supported; a device is never
//!   its own peer. **Legacy texture references** keep their bindings and sampling state.
//! - **Green contexts** split each device's 132 SMs in partitions of 8; a green context
//!   has a context and streams of its own. No **multicast object** or sparse array is
//!   ever made (`CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED` is 0).
//!
//! ## Layout
//! Dependencies point one way, from the C edge down:
//! - `exports/`: the C edge, one file per area of the remoting table (as the client's
//!   `api/` and the worker's `worker/`), with the model functions the generated stubs call;
//! - the area modules (`context.rs`, `stream.rs`, `event.rs`, `memory.rs`, `hostmem.rs`,
//!   `module.rs`, `library.rs`, `funcattr.rs`, `launch.rs`, `pointer.rs`, `pool.rs`,
//!   `copy2d.rs`): the driver's semantics, as operations on the whole state;
//! - `ffi.rs`: the C boundary's helpers (panic containment, out-pointers, handle and address
//!   conversions), which read only the logging switch of the state;
//! - `state/`: the one global and the tables it composes, each table's entry type with
//!   the operations on it alone;
//! - leaves: `error.rs`, `cu.rs`, `config.rs`, `device.rs`, `loading.rs`, `image.rs` (the
//!   module format) and `kernels.rs` (the built-in kernels).

#[cfg(not(target_pointer_width = "64"))]
compile_error!("vgpu-sim requires a 64-bit target");

mod array;
pub mod config;
mod context;
mod copy2d;
mod coredump;
mod cu;
mod decompress;
mod device;
mod error;
mod event;
pub mod exports;
mod external;
mod ffi;
mod funcattr;
mod graph;
mod hostmem;
mod image;
mod ipc;
mod kernels;
mod launch;
mod legacy;
mod library;
mod link;
mod loading;
mod logs;
mod memop;
mod memory;
mod module;
mod pointer;
mod pool;
mod pool_share;
mod printf;
mod semaphore;
mod state;
mod stream;
mod texture;
mod vmm;
mod vmm_share;

#[cfg(test)]
mod tests;
