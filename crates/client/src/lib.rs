//! `libvgpu-cuda.so`: a drop-in `libcuda.so.1` that runs every CUDA Driver
//! API call in a vgpu-mediator worker.
//!
//! Contract:
//! - Exports exactly the real driver's symbols (generated from `vgpu-abi`),
//!   plus the marker [`vgpu_shim_marker`] by which the worker refuses to load
//!   this library as a driver.
//! - Loading runs nothing: no constructors, threads, I/O or environment reads.
//!   The first call builds the [`runtime::Runtime`]; `cuInit` connects.
//! - Every export catches panics and returns a `CUresult`; unimplemented ones
//!   return `CUDA_ERROR_NOT_SUPPORTED` and, with `VGPU_LOG` set, name
//!   themselves once.
//! - Answered locally: device attributes, names, UUIDs and PCI ids (snapshot),
//!   the current-context stack, error strings, kernel parameter layouts; and,
//!   after the worker's first answer, function and kernel attributes and the
//!   primary contexts' state, until a call that may change them
//!   (`objects::Answers`).
//! - Posted without waiting (when checked locally): launches, asynchronous
//!   copies and memsets, event records, stream waits, stream and event
//!   creation and destruction; their failures come back at the thread's next
//!   synchronizing call (`docs/adr/0004-async-errors.md`). Each thread's
//!   lane runs on shared-memory rings or on a socket (`lane.rs`).
//! - Large synchronous pageable copies are staged through pinned memory
//!   shared with the worker, copied by several threads while the DMA of the
//!   previous chunk runs (`staging.rs`).
//! - Host callbacks run in this process on one thread of the session's,
//!   started at the first registration, over a callback channel to the
//!   worker (`callback.rs`); a CUDA call from inside one returns
//!   `CUDA_ERROR_NOT_PERMITTED`.

mod api;
mod call;
mod callback;
mod config;
mod context;
mod edge;
mod exports;
mod generated;
mod image;
mod lane;
mod log;
mod objects;
mod output;
mod remote;
mod runtime;
mod staging;
mod trace;
mod vm;

/// Marks this library as vgpu's client; the worker refuses to load any
/// library exporting it, so it can never load itself as the driver.
#[no_mangle]
pub static vgpu_shim_marker: [u8; 8] = *b"vgpu-v1\0";
