"""Managed and registered host memory through CuPy and numba: output
identical natively and through vgpu (gpu/frameworks.sh compares the two).

CuPy: cupy.cuda.malloc_managed arrays written by the CPU and by kernels,
prefetch and advice, the runtime's memory type of a managed pointer.
numba: cuda.managed_array read and written by the host and a kernel,
cuda.pinned (cuMemHostRegister of a NumPy array) and cuda.mapped_array.
"""

import ctypes

import numpy as np

# numba-cuda on the GPU machine still names np.row_stack, which NumPy 2.x
# removed; the alias lets it import (natively and through vgpu alike).
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

import cupy  # noqa: E402
from numba import cuda  # noqa: E402


def cupy_part():
    n = 1 << 20
    mem = cupy.cuda.malloc_managed(n * 4)
    a = cupy.ndarray((n,), dtype=cupy.float32, memptr=mem)
    a[...] = cupy.arange(n, dtype=cupy.float32)
    cupy.cuda.Device().synchronize()
    # The CPU reads the same pages through the pointer.
    host = np.ctypeslib.as_array(
        (ctypes.c_float * n).from_address(mem.ptr)
    )
    print("cupy managed cpu reads kernel writes:", bool(host[12345] == 12345.0))
    host[7] = -7.0
    print("cupy managed kernel reads cpu write:", float(a[7].get()))
    attrs = cupy.cuda.runtime.pointerGetAttributes(mem.ptr)
    print("cupy managed memory type:", attrs.type)
    stream = cupy.cuda.Stream()
    mem.mem.prefetch(stream)
    read_mostly = getattr(cupy.cuda.runtime, "cudaMemAdviseSetReadMostly", 1)
    mem.mem.advise(read_mostly, cupy.cuda.Device())
    b = (a * 2).sum()
    stream.synchronize()
    print("cupy managed sum after prefetch+advise:", float(b))
    pinned = cupy.cuda.alloc_pinned_memory(4096)
    print("cupy pinned memory type:", cupy.cuda.runtime.pointerGetAttributes(pinned.ptr).type)


@cuda.jit
def add_one(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1


def numba_part():
    n = 1 << 16
    m = cuda.managed_array(n, dtype=np.float32)
    m[:] = np.arange(n, dtype=np.float32)
    add_one[(n + 255) // 256, 256](m)
    cuda.synchronize()
    print("numba managed after kernel:", float(m[100]), float(m[n - 1]))
    m[5] = 1000.0
    add_one[(n + 255) // 256, 256](m)
    cuda.synchronize()
    print("numba managed cpu write seen by kernel:", float(m[5]))

    a = np.arange(n, dtype=np.float32)
    with cuda.pinned(a):
        d = cuda.to_device(a)
        add_one[(n + 255) // 256, 256](d)
        d.copy_to_host(a)
    print("numba pinned (cuMemHostRegister) round trip:", float(a[10]), float(a[n - 1]))
    mapped = cuda.mapped_array(n, dtype=np.float32)
    mapped[:] = 1.0
    add_one[(n + 255) // 256, 256](mapped)
    cuda.synchronize()
    print("numba mapped array after kernel:", float(mapped.sum()))


cupy_part()
numba_part()
print("done")
