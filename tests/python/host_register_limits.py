#!/usr/bin/env python3
"""cuMemHostRegister of mappings of several kinds through vgpu, through
ctypes (docs/adr/0005-managed-memory-and-host-registration.md): a shared
file mapping is refused with CUDA_ERROR_INVALID_VALUE and keeps its pages,
as driver 580 answers; a shared anonymous mapping and a private one are
registered, keep their bytes, and serve a copy from the device.

Usage:  python3 host_register_limits.py
Output: ``ok NAME`` lines and ``limits ok``; ``FAIL ...`` and exit 1 otherwise.
"""

import ctypes as C
import mmap
import sys
import tempfile

SUCCESS, INVALID_VALUE, NOT_REGISTERED = 0, 1, 713
SIZE = 1 << 16

cu = C.CDLL("libcuda.so.1")
cu.cuMemHostRegister_v2.argtypes = [C.c_void_p, C.c_size_t, C.c_uint]
cu.cuMemHostUnregister.argtypes = [C.c_void_p]
cu.cuMemAlloc_v2.argtypes = [C.c_void_p, C.c_size_t]
cu.cuMemsetD8_v2.argtypes = [C.c_uint64, C.c_ubyte, C.c_size_t]
cu.cuMemcpyDtoH_v2.argtypes = [C.c_void_p, C.c_uint64, C.c_size_t]
cu.cuMemFree_v2.argtypes = [C.c_uint64]
failed = False


def expect(name, got, want):
    global failed
    if got == want:
        print(f"ok {name}")
    else:
        failed = True
        print(f"FAIL {name}: returned {got}, expected {want}")


def address(m):
    return C.addressof(C.c_char.from_buffer(m))


ctx = C.c_void_p()
expect("init", cu.cuInit(0), SUCCESS)
expect("primary_ctx_retain", cu.cuDevicePrimaryCtxRetain(C.byref(ctx), 0), SUCCESS)
expect("ctx_set_current", cu.cuCtxSetCurrent(ctx), SUCCESS)

with tempfile.TemporaryFile() as f:
    f.truncate(SIZE)
    fm = mmap.mmap(f.fileno(), SIZE)
    fm[:5] = b"file!"
    a = address(fm)
    expect("register_file_backed", cu.cuMemHostRegister_v2(a, SIZE, 0), INVALID_VALUE)
    expect("file_bytes_kept", fm[:5], b"file!")
    expect("unregister_file_backed", cu.cuMemHostUnregister(a), NOT_REGISTERED)

sm = mmap.mmap(-1, SIZE, flags=mmap.MAP_SHARED)
sm[:6] = b"shared"
expect("register_shared_anonymous", cu.cuMemHostRegister_v2(address(sm), SIZE, 0), SUCCESS)
expect("shared_bytes_kept", sm[:6], b"shared")
expect("unregister_shared_anonymous", cu.cuMemHostUnregister(address(sm)), SUCCESS)

pm = mmap.mmap(-1, SIZE, flags=mmap.MAP_PRIVATE)
pm[:7] = b"private"
p = address(pm)
expect("register_private_anonymous", cu.cuMemHostRegister_v2(p, SIZE, 0), SUCCESS)
expect("private_bytes_kept", pm[:7], b"private")
d = C.c_uint64()
expect("alloc", cu.cuMemAlloc_v2(C.byref(d), SIZE), SUCCESS)
expect("memset", cu.cuMemsetD8_v2(d.value, 0x5A, SIZE), SUCCESS)
expect("dtoh_into_registered", cu.cuMemcpyDtoH_v2(p, d.value, SIZE), SUCCESS)
expect("registered_sees_copy", pm[:4] + pm[SIZE - 4 :], b"\x5a" * 8)
expect("unregister", cu.cuMemHostUnregister(p), SUCCESS)
pm[0:1] = b"!"
expect("usable_after_unregister", pm[:2], b"!Z")
expect("free", cu.cuMemFree_v2(d.value), SUCCESS)

if failed:
    sys.exit(1)
print("limits ok")
