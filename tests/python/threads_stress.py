#!/usr/bin/env python3
"""Many Python threads drive one libcuda.so.1 at once through ctypes.

ctypes releases the GIL during foreign calls, so the threads' CUDA calls
really overlap. Every thread shares one context, and in a loop allocates a
buffer (1 B to 1 MiB), copies its own random pattern in and out, checks every
byte and frees it.

Usage:  python3 threads_stress.py [THREADS [ITERATIONS [LIBRARY]]]
        (defaults: 16 threads, 50 iterations, libcuda.so.1)
Output: one line per failure, then `threads ok: ...` or `threads FAILED: ...`.
Exit:   0 every byte matched and every call succeeded; 1 otherwise;
        2 the library could not be loaded.
"""

import ctypes
import random
import sys
import threading
import time
from ctypes import POINTER, byref, c_int, c_size_t, c_uint, c_ulonglong, c_void_p

MAX = 1 << 20


def load(library):
    cu = ctypes.CDLL(library)
    protos = {
        "cuInit": [c_uint],
        "cuDeviceGet": [POINTER(c_int), c_int],
        "cuCtxCreate_v2": [POINTER(c_void_p), c_uint, c_int],
        "cuCtxSetCurrent": [c_void_p],
        "cuMemAlloc_v2": [POINTER(c_ulonglong), c_size_t],
        "cuMemFree_v2": [c_ulonglong],
        "cuMemcpyHtoD_v2": [c_ulonglong, c_void_p, c_size_t],
        "cuMemcpyDtoH_v2": [c_void_p, c_ulonglong, c_size_t],
    }
    for name, argtypes in protos.items():
        fn = getattr(cu, name)
        fn.argtypes = argtypes
        fn.restype = c_int
    return cu


def sizes(rng, iterations):
    """1 B and 1 MiB first, then log-uniform sizes in between."""
    out = [1, MAX]
    while len(out) < iterations:
        base = 1 << rng.randrange(21)
        out.append(min(MAX, base + rng.randrange(base)))
    return out[:iterations]


def worker(cu, ctx, index, iterations, errors, totals):
    def fail(what):
        errors.append(f"thread {index}: {what}")

    r = cu.cuCtxSetCurrent(ctx)
    if r != 0:
        return fail(f"cuCtxSetCurrent returned {r}")
    rng = random.Random(1000 + index)
    moved = 0
    for i, n in enumerate(sizes(rng, iterations)):
        data = rng.randbytes(n)
        src = ctypes.create_string_buffer(data, n)
        back = ctypes.create_string_buffer(n)
        d = c_ulonglong()
        for what, r in (
            ("cuMemAlloc", cu.cuMemAlloc_v2(byref(d), n)),
            ("cuMemcpyHtoD", cu.cuMemcpyHtoD_v2(d, src, n)),
            ("cuMemcpyDtoH", cu.cuMemcpyDtoH_v2(back, d, n)),
            ("cuMemFree", cu.cuMemFree_v2(d)),
        ):
            if r != 0:
                return fail(f"iteration {i} ({n} bytes): {what} returned {r}")
        if back.raw != data:
            first = next(j for j in range(n) if back.raw[j] != data[j])
            return fail(f"iteration {i} ({n} bytes): byte {first} differs")
        moved += n
    totals[index] = moved


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    library = sys.argv[3] if len(sys.argv) > 3 else "libcuda.so.1"
    try:
        cu = load(library)
    except (OSError, AttributeError) as e:
        print(f"FAIL load: {e}")
        return 2
    dev, ctx = c_int(), c_void_p()
    for what, r in (
        ("cuInit", cu.cuInit(0)),
        ("cuDeviceGet", cu.cuDeviceGet(byref(dev), 0)),
        ("cuCtxCreate", cu.cuCtxCreate_v2(byref(ctx), 0, dev)),
    ):
        if r != 0:
            print(f"FAIL {what} returned {r}")
            return 1

    errors, totals = [], [0] * threads
    start = time.monotonic()
    pool = [
        threading.Thread(target=worker, args=(cu, ctx, t, iterations, errors, totals))
        for t in range(threads)
    ]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    secs = time.monotonic() - start
    for e in errors:
        print(f"FAIL {e}")
    summary = f"{threads} threads x {iterations} iterations, {sum(totals)} bytes each way in {secs:.2f} s"
    if errors:
        print(f"threads FAILED: {summary}")
        return 1
    print(f"threads ok: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
