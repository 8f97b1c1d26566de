#!/usr/bin/env python3
"""Memory used and compute processes of every device, as the NVML that the
loader finds (the real one, or vgpu's as libnvidia-ml.so.1) reports them.

Usage:  python3 gpu/nvml_devices.py [PID DEVICE]
  Prints one line per device: `device I UUID used BYTES processes
  [(PID, BYTES), ...]`. With PID and DEVICE (an NVML index, or a UUID
  `GPU-...` as nvidia-smi -L prints it), also checks that
  PID is listed on DEVICE and on no other device, and that no other device
  shows memory used by this tenant (through vgpu, every other device's used
  memory is the tenant's and must be 0); prints `PASS per-device` or
  `FAIL per-device: WHY`.
Exit:   0 the check passed or was not asked for; 1 it failed; 2 NVML failed.
"""

import ctypes
import sys
from ctypes import byref, c_uint, c_ulonglong, c_void_p


class Memory(ctypes.Structure):
    _fields_ = [("total", c_ulonglong), ("free", c_ulonglong), ("used", c_ulonglong)]


class ProcessInfo(ctypes.Structure):
    _fields_ = [("pid", c_uint), ("usedGpuMemory", c_ulonglong),
                ("gpuInstanceId", c_uint), ("computeInstanceId", c_uint)]


def main():
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
    if nvml.nvmlInit_v2() != 0:
        print("FAIL nvmlInit")
        return 2
    count = c_uint()
    nvml.nvmlDeviceGetCount_v2(byref(count))
    seen = []
    for i in range(count.value):
        h, uuid, mem = c_void_p(), ctypes.create_string_buffer(96), Memory()
        nvml.nvmlDeviceGetHandleByIndex_v2(i, byref(h))
        nvml.nvmlDeviceGetUUID(h, uuid, 96)
        nvml.nvmlDeviceGetMemoryInfo(h, byref(mem))
        n = c_uint(64)
        infos = (ProcessInfo * 64)()
        st = nvml.nvmlDeviceGetComputeRunningProcesses_v3(h, byref(n), infos)
        procs = sorted((p.pid, p.usedGpuMemory) for p in infos[: n.value]) if st == 0 else f"status {st}"
        print(f"device {i} {uuid.value.decode()} used {mem.used} processes {procs}")
        seen.append((uuid.value.decode(), mem.used, procs if isinstance(procs, list) else []))
    nvml.nvmlShutdown()
    if len(sys.argv) < 3:
        return 0
    pid, want = int(sys.argv[1]), sys.argv[2]
    by_uuid = [i for i, (uuid, _, _) in enumerate(seen) if uuid == want]
    device = by_uuid[0] if by_uuid else int(want) if want.isdigit() else -1
    where = [i for i, (_, _, procs) in enumerate(seen) if any(p == pid for p, _ in procs)]
    if where != [device]:
        print(f"FAIL per-device: pid {pid} listed on devices {where}, want [{device}]")
        return 1
    others = [i for i, (_, used, _) in enumerate(seen) if i != device and used != 0]
    if others:
        print(f"FAIL per-device: memory used on devices {others}, want only on {device}")
        return 1
    print("PASS per-device")
    return 0


if __name__ == "__main__":
    sys.exit(main())
