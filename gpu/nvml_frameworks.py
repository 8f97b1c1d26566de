#!/usr/bin/env python3
"""What PyTorch or CuPy see of the GPU through NVML (and the CUDA calls
beside it), one `name = value` line each, for a native run and a vgpu run to
be compared.

Usage:  python3 gpu/nvml_frameworks.py torch|cupy
It allocates 256 MiB on device 0 first, so that NVML's memory and process
answers have something of this process's to show, and prints the path of the
libnvidia-ml and libcuda the process mapped at the end.
"""

import ctypes
import os
import sys


def show(name, fn):
    try:
        print(f"{name} = {fn()}")
    except Exception as e:  # the error is the answer to compare
        print(f"{name} = raised {type(e).__name__}: {e}")


def nvml_view():
    """This process's view through NVML directly (ctypes), after allocating."""
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
    print(f"nvmlInit_v2 = {nvml.nvmlInit_v2()}")
    h = ctypes.c_void_p()
    nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))

    class Memory(ctypes.Structure):
        _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]

    class Process(ctypes.Structure):
        _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong),
                    ("gpuInstanceId", ctypes.c_uint), ("computeInstanceId", ctypes.c_uint)]

    m = Memory()
    rc = nvml.nvmlDeviceGetMemoryInfo(h, ctypes.byref(m))
    print(f"nvml memory rc {rc}: total {m.total} used {m.used} free {m.free}")
    n = ctypes.c_uint(64)
    procs = (Process * 64)()
    rc = nvml.nvmlDeviceGetComputeRunningProcesses_v3(h, ctypes.byref(n), procs)
    listed = [(p.pid, p.usedGpuMemory) for p in procs[: n.value]] if rc == 0 else []
    print(f"nvml processes rc {rc}: {listed}")
    print(f"this pid {os.getpid()} listed: {any(p == os.getpid() for p, _ in listed)}")
    nvml.nvmlShutdown()


def torch_run():
    import torch

    show("torch.cuda.is_available", torch.cuda.is_available)
    show("torch.cuda.device_count", torch.cuda.device_count)
    show("torch.cuda._raw_device_count_nvml", torch.cuda._raw_device_count_nvml)
    show("torch.cuda._raw_device_uuid_nvml", torch.cuda._raw_device_uuid_nvml)
    x = torch.empty(256 << 20, dtype=torch.uint8, device="cuda:0")
    torch.cuda.synchronize()
    show("torch.cuda.mem_get_info", torch.cuda.mem_get_info)
    show("torch.cuda.get_device_name", lambda: torch.cuda.get_device_name(0))
    show("torch.cuda.get_device_capability", lambda: torch.cuda.get_device_capability(0))
    show("torch.cuda.utilization", torch.cuda.utilization)
    show("torch.cuda.memory_usage", torch.cuda.memory_usage)
    show("torch.cuda.temperature", torch.cuda.temperature)
    show("torch.cuda.power_draw", torch.cuda.power_draw)
    show("torch.cuda.clock_rate", torch.cuda.clock_rate)
    show("torch.cuda.list_gpu_processes", torch.cuda.list_gpu_processes)
    nvml_view()
    del x


def cupy_run():
    import cupy

    show("cupy getDeviceCount", cupy.cuda.runtime.getDeviceCount)
    x = cupy.empty(256 << 20, dtype=cupy.uint8)
    cupy.cuda.Device(0).synchronize()
    show("cupy mem_info", lambda: cupy.cuda.Device(0).mem_info)
    show("cupy compute_capability", lambda: cupy.cuda.Device(0).compute_capability)
    show("cupy pci_bus_id", lambda: cupy.cuda.Device(0).pci_bus_id)
    show("cupy sum", lambda: int(cupy.ones(1000).sum()))
    nvml_view()
    del x


{"torch": torch_run, "cupy": cupy_run}[sys.argv[1]]()
with open("/proc/self/maps") as maps:
    names = sorted({l.split()[-1] for l in maps
                    if any(k in l.rsplit("/", 1)[-1] for k in ("nvidia-ml", "nvml", "libcuda", "vgpu"))})
print("mapped:", " ".join(names))
