"""Managed memory cost, natively and through vgpu: run it both ways and
compare (it prints timings, so frameworks.sh does not run it).

vgpu serves managed memory from host pages shared with the worker
(docs/adr/0005-managed-memory-and-host-registration.md): the GPU reads them
over the host link and they never migrate. Three patterns:

- stream: a kernel reads a managed buffer once (native: migrates on first touch);
- reuse: a kernel reads the same buffer 20 times (native: migrated, then HBM);
- cpu: the CPU writes and reads the whole buffer between kernels.

Usage: python3 gpu/bench/managed_bench.py [MiB]
"""

import ctypes
import sys
import time

import cupy
import numpy as np

mib = int(sys.argv[1]) if len(sys.argv) > 1 else 256
n = mib * (1 << 20) // 4


def managed(n):
    mem = cupy.cuda.malloc_managed(n * 4)
    return mem, cupy.ndarray((n,), dtype=cupy.float32, memptr=mem)


def host_view(mem, n):
    return np.ctypeslib.as_array((ctypes.c_float * n).from_address(mem.ptr))


def timed(f, repeat=3, setup=None):
    best = float("inf")
    for _ in range(repeat):
        if setup is not None:
            setup()
        cupy.cuda.Device().synchronize()
        t = time.perf_counter()
        f()
        cupy.cuda.Device().synchronize()
        best = min(best, time.perf_counter() - t)
    return best


mem, a = managed(n)
h = host_view(mem, n)
h[:] = 1.0
gb = n * 4 / 1e9


def cpu_writes():
    h[:] = 1.0  # natively, the pages move back to the host


t = timed(lambda: float(a.sum()), setup=cpu_writes)
print(f"stream: one pass over {mib} MiB the CPU just wrote: {t * 1e3:.2f} ms ({gb / t:.1f} GB/s)")
t = timed(lambda: [a.sum() for _ in range(20)], repeat=1)
print(f"reuse: 20 passes: {t * 1e3:.2f} ms ({20 * gb / t:.1f} GB/s)")
mem.mem.prefetch(cupy.cuda.Stream.null)
t = timed(lambda: [a.sum() for _ in range(20)], repeat=1)
print(f"reuse after prefetch: 20 passes: {t * 1e3:.2f} ms ({20 * gb / t:.1f} GB/s)")


def cpu_pass():
    (a + 1).sum()
    cupy.cuda.Device().synchronize()
    h[:] += 1.0


t = timed(cpu_pass)
print(f"cpu: kernel then CPU pass over {mib} MiB: {t * 1e3:.2f} ms")
d = cupy.ones(n, dtype=cupy.float32)
t = timed(lambda: float(d.sum()))
print(f"device memory reference: one pass: {t * 1e3:.2f} ms ({gb / t:.1f} GB/s)")
