"""Allocates GIGS GiB and copies in a loop until killed (the survive test
kills it with SIGKILL mid-copy)."""

import ctypes
import sys
import time

gigs = int(sys.argv[1])
cu = ctypes.CDLL("libcuda.so.1")
assert cu.cuInit(0) == 0
ctx = ctypes.c_void_p()
assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
assert cu.cuCtxSetCurrent(ctx) == 0
bufs = []
for _ in range(gigs):
    d = ctypes.c_uint64()
    assert cu.cuMemAlloc_v2(ctypes.byref(d), 1 << 30) == 0
    bufs.append(d)
host = ctypes.create_string_buffer(256 << 20)
print("allocated", gigs, "GiB; copying", flush=True)
while True:
    for d in bufs:
        cu.cuMemcpyHtoD_v2(d, host, 256 << 20)
