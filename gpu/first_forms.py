"""What driver 580 answers for the 32-bit first forms of the memory calls
(CUdeviceptr_v1, from before CUDA 3.2), called with a current primary context.
Run natively and through vgpu and compare; each line is `call: RESULT`.

Usage: python3 gpu/first_forms.py [LIBRARY]   (default libcuda.so.1)
"""

import ctypes as C
import sys

cu = C.CDLL(sys.argv[1] if len(sys.argv) > 1 else "libcuda.so.1")


def name(r):
    s = C.c_char_p()
    cu.cuGetErrorName(r, C.byref(s))
    return s.value.decode() if s.value else str(r)


def show(what, r):
    print(f"{what}: {name(r)}")


dev, ctx = C.c_int(), C.c_void_p()
show("cuInit", cu.cuInit(0))
show("cuDeviceGet", cu.cuDeviceGet(C.byref(dev), 0))
show("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(C.byref(ctx), dev))
show("cuCtxSetCurrent", cu.cuCtxSetCurrent(ctx))

d = C.c_uint64()
show("cuMemAlloc_v2", cu.cuMemAlloc_v2(C.byref(d), 1 << 20))
low = C.c_uint32(d.value & 0xFFFFFFFF)
p32, pitch, size32 = C.c_uint32(), C.c_uint32(), C.c_uint32()
show("cuMemAlloc (first form)", cu.cuMemAlloc(C.byref(p32), C.c_uint32(4096)))
show("cuMemFree (first form) of a 64-bit allocation's low bits", cu.cuMemFree(low))
show("cuMemFree (first form) of 0", cu.cuMemFree(C.c_uint32(0)))
show("cuMemAllocPitch (first form)",
     cu.cuMemAllocPitch(C.byref(p32), C.byref(pitch), C.c_uint32(100), C.c_uint32(10), C.c_uint32(4)))
show("cuMemGetAddressRange (first form)",
     cu.cuMemGetAddressRange(C.byref(p32), C.byref(size32), low))
host = C.c_void_p()
show("cuMemHostAlloc", cu.cuMemHostAlloc(C.byref(host), C.c_size_t(4096), C.c_uint(2)))
show("cuMemHostGetDevicePointer (first form) of cuMemHostAlloc memory",
     cu.cuMemHostGetDevicePointer(C.byref(p32), host, C.c_uint(0)))
show("cuMemHostGetDevicePointer (first form) flags 1",
     cu.cuMemHostGetDevicePointer(C.byref(p32), host, C.c_uint(1)))
show("cuMemcpyHtoA (first form) NULL array",
     cu.cuMemcpyHtoA(C.c_void_p(0), C.c_uint32(0), host, C.c_uint32(16)))
show("cuMemBatchDecompressAsync count 0",
     cu.cuMemBatchDecompressAsync(C.c_void_p(0), C.c_size_t(0), C.c_uint(0), C.c_void_p(0), C.c_void_p(0)))
show("cuMemFree_v2", cu.cuMemFree_v2(d))
print("done")
