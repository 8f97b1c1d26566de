#!/usr/bin/env python3
"""Exercise NVML through pynvml (PyPI `nvidia-ml-py`), which loads
libnvidia-ml.so.1, and check its answers against the CUDA Driver API of the
same process (libcuda.so.1, through ctypes).

Usage:  python3 nvml_pynvml.py
Output: one line per check, ``ok NAME`` or ``FAIL NAME: ...``, then a summary.
Exit:   0 every check passed; 1 a check failed.
"""

import ctypes
import sys
from ctypes import byref, c_int, c_size_t

import checks
import pynvml as n


class Checks(checks.Checks):
    def raises(self, name, code, fn, *args):
        self.count += 1
        try:
            fn(*args)
        except n.NVMLError as e:
            if e.value == code:
                print(f"ok {name}")
                return
            self.failed += 1
            print(f"FAIL {name}: NVML error {e.value} ({e}), want {code}")
            return
        self.failed += 1
        print(f"FAIL {name}: no error, want {code}")


def as_text(v):
    return v.decode() if isinstance(v, bytes) else v


def main():
    t = Checks()
    cuda = ctypes.CDLL("libcuda.so.1")
    t.eq("cuInit", cuda.cuInit(0), 0)
    t.raises("count before init", n.NVML_ERROR_UNINITIALIZED, n.nvmlDeviceGetCount)
    n.nvmlInit()
    cu_count, cu_version = c_int(), c_int()
    cuda.cuDeviceGetCount(byref(cu_count))
    cuda.cuDriverGetVersion(byref(cu_version))
    t.eq("device count", n.nvmlDeviceGetCount(), cu_count.value)
    t.eq("CUDA driver version", n.nvmlSystemGetCudaDriverVersion(), cu_version.value)

    h = n.nvmlDeviceGetHandleByIndex(0)
    cu_name = ctypes.create_string_buffer(96)
    cuda.cuDeviceGetName(cu_name, 96, 0)
    t.eq("name", as_text(n.nvmlDeviceGetName(h)), cu_name.value.decode())
    uuid = as_text(n.nvmlDeviceGetUUID(h))
    t.eq("uuid form", (uuid[:4], len(uuid)), ("GPU-", 40))
    t.eq("handle by uuid", n.nvmlDeviceGetIndex(n.nvmlDeviceGetHandleByUUID(uuid)), 0)

    pci = n.nvmlDeviceGetPciInfo(h)
    cu_bus = ctypes.create_string_buffer(64)
    cuda.cuDeviceGetPCIBusId(cu_bus, 64, 0)
    t.eq("pci bus id", as_text(pci.busId).lower(), "0000" + cu_bus.value.decode().lower())
    t.eq("handle by pci bus id", n.nvmlDeviceGetIndex(n.nvmlDeviceGetHandleByPciBusId(pci.busId)), 0)

    total = c_size_t()
    cuda.cuDeviceTotalMem_v2(byref(total), 0)
    mem = n.nvmlDeviceGetMemoryInfo(h)
    t.eq("memory total", mem.total, total.value)
    t.eq("memory free + used", mem.free + mem.used, mem.total)
    mem2 = n.nvmlDeviceGetMemoryInfo(h, version=n.nvmlMemory_v2)
    t.eq("memory v2 total", mem2.total, total.value)

    major, minor = c_int(), c_int()
    cuda.cuDeviceGetAttribute(byref(major), 75, 0)
    cuda.cuDeviceGetAttribute(byref(minor), 76, 0)
    t.eq("compute capability", n.nvmlDeviceGetCudaComputeCapability(h), (major.value, minor.value))
    t.eq("graphics processes", n.nvmlDeviceGetGraphicsRunningProcesses(h), [])
    procs = n.nvmlDeviceGetComputeRunningProcesses(h)
    t.eq("compute processes is a list", type(procs), list)

    t.raises("bad index", n.NVML_ERROR_INVALID_ARGUMENT, n.nvmlDeviceGetHandleByIndex, 64)
    t.raises("unknown uuid", n.NVML_ERROR_NOT_FOUND, n.nvmlDeviceGetHandleByUUID,
             "GPU-00000000-0000-0000-0000-000000000000")
    t.raises("not implemented", n.NVML_ERROR_NOT_SUPPORTED, n.nvmlDeviceSetComputeMode, h, 0)
    t.eq("no event type is supported", n.nvmlDeviceGetSupportedEventTypes(h), 0)
    t.eq("error string", as_text(n.nvmlErrorString(n.NVML_ERROR_GPU_IS_LOST)), "GPU is lost")
    n.nvmlShutdown()
    t.raises("count after shutdown", n.NVML_ERROR_UNINITIALIZED, n.nvmlDeviceGetCount)
    print(f"{t.count} checks, {t.failed} failed")
    return 0 if t.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
