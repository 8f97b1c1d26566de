#!/usr/bin/env python3
"""Module loads from files (cuModuleLoad, cuLibraryLoadFromFile), a fat-binary
style load (cuModuleLoadFatBinary on an in-memory image), 3D copies
(cuMemcpy3D host<->device, device<->device, with pitches and offsets), and
VGPU_TRACE lines with arguments. Prints `ok NAME` / `FAIL NAME`; exits 1 on
any failure."""

import ctypes
import os
import sys
import tempfile

cu = ctypes.CDLL("libcuda.so.1")
failures = 0


def check(name, cond):
    global failures
    print(("ok " if cond else "FAIL ") + name)
    failures += 0 if cond else 1


class Memcpy3D(ctypes.Structure):
    _fields_ = [(n, t) for n, t in [
        ("srcXInBytes", ctypes.c_size_t), ("srcY", ctypes.c_size_t), ("srcZ", ctypes.c_size_t),
        ("srcLOD", ctypes.c_size_t), ("srcMemoryType", ctypes.c_uint), ("srcHost", ctypes.c_void_p),
        ("srcDevice", ctypes.c_uint64), ("srcArray", ctypes.c_void_p), ("reserved0", ctypes.c_void_p),
        ("srcPitch", ctypes.c_size_t), ("srcHeight", ctypes.c_size_t),
        ("dstXInBytes", ctypes.c_size_t), ("dstY", ctypes.c_size_t), ("dstZ", ctypes.c_size_t),
        ("dstLOD", ctypes.c_size_t), ("dstMemoryType", ctypes.c_uint), ("dstHost", ctypes.c_void_p),
        ("dstDevice", ctypes.c_uint64), ("dstArray", ctypes.c_void_p), ("reserved1", ctypes.c_void_p),
        ("dstPitch", ctypes.c_size_t), ("dstHeight", ctypes.c_size_t),
        ("WidthInBytes", ctypes.c_size_t), ("Height", ctypes.c_size_t), ("Depth", ctypes.c_size_t)]]


HOST, DEVICE = 1, 2
check("init", cu.cuInit(0) == 0)
ctx = ctypes.c_void_p()
check("ctx", cu.cuCtxCreate_v2(ctypes.byref(ctx), 0, 0) == 0)

image = b"VGPU-SIM-MODULE 1\nkernel fill_u32\n"
with tempfile.NamedTemporaryFile("wb", suffix=".mod", delete=False) as f:
    f.write(image)
mod = ctypes.c_void_p()
check("module_load_file", cu.cuModuleLoad(ctypes.byref(mod), f.name.encode()) == 0)
fn = ctypes.c_void_p()
check("module_load_file_function", cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"fill_u32") == 0)
check("module_load_missing_file", cu.cuModuleLoad(ctypes.byref(mod), b"/nonexistent/x.cubin") == 301)
lib = ctypes.c_void_p()
check("library_load_file", cu.cuLibraryLoadFromFile(ctypes.byref(lib), f.name.encode(), None, None, 0, None, None, 0) == 0)
mod2 = ctypes.c_void_p()
check("module_load_fat_binary", cu.cuModuleLoadFatBinary(ctypes.byref(mod2), ctypes.c_char_p(image + b"\0")) == 0)
os.unlink(f.name)

# A 3D box of 16 x 4 x 3 bytes, inside pitched 32 x 8 x 4 volumes at offsets.
W, H, D = 16, 4, 3
SP, SH = 32, 8
size = SP * SH * 4
src = (ctypes.c_ubyte * size)(*[(i * 7) % 251 for i in range(size)])
dev = ctypes.c_uint64()
check("alloc", cu.cuMemAlloc_v2(ctypes.byref(dev), size) == 0)
check("memset", cu.cuMemsetD8_v2(dev, 0, size) == 0)
c = Memcpy3D(srcXInBytes=2, srcY=1, srcZ=1, srcMemoryType=HOST, srcHost=ctypes.addressof(src),
             srcPitch=SP, srcHeight=SH, dstXInBytes=4, dstY=2, dstZ=0, dstMemoryType=DEVICE,
             dstDevice=dev.value, dstPitch=SP, dstHeight=SH, WidthInBytes=W, Height=H, Depth=D)
check("memcpy3d_htod", cu.cuMemcpy3D_v2(ctypes.byref(c)) == 0)
back = (ctypes.c_ubyte * size)()
check("dtoh_whole", cu.cuMemcpyDtoH_v2(back, dev, size) == 0)
good = True
for z in range(D):
    for y in range(H):
        for x in range(W):
            s = ((1 + z) * SH + 1 + y) * SP + 2 + x
            d = (z * SH + 2 + y) * SP + 4 + x
            good &= back[d] == src[s]
check("memcpy3d_htod_data", good)
out = (ctypes.c_ubyte * size)()
c2 = Memcpy3D(srcXInBytes=4, srcY=2, srcZ=0, srcMemoryType=DEVICE, srcDevice=dev.value, srcPitch=SP,
              srcHeight=SH, dstXInBytes=2, dstY=1, dstZ=1, dstMemoryType=HOST,
              dstHost=ctypes.addressof(out), dstPitch=SP, dstHeight=SH, WidthInBytes=W, Height=H, Depth=D)
check("memcpy3d_dtoh", cu.cuMemcpy3D_v2(ctypes.byref(c2)) == 0)
good = all(out[((1 + z) * SH + 1 + y) * SP + 2 + x] == src[((1 + z) * SH + 1 + y) * SP + 2 + x]
           for z in range(D) for y in range(H) for x in range(W))
check("memcpy3d_dtoh_data", good)
c3 = Memcpy3D(srcMemoryType=DEVICE, srcDevice=dev.value, srcPitch=SP, srcHeight=SH, srcZ=3,
              dstMemoryType=HOST, dstHost=ctypes.addressof(out), dstPitch=SP, dstHeight=SH,
              WidthInBytes=W, Height=H, Depth=2)
check("memcpy3d_out_of_bounds", cu.cuMemcpy3D_v2(ctypes.byref(c3)) == 1)
trace = os.environ.get("VGPU_TRACE")
if trace:
    with open(trace) as t:
        lines = [l for l in t if l.startswith("cuMemAlloc_v2 -> 0")]
    check("trace_has_arguments", bool(lines) and "args=(0x" in lines[0])
print(f"{failures} failed")
sys.exit(1 if failures else 0)
