#!/usr/bin/env python3
"""Exercise the CUDA Driver API from Python ctypes and check every result.

Loads libcuda.so.1 the way Python bindings do (ctypes.CDLL), or the library
named on the command line, and runs device queries, a context, memory copies,
memsets, streams and events, a module launch and bad calls whose error codes
must match the real driver's. It targets vgpu's simulated device: the module
it loads is the simulator's text format.

Usage:  python3 ctypes_smoke.py [LIBRARY]      (default: libcuda.so.1)
Output: one line per check, ``ok NAME`` or ``FAIL NAME: ...``, then a summary.
Exit:   0 every check passed; 1 a check failed; 2 the library could not be
        loaded or lacks an entry point.
"""

import ctypes
import struct
import sys
from ctypes import POINTER, byref, c_char_p, c_float, c_int, c_size_t, c_uint, c_ushort, c_ubyte, c_void_p

CUresult = c_int
CUdevice = c_int
CUdeviceptr = ctypes.c_ulonglong

SUCCESS = 0
INVALID_VALUE = 1
NOT_INITIALIZED = 3
INVALID_DEVICE = 101
INVALID_IMAGE = 200
INVALID_CONTEXT = 201
INVALID_HANDLE = 400
NOT_FOUND = 500

SIM_MODULE = b"VGPU-SIM-MODULE 1\nkernel vector_add\n\0"

# name -> (symbol, argtypes)
PROTOTYPES = {
    "Init": ("cuInit", [c_uint]),
    "DriverGetVersion": ("cuDriverGetVersion", [POINTER(c_int)]),
    "DeviceGetCount": ("cuDeviceGetCount", [POINTER(c_int)]),
    "DeviceGet": ("cuDeviceGet", [POINTER(CUdevice), c_int]),
    "DeviceGetName": ("cuDeviceGetName", [c_char_p, c_int, CUdevice]),
    "DeviceTotalMem": ("cuDeviceTotalMem_v2", [POINTER(c_size_t), CUdevice]),
    "DeviceGetAttribute": ("cuDeviceGetAttribute", [POINTER(c_int), c_int, CUdevice]),
    "DevicePrimaryCtxRetain": ("cuDevicePrimaryCtxRetain", [POINTER(c_void_p), CUdevice]),
    "DevicePrimaryCtxRelease": ("cuDevicePrimaryCtxRelease_v2", [CUdevice]),
    "CtxSetCurrent": ("cuCtxSetCurrent", [c_void_p]),
    "CtxGetCurrent": ("cuCtxGetCurrent", [POINTER(c_void_p)]),
    "CtxSynchronize": ("cuCtxSynchronize", []),
    "MemAlloc": ("cuMemAlloc_v2", [POINTER(CUdeviceptr), c_size_t]),
    "MemFree": ("cuMemFree_v2", [CUdeviceptr]),
    "MemcpyHtoD": ("cuMemcpyHtoD_v2", [CUdeviceptr, c_void_p, c_size_t]),
    "MemcpyDtoH": ("cuMemcpyDtoH_v2", [c_void_p, CUdeviceptr, c_size_t]),
    "MemcpyDtoD": ("cuMemcpyDtoD_v2", [CUdeviceptr, CUdeviceptr, c_size_t]),
    "MemsetD8": ("cuMemsetD8_v2", [CUdeviceptr, c_ubyte, c_size_t]),
    "MemsetD16": ("cuMemsetD16_v2", [CUdeviceptr, c_ushort, c_size_t]),
    "MemsetD32": ("cuMemsetD32_v2", [CUdeviceptr, c_uint, c_size_t]),
    "StreamCreate": ("cuStreamCreate", [POINTER(c_void_p), c_uint]),
    "StreamDestroy": ("cuStreamDestroy_v2", [c_void_p]),
    "StreamSynchronize": ("cuStreamSynchronize", [c_void_p]),
    "EventCreate": ("cuEventCreate", [POINTER(c_void_p), c_uint]),
    "EventDestroy": ("cuEventDestroy_v2", [c_void_p]),
    "EventRecord": ("cuEventRecord", [c_void_p, c_void_p]),
    "EventSynchronize": ("cuEventSynchronize", [c_void_p]),
    "EventElapsedTime": ("cuEventElapsedTime", [POINTER(c_float), c_void_p, c_void_p]),
    "MemcpyHtoDAsync": ("cuMemcpyHtoDAsync_v2", [CUdeviceptr, c_void_p, c_size_t, c_void_p]),
    "MemcpyDtoHAsync": ("cuMemcpyDtoHAsync_v2", [c_void_p, CUdeviceptr, c_size_t, c_void_p]),
    "ModuleLoadData": ("cuModuleLoadData", [POINTER(c_void_p), c_void_p]),
    "ModuleGetFunction": ("cuModuleGetFunction", [POINTER(c_void_p), c_void_p, c_char_p]),
    "ModuleUnload": ("cuModuleUnload", [c_void_p]),
    "LaunchKernel": (
        "cuLaunchKernel",
        [c_void_p, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_void_p, POINTER(c_void_p), POINTER(c_void_p)],
    ),
    "GetErrorName": ("cuGetErrorName", [CUresult, POINTER(c_char_p)]),
}


class Driver:
    """The entry points of one libcuda, resolved with ctypes."""

    def __init__(self, library):
        self.lib = ctypes.CDLL(library)
        for name, (symbol, argtypes) in PROTOTYPES.items():
            fn = getattr(self.lib, symbol)  # AttributeError when missing
            fn.restype = CUresult
            fn.argtypes = argtypes
            setattr(self, name, fn)

    def error_name(self, code):
        name = c_char_p()
        if self.GetErrorName(code, byref(name)) != SUCCESS or not name.value:
            return "?"
        return name.value.decode()


class Checks:
    def __init__(self, cu):
        self.cu = cu
        self.count = 0
        self.failed = 0

    def result(self, name, got, want=SUCCESS):
        self.count += 1
        if got == want:
            print(f"ok {name}")
            return True
        self.failed += 1
        print(f"FAIL {name}: returned {self.cu.error_name(got)} ({got}), expected {self.cu.error_name(want)} ({want})")
        return False

    def true(self, name, cond, what):
        self.count += 1
        if cond:
            print(f"ok {name}")
            return True
        self.failed += 1
        print(f"FAIL {name}: {what}")
        return False


def device_queries(cu, t):
    version, count, dev, threads = c_int(), c_int(), CUdevice(), c_int()
    t.result("driver_version", cu.DriverGetVersion(byref(version)))
    if not t.result("device_count", cu.DeviceGetCount(byref(count))) or not t.true(
        "device_count_positive", count.value > 0, "no device"
    ):
        return None
    t.result("device_count_null", cu.DeviceGetCount(None), INVALID_VALUE)
    if not t.result("device_get", cu.DeviceGet(byref(dev), 0)):
        return None
    other = CUdevice()
    t.result("device_get_out_of_range", cu.DeviceGet(byref(other), count.value), INVALID_DEVICE)
    name = ctypes.create_string_buffer(256)
    t.result("device_name", cu.DeviceGetName(name, 255, dev))
    t.true("device_name_nonempty", len(name.value) > 0, "empty name")
    total = c_size_t()
    t.result("device_total_mem", cu.DeviceTotalMem(byref(total), dev))
    t.true("device_total_mem_positive", total.value > 0, "total memory is 0")
    t.result("device_attribute", cu.DeviceGetAttribute(byref(threads), 1, dev))
    t.true("device_attribute_positive", threads.value > 0, "max threads per block is not positive")
    return dev


def memory(cu, t):
    n = 4096
    data = bytes((i * 7 + 3) & 0xFF for i in range(n))
    a, b = CUdeviceptr(), CUdeviceptr()
    t.result("mem_alloc_null", cu.MemAlloc(None, 16), INVALID_VALUE)
    if not (t.result("mem_alloc", cu.MemAlloc(byref(a), n)) and t.result("mem_alloc_second", cu.MemAlloc(byref(b), n))):
        return
    src = ctypes.create_string_buffer(data, n)
    out = ctypes.create_string_buffer(n)
    t.result("memcpy_htod", cu.MemcpyHtoD(a, src, n))
    t.result("memcpy_dtod", cu.MemcpyDtoD(b, a, n))
    t.result("memcpy_dtoh", cu.MemcpyDtoH(out, b, n))
    t.true("memcpy_round_trip", out.raw == data, "bytes differ after HtoD, DtoD, DtoH")
    t.result("memcpy_htod_beyond_allocation", cu.MemcpyHtoD(a.value + n - 16, src, 64), INVALID_VALUE)

    t.result("memset_d8", cu.MemsetD8(a, 0xAB, n))
    t.result("memset_d8_read", cu.MemcpyDtoH(out, a, n))
    t.true("memset_d8_value", out.raw == b"\xab" * n, "bytes are not 0xab")
    t.result("memset_d16", cu.MemsetD16(a, 0x1234, n // 2))
    t.result("memset_d16_read", cu.MemcpyDtoH(out, a, n))
    t.true("memset_d16_value", out.raw == struct.pack("<H", 0x1234) * (n // 2), "halfwords are not 0x1234")
    t.result("memset_d32", cu.MemsetD32(a, 0xDEADBEEF, n // 4))
    t.result("memset_d32_read", cu.MemcpyDtoH(out, a, n))
    t.true("memset_d32_value", out.raw == struct.pack("<I", 0xDEADBEEF) * (n // 4), "words are not 0xdeadbeef")

    t.result("mem_free", cu.MemFree(a))
    t.result("mem_free_twice", cu.MemFree(a), INVALID_VALUE)
    t.result("mem_free_second", cu.MemFree(b))


def streams_and_events(cu, t):
    n = 1024
    stream, start, stop = c_void_p(), c_void_p(), c_void_p()
    if not t.result("stream_create", cu.StreamCreate(byref(stream), 0)):
        return
    t.result("event_create_start", cu.EventCreate(byref(start), 0))
    t.result("event_create_stop", cu.EventCreate(byref(stop), 0))
    d = CUdeviceptr()
    if not t.result("stream_alloc", cu.MemAlloc(byref(d), 4 * n)):
        return
    src = (c_uint * n)(*[i * 3 for i in range(n)])
    out = (c_uint * n)()
    t.result("event_record_start", cu.EventRecord(start, stream))
    t.result("memcpy_htod_async", cu.MemcpyHtoDAsync(d, src, 4 * n, stream))
    t.result("memcpy_dtoh_async", cu.MemcpyDtoHAsync(out, d, 4 * n, stream))
    t.result("event_record_stop", cu.EventRecord(stop, stream))
    t.result("stream_synchronize", cu.StreamSynchronize(stream))
    t.result("event_synchronize", cu.EventSynchronize(stop))
    ms = c_float(-1.0)
    t.result("event_elapsed_time", cu.EventElapsedTime(byref(ms), start, stop))
    t.true("event_elapsed_time_nonnegative", ms.value >= 0.0, "elapsed time is negative")
    t.true("stream_round_trip", list(out) == list(src), "async copies returned different data")
    t.result("stream_free", cu.MemFree(d))
    t.result("event_destroy_start", cu.EventDestroy(start))
    t.result("event_destroy_stop", cu.EventDestroy(stop))
    t.result("stream_destroy", cu.StreamDestroy(stream))
    t.result("stream_synchronize_destroyed", cu.StreamSynchronize(stream), INVALID_HANDLE)


def module_and_launch(cu, t):
    n = 1000
    mod, fn, missing, bad = c_void_p(), c_void_p(), c_void_p(), c_void_p()
    garbage = ctypes.create_string_buffer(b"\x01\x02 this is not a module")
    t.result("module_load_garbage", cu.ModuleLoadData(byref(bad), garbage), INVALID_IMAGE)
    image = ctypes.create_string_buffer(SIM_MODULE, len(SIM_MODULE))
    if not t.result("module_load", cu.ModuleLoadData(byref(mod), image)):
        return
    t.result("module_get_function_missing", cu.ModuleGetFunction(byref(missing), mod, b"no_such_kernel"), NOT_FOUND)
    if not t.result("module_get_function", cu.ModuleGetFunction(byref(fn), mod, b"vector_add")):
        return
    a = (c_float * n)(*[float(i) for i in range(n)])
    b = (c_float * n)(*[2.0 * i + 0.5 for i in range(n)])
    c = (c_float * n)()
    da, db, dc = CUdeviceptr(), CUdeviceptr(), CUdeviceptr()
    for name, ptr in (("a", da), ("b", db), ("c", dc)):
        t.result(f"launch_alloc_{name}", cu.MemAlloc(byref(ptr), 4 * n))
    t.result("launch_copy_a", cu.MemcpyHtoD(da, a, 4 * n))
    t.result("launch_copy_b", cu.MemcpyHtoD(db, b, 4 * n))
    count = c_int(n)
    params = (c_void_p * 4)(
        ctypes.cast(byref(da), c_void_p),
        ctypes.cast(byref(db), c_void_p),
        ctypes.cast(byref(dc), c_void_p),
        ctypes.cast(byref(count), c_void_p),
    )
    t.result("launch_kernel", cu.LaunchKernel(fn, (n + 127) // 128, 1, 1, 128, 1, 1, 0, None, params, None))
    t.result("launch_synchronize", cu.CtxSynchronize())
    t.result("launch_copy_c", cu.MemcpyDtoH(c, dc, 4 * n))
    t.true("launch_result", all(c[i] == a[i] + b[i] for i in range(n)), "c[i] != a[i] + b[i]")
    for name, ptr in (("a", da), ("b", db), ("c", dc)):
        t.result(f"launch_free_{name}", cu.MemFree(ptr))
    t.result("module_unload", cu.ModuleUnload(mod))


def main():
    library = sys.argv[1] if len(sys.argv) > 1 else "libcuda.so.1"
    try:
        cu = Driver(library)
    except (OSError, AttributeError) as e:
        print(f"FAIL load: {e}")
        return 2
    print(f"ok load {library}")
    t = Checks(cu)

    count, p = c_int(), CUdeviceptr()
    t.result("device_count_before_init", cu.DeviceGetCount(byref(count)), NOT_INITIALIZED)
    t.result("mem_alloc_before_init", cu.MemAlloc(byref(p), 16), NOT_INITIALIZED)
    if t.result("init", cu.Init(0)):
        dev = device_queries(cu, t)
        ctx = c_void_p()
        if dev is not None and t.result("primary_ctx_retain", cu.DevicePrimaryCtxRetain(byref(ctx), dev)):
            t.result("ctx_set_current", cu.CtxSetCurrent(ctx))
            current = c_void_p()
            t.result("ctx_get_current", cu.CtxGetCurrent(byref(current)))
            t.true("ctx_is_current", current.value == ctx.value, "the primary context is not current")
            memory(cu, t)
            streams_and_events(cu, t)
            module_and_launch(cu, t)
            t.result("primary_ctx_release", cu.DevicePrimaryCtxRelease(dev))

    print(f"{t.count} checks, {t.failed} failed")
    return 0 if t.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
