//! Correctness under load, and the rules of pipelined calls, end to end on
//! the simulated device (`docs/adr/0004-async-errors.md`):
//!
//! - 32 client threads × 10,000 mixed asynchronous operations each (copies,
//!   memsets, launches of `vector_add`, `saxpy` and `fill_u32`, event
//!   records, stream waits, event and stream creation and destruction),
//!   every result checked against a model of the same operations on the
//!   host, under a deadline. `VGPU_E2E_LOAD_OPS` scales the per-thread count;
//!   the default is the full 10,000;
//! - a posted call's failure surfaces at the calling thread's next
//!   synchronizing call, once, and nowhere else; a sticky fault stays;
//! - a call on one thread never overtakes a call another thread posted
//!   before it (the session-wide order);
//! - local answers cost no round trip (counted by the `VGPU_TRACE` summary).
//!
//! Each test runs over the rings and over the plain socket
//! (`VGPU_TRANSPORT`). Each re-executes this binary as the client child
//! (cudarc's raw `sys` bindings, loaded from the harness's lib dir).

mod common;

use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::cu::{self, Cases};
use common::{is_child, Harness};
use cudarc::driver::sys;

use common::SIM_MODULE;
const INVALID_HANDLE: u32 = vgpu_abi::types::CUresult::CUDA_ERROR_INVALID_HANDLE.0;
const ILLEGAL_ADDRESS: u32 = vgpu_abi::types::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS.0;

/// The per-thread operation count of the load test, from the test runner's
/// environment (the harness passes it on to the child).
const OPS_ENV: &str = "VGPU_E2E_LOAD_OPS";
const TRANSPORT_ENV: &str = "VGPU_TRANSPORT";

/// Runs `test`'s child over `transport` with `env`, under `deadline`.
fn run_child(
    test: &str,
    transport: &str,
    env: &[(&str, &str)],
    deadline: Duration,
) -> common::Output {
    let mut h = Harness::start();
    h.env(TRANSPORT_ENV, transport);
    h.env("VGPU_LOG", "1");
    for (k, v) in env {
        h.env(k, v);
    }
    let out = common::run(h.self_test(test), deadline);
    out.assert_success();
    println!("{transport}: {}", out.stdout);
    out
}

/// The transport this child runs over, as the client was told.
fn transport() -> String {
    std::env::var(TRANSPORT_ENV).unwrap_or_default()
}

/// The loaded module's three kernels.
struct Kernels {
    vector_add: sys::CUfunction,
    saxpy: sys::CUfunction,
    fill_u32: sys::CUfunction,
}

fn kernels() -> Kernels {
    let mut module: sys::CUmodule = null_mut();
    let mut k = Kernels {
        vector_add: null_mut(),
        saxpy: null_mut(),
        fill_u32: null_mut(),
    };
    // SAFETY: valid out-pointers; the image and names are NUL-terminated.
    unsafe {
        cu::ok(
            sys::cuModuleLoadData(&mut module, SIM_MODULE.as_ptr().cast()),
            "cuModuleLoadData",
        );
        for (f, name) in [
            (&mut k.vector_add, c"vector_add"),
            (&mut k.saxpy, c"saxpy"),
            (&mut k.fill_u32, c"fill_u32"),
        ] {
            cu::ok(
                sys::cuModuleGetFunction(f, module, name.as_ptr()),
                "cuModuleGetFunction",
            );
        }
    }
    k
}

/// Launches `f` on `stream` with one block per 256 of `n` threads.
///
/// # Safety
/// `params` must point at one live value per kernel parameter.
unsafe fn launch(
    f: sys::CUfunction,
    n: usize,
    stream: sys::CUstream,
    params: &mut [*mut c_void],
) -> sys::CUresult {
    let blocks = u32::try_from(n.div_ceil(256)).expect("small grids");
    // SAFETY: forwarded contract.
    unsafe {
        sys::cuLaunchKernel(
            f,
            blocks,
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
    }
}

/// Reads `n` u32 words of `d` (a synchronizing call).
fn read(d: sys::CUdeviceptr, n: usize) -> Vec<u32> {
    let mut v = vec![0u32; n];
    // SAFETY: v holds n words; d holds at least n words.
    cu::ok(
        unsafe { sys::cuMemcpyDtoH_v2(v.as_mut_ptr().cast(), d, n * 4) },
        "cuMemcpyDtoH",
    );
    v
}

// ---- 32 threads x 10,000 mixed asynchronous operations ---------------------

#[test]
fn load_32_threads_mixed_async_ops_rings() {
    load_test("load_32_threads_mixed_async_ops_rings", "rings");
}

#[test]
fn load_32_threads_mixed_async_ops_socket() {
    load_test("load_32_threads_mixed_async_ops_socket", "socket");
}

fn load_test(test: &str, transport: &str) {
    if is_child() {
        return load_child();
    }
    let ops = std::env::var(OPS_ENV).unwrap_or_else(|_| "10000".into());
    let out = run_child(
        test,
        transport,
        &[(OPS_ENV, &ops)],
        Duration::from_secs(900),
    );
    out.assert_line("load ok");
}

const THREADS: usize = 32;
/// Elements of each buffer: launches use a grid of four 256-thread blocks.
const ELEMS: usize = 1000;

/// xorshift64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> usize {
        usize::try_from(self.next() % n).expect("small")
    }
    /// A small integral float's bits: sums and products stay exact for long.
    fn value(&mut self) -> u32 {
        let v = f32::from(u16::try_from(self.next() % 64).expect("small")) - 32.0;
        v.to_bits()
    }
}

fn load_child() {
    let ops: usize = std::env::var(OPS_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let ctx = cu::init_context() as usize;
    let k = kernels();
    let (va, sx, fl) = (k.vector_add as usize, k.saxpy as usize, k.fill_u32 as usize);
    let t0 = Instant::now();
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            thread::spawn(move || {
                // SAFETY: ctx is the live context made by init_context.
                cu::ok(
                    unsafe { sys::cuCtxSetCurrent(ctx as sys::CUcontext) },
                    "cuCtxSetCurrent",
                );
                let k = Kernels {
                    vector_add: va as sys::CUfunction,
                    saxpy: sx as sys::CUfunction,
                    fill_u32: fl as sys::CUfunction,
                };
                load_thread(t, ops, &k)
            })
        })
        .collect();
    let mut failed = Vec::new();
    let mut total = 0;
    for (t, w) in workers.into_iter().enumerate() {
        match w.join() {
            Ok(n) => total += n,
            Err(_) => failed.push(t),
        }
    }
    assert!(failed.is_empty(), "threads {failed:?} failed");
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "{THREADS} threads: {total} operations in {secs:.1} s ({:.0}/s) over {}",
        total as f64 / secs,
        transport()
    );
    println!("load ok");
}

/// One thread's share: three buffers and their host model, two streams
/// ordered by events when the work moves between them; returns the number
/// of CUDA calls made.
fn load_thread(t: usize, ops: usize, k: &Kernels) -> usize {
    const BUFS: usize = 3;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
    let bufs: Vec<sys::CUdeviceptr> = (0..BUFS).map(|_| cu::alloc(ELEMS * 4)).collect();
    let mut model = vec![vec![0u32; ELEMS]; BUFS];
    let mut streams: [sys::CUstream; 2] = [null_mut(); 2];
    let mut calls = 0usize;
    let mut check = |what: &str, r: sys::CUresult| {
        calls += 1;
        assert_eq!(cu::code(r), 0, "thread {t}: {what} returned {r:?}");
    };
    // SAFETY: for every call below, host buffers hold what is copied, device
    // buffers hold ELEMS words, handles are live, and launch parameters
    // point at live locals of the kernels' types.
    unsafe {
        for s in &mut streams {
            check("cuStreamCreate", sys::cuStreamCreate(s, 1));
        }
        for (d, m) in bufs.iter().zip(&model) {
            check(
                "cuMemcpyHtoD",
                sys::cuMemcpyHtoD_v2(*d, m.as_ptr().cast(), ELEMS * 4),
            );
        }
        let mut cur = 0usize;
        let n_i32 = i32::try_from(ELEMS).expect("small");
        let mut done = 0;
        while done < ops {
            let s = streams[cur];
            let (x, y, z) = (rng.below(3), rng.below(3), rng.below(3));
            match rng.below(100) {
                // Host to device from a fresh pattern.
                0..=11 => {
                    let src: Vec<u32> = (0..ELEMS).map(|_| rng.value()).collect();
                    check(
                        "cuMemcpyHtoDAsync",
                        sys::cuMemcpyHtoDAsync_v2(bufs[x], src.as_ptr().cast(), ELEMS * 4, s),
                    );
                    model[x] = src;
                }
                12..=23 => {
                    let v = rng.value();
                    check(
                        "cuMemsetD32Async",
                        sys::cuMemsetD32Async(bufs[x], v, ELEMS, s),
                    );
                    model[x].fill(v);
                }
                24..=37 => {
                    let (mut p, mut v, mut n) = (bufs[x], rng.value(), n_i32);
                    let mut params = [
                        (&raw mut p).cast(),
                        (&raw mut v).cast(),
                        (&raw mut n).cast(),
                    ];
                    check("fill_u32", launch(k.fill_u32, ELEMS, s, &mut params));
                    model[x].fill(v);
                }
                38..=51 => {
                    let (mut a, mut b, mut c, mut n) = (bufs[x], bufs[y], bufs[z], n_i32);
                    let mut params = [
                        (&raw mut a).cast(),
                        (&raw mut b).cast(),
                        (&raw mut c).cast(),
                        (&raw mut n).cast(),
                    ];
                    check("vector_add", launch(k.vector_add, ELEMS, s, &mut params));
                    let sum: Vec<u32> = (0..ELEMS)
                        .map(|i| {
                            (f32::from_bits(model[x][i]) + f32::from_bits(model[y][i])).to_bits()
                        })
                        .collect();
                    model[z] = sum;
                }
                52..=65 => {
                    let alpha = if rng.below(2) == 0 { 1.0f32 } else { -1.0 };
                    let (mut a, mut xp, mut yp, mut n) = (alpha, bufs[x], bufs[y], n_i32);
                    let mut params = [
                        (&raw mut a).cast(),
                        (&raw mut xp).cast(),
                        (&raw mut yp).cast(),
                        (&raw mut n).cast(),
                    ];
                    check("saxpy", launch(k.saxpy, ELEMS, s, &mut params));
                    let out: Vec<u32> = (0..ELEMS)
                        .map(|i| {
                            (alpha * f32::from_bits(model[x][i]) + f32::from_bits(model[y][i]))
                                .to_bits()
                        })
                        .collect();
                    model[y] = out;
                }
                66..=77 if x != y => {
                    check(
                        "cuMemcpyDtoDAsync",
                        sys::cuMemcpyDtoDAsync_v2(bufs[y], bufs[x], ELEMS * 4, s),
                    );
                    model[y] = model[x].clone();
                }
                // Move to the other stream, ordered after this one's work.
                78..=89 => {
                    let mut e: sys::CUevent = null_mut();
                    check("cuEventCreate", sys::cuEventCreate(&mut e, 2));
                    check("cuEventRecord", sys::cuEventRecord(e, s));
                    cur = 1 - cur;
                    check(
                        "cuStreamWaitEvent",
                        sys::cuStreamWaitEvent(streams[cur], e, 0),
                    );
                    check("cuEventDestroy", sys::cuEventDestroy_v2(e));
                }
                // Replace the other stream (after this one's work is done).
                90..=92 => {
                    let other = 1 - cur;
                    check(
                        "cuStreamSynchronize",
                        sys::cuStreamSynchronize(streams[other]),
                    );
                    check("cuStreamDestroy", sys::cuStreamDestroy_v2(streams[other]));
                    check(
                        "cuStreamCreate",
                        sys::cuStreamCreate(&mut streams[other], 1),
                    );
                    let mut e: sys::CUevent = null_mut();
                    check("cuEventCreate", sys::cuEventCreate(&mut e, 2));
                    check("cuEventRecord", sys::cuEventRecord(e, s));
                    check(
                        "cuStreamWaitEvent",
                        sys::cuStreamWaitEvent(streams[other], e, 0),
                    );
                    check("cuEventDestroy", sys::cuEventDestroy_v2(e));
                }
                // Verify one buffer through an asynchronous read back.
                93..=95 => {
                    let mut back = vec![0u32; ELEMS];
                    check(
                        "cuMemcpyDtoHAsync",
                        sys::cuMemcpyDtoHAsync_v2(back.as_mut_ptr().cast(), bufs[x], ELEMS * 4, s),
                    );
                    check("cuStreamSynchronize", sys::cuStreamSynchronize(s));
                    assert_eq!(
                        back, model[x],
                        "thread {t}: buffer {x} after {done} operations"
                    );
                }
                _ => continue,
            }
            done += 1;
        }
        for s in streams {
            check("cuStreamSynchronize", sys::cuStreamSynchronize(s));
        }
        for (i, d) in bufs.iter().enumerate() {
            assert_eq!(
                read(*d, ELEMS),
                model[i],
                "thread {t}: buffer {i} at the end"
            );
            check("cuMemFree", sys::cuMemFree_v2(*d));
        }
        for s in streams {
            check("cuStreamDestroy", sys::cuStreamDestroy_v2(s));
        }
    }
    calls
}

// ---- pipelined errors ------------------------------------------------------

#[test]
fn pipelined_errors_surface_at_the_next_synchronizing_call_rings() {
    errors_test(
        "pipelined_errors_surface_at_the_next_synchronizing_call_rings",
        "rings",
    );
}

#[test]
fn pipelined_errors_surface_at_the_next_synchronizing_call_socket() {
    errors_test(
        "pipelined_errors_surface_at_the_next_synchronizing_call_socket",
        "socket",
    );
}

fn errors_test(test: &str, transport: &str) {
    if is_child() {
        return errors_child();
    }
    run_child(test, transport, &[], Duration::from_secs(120)).assert_line("errors ok");
}

/// A launch the client cannot refuse locally but the driver refuses: a
/// function of a module loaded in another context (`CUDA_ERROR_INVALID_HANDLE`).
unsafe fn bad_launch(
    foreign: sys::CUfunction,
    d: sys::CUdeviceptr,
    stream: sys::CUstream,
) -> sys::CUresult {
    let (mut p, mut v, mut n) = (d, 9u32, 64i32);
    let mut params = [
        (&raw mut p).cast(),
        (&raw mut v).cast(),
        (&raw mut n).cast(),
    ];
    // SAFETY: parameters point at live locals of fill_u32's types.
    unsafe { launch(foreign, 64, stream, &mut params) }
}

fn errors_child() {
    let mut c = Cases::default();
    let ctx1 = cu::init_context();
    let k1 = kernels();
    let mut ctx2: sys::CUcontext = null_mut();
    let mut s2: sys::CUstream = null_mut();
    // SAFETY: valid out-pointers and live handles throughout; launch
    // parameters point at live locals.
    unsafe {
        cu::ok(sys::cuCtxCreate_v2(&mut ctx2, 0, 0), "cuCtxCreate");
        cu::ok(sys::cuStreamCreate(&mut s2, 1), "cuStreamCreate");
        let d = cu::alloc(64 * 4);
        let mut spare: sys::CUdeviceptr = 0;
        let mut flags = 0u32;

        // Posted, fails in the worker: nothing before the next synchronizing call sees it.
        c.add("memset before", sys::cuMemsetD32Async(d, 1, 64, s2), 0);
        c.add("foreign launch (posted)", bad_launch(k1.fill_u32, d, s2), 0);
        c.add("memset after", sys::cuMemsetD32Async(d, 2, 64, s2), 0);
        c.add(
            "cuMemAlloc (not synchronizing)",
            sys::cuMemAlloc_v2(&mut spare, 64),
            0,
        );
        c.add(
            "cuStreamGetFlags (not synchronizing)",
            sys::cuStreamGetFlags(s2, &mut flags),
            0,
        );
        c.add(
            "cuEventRecord of a NULL event fails at once, on its own",
            sys::cuEventRecord(null_mut(), s2),
            INVALID_HANDLE,
        );
        c.add(
            "cuStreamQuery reports it",
            sys::cuStreamQuery(s2),
            INVALID_HANDLE,
        );
        c.add("cuStreamQuery again", sys::cuStreamQuery(s2), 0);
        let back = read(d, 64);
        assert!(
            back.iter().all(|&v| v == 2),
            "the posted calls after the failure ran: {back:?}"
        );

        // A synchronous copy reports it too, and then has not run.
        let ones = [1u32; 64];
        c.add("foreign launch (posted)", bad_launch(k1.fill_u32, d, s2), 0);
        c.add(
            "cuMemcpyHtoD reports it",
            sys::cuMemcpyHtoD_v2(d, ones.as_ptr().cast(), 64 * 4),
            INVALID_HANDLE,
        );
        assert!(
            read(d, 64).iter().all(|&v| v == 2),
            "the reporting copy did not run"
        );

        // cuMemFree is synchronizing; it does not run either.
        c.add("foreign launch (posted)", bad_launch(k1.fill_u32, d, s2), 0);
        c.add(
            "cuMemFree reports it",
            sys::cuMemFree_v2(spare),
            INVALID_HANDLE,
        );
        c.add("cuMemFree then frees", sys::cuMemFree_v2(spare), 0);

        // Another thread's synchronizing call does not see this thread's failure.
        c.add("foreign launch (posted)", bad_launch(k1.fill_u32, d, s2), 0);
        let ctx2u = ctx2 as usize;
        let other = thread::spawn(move || sync_on_another_thread(ctx2u))
            .join()
            .expect("other thread");
        c.add(
            "another thread's cuCtxSynchronize",
            if other == 0 {
                sys::CUresult::CUDA_SUCCESS
            } else {
                sys::CUresult::CUDA_ERROR_UNKNOWN
            },
            0,
        );
        c.add(
            "this thread's cuCtxSynchronize",
            sys::cuCtxSynchronize(),
            INVALID_HANDLE,
        );
        c.add("and only once", sys::cuCtxSynchronize(), 0);

        // A sticky fault: a kernel that leaves its allocation. The launch and
        // the posted calls after it succeed; the next synchronizing call
        // reports the fault, and it stays, as the driver keeps it.
        cu::ok(sys::cuCtxSetCurrent(ctx1), "cuCtxSetCurrent");
        let small = cu::alloc(64 * 4);
        let (mut a, mut b, mut out, mut n) = (small, small, small, 1 << 20);
        let mut params = [
            (&raw mut a).cast(),
            (&raw mut b).cast(),
            (&raw mut out).cast(),
            (&raw mut n).cast(),
        ];
        c.add(
            "vector_add past its allocation (posted)",
            launch(k1.vector_add, 1 << 20, null_mut(), &mut params),
            0,
        );
        c.add(
            "memset after the fault (posted)",
            sys::cuMemsetD32Async(small, 3, 64, null_mut()),
            0,
        );
        c.add(
            "cuStreamSynchronize reports the fault",
            sys::cuStreamSynchronize(null_mut()),
            ILLEGAL_ADDRESS,
        );
        c.add(
            "the fault is sticky",
            sys::cuCtxSynchronize(),
            ILLEGAL_ADDRESS,
        );
    }
    c.check();
    println!("errors ok");
}

/// `cuCtxSynchronize` in `ctx` on a fresh thread (a lane of its own).
fn sync_on_another_thread(ctx: usize) -> u32 {
    // SAFETY: ctx is a live context; no pointers.
    unsafe {
        cu::ok(
            sys::cuCtxSetCurrent(ctx as sys::CUcontext),
            "cuCtxSetCurrent",
        );
        cu::code(sys::cuCtxSynchronize())
    }
}

// ---- order across threads --------------------------------------------------

#[test]
fn calls_never_overtake_another_threads_posted_calls_rings() {
    order_test(
        "calls_never_overtake_another_threads_posted_calls_rings",
        "rings",
    );
}

#[test]
fn calls_never_overtake_another_threads_posted_calls_socket() {
    order_test(
        "calls_never_overtake_another_threads_posted_calls_socket",
        "socket",
    );
}

fn order_test(test: &str, transport: &str) {
    if is_child() {
        return order_child();
    }
    run_child(test, transport, &[], Duration::from_secs(300)).assert_line("order ok");
}

/// Thread A creates a stream, fills a buffer on it and records an event,
/// all posted, then hands them to thread B, which at once synchronizes the
/// stream, reads the buffer, waits on the event from its own stream and
/// destroys A's stream. B must never see a missing stream or stale data.
fn order_child() {
    const ROUNDS: u32 = 300;
    const N: usize = 4096;
    let ctx = cu::init_context() as usize;
    let k = kernels();
    let fill = k.fill_u32 as usize;
    let d = cu::alloc(N * 4);
    let (to_b, from_a) = mpsc::channel::<(usize, usize, u32)>();
    let (to_a, from_b) = mpsc::channel::<()>();
    let a = thread::spawn(move || {
        // SAFETY: live context, function and buffer; valid out-pointers;
        // parameters point at live locals.
        unsafe {
            cu::ok(
                sys::cuCtxSetCurrent(ctx as sys::CUcontext),
                "A: cuCtxSetCurrent",
            );
            for round in 1..=ROUNDS {
                let mut s: sys::CUstream = null_mut();
                let mut e: sys::CUevent = null_mut();
                cu::ok(sys::cuStreamCreate(&mut s, 1), "A: cuStreamCreate");
                cu::ok(sys::cuEventCreate(&mut e, 0), "A: cuEventCreate");
                for v in [round.wrapping_mul(7), round] {
                    let (mut p, mut v, mut n) = (d, v, i32::try_from(N).expect("small"));
                    let mut params = [
                        (&raw mut p).cast(),
                        (&raw mut v).cast(),
                        (&raw mut n).cast(),
                    ];
                    cu::ok(
                        launch(fill as sys::CUfunction, N, s, &mut params),
                        "A: fill_u32",
                    );
                }
                cu::ok(sys::cuEventRecord(e, s), "A: cuEventRecord");
                to_b.send((s as usize, e as usize, round))
                    .expect("send to B");
                from_b.recv().expect("B done");
            }
        }
    });
    // SAFETY: live context; A's handles are live until B destroys them.
    unsafe {
        cu::ok(
            sys::cuCtxSetCurrent(ctx as sys::CUcontext),
            "B: cuCtxSetCurrent",
        );
        let mut mine: sys::CUstream = null_mut();
        cu::ok(sys::cuStreamCreate(&mut mine, 1), "B: cuStreamCreate");
        for (s, e, round) in from_a.iter() {
            let (s, e) = (s as sys::CUstream, e as sys::CUevent);
            cu::ok(
                sys::cuStreamWaitEvent(mine, e, 0),
                "B: cuStreamWaitEvent on A's event",
            );
            cu::ok(
                sys::cuStreamSynchronize(s),
                "B: cuStreamSynchronize of A's stream",
            );
            let back = read(d, N);
            assert!(
                back.iter().all(|&v| v == round),
                "round {round}: B read {} before A's posted fill",
                back[0]
            );
            cu::ok(sys::cuEventDestroy_v2(e), "B: cuEventDestroy of A's event");
            cu::ok(
                sys::cuStreamDestroy_v2(s),
                "B: cuStreamDestroy of A's stream",
            );
            to_a.send(()).expect("send to A");
            if round == ROUNDS {
                break;
            }
        }
    }
    a.join().expect("thread A");
    println!("order ok");
}

// ---- frames larger than a ring message -------------------------------------

#[test]
fn frames_larger_than_a_ring_message_take_the_lane_socket() {
    if is_child() {
        return big_frames_child();
    }
    run_child(
        "frames_larger_than_a_ring_message_take_the_lane_socket",
        "rings",
        &[],
        Duration::from_secs(120),
    )
    .assert_line("big frames ok");
}

/// A 2D copy sends its host rows in bands of up to 16 MiB: far more than a
/// 4 MiB ring message, both ways. Small calls around it keep their order.
fn big_frames_child() {
    const W: usize = 4096;
    const H: usize = 3000;
    cu::init_context();
    let d = cu::alloc(W * H);
    let src: Vec<u8> = (0..W * H)
        .map(|i| u8::try_from(i % 251).expect("below 251"))
        .collect();
    let mut back = vec![0u8; W * H];
    let mut s: sys::CUstream = null_mut();
    // SAFETY: both host buffers hold W * H bytes, d as many; valid out-pointers.
    unsafe {
        cu::ok(sys::cuStreamCreate(&mut s, 1), "cuStreamCreate");
        cu::ok(sys::cuMemsetD8Async(d, 0, W * H, s), "cuMemsetD8Async");
        let host = sys::CUmemorytype::CU_MEMORYTYPE_HOST;
        let device = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE;
        let (sp, bp) = (src.as_ptr(), back.as_mut_ptr());
        let region = |from_host: bool| sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: if from_host { host } else { device },
            srcHost: if from_host {
                sp.cast()
            } else {
                std::ptr::null()
            },
            srcDevice: if from_host { 0 } else { d },
            srcArray: null_mut(),
            srcPitch: W,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: if from_host { device } else { host },
            dstHost: if from_host { null_mut() } else { bp.cast() },
            dstDevice: if from_host { d } else { 0 },
            dstArray: null_mut(),
            dstPitch: W,
            WidthInBytes: W,
            Height: H,
        };
        let p = region(true);
        cu::ok(sys::cuMemcpy2D_v2(&p), "cuMemcpy2D host to device");
        let q = region(false);
        cu::ok(sys::cuMemcpy2D_v2(&q), "cuMemcpy2D device to host");
        cu::ok(sys::cuStreamSynchronize(s), "cuStreamSynchronize");
    }
    assert!(
        back == src,
        "12 MiB through the lane socket came back changed"
    );
    println!("big frames ok");
}

#[test]
fn synchronous_copies_run_pieces_in_flight() {
    if is_child() {
        return pieces_child();
    }
    for transport in ["rings", "socket"] {
        // Staged through shared pinned memory (the default), and in pieces
        // on the lane.
        for staging in ["1", "0"] {
            let dir = tempfile::tempdir().expect("temp dir");
            let trace = dir.path().join("trace.txt");
            let trace_s = trace.display().to_string();
            run_child(
                "synchronous_copies_run_pieces_in_flight",
                transport,
                &[
                    ("VGPU_STAGING", staging),
                    ("VGPU_COPY_THREADS", "3"),
                    ("VGPU_TRACE", &trace_s),
                ],
                Duration::from_secs(120),
            )
            .assert_line("pieces ok");
            let text = std::fs::read_to_string(&trace).expect("the trace file");
            let staged = text
                .lines()
                .find_map(|l| l.strip_prefix("== vgpu lanes:"))
                .and_then(|l| l.rsplit(", ").next())
                .and_then(|p| p.strip_suffix(" staged"))
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or_else(|| panic!("no staged count in the trace:\n{text}"));
            println!("{transport}, VGPU_STAGING={staging}: {staged} copies staged");
            if staging == "1" {
                // Eight large copies, the two reporting ones included (they
                // take an arena, and their first call reports the failure).
                assert!(staged >= 6, "{staged} copies staged");
            } else {
                assert_eq!(staged, 0);
            }
        }
    }
}

/// Synchronous pageable copies of many pieces (staged through shared pinned
/// memory, or 2 MiB on rings and 16 MiB on sockets) with several in flight:
/// the bytes arrive in place, an earlier posted failure is reported by the
/// copy without any piece running, a copy whose later pieces fail leaves the
/// lane in step, and copies of odd sizes and from several threads at once
/// keep every byte.
fn pieces_child() {
    const N: usize = 40 << 20;
    let ctx1 = cu::init_context();
    let k1 = kernels();
    let mut ctx2: sys::CUcontext = null_mut();
    let mut s2: sys::CUstream = null_mut();
    let d = cu::alloc(N);
    let src: Vec<u8> = (0..N)
        .map(|i| u8::try_from(i % 253).expect("below 253"))
        .collect();
    let mut back = vec![0u8; N];
    // SAFETY: host buffers hold N bytes and d as many; valid out-pointers.
    unsafe {
        cu::ok(
            sys::cuMemcpyHtoD_v2(d, src.as_ptr().cast(), N),
            "cuMemcpyHtoD",
        );
        cu::ok(
            sys::cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), d, N),
            "cuMemcpyDtoH",
        );
        assert!(back == src, "40 MiB came back changed");

        // An earlier posted failure: the copy reports it and does not run.
        let mut ctx1: sys::CUcontext = null_mut();
        cu::ok(sys::cuCtxGetCurrent(&mut ctx1), "cuCtxGetCurrent");
        cu::ok(sys::cuCtxCreate_v2(&mut ctx2, 0, 0), "cuCtxCreate");
        cu::ok(sys::cuStreamCreate(&mut s2, 1), "cuStreamCreate");
        let d2 = cu::alloc(256);
        cu::ok(bad_launch(k1.fill_u32, d2, s2), "foreign launch (posted)");
        back.fill(7);
        let r = sys::cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), d, N);
        assert_eq!(r, sys::cudaError_enum::CUDA_ERROR_INVALID_HANDLE);
        assert!(back.iter().all(|&b| b == 7), "a reporting copy wrote bytes");
        let zeros = vec![0u8; N];
        cu::ok(bad_launch(k1.fill_u32, d2, s2), "foreign launch (posted)");
        let r = sys::cuMemcpyHtoD_v2(d, zeros.as_ptr().cast(), N);
        assert_eq!(r, sys::cudaError_enum::CUDA_ERROR_INVALID_HANDLE);
        cu::ok(sys::cuCtxSetCurrent(ctx1), "cuCtxSetCurrent");
        cu::ok(
            sys::cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), d, N),
            "cuMemcpyDtoH",
        );
        assert!(back == src, "a reporting copy ran");

        // Later pieces that leave the allocation fail; the lane stays in step.
        let off = 8 << 20;
        let r = sys::cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), d + off as u64, N);
        assert_ne!(r, sys::cudaError_enum::CUDA_SUCCESS);
        let r = sys::cuMemcpyHtoD_v2(d + off as u64, zeros.as_ptr().cast(), N);
        assert_ne!(r, sys::cudaError_enum::CUDA_SUCCESS);
        let mut small = [0u8; 16];
        cu::ok(
            sys::cuMemcpyDtoH_v2(small.as_mut_ptr().cast(), d + 1, 16),
            "small copy",
        );
        assert_eq!(small[..], src[1..17]);
        // Back to the source pattern for the threads below.
        cu::ok(
            sys::cuMemcpyHtoD_v2(d, src.as_ptr().cast(), N),
            "cuMemcpyHtoD",
        );
    }
    // Odd sizes and offsets, from four threads at once (each its own arena),
    // each in its own 10 MiB of d.
    let sizes = [(1 << 20) + 1, (3 << 20) + 4093, (9 << 20) - 7, 5 << 20];
    let ctx1 = ctx1 as usize;
    std::thread::scope(|sc| {
        for (t, &n) in sizes.iter().enumerate() {
            let src = &src;
            sc.spawn(move || {
                // SAFETY: a live context of this session.
                cu::ok(
                    unsafe { sys::cuCtxSetCurrent(ctx1 as sys::CUcontext) },
                    "cuCtxSetCurrent",
                );
                let at = d + (t * (10 << 20) + t) as u64;
                let key = t.to_le_bytes()[0] + 1;
                let mine: Vec<u8> = src[t..t + n].iter().map(|b| b ^ key).collect();
                let mut got = vec![0u8; n];
                // SAFETY: the ranges lie inside d's N bytes and the host buffers hold n.
                unsafe {
                    cu::ok(
                        sys::cuMemcpyHtoD_v2(at, mine.as_ptr().cast(), n),
                        "threaded HtoD",
                    );
                    cu::ok(
                        sys::cuMemcpyDtoH_v2(got.as_mut_ptr().cast(), at, n),
                        "threaded DtoH",
                    );
                }
                assert!(got == mine, "thread {t}: {n} bytes came back changed");
            });
        }
    });
    println!("pieces ok");
}

// ---- local answers ---------------------------------------------------------

#[test]
fn local_answers_and_posted_calls_cost_no_round_trip() {
    if is_child() {
        return local_child();
    }
    for transport in ["rings", "socket"] {
        let dir = tempfile::tempdir().expect("temp dir");
        let trace = dir.path().join("trace.txt");
        let trace_s = trace.display().to_string();
        run_child(
            "local_answers_and_posted_calls_cost_no_round_trip",
            transport,
            &[("VGPU_TRACE", &trace_s)],
            Duration::from_secs(120),
        )
        .assert_line("local ok");
        let text = std::fs::read_to_string(&trace).expect("the trace file");
        let summary = text
            .lines()
            .find(|l| l.starts_with("== vgpu lanes:"))
            .unwrap_or_else(|| panic!("no lane summary in the trace:\n{text}"));
        let count = |what: &str| -> u64 {
            summary
                .split(", ")
                .find_map(|part| part.strip_suffix(what))
                .and_then(|n| n.trim().rsplit(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no {what:?} count in {summary:?}"))
        };
        let (round_trips, posted) = (count(" round trips"), count(" posted"));
        println!("{transport}: {summary}");
        // cuCtxCreate, the module load, three look-ups, the allocation, the
        // stream, the first primary-context state, attribute set and
        // attribute, the first launch with a cluster attribute, the launch
        // past the function's shared memory and the one synchronize at the
        // end; none per local answer or posted call.
        assert!(round_trips <= 15, "{round_trips} round trips: {summary}");
        assert!(
            posted >= 4 * LOCAL_ROUNDS as u64,
            "{posted} posted: {summary}"
        );
        assert!(summary.contains(&format!("on {transport}")), "{summary}");
        // Per function: calls, failures, round trips. Only the first
        // cluster launch and the one past the shared memory waited.
        let per_function = |name: &str| -> Vec<u64> {
            text.lines()
                .find(|l| l.split_whitespace().nth(3) == Some(name))
                .unwrap_or_else(|| panic!("no summary line for {name}"))
                .split_whitespace()
                .take(3)
                .map(|n| n.parse().expect("a count"))
                .collect()
        };
        let rounds = LOCAL_ROUNDS as u64;
        assert_eq!(per_function("cuLaunchKernelEx"), [rounds, 0, 1]);
        assert_eq!(per_function("cuLaunchKernel"), [3 * rounds + 2, 1, 1]);
        // The refused launch's own line says that it waited.
        let refused = text
            .lines()
            .find(|l| l.starts_with("cuLaunchKernel -> 1 "))
            .expect("the refused launch's line");
        assert!(refused.contains(" trips=1 "), "{refused}");
    }
}

const LOCAL_ROUNDS: usize = 500;

fn local_child() {
    cu::init_context();
    let k = kernels();
    let d = cu::alloc(256 * 4);
    let mut s: sys::CUstream = null_mut();
    let mut v = 0i32;
    let mut dev: sys::CUdevice = 0;
    let mut ctx: sys::CUcontext = null_mut();
    let mut name: *const std::ffi::c_char = std::ptr::null();
    let (mut off, mut size) = (0usize, 0usize);
    let mut buf = [0 as std::ffi::c_char; 64];
    let mut mem = 0usize;
    // SAFETY: valid out-pointers, live handles; launch parameters point at
    // live locals.
    unsafe {
        cu::ok(sys::cuStreamCreate(&mut s, 1), "cuStreamCreate");
        for round in 0..LOCAL_ROUNDS {
            // Answered locally.
            cu::ok(
                sys::cuDeviceGetAttribute(
                    &mut v,
                    sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                    0,
                ),
                "cuDeviceGetAttribute",
            );
            cu::ok(sys::cuDeviceGet(&mut dev, 0), "cuDeviceGet");
            cu::ok(
                sys::cuDeviceGetName(buf.as_mut_ptr(), 64, dev),
                "cuDeviceGetName",
            );
            cu::ok(sys::cuDeviceTotalMem_v2(&mut mem, dev), "cuDeviceTotalMem");
            cu::ok(sys::cuCtxGetCurrent(&mut ctx), "cuCtxGetCurrent");
            cu::ok(sys::cuCtxGetDevice(&mut dev), "cuCtxGetDevice");
            cu::ok(sys::cuDriverGetVersion(&mut v), "cuDriverGetVersion");
            cu::ok(
                sys::cuGetErrorString(sys::CUresult::CUDA_ERROR_INVALID_VALUE, &mut name),
                "cuGetErrorString",
            );
            cu::ok(
                sys::cuGetErrorName(sys::CUresult::CUDA_ERROR_INVALID_VALUE, &mut name),
                "cuGetErrorName",
            );
            cu::ok(
                sys::cuFuncGetParamInfo(k.fill_u32, 1, &mut off, &mut size),
                "cuFuncGetParamInfo",
            );
            cu::ok(sys::cuCtxPushCurrent_v2(ctx), "cuCtxPushCurrent");
            cu::ok(sys::cuCtxPopCurrent_v2(&mut ctx), "cuCtxPopCurrent");
            // No capture was ever begun: no stream is capturing.
            for stream in [s, null_mut()] {
                let mut capturing = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE;
                cu::ok(
                    sys::cuStreamIsCapturing(stream, &mut capturing),
                    "cuStreamIsCapturing",
                );
                assert_eq!(
                    capturing,
                    sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE
                );
            }
            // Asked of the worker once, then answered from what it said.
            let (mut flags, mut active) = (0u32, 0i32);
            cu::ok(
                sys::cuDevicePrimaryCtxGetState(dev, &mut flags, &mut active),
                "cuDevicePrimaryCtxGetState",
            );
            // Set before each launch, as libraries do: asked once.
            let dynamic =
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
            cu::ok(
                sys::cuFuncSetAttribute(k.fill_u32, dynamic, BIG_SHARED as i32),
                "cuFuncSetAttribute",
            );
            cu::ok(
                sys::cuFuncGetAttribute(
                    &mut v,
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                    k.fill_u32,
                ),
                "cuFuncGetAttribute",
            );
            // Posted.
            let (mut p, mut fv, mut n) = (d, 5u32, 256i32);
            let mut params = [
                (&raw mut p).cast(),
                (&raw mut fv).cast(),
                (&raw mut n).cast(),
            ];
            cu::ok(launch(k.fill_u32, 256, s, &mut params), "cuLaunchKernel");
            // Past the default 48 KiB, within the function's opt-in.
            cu::ok(
                launch_shared(k.fill_u32, s, &mut params, BIG_SHARED),
                "cuLaunchKernel with opted-in shared memory",
            );
            // The `extra` form, one buffer of the packed parameters.
            cu::ok(
                launch_extra(k.fill_u32, s, d, 7),
                "cuLaunchKernel with extra",
            );
            // A cluster attribute as cuBLAS builds it, on the stack: the
            // value's unused bytes differ from launch to launch.
            let mut attr: sys::CUlaunchAttribute = std::mem::zeroed();
            let junk = round.to_le_bytes()[0];
            std::ptr::write_bytes(&raw mut attr.value, junk, 1);
            attr.pad = [junk.cast_signed(); 4];
            attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            attr.value.clusterDim.x = 1;
            attr.value.clusterDim.y = 1;
            attr.value.clusterDim.z = 1;
            let config = sys::CUlaunchConfig {
                gridDimX: 1,
                gridDimY: 1,
                gridDimZ: 1,
                blockDimX: 256,
                blockDimY: 1,
                blockDimZ: 1,
                sharedMemBytes: 0,
                hStream: s,
                attrs: &raw mut attr,
                numAttrs: 1,
            };
            // Its parameters in either form (cuDNN gives `extra`).
            let mut packed = fill_params(d, 5);
            let mut len = packed.len();
            let mut extra = extra_list(&mut packed, &mut len);
            let (kernel_params, extra) = if round % 2 == 0 {
                (params.as_mut_ptr(), null_mut())
            } else {
                (null_mut(), extra.as_mut_ptr())
            };
            cu::ok(
                sys::cuLaunchKernelEx(&config, k.fill_u32, kernel_params, extra),
                "cuLaunchKernelEx",
            );
            cu::ok(sys::cuMemsetD32Async(d, 6, 256, s), "cuMemsetD32Async");
            let mut e: sys::CUevent = null_mut();
            cu::ok(sys::cuEventCreate(&mut e, 2), "cuEventCreate");
            cu::ok(sys::cuEventRecord(e, s), "cuEventRecord");
            cu::ok(sys::cuEventDestroy_v2(e), "cuEventDestroy");
        }
        assert_eq!((off, size), (8, 4), "fill_u32's second parameter");
        let dynamic = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        cu::ok(
            sys::cuFuncGetAttribute(&mut v, dynamic, k.fill_u32),
            "cuFuncGetAttribute",
        );
        assert_eq!(
            v, BIG_SHARED as i32,
            "the dynamic shared memory reads back as set"
        );
        // One byte past it is refused at the call: it was not posted.
        let (mut p, mut fv, mut n) = (d, 5u32, 256i32);
        let mut params = [
            (&raw mut p).cast(),
            (&raw mut fv).cast(),
            (&raw mut n).cast(),
        ];
        assert_eq!(
            launch_shared(k.fill_u32, s, &mut params, BIG_SHARED + 1),
            sys::CUresult::CUDA_ERROR_INVALID_VALUE
        );
        // A posted launch of the `extra` form runs as given.
        cu::ok(
            launch_extra(k.fill_u32, s, d, 9),
            "cuLaunchKernel with extra",
        );
        cu::ok(sys::cuStreamSynchronize(s), "cuStreamSynchronize");
        assert!(
            read(d, 256).iter().all(|&w| w == 9),
            "filled by the extra form"
        );
    }
    println!("local ok");
}

/// `fill_u32`'s parameters `(d, value, 256)` packed into one buffer.
fn fill_params(d: sys::CUdeviceptr, value: u32) -> [u8; 16] {
    let mut packed = [0u8; 16];
    packed[..8].copy_from_slice(&d.to_le_bytes());
    packed[8..12].copy_from_slice(&value.to_le_bytes());
    packed[12..].copy_from_slice(&256i32.to_le_bytes());
    packed
}

/// The `extra` list for a packed parameter buffer and its length:
/// CU_LAUNCH_PARAM_BUFFER_POINTER, CU_LAUNCH_PARAM_BUFFER_SIZE, END.
fn extra_list(packed: &mut [u8], len: &mut usize) -> [*mut c_void; 5] {
    [
        std::ptr::without_provenance_mut(1),
        packed.as_mut_ptr().cast(),
        std::ptr::without_provenance_mut(2),
        std::ptr::from_mut(len).cast(),
        null_mut(),
    ]
}

/// `fill_u32(d, value, 256)` on `stream`, its parameters packed into one
/// buffer (the `extra` form of `cuLaunchKernel`).
///
/// # Safety
/// `d` must hold 256 u32 words.
unsafe fn launch_extra(
    f: sys::CUfunction,
    stream: sys::CUstream,
    d: sys::CUdeviceptr,
    value: u32,
) -> sys::CUresult {
    let mut packed = fill_params(d, value);
    let mut len = packed.len();
    let mut extra = extra_list(&mut packed, &mut len);
    // SAFETY: `extra` lists a live buffer and its size; forwarded contract.
    unsafe {
        sys::cuLaunchKernel(
            f,
            1,
            1,
            1,
            256,
            1,
            1,
            0,
            stream,
            null_mut(),
            extra.as_mut_ptr(),
        )
    }
}

/// Dynamic shared memory past the default 48 KiB that `local_child` opts
/// its kernel in to.
const BIG_SHARED: u32 = 64 << 10;

/// One block of 256 threads of `f` on `stream` with `shared` bytes of
/// dynamic shared memory.
///
/// # Safety
/// `params` must point at one live value per kernel parameter.
unsafe fn launch_shared(
    f: sys::CUfunction,
    stream: sys::CUstream,
    params: &mut [*mut c_void],
    shared: u32,
) -> sys::CUresult {
    // SAFETY: forwarded contract.
    unsafe {
        sys::cuLaunchKernel(
            f,
            1,
            1,
            1,
            256,
            1,
            1,
            shared,
            stream,
            params.as_mut_ptr(),
            null_mut(),
        )
    }
}

// ---- VGPU_LANE_PROFILE --------------------------------------------------------

/// Launches the profiled child posts before it synchronizes once.
const PROFILED_LAUNCHES: usize = 300;

/// `VGPU_LANE_PROFILE` in the mediator's environment: the lane that ran the
/// child's calls logs, when it closes, exactly the launches it ran, the
/// calls it answered, and time in each part.
#[test]
fn lane_profile_counts_what_the_lane_ran() {
    if is_child() {
        return profiled_child();
    }
    for transport in ["rings", "socket"] {
        let mut h = Harness::without_mediator();
        h.mediator = Some(common::Mediator::start_env(
            &h.build,
            &[("VGPU_LANE_PROFILE", "1")],
        ));
        h.env(TRANSPORT_ENV, transport);
        common::run(
            h.self_test("lane_profile_counts_what_the_lane_ran"),
            Duration::from_secs(60),
        )
        .assert_success()
        .assert_line("profiled ok");
        // The lane logs once it sees the client gone.
        let launches = format!("launches={PROFILED_LAUNCHES} ");
        let deadline = Instant::now() + Duration::from_secs(20);
        let line = loop {
            let log = h.mediator().log_text();
            let found = log
                .lines()
                .find(|l| l.contains("lane profile") && l.contains(&launches));
            if let Some(l) = found {
                break l.to_owned();
            }
            assert!(
                Instant::now() < deadline,
                "{transport}: no lane profile with {launches}in the log:\n{log}"
            );
            thread::sleep(Duration::from_millis(50));
        };
        println!("{transport}: {line}");
        let field = |name: &str| -> u64 {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
                .unwrap_or_else(|| panic!("no {name} in {line:?}"))
        };
        assert!(field("posted") >= PROFILED_LAUNCHES as u64, "{line}");
        // The synchronize and the read-back at least, and the set-up.
        assert!(field("answered") >= 2, "{line}");
        assert!(
            field("requests") >= field("posted") + field("answered"),
            "{line}"
        );
        assert!(field("launch_us") > 0, "{line}");
        assert!(field("posted_us") >= field("launch_us"), "{line}");
        assert!(field("answered_us") > 0, "{line}");
        let parts = [
            "read_us",
            "posted_us",
            "read_answered_us",
            "answered_us",
            "other_us",
        ];
        let sum: u64 = parts.iter().map(|p| field(p)).sum();
        // Each part is rounded down to whole microseconds.
        assert!(sum <= field("total_us") + parts.len() as u64, "{line}");
    }
}

fn profiled_child() {
    cu::init_context();
    let k = kernels();
    let d = cu::alloc(4);
    let mut s: sys::CUstream = null_mut();
    let (mut ptr, mut value, mut n) = (d, 0u32, 1u32);
    // SAFETY: valid out-pointer; the launch parameters point at live locals.
    unsafe {
        cu::ok(sys::cuStreamCreate(&mut s, 1), "cuStreamCreate");
        for i in 0..PROFILED_LAUNCHES {
            value = u32::try_from(i).expect("small");
            let mut params = [
                (&raw mut ptr).cast::<c_void>(),
                (&raw mut value).cast(),
                (&raw mut n).cast(),
            ];
            cu::ok(launch(k.fill_u32, 1, s, &mut params), "cuLaunchKernel");
        }
        cu::ok(sys::cuStreamSynchronize(s), "cuStreamSynchronize");
    }
    assert_eq!(read(d, 1), [value]);
    println!("profiled ok");
}
