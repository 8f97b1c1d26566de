//! The child side of the "mediator lost" tests (`e2e_faults`, `e2e_tcp`):
//! after the far end is killed, every call fails fast with
//! `CUDA_ERROR_DEVICE_UNAVAILABLE`.

use std::ptr::null_mut;
use std::time::{Duration, Instant};

use cudarc::driver::sys;

use super::cu::{self, Cases};
use super::SIM_MODULE;

const DEVICE_UNAVAILABLE: u32 = vgpu_abi::types::CUresult::CUDA_ERROR_DEVICE_UNAVAILABLE.0;

/// How long a call may take once the mediator is gone.
pub const QUICK: Duration = Duration::from_secs(2);

/// Sets up a session with memory, a module, a stream and an event, prints
/// `ready`, waits for a line on stdin (the harness kills the far end
/// meanwhile), then checks that every call, synchronous and posted, returns
/// CUDA_ERROR_DEVICE_UNAVAILABLE within [`QUICK`], twice over; with
/// `with_init`, `cuInit` too.
pub fn after_loss_child(with_init: bool) {
    let ctx = cu::init_context();
    let len = 1 << 16;
    let d = cu::alloc(len);
    let d2 = cu::alloc(len);
    let mut host = vec![0u8; len];
    let mut module: sys::CUmodule = null_mut();
    let mut func: sys::CUfunction = null_mut();
    let mut stream: sys::CUstream = null_mut();
    let mut event: sys::CUevent = null_mut();
    // SAFETY: out-pointers are valid locals; the image is NUL-terminated.
    unsafe {
        cu::ok(
            sys::cuModuleLoadData(&mut module, SIM_MODULE.as_ptr().cast()),
            "load",
        );
        cu::ok(
            sys::cuModuleGetFunction(&mut func, module, c"fill_u32".as_ptr()),
            "getfn",
        );
        cu::ok(sys::cuStreamCreate(&mut stream, 0), "cuStreamCreate");
        cu::ok(sys::cuEventCreate(&mut event, 0), "cuEventCreate");
    }
    println!("ready");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).expect("read stdin");

    let mut c = Cases::default();
    let mut slow = Vec::new();
    for round in ["", " again"] {
        let mut timed = |name: &str, call: &mut dyn FnMut() -> sys::CUresult| {
            let t = Instant::now();
            let r = call();
            if t.elapsed() > QUICK {
                slow.push(format!("{name}{round} took {:?}", t.elapsed()));
            }
            c.add(format!("{name}{round}"), r, DEVICE_UNAVAILABLE);
        };
        let (mut p, mut n, mut v, mut cur) = (d, 1024i32, 7u32, null_mut());
        let mut m2: sys::CUmodule = null_mut();
        let mut s2: sys::CUstream = null_mut();
        let mut fresh: sys::CUdeviceptr = 0;
        let hp = host.as_mut_ptr();
        // SAFETY: for all calls below, host buffers hold len bytes, device
        // pointers hold len bytes, out-pointers are valid locals, and the
        // launch parameters point at live locals of the kernel's types.
        unsafe {
            timed("cuMemAlloc", &mut || sys::cuMemAlloc_v2(&mut fresh, 256));
            timed("cuMemcpyHtoD", &mut || {
                sys::cuMemcpyHtoD_v2(d, hp.cast(), len)
            });
            timed("cuMemcpyDtoH", &mut || {
                sys::cuMemcpyDtoH_v2(hp.cast(), d, len)
            });
            timed("cuMemcpyDtoD", &mut || sys::cuMemcpyDtoD_v2(d2, d, len));
            timed("cuMemsetD8", &mut || sys::cuMemsetD8_v2(d, 1, len));
            timed("cuMemcpyHtoDAsync", &mut || {
                sys::cuMemcpyHtoDAsync_v2(d, hp.cast(), len, stream)
            });
            timed("cuLaunchKernel", &mut || {
                let mut params = [
                    (&raw mut p).cast(),
                    (&raw mut v).cast(),
                    (&raw mut n).cast(),
                ];
                sys::cuLaunchKernel(
                    func,
                    4,
                    1,
                    1,
                    256,
                    1,
                    1,
                    0,
                    stream,
                    params.as_mut_ptr(),
                    null_mut(),
                )
            });
            timed("cuEventRecord", &mut || sys::cuEventRecord(event, stream));
            timed("cuStreamSynchronize", &mut || {
                sys::cuStreamSynchronize(stream)
            });
            timed("cuEventSynchronize", &mut || sys::cuEventSynchronize(event));
            timed("cuCtxSynchronize", &mut || sys::cuCtxSynchronize());
            timed("cuStreamCreate", &mut || sys::cuStreamCreate(&mut s2, 0));
            timed("cuModuleLoadData", &mut || {
                sys::cuModuleLoadData(&mut m2, SIM_MODULE.as_ptr().cast())
            });
            timed("cuMemFree", &mut || sys::cuMemFree_v2(d2));
            timed("cuCtxCreate", &mut || sys::cuCtxCreate_v2(&mut cur, 0, 0));
            if with_init {
                timed("cuInit", &mut || sys::cuInit(0));
            }
        }
    }
    let _ = ctx;
    assert!(slow.is_empty(), "calls were slow after the loss: {slow:#?}");
    c.check();
    println!("all calls failed fast");
}
