#!/usr/bin/env python3
"""CUDA in ``multiprocessing`` children started with the ``fork`` method.

The parent initialises CUDA through ctypes (cuInit, the primary context,
memory holding a pattern) and then runs tasks in a pool of forked processes.
In each child process, before its own cuInit every call returns
CUDA_ERROR_NOT_INITIALIZED; after it, the parent's device pointer is
refused with CUDA_ERROR_INVALID_VALUE, and the child allocates, copies,
memsets and reads back through a session of its own. The parent checks every
task's result, and that its own memory and session still work afterwards.

Usage:  python3 fork_pool.py [PROCESSES [TASKS]]     (default 3 processes, 4 tasks)
Output: ``ok NAME`` lines and ``fork pool ok``; ``FAIL ...`` and exit 1 otherwise.
"""

import ctypes
import hashlib
import multiprocessing
import os
import sys
from ctypes import POINTER, byref, c_int, c_size_t, c_uint, c_void_p

SUCCESS = 0
INVALID_VALUE = 1
NOT_INITIALIZED = 3
INVALID_CONTEXT = 201
BYTES = 1 << 20

CUdeviceptr = ctypes.c_ulonglong
PROTOTYPES = {
    "cuInit": [c_uint],
    "cuDevicePrimaryCtxRetain": [POINTER(c_void_p), c_int],
    "cuCtxSetCurrent": [c_void_p],
    "cuCtxGetCurrent": [POINTER(c_void_p)],
    "cuMemAlloc_v2": [POINTER(CUdeviceptr), c_size_t],
    "cuMemFree_v2": [CUdeviceptr],
    "cuMemcpyHtoD_v2": [CUdeviceptr, c_void_p, c_size_t],
    "cuMemcpyDtoH_v2": [c_void_p, CUdeviceptr, c_size_t],
    "cuMemsetD32_v2": [CUdeviceptr, c_uint, c_size_t],
}


class Cuda:
    def __init__(self):
        lib = ctypes.CDLL("libcuda.so.1")
        for name, args in PROTOTYPES.items():
            f = getattr(lib, name)
            f.argtypes = args
            f.restype = c_int
            setattr(self, name, f)


cu = Cuda()
# The parent's device pointer, inherited by every child.
PARENT_MEM = CUdeviceptr(0)
# The pid that last called cuInit (a pool process runs several tasks).
INITIALISED_IN = None


def pattern(seed, n):
    out = bytearray()
    block = seed.to_bytes(8, "little")
    while len(out) < n:
        block = hashlib.sha256(block).digest()
        out += block
    return bytes(out[:n])


def call(what, r, want=SUCCESS):
    if r != want:
        raise RuntimeError(f"[{os.getpid()}] {what} returned {r}, want {want}")


def round_trip(seed):
    """Allocates, writes the seed's pattern into the first half and a memset
    into the second, reads everything back; returns the bytes."""
    d = CUdeviceptr(0)
    call("cuMemAlloc", cu.cuMemAlloc_v2(byref(d), BYTES))
    src = pattern(seed, BYTES // 2)
    call("cuMemcpyHtoD", cu.cuMemcpyHtoD_v2(d, src, len(src)))
    call("cuMemsetD32", cu.cuMemsetD32_v2(CUdeviceptr(d.value + BYTES // 2), seed, BYTES // 8))
    back = ctypes.create_string_buffer(BYTES)
    call("cuMemcpyDtoH", cu.cuMemcpyDtoH_v2(back, d, BYTES))
    call("cuMemFree", cu.cuMemFree_v2(d))
    return back.raw


def expected(seed):
    return pattern(seed, BYTES // 2) + seed.to_bytes(4, "little") * (BYTES // 8)


def task(seed):
    """Runs in a forked pool process."""
    global INITIALISED_IN
    fresh = INITIALISED_IN != os.getpid()
    if fresh:
        d = CUdeviceptr(0)
        call("cuMemAlloc before cuInit", cu.cuMemAlloc_v2(byref(d), 256), NOT_INITIALIZED)
        call("cuInit", cu.cuInit(0))
        INITIALISED_IN = os.getpid()
        cur = c_void_p(1)
        call("cuCtxGetCurrent", cu.cuCtxGetCurrent(byref(cur)))
        if cur.value is not None:
            raise RuntimeError(f"[{os.getpid()}] context {cur.value:#x} is current after the fork")
        call("cuMemAlloc without a context", cu.cuMemAlloc_v2(byref(d), 256), INVALID_CONTEXT)
        ctx = c_void_p()
        call("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(byref(ctx), 0))
        call("cuCtxSetCurrent", cu.cuCtxSetCurrent(ctx))
    # The parent's memory is not the child's.
    back = ctypes.create_string_buffer(256)
    call("cuMemcpyDtoH of the inherited pointer",
         cu.cuMemcpyDtoH_v2(back, PARENT_MEM, 256), INVALID_VALUE)
    data = round_trip(seed)
    return seed, os.getpid(), fresh, hashlib.sha256(data).hexdigest()


def main():
    procs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    tasks = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    call("cuInit", cu.cuInit(0))
    ctx = c_void_p()
    call("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(byref(ctx), 0))
    call("cuCtxSetCurrent", cu.cuCtxSetCurrent(ctx))
    call("cuMemAlloc", cu.cuMemAlloc_v2(byref(PARENT_MEM), BYTES))
    mine = pattern(1, BYTES)
    call("cuMemcpyHtoD", cu.cuMemcpyHtoD_v2(PARENT_MEM, mine, BYTES))
    print("ok parent_ready", flush=True)

    mp = multiprocessing.get_context("fork")
    seeds = list(range(100, 100 + tasks))
    with mp.Pool(procs) as pool:
        results = pool.map_async(task, seeds, chunksize=1).get(timeout=120)
    pids = set()
    for seed, pid, fresh, digest in results:
        if digest != hashlib.sha256(expected(seed)).hexdigest():
            print(f"FAIL task {seed} in process {pid}: wrong data", flush=True)
            sys.exit(1)
        pids.add(pid)
        print(f"ok task {seed} in process {pid}{' (first in it)' if fresh else ''}", flush=True)
    if os.getpid() in pids:
        print("FAIL a task ran in the parent", flush=True)
        sys.exit(1)
    print(f"ok children {len(pids)} processes, {len(results)} tasks", flush=True)

    back = ctypes.create_string_buffer(BYTES)
    call("parent cuMemcpyDtoH", cu.cuMemcpyDtoH_v2(back, PARENT_MEM, BYTES))
    if back.raw != mine:
        print("FAIL the parent's memory changed", flush=True)
        sys.exit(1)
    if round_trip(7) != expected(7):
        print("FAIL the parent's session after the pool", flush=True)
        sys.exit(1)
    print("ok parent_session_untouched", flush=True)
    print("fork pool ok", flush=True)


if __name__ == "__main__":
    main()
