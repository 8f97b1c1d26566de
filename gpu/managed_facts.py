"""What driver 580 answers where vgpu's managed-memory and host-registration
code had to choose without a GPU (docs/adr/0005-managed-memory-and-host-
registration.md). Run it natively and through vgpu and compare; each line
is `what: RESULT value`. Only the ctypes standard library is needed.

Usage: python3 gpu/managed_facts.py [LIBRARY]   (default libcuda.so.1)
"""

import ctypes as C
import mmap
import sys
import tempfile

cu = C.CDLL(sys.argv[1] if len(sys.argv) > 1 else "libcuda.so.1")
names = {}


def name(r):
    if r not in names:
        s = C.c_char_p()
        cu.cuGetErrorName(r, C.byref(s))
        names[r] = s.value.decode() if s.value else str(r)
    return names[r]


def show(what, r, value=None):
    print(f"{what}: {name(r)}" + ("" if value is None else f" {value}"))


class Loc(C.Structure):
    _fields_ = [("type", C.c_int), ("id", C.c_int)]


u64, u32, i32, sz = C.c_uint64, C.c_uint32, C.c_int32, C.c_size_t
cu.cuMemAdvise_v2.argtypes = [u64, sz, C.c_int, Loc]
cu.cuMemPrefetchAsync_v2.argtypes = [u64, sz, Loc, C.c_uint, C.c_void_p]
cu.cuMemAdvise.argtypes = [u64, sz, C.c_int, C.c_int]
cu.cuMemPrefetchAsync.argtypes = [u64, sz, C.c_int, C.c_void_p]
cu.cuMemRangeGetAttribute.argtypes = [C.c_void_p, sz, C.c_int, u64, sz]
cu.cuPointerGetAttribute.argtypes = [C.c_void_p, C.c_int, u64]
cu.cuPointerSetAttribute.argtypes = [C.c_void_p, C.c_int, u64]
cu.cuMemHostRegister_v2.argtypes = [C.c_void_p, sz, C.c_uint]
cu.cuMemHostUnregister.argtypes = [C.c_void_p]
cu.cuMemHostGetFlags.argtypes = [C.c_void_p, C.c_void_p]
cu.cuMemHostGetDevicePointer_v2.argtypes = [C.c_void_p, C.c_void_p, C.c_uint]
cu.cuMemGetAddressRange_v2.argtypes = [C.c_void_p, C.c_void_p, u64]
cu.cuMemFree_v2.argtypes = [u64]
cu.cuMemFree.argtypes = [u32]
cu.cuStreamAttachMemAsync.argtypes = [C.c_void_p, u64, sz, C.c_uint]

show("cuInit", cu.cuInit(0))
ctx = C.c_void_p()
show("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(C.byref(ctx), 0))
show("cuCtxSetCurrent", cu.cuCtxSetCurrent(ctx))


def range_int(attr, p, n):
    v = i32(12345)
    r = cu.cuMemRangeGetAttribute(C.byref(v), 4, attr, p, n)
    return r, v.value


def pointer_u64(attr, p):
    v = u64(0)
    r = cu.cuPointerGetAttribute(C.byref(v), attr, p)
    return r, v.value


# Managed memory.
m = u64()
show("managed alloc 65636", cu.cuMemAllocManaged(C.byref(m), 65636, 1))
p = m.value
r, v = pointer_u64(12, p)
show("managed RANGE_SIZE of 65636 bytes", r, v)
base, size = u64(), sz()
r = cu.cuMemGetAddressRange_v2(C.byref(base), C.byref(size), p + 100)
show("managed cuMemGetAddressRange size", r, size.value)
show("managed cuMemHostGetFlags", cu.cuMemHostGetFlags(C.byref(u32()), C.c_void_p(p)))
d = u64()
show("managed cuMemHostGetDevicePointer", cu.cuMemHostGetDevicePointer_v2(C.byref(d), C.c_void_p(p), 0))
show("managed cuMemHostRegister", cu.cuMemHostRegister_v2(C.c_void_p(p), 4096, 0))
show("managed cuMemFreeHost", cu.cuMemFreeHost(C.c_void_p(p)))
show("advise v1 device 99", cu.cuMemAdvise(p, 4096, 3, 99))
show("advise v1 device -5", cu.cuMemAdvise(p, 4096, 3, -5))
show("prefetch v1 device -5", cu.cuMemPrefetchAsync(p, 4096, -5, None))
show("advise past the end", cu.cuMemAdvise(p, 1 << 20, 1, 0))
show("advise inside the last page", cu.cuMemAdvise(p, 65536 + 4096, 1, 0))
show("advise v2 HOST_NUMA_CURRENT preferred", cu.cuMemAdvise_v2(p, 4096, 3, Loc(4, 0)))
show("advise v2 HOST_NUMA 0 preferred", cu.cuMemAdvise_v2(p, 4096, 3, Loc(3, 0)))
show("range PREFERRED_LOCATION_TYPE", *range_int(5, p, 4096))
show("range PREFERRED_LOCATION_ID", *range_int(6, p, 4096))
show("advise v2 host preferred", cu.cuMemAdvise_v2(p, 4096, 3, Loc(2, 0)))
show("range PREFERRED_LOCATION_ID for host", *range_int(6, p, 4096))
show("advise v2 accessed-by host", cu.cuMemAdvise_v2(p, 8192, 5, Loc(2, 0)))
show("advise v2 accessed-by device 0", cu.cuMemAdvise_v2(p, 8192, 5, Loc(1, 0)))
by = (i32 * 4)()
r = cu.cuMemRangeGetAttribute(by, 16, 3, p, 8192)
show("range ACCESSED_BY host and device 0", r, list(by))
show("prefetch v2 HOST_NUMA_CURRENT", cu.cuMemPrefetchAsync_v2(p, 4096, Loc(4, 0), 0, None))
show("range LAST_PREFETCH_LOCATION_TYPE", *range_int(7, p, 4096))
show("range LAST_PREFETCH_LOCATION_ID", *range_int(8, p, 4096))
show("range LAST_PREFETCH_LOCATION", *range_int(4, p, 4096))
show("range count 0", *range_int(1, p, 0))
stream = C.c_void_p()
cu.cuStreamCreate(C.byref(stream), 0)
show("attach SINGLE on the NULL stream", cu.cuStreamAttachMemAsync(None, p, 0, 4))
show("attach length = allocation", cu.cuStreamAttachMemAsync(stream, p, 65636, 2))
show("attach interior pointer", cu.cuStreamAttachMemAsync(stream, p + 4096, 0, 2))
one = u32(1)
show("set SYNC_MEMOPS managed", cu.cuPointerSetAttribute(C.byref(one), 6, p))
show("cuMemFree managed", cu.cuMemFree_v2(p))
show("cuMemFree managed twice", cu.cuMemFree_v2(p))

# Device memory.
d = u64()
cu.cuMemAlloc_v2(C.byref(d), 1 << 16)
show("device SYNC_MEMOPS default", *pointer_u64(6, d.value))
show("set SYNC_MEMOPS 0 device", cu.cuPointerSetAttribute(C.byref(u32(0)), 6, d.value))
show("set CONTEXT attribute", cu.cuPointerSetAttribute(C.byref(one), 1, d.value))
show("set SYNC_MEMOPS NULL value", cu.cuPointerSetAttribute(None, 6, d.value))
show("attach SINGLE device memory", cu.cuStreamAttachMemAsync(stream, d.value, 0, 4))
cu.cuMemFree_v2(d.value)
for w, h, e in [(100, 10, 4), (1, 1, 4), (513, 3, 8), (100, 10, 3), (0, 10, 4), (100, 0, 4)]:
    dp, pitch = u64(), sz()
    r = cu.cuMemAllocPitch_v2(C.byref(dp), C.byref(pitch), w, h, e)
    show(f"cuMemAllocPitch_v2 {w}x{h} element {e} pitch", r, pitch.value)
    if r == 0:
        cu.cuMemFree_v2(dp.value)

# The 32-bit first forms.
d32 = u32()
r = cu.cuMemAlloc(C.byref(d32), 4096)
show("cuMemAlloc (32-bit) pointer", r, hex(d32.value))
if r == 0:
    show("cuMemFree (32-bit)", cu.cuMemFree(d32.value))

# Host registration of memory vgpu does not move.
with tempfile.TemporaryFile() as f:
    f.truncate(1 << 16)
    fm = mmap.mmap(f.fileno(), 1 << 16)
    addr = C.addressof(C.c_char.from_buffer(fm))
    show("register file-backed shared mapping", cu.cuMemHostRegister_v2(C.c_void_p(addr), 1 << 16, 0))
    show("unregister it", cu.cuMemHostUnregister(C.c_void_p(addr)))
    del addr
a = mmap.mmap(-1, 1 << 16, flags=mmap.MAP_SHARED)
addr = C.addressof(C.c_char.from_buffer(a))
show("register anonymous shared mapping", cu.cuMemHostRegister_v2(C.c_void_p(addr), 1 << 16, 0))
show("unregister it", cu.cuMemHostUnregister(C.c_void_p(addr)))
buf = (C.c_char * 65536)()
b = C.addressof(buf)
page = (b + 4095) & ~4095
show("register one page", cu.cuMemHostRegister_v2(C.c_void_p(page + 100), 200, 0))
show("register the same page, other bytes", cu.cuMemHostRegister_v2(C.c_void_p(page + 1000), 200, 0))
show("unregister second", cu.cuMemHostUnregister(C.c_void_p(page + 1000)))
show("unregister first", cu.cuMemHostUnregister(C.c_void_p(page + 100)))
r, v = pointer_u64(12, page)
show("RANGE_SIZE of unaligned 200-byte registration (after unregister)", r, v)
show("register 200 unaligned", cu.cuMemHostRegister_v2(C.c_void_p(page + 100), 200, 0))
show("RANGE_SIZE of it", *pointer_u64(12, page + 100))
show("RANGE_START_ADDR of it (offset from pointer)", pointer_u64(11, page + 100)[0], pointer_u64(11, page + 100)[1] - (page + 100))
cu.cuMemHostUnregister(C.c_void_p(page + 100))

# Batch decompression on a device without the engine.
err = sz(77)
r = cu.cuMemBatchDecompressAsync(None, sz(0), C.c_uint(0), C.byref(err), None)
show("cuMemBatchDecompressAsync count 0", r)
print("done")
