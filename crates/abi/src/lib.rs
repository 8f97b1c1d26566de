//! vgpu abi — the CUDA Driver ABI as data.
//!
//! Contract:
//! * [`types`]: every type, enum (as `#[repr(transparent)]` newtypes with associated
//!   consts), `#define` integer constant, handle and `#[repr(C)]` struct of CUDA 13.0's
//!   `cuda.h` (plus its EGL/GL/VDPAU interop headers), under the C names.
//! * [`FUNCTIONS`]: one [`FnDesc`] per symbol exported by the real 580 driver
//!   (`libcuda.so.1`), sorted by name — no more, no fewer.
//! * [`cuda_exports!`]: every export with its Rust signature, for `#[no_mangle]` stubs.
//! * [`array`]: the element size of array formats and the extent a copy may touch.
//! * [`driver`]: which driver library a worker loads, and where drivers are.
//! * [`errors`]: the driver's name and description of every `CUresult`.
//! * [`export_probe!`]: the dispatch module of each exported C function of vgpu's
//!   libraries (implemented, or a fallback).
//! * [`remote`]: what vgpu remotes and how, one line per entry point (hand-written,
//!   reviewed); `cargo xtask gen-calls` generates the remoting code from it.
//! * [`values`]: the size rules of values passed through `void *` by attribute.
//! * [`procaddr::resolve`]: the driver's `cuGetProcAddress` answer per (symbol,
//!   version, flags).
//!
//! `generated/` is written by `cargo xtask gen-abi` from pinned NVIDIA header wheels and
//! checked by `cargo xtask gen-abi --check`; never edit it by hand.

pub mod array;
pub mod driver;
pub mod errors;
pub mod exports;
pub mod generated;
pub mod procaddr;
pub mod remote;
pub mod table;
pub mod values;

pub use generated::functions::FUNCTIONS;
pub use generated::types;
pub use procaddr::{find, resolve, ProcResolution};
pub use table::{FnDesc, HandleKind, Param, ParamKind, PerThread};
