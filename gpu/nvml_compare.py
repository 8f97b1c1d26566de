#!/usr/bin/env python3
"""Print what NVML answers, one `name = value` line per query, so that a run
on the real libnvidia-ml.so.1 and one through vgpu's can be diffed.

Loads libnvidia-ml.so.1 by name (LD_LIBRARY_PATH decides which), prints the
path of the library the process mapped, then every query vgpu implements for
each device, the error strings 0..30, and the codes of bad input. Values that
differ by design through vgpu (memory used and free, processes: the tenant's
view) are printed in lines starting `tenant:`, and values that change from
one moment to the next (temperature, power, clock event reasons) in lines
starting `live:`, so that `grep -v` can drop them before a diff.

Usage:  python3 gpu/nvml_compare.py
"""

import ctypes
import os
from ctypes import byref, c_char_p, c_int, c_uint, c_ulonglong, c_void_p

nvml = ctypes.CDLL("libnvidia-ml.so.1")
nvml.nvmlErrorString.restype = c_char_p
with open("/proc/self/maps") as maps:
    mapped = sorted({l.split()[-1] for l in maps if "nvidia-ml" in l or "nvml" in l.rsplit("/", 1)[-1]})
print("mapped:", " ".join(mapped))


def show(name, rc, value=None, tag=""):
    if rc == 0:
        print(f"{tag}{name} = {value}")
    else:
        print(f"{name} = error {rc} ({nvml.nvmlErrorString(rc).decode()})")


class FieldValue(ctypes.Structure):
    _fields_ = [("fieldId", c_uint), ("scopeId", c_uint), ("timestamp", ctypes.c_longlong),
                ("latencyUsec", ctypes.c_longlong), ("valueType", c_uint), ("nvmlReturn", c_uint),
                ("value", c_ulonglong)]


def string(fn, *args, length=256):
    buf = ctypes.create_string_buffer(length)
    rc = getattr(nvml, fn)(*args, buf, length)
    return rc, buf.value.decode(errors="replace")


def scalar(fn, *args, ctype=c_uint):
    v = ctype()
    rc = getattr(nvml, fn)(*args, byref(v))
    return rc, v.value


def pair(fn, *args):
    a, b = c_uint(), c_uint()
    rc = getattr(nvml, fn)(*args, byref(a), byref(b))
    return rc, (a.value, b.value)


class Pci(ctypes.Structure):
    _fields_ = [("busIdLegacy", ctypes.c_char * 16), ("domain", c_uint), ("bus", c_uint),
                ("device", c_uint), ("pciDeviceId", c_uint), ("pciSubSystemId", c_uint),
                ("busId", ctypes.c_char * 32)]


class Memory(ctypes.Structure):
    _fields_ = [("total", c_ulonglong), ("free", c_ulonglong), ("used", c_ulonglong)]


class Process(ctypes.Structure):
    _fields_ = [("pid", c_uint), ("usedGpuMemory", c_ulonglong),
                ("gpuInstanceId", c_uint), ("computeInstanceId", c_uint)]


show("nvmlInit_v2", nvml.nvmlInit_v2(), "ok")
show("driver version", *string("nvmlSystemGetDriverVersion"))
show("NVML version", *string("nvmlSystemGetNVMLVersion"))
show("CUDA driver version", *scalar("nvmlSystemGetCudaDriverVersion_v2", ctype=c_int))
rc, count = scalar("nvmlDeviceGetCount_v2")
show("device count", rc, count)

for i in range(count):
    h = c_void_p()
    show(f"[{i}] handle", nvml.nvmlDeviceGetHandleByIndex_v2(i, byref(h)), "ok")
    show(f"[{i}] index", *scalar("nvmlDeviceGetIndex", h))
    show(f"[{i}] name", *string("nvmlDeviceGetName", h))
    rc, uuid = string("nvmlDeviceGetUUID", h)
    show(f"[{i}] uuid", rc, uuid)
    pci = Pci()
    rc = nvml.nvmlDeviceGetPciInfo_v3(h, byref(pci))
    show(f"[{i}] pci", rc, f"{pci.busId.decode()} legacy {pci.busIdLegacy.decode()} "
         f"domain {pci.domain} bus {pci.bus} device {pci.device} "
         f"id {pci.pciDeviceId:#010x} subsystem {pci.pciSubSystemId:#010x}")
    other = c_void_p()
    show(f"[{i}] by uuid", nvml.nvmlDeviceGetHandleByUUID(uuid.encode(), byref(other)), other.value == h.value)
    show(f"[{i}] by bus id", nvml.nvmlDeviceGetHandleByPciBusId_v2(pci.busId, byref(other)), other.value == h.value)
    major, minor = c_int(), c_int()
    rc = nvml.nvmlDeviceGetCudaComputeCapability(h, byref(major), byref(minor))
    show(f"[{i}] compute capability", rc, (major.value, minor.value))
    mem = Memory()
    rc = nvml.nvmlDeviceGetMemoryInfo(h, byref(mem))
    show(f"[{i}] memory total", rc, mem.total)
    print(f"tenant: [{i}] memory used {mem.used} free {mem.free}")
    util = (c_uint * 2)()
    rc = nvml.nvmlDeviceGetUtilizationRates(h, util)
    print(f"tenant: [{i}] utilization rc {rc}: gpu {util[0]}% memory {util[1]}%")
    for clock, label in ((0, "graphics"), (1, "sm"), (2, "memory"), (3, "video")):
        show(f"[{i}] max clock {label}", *scalar("nvmlDeviceGetMaxClockInfo", h, clock))
    show(f"[{i}] temperature", *scalar("nvmlDeviceGetTemperature", h, 0), tag="live: ")
    show(f"[{i}] power usage", *scalar("nvmlDeviceGetPowerUsage", h), tag="live: ")
    fields = (FieldValue * 2)()
    fields[0].fieldId, fields[1].fieldId = 185, 186  # power average, power instant
    rc = nvml.nvmlDeviceGetFieldValues(h, 2, fields)
    show(f"[{i}] field values power (average, instant)", rc,
         [(f.nvmlReturn, f.value) for f in fields], tag="live: ")
    show(f"[{i}] enforced power limit", *scalar("nvmlDeviceGetEnforcedPowerLimit", h))
    show(f"[{i}] power limit constraints", *pair("nvmlDeviceGetPowerManagementLimitConstraints", h))
    show(f"[{i}] persistence mode", *scalar("nvmlDeviceGetPersistenceMode", h))
    show(f"[{i}] compute mode", *scalar("nvmlDeviceGetComputeMode", h))
    show(f"[{i}] minor number", *scalar("nvmlDeviceGetMinorNumber", h))
    show(f"[{i}] brand", *scalar("nvmlDeviceGetBrand", h))
    show(f"[{i}] serial", *string("nvmlDeviceGetSerial", h))
    show(f"[{i}] vbios", *string("nvmlDeviceGetVbiosVersion", h))
    show(f"[{i}] ecc mode", *pair("nvmlDeviceGetEccMode", h))
    show(f"[{i}] mig mode", *pair("nvmlDeviceGetMigMode", h))
    show(f"[{i}] max pcie gen", *scalar("nvmlDeviceGetMaxPcieLinkGeneration", h))
    show(f"[{i}] architecture", *scalar("nvmlDeviceGetArchitecture", h))
    show(f"[{i}] accounting mode", *scalar("nvmlDeviceGetAccountingMode", h))
    show(f"[{i}] inforom image", *string("nvmlDeviceGetInforomImageVersion", h))
    show(f"[{i}] inforom ECC object", *string("nvmlDeviceGetInforomVersion", h, 1))
    bar1 = (c_ulonglong * 3)()
    show(f"[{i}] BAR1 total", nvml.nvmlDeviceGetBAR1MemoryInfo(h, bar1), bar1[0])
    show(f"[{i}] clocks event reasons", *scalar("nvmlDeviceGetCurrentClocksEventReasons", h, ctype=c_ulonglong),
         tag="live: ")
    show(f"[{i}] total volatile uncorrected ecc", *scalar("nvmlDeviceGetTotalEccErrors", h, 1, 0, ctype=c_ulonglong))
    n = c_uint(0)
    rc = nvml.nvmlDeviceGetComputeRunningProcesses_v3(h, byref(n), None)
    procs = (Process * max(n.value, 1))()
    rc = nvml.nvmlDeviceGetComputeRunningProcesses_v3(h, byref(n), procs)
    print(f"tenant: [{i}] compute processes rc {rc}: "
          f"{[(p.pid, p.usedGpuMemory) for p in procs[:n.value]] if rc == 0 else []}")
    n = c_uint(0)
    show(f"[{i}] graphics processes", nvml.nvmlDeviceGetGraphicsRunningProcesses_v3(h, byref(n), None), n.value)

h = c_void_p()
buf = ctypes.create_string_buffer(4)
show("bad index", nvml.nvmlDeviceGetHandleByIndex_v2(count, byref(h)), "unexpected success")
show("NULL count", nvml.nvmlDeviceGetCount_v2(None), "unexpected success")
nvml.nvmlDeviceGetHandleByIndex_v2(0, byref(h))
show("name into 4 bytes", nvml.nvmlDeviceGetName(h, buf, 4), "unexpected success")
show("process name of this process", *string("nvmlSystemGetProcessName", c_uint(os.getpid()), length=4096))
for code in list(range(0, 31)) + [999]:
    print(f"error string {code} = {nvml.nvmlErrorString(code).decode()}")
show("shutdown", nvml.nvmlShutdown(), "ok")
show("shutdown again", nvml.nvmlShutdown(), "unexpected success")
