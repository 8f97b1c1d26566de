#!/usr/bin/env python3
"""Exercise NVML from Python ctypes and check every result against the CUDA
Driver API of the same process (both through vgpu).

Loads libnvidia-ml.so.1 and libcuda.so.1 as bindings do (ctypes.CDLL).

Usage:  python3 nvml_ctypes.py MODE
  basic   what every device query answers, against the driver's answers, and
          the codes of bad input (NULL pointers, bad indexes and handles,
          short buffers, a wrong structure version, one shutdown too many)
  uninit  every call before nvmlInit is NVML_ERROR_UNINITIALIZED; nvmlInit
          with no mediator is NVML_ERROR_DRIVER_NOT_LOADED
  lost    nvmlInit, print ``ready``, wait for a line on stdin (the test kills
          the mediator meanwhile), then every device call is
          NVML_ERROR_GPU_IS_LOST
  host    the host values, from a stand-in host NVML (tests/c/host_nvml.c)
          that the worker loads: each argument arrives, each value returns
  usage   a CUDA allocation of this process shows in the tenant's memory and
          this process in the device's compute processes
  devices (three devices: VGPU_SIM_DEVICES=3 on the mediator) memory and
          processes by device: this process allocates on device 1, a child
          with CUDA_VISIBLE_DEVICES=2,1 on its device 0 (the host's 2); each
          shows on that device only, and a context alone lists a process
  exact   the tenant's memory and processes on device 0 are exactly this
          process's 64 MiB allocation (no other session of the tenant holds
          any: a VM guest's view, beside host processes of the same uid)
  hold    (the child of ``devices``) allocates 32 MiB on its device 0,
          prints ``held``, frees it when stdin closes
Output: one line per check, ``ok NAME`` or ``FAIL NAME: ...``, then a summary.
Exit:   0 every check passed; 1 a check failed.
"""

import ctypes
import os
import signal
import sys
import time
from checks import Checks
from ctypes import POINTER, byref, c_char_p, c_int, c_size_t, c_uint, c_ulonglong, c_void_p

SUCCESS = 0
UNINITIALIZED = 1
INVALID_ARGUMENT = 2
NOT_SUPPORTED = 3
NOT_FOUND = 6
INSUFFICIENT_SIZE = 7
DRIVER_NOT_LOADED = 9
GPU_IS_LOST = 15
TIMEOUT = 10
ARGUMENT_VERSION_MISMATCH = 25

CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76


class Memory(ctypes.Structure):
    _fields_ = [("total", c_ulonglong), ("free", c_ulonglong), ("used", c_ulonglong)]


class MemoryV2(ctypes.Structure):
    _fields_ = [("version", c_uint), ("total", c_ulonglong), ("reserved", c_ulonglong),
                ("free", c_ulonglong), ("used", c_ulonglong)]


MEMORY_V2 = ctypes.sizeof(MemoryV2) | (2 << 24)


class PciInfo(ctypes.Structure):
    _fields_ = [("busIdLegacy", ctypes.c_char * 16), ("domain", c_uint), ("bus", c_uint),
                ("device", c_uint), ("pciDeviceId", c_uint), ("pciSubSystemId", c_uint),
                ("busId", ctypes.c_char * 32)]


class PciInfoV2(ctypes.Structure):
    """The structure nvmlDeviceGetPciInfo and _v2 were built against."""
    _fields_ = [("busId", ctypes.c_char * 16), ("domain", c_uint), ("bus", c_uint),
                ("device", c_uint), ("pciDeviceId", c_uint), ("pciSubSystemId", c_uint),
                ("reserved", c_uint * 4)]


class PciInfoV2Fenced(ctypes.Structure):
    """PciInfoV2 and a canary right after it: nothing may be written there."""
    _fields_ = [("info", PciInfoV2), ("canary", ctypes.c_char * 16)]


class ProcessInfo(ctypes.Structure):
    _fields_ = [("pid", c_uint), ("usedGpuMemory", c_ulonglong),
                ("gpuInstanceId", c_uint), ("computeInstanceId", c_uint)]


def load():
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
    nvml.nvmlErrorString.restype = c_char_p
    return nvml


def handle(nvml, t, index=0):
    h = c_void_p()
    t.eq(f"handle_by_index {index}", nvml.nvmlDeviceGetHandleByIndex_v2(index, byref(h)), SUCCESS)
    return h


def basic(t):
    nvml = load()
    cuda = ctypes.CDLL("libcuda.so.1")
    t.eq("cuInit", cuda.cuInit(0), 0)
    t.eq("nvmlInit_v2", nvml.nvmlInit_v2(), SUCCESS)

    count, cu_count = c_uint(), c_int()
    t.eq("device_count", nvml.nvmlDeviceGetCount_v2(byref(count)), SUCCESS)
    cuda.cuDeviceGetCount(byref(cu_count))
    t.eq("device_count matches cuDeviceGetCount", count.value, cu_count.value)
    t.eq("device_count v1", nvml.nvmlDeviceGetCount(byref(count)), SUCCESS)

    version, cu_version = c_int(), c_int()
    t.eq("cuda_driver_version", nvml.nvmlSystemGetCudaDriverVersion(byref(version)), SUCCESS)
    cuda.cuDriverGetVersion(byref(cu_version))
    t.eq("cuda_driver_version matches cuDriverGetVersion", version.value, cu_version.value)
    t.eq("cuda_driver_version_v2", nvml.nvmlSystemGetCudaDriverVersion_v2(byref(version)), SUCCESS)

    h = handle(nvml, t)
    index = c_uint(99)
    t.eq("index", nvml.nvmlDeviceGetIndex(h, byref(index)), SUCCESS)
    t.eq("index value", index.value, 0)
    is_mig = c_uint(99)
    t.eq("is mig device handle", nvml.nvmlDeviceIsMigDeviceHandle(h, byref(is_mig)), SUCCESS)
    t.eq("a whole GPU is no MIG device", is_mig.value, 0)

    name, cu_name = ctypes.create_string_buffer(96), ctypes.create_string_buffer(96)
    t.eq("name", nvml.nvmlDeviceGetName(h, name, 96), SUCCESS)
    cuda.cuDeviceGetName(cu_name, 96, 0)
    t.eq("name matches cuDeviceGetName", name.value, cu_name.value)
    t.true("name not empty", len(name.value) > 0, "empty name")

    uuid = ctypes.create_string_buffer(96)
    t.eq("uuid", nvml.nvmlDeviceGetUUID(h, uuid, 96), SUCCESS)
    raw = (ctypes.c_ubyte * 16)()
    cuda.cuDeviceGetUuid_v2(raw, 0)
    hexed = bytes(raw).hex()
    want = f"GPU-{hexed[:8]}-{hexed[8:12]}-{hexed[12:16]}-{hexed[16:20]}-{hexed[20:]}"
    t.eq("uuid matches cuDeviceGetUuid", uuid.value.decode(), want)
    by_uuid = c_void_p()
    t.eq("handle_by_uuid", nvml.nvmlDeviceGetHandleByUUID(uuid, byref(by_uuid)), SUCCESS)
    t.eq("handle_by_uuid is the device's", by_uuid.value, h.value)
    t.eq("handle_by_uuid unknown", nvml.nvmlDeviceGetHandleByUUID(
        b"GPU-00000000-0000-0000-0000-000000000000", byref(by_uuid)), NOT_FOUND)

    pci = PciInfo()
    t.eq("pci_info_v3", nvml.nvmlDeviceGetPciInfo_v3(h, byref(pci)), SUCCESS)
    for entry in ("nvmlDeviceGetPciInfo", "nvmlDeviceGetPciInfo_v2"):
        fenced = PciInfoV2Fenced()
        fenced.canary = b"\xa5" * 16
        t.eq(f"{entry} old layout", getattr(nvml, entry)(h, byref(fenced.info)), SUCCESS)
        t.eq(f"{entry} bus id", fenced.info.busId, pci.busIdLegacy)
        t.eq(f"{entry} location", (fenced.info.domain, fenced.info.bus, fenced.info.device),
             (pci.domain, pci.bus, pci.device))
        t.eq(f"{entry} writes nothing past the old structure", bytes(fenced.canary), b"\xa5" * 16)
    cu_bus = ctypes.create_string_buffer(64)
    cuda.cuDeviceGetPCIBusId(cu_bus, 64, 0)
    domain, bus, rest = cu_bus.value.decode().split(":")
    t.eq("pci location matches cuDeviceGetPCIBusId",
         (pci.domain, pci.bus, pci.device), (int(domain, 16), int(bus, 16), int(rest.split(".")[0], 16)))
    t.eq("pci busId form", pci.busId.decode(), f"{pci.domain:08X}:{pci.bus:02X}:{pci.device:02X}.0")
    t.eq("pci busIdLegacy form", pci.busIdLegacy.decode(), f"{pci.domain:04X}:{pci.bus:02X}:{pci.device:02X}.0")
    by_bus = c_void_p()
    t.eq("handle_by_pci_bus_id malformed", nvml.nvmlDeviceGetHandleByPciBusId_v2(b"nonsense", byref(by_bus)),
         INVALID_ARGUMENT)
    other_function = pci.busId.decode()[:-1] + "1"
    t.eq("handle_by_pci_bus_id of function 1", nvml.nvmlDeviceGetHandleByPciBusId_v2(other_function.encode(),
                                                                                    byref(by_bus)), NOT_FOUND)
    t.eq("handle_by_pci_bus_id", nvml.nvmlDeviceGetHandleByPciBusId_v2(pci.busId, byref(by_bus)), SUCCESS)
    t.eq("handle_by_pci_bus_id is the device's", by_bus.value, h.value)
    t.eq("handle_by_pci_bus_id of the driver's form",
         nvml.nvmlDeviceGetHandleByPciBusId_v2(cu_bus.value, byref(by_bus)), SUCCESS)
    t.eq("handle_by_pci_bus_id unknown", nvml.nvmlDeviceGetHandleByPciBusId_v2(b"0000:ff:1f.0", byref(by_bus)), NOT_FOUND)

    major, minor, cu_major, cu_minor = c_int(), c_int(), c_int(), c_int()
    t.eq("compute_capability", nvml.nvmlDeviceGetCudaComputeCapability(h, byref(major), byref(minor)), SUCCESS)
    cuda.cuDeviceGetAttribute(byref(cu_major), CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0)
    cuda.cuDeviceGetAttribute(byref(cu_minor), CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0)
    t.eq("compute_capability matches the driver's", (major.value, minor.value), (cu_major.value, cu_minor.value))

    mem, total = Memory(), c_size_t()
    t.eq("memory_info", nvml.nvmlDeviceGetMemoryInfo(h, byref(mem)), SUCCESS)
    cuda.cuDeviceTotalMem_v2(byref(total), 0)
    t.eq("memory total matches cuDeviceTotalMem", mem.total, total.value)
    t.eq("memory free + used = total", mem.free + mem.used, mem.total)
    mem2 = MemoryV2(version=MEMORY_V2)
    t.eq("memory_info_v2", nvml.nvmlDeviceGetMemoryInfo_v2(h, byref(mem2)), SUCCESS)
    t.eq("memory_info_v2 total", mem2.total, total.value)
    t.eq("memory_info_v2 free + used = total", mem2.free + mem2.used, mem2.total)
    bad_version = MemoryV2(version=1)
    t.eq("memory_info_v2 wrong version",
         nvml.nvmlDeviceGetMemoryInfo_v2(h, byref(bad_version)), ARGUMENT_VERSION_MISMATCH)

    pname = ctypes.create_string_buffer(4096)
    t.eq("process name", nvml.nvmlSystemGetProcessName(os.getpid(), pname, 4096), SUCCESS)
    t.true("process name is this program's", b"python" in pname.value, repr(pname.value))
    t.eq("process name of no process", nvml.nvmlSystemGetProcessName(0, pname, 4096), NOT_FOUND)
    util = (c_uint * 2)()
    t.eq("utilization on the simulated device", nvml.nvmlDeviceGetUtilizationRates(h, util), NOT_SUPPORTED)
    t.eq("temperature on the simulated device", nvml.nvmlDeviceGetTemperature(h, 0, byref(index)), NOT_SUPPORTED)

    n = c_uint(0)
    t.eq("graphics processes", nvml.nvmlDeviceGetGraphicsRunningProcesses_v3(h, byref(n), None), SUCCESS)
    t.eq("graphics process count", n.value, 0)
    n = c_uint(0)
    t.eq("MPS processes", nvml.nvmlDeviceGetMPSComputeRunningProcesses_v3(h, byref(n), None), SUCCESS)
    t.eq("MPS process count", n.value, 0)

    # nvidia-smi's private table: a handle by index (slot 81), a process list
    # (slot 213), another table id.
    table = ctypes.POINTER(c_void_p)()
    smi_id = bytes.fromhex("c4fe3e6cc98f6c4ea327ee696e12f7c4")
    t.eq("smi export table", nvml.nvmlInternalGetExportTable(byref(table), smi_id), SUCCESS)
    t.true("smi export table size", table[0] >= 8 * 231, f"size {table[0]}")
    slot = ctypes.CFUNCTYPE(c_int, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_size_t)
    by_slot = c_void_p()
    rc = slot(table[81])(0, ctypes.addressof(by_slot), 0x22)
    t.eq("smi handle by index", (rc, by_slot.value), (SUCCESS, h.value))
    room = c_uint(4)
    entries = ctypes.create_string_buffer(4 * 4128)
    rc = slot(table[213])(h.value, ctypes.addressof(room), ctypes.addressof(entries))
    t.eq("smi process list", rc, SUCCESS)
    pids = [int.from_bytes(entries.raw[k * 4128:k * 4128 + 4], "little") for k in range(room.value)]
    t.true("smi process list holds this process at most", room.value < 4 and set(pids) <= {os.getpid()},
           f"count {room.value}, pids {pids}")
    t.eq("smi other slot", slot(table[7])(0, 0, 0), NOT_SUPPORTED)
    t.eq("other export table", nvml.nvmlInternalGetExportTable(byref(table), bytes(16)), 13)

    # Bad input.
    t.eq("count NULL", nvml.nvmlDeviceGetCount_v2(None), INVALID_ARGUMENT)
    t.eq("handle bad index", nvml.nvmlDeviceGetHandleByIndex_v2(count.value, byref(by_bus)), INVALID_ARGUMENT)
    t.eq("handle NULL out", nvml.nvmlDeviceGetHandleByIndex_v2(0, None), INVALID_ARGUMENT)
    t.eq("name NULL handle", nvml.nvmlDeviceGetName(None, name, 96), INVALID_ARGUMENT)
    t.eq("name forged handle", nvml.nvmlDeviceGetName(c_void_p(0x1234), name, 96), INVALID_ARGUMENT)
    t.eq("name NULL buffer", nvml.nvmlDeviceGetName(h, None, 96), INVALID_ARGUMENT)
    short = len(name.value)
    t.eq("name short buffer", nvml.nvmlDeviceGetName(h, name, short), INSUFFICIENT_SIZE)
    t.eq("name exact buffer", nvml.nvmlDeviceGetName(h, name, short + 1), SUCCESS)
    t.eq("uuid short buffer", nvml.nvmlDeviceGetUUID(h, uuid, 8), INSUFFICIENT_SIZE)
    t.eq("memory NULL", nvml.nvmlDeviceGetMemoryInfo(h, None), INVALID_ARGUMENT)
    t.eq("pci NULL", nvml.nvmlDeviceGetPciInfo_v3(h, None), INVALID_ARGUMENT)
    t.eq("compute_capability NULL", nvml.nvmlDeviceGetCudaComputeCapability(h, None, byref(minor)), INVALID_ARGUMENT)
    t.eq("processes NULL count", nvml.nvmlDeviceGetComputeRunningProcesses_v3(h, None, None), INVALID_ARGUMENT)
    t.eq("handle_by_uuid NULL", nvml.nvmlDeviceGetHandleByUUID(None, byref(by_uuid)), INVALID_ARGUMENT)
    t.eq("not implemented", nvml.nvmlDeviceSetComputeMode(h, 0), NOT_SUPPORTED)
    t.eq("BAR1 on the simulated device", nvml.nvmlDeviceGetBAR1MemoryInfo(h, byref(mem)), NOT_SUPPORTED)
    # Event sets: real objects, on which no event ever comes.
    event_set = c_void_p()
    t.eq("event set create", nvml.nvmlEventSetCreate(byref(event_set)), SUCCESS)
    types = c_ulonglong(7)
    t.eq("supported event types", nvml.nvmlDeviceGetSupportedEventTypes(h, byref(types)), SUCCESS)
    t.eq("no event type is supported", types.value, 0)
    t.eq("register events", nvml.nvmlDeviceRegisterEvents(h, c_ulonglong(8), event_set), NOT_SUPPORTED)
    event_data = (ctypes.c_char * 64)()
    started = time.monotonic()
    t.eq("event wait times out", nvml.nvmlEventSetWait_v2(event_set, event_data, 150), TIMEOUT)
    t.true("event wait waited", time.monotonic() - started >= 0.14, "returned early")
    t.eq("event set free", nvml.nvmlEventSetFree(event_set), SUCCESS)
    t.eq("event set freed twice", nvml.nvmlEventSetFree(event_set), INVALID_ARGUMENT)
    t.eq("event wait on a freed set", nvml.nvmlEventSetWait_v2(event_set, event_data, 0), INVALID_ARGUMENT)
    t.eq("error string", nvml.nvmlErrorString(GPU_IS_LOST), b"GPU is lost")
    t.eq("error string unknown", nvml.nvmlErrorString(12345), b"Unknown Error")

    # A forked child has a session of its own; the parent's still answers.
    child = os.fork()
    if child == 0:
        mem_child = Memory()
        ok = (nvml.nvmlDeviceGetName(h, name, 96) == SUCCESS
              and nvml.nvmlDeviceGetMemoryInfo(h, byref(mem_child)) == SUCCESS
              and mem_child.total == total.value)
        os._exit(0 if ok else 1)
    _, status = os.waitpid(child, 0)
    t.eq("forked child queries", status, 0)
    t.eq("parent after the fork", nvml.nvmlDeviceGetMemoryInfo(h, byref(mem)), SUCCESS)

    # Children forked while another thread is in NVML get answers of their own.
    import threading
    stop = threading.Event()

    def poll():
        m = Memory()
        while not stop.is_set():
            nvml.nvmlDeviceGetMemoryInfo(h, byref(m))

    poller = threading.Thread(target=poll)
    poller.start()
    statuses = []
    for _ in range(20):
        child = os.fork()
        if child == 0:
            signal.alarm(20)
            os._exit(0 if nvml.nvmlDeviceGetCount_v2(byref(c_uint())) == SUCCESS else 1)
        statuses.append(os.waitpid(child, 0)[1])
    stop.set()
    poller.join()
    t.eq("children forked while a thread polls get answers", statuses, [0] * 20)

    # Initialisations are counted.
    t.eq("second init", nvml.nvmlInit_v2(), SUCCESS)
    t.eq("first shutdown", nvml.nvmlShutdown(), SUCCESS)
    t.eq("still initialised", nvml.nvmlDeviceGetCount_v2(byref(count)), SUCCESS)
    t.eq("second shutdown", nvml.nvmlShutdown(), SUCCESS)
    t.eq("after the last shutdown", nvml.nvmlDeviceGetCount_v2(byref(count)), UNINITIALIZED)
    t.eq("shutdown too many", nvml.nvmlShutdown(), UNINITIALIZED)
    t.eq("init with flags", nvml.nvmlInitWithFlags(0), SUCCESS)
    t.eq("shutdown after init with flags", nvml.nvmlShutdown(), SUCCESS)


def uninit(t):
    nvml = load()
    count, h, buf, mem = c_uint(), c_void_p(), ctypes.create_string_buffer(96), Memory()
    t.eq("count before init", nvml.nvmlDeviceGetCount_v2(byref(count)), UNINITIALIZED)
    t.eq("handle before init", nvml.nvmlDeviceGetHandleByIndex_v2(0, byref(h)), UNINITIALIZED)
    t.eq("driver version before init", nvml.nvmlSystemGetDriverVersion(buf, 96), UNINITIALIZED)
    t.eq("name before init", nvml.nvmlDeviceGetName(c_void_p(1), buf, 96), UNINITIALIZED)
    t.eq("not implemented before init", nvml.nvmlDeviceSetComputeMode(c_void_p(1), 0), UNINITIALIZED)
    t.eq("shutdown before init", nvml.nvmlShutdown(), UNINITIALIZED)
    t.eq("error string before init", nvml.nvmlErrorString(SUCCESS), b"Success")
    if len(sys.argv) > 2 and sys.argv[2] == "no-mediator":
        t.eq("init without a mediator", nvml.nvmlInit_v2(), DRIVER_NOT_LOADED)
        t.eq("count after a failed init", nvml.nvmlDeviceGetCount_v2(byref(count)), UNINITIALIZED)


def lost(t):
    nvml = load()
    t.eq("init", nvml.nvmlInit_v2(), SUCCESS)
    h = handle(nvml, t)
    print("ready", flush=True)
    sys.stdin.readline()
    buf, mem, count = ctypes.create_string_buffer(96), Memory(), c_uint(0)
    t.eq("name after the mediator went", nvml.nvmlDeviceGetName(h, buf, 96), GPU_IS_LOST)
    t.eq("memory after the mediator went", nvml.nvmlDeviceGetMemoryInfo(h, byref(mem)), GPU_IS_LOST)
    t.eq("processes after the mediator went",
         nvml.nvmlDeviceGetComputeRunningProcesses_v3(h, byref(count), None), GPU_IS_LOST)
    t.eq("handle after the mediator went", nvml.nvmlDeviceGetHandleByIndex_v2(0, byref(h)), GPU_IS_LOST)
    t.eq("shutdown after the mediator went", nvml.nvmlShutdown(), SUCCESS)


def host(t):
    nvml = load()
    t.eq("init", nvml.nvmlInit_v2(), SUCCESS)
    h = handle(nvml, t)
    buf = ctypes.create_string_buffer(64)
    t.eq("host driver version", nvml.nvmlSystemGetDriverVersion(buf, 64), SUCCESS)
    t.eq("host driver version value", buf.value, b"580.0-host-stand-in")
    t.eq("host driver version short buffer", nvml.nvmlSystemGetDriverVersion(buf, 4), INSUFFICIENT_SIZE)
    v = c_uint()
    t.eq("temperature", nvml.nvmlDeviceGetTemperature(h, 0, byref(v)), SUCCESS)
    t.eq("temperature value", v.value, 40)
    for clock in range(4):
        t.eq(f"clock {clock}", (nvml.nvmlDeviceGetClockInfo(h, clock, byref(v)), v.value), (SUCCESS, 1000 + clock))
    t.eq("clock of a bad type", nvml.nvmlDeviceGetClockInfo(h, 9, byref(v)), INVALID_ARGUMENT)
    t.eq("temperature NULL", nvml.nvmlDeviceGetTemperature(h, 0, None), INVALID_ARGUMENT)
    temp_v = (c_uint * 3)(12 | (1 << 24), 0, 0)
    t.eq("temperature V", nvml.nvmlDeviceGetTemperatureV(h, temp_v), SUCCESS)
    t.eq("temperature V value", temp_v[2], 40)
    temp_v[0] = 12 | (2 << 24)
    t.eq("temperature V wrong version", nvml.nvmlDeviceGetTemperatureV(h, temp_v), ARGUMENT_VERSION_MISMATCH)
    margin = (c_uint * 2)(8 | (1 << 24), 0)
    t.eq("margin temperature", nvml.nvmlDeviceGetMarginTemperature(h, margin), SUCCESS)
    t.eq("margin temperature value", (margin[0], margin[1]), (8 | (1 << 24), 17))
    margin[0] = 7
    t.eq("margin temperature wrong version", nvml.nvmlDeviceGetMarginTemperature(h, margin), ARGUMENT_VERSION_MISMATCH)
    util = (c_uint * 2)()
    t.eq("utilization", nvml.nvmlDeviceGetUtilizationRates(h, util), SUCCESS)
    t.eq("utilization values", (util[0], util[1]), (7, 3))
    cur, pend = c_uint(9), c_uint(9)
    t.eq("ecc mode", nvml.nvmlDeviceGetEccMode(h, byref(cur), byref(pend)), SUCCESS)
    t.eq("ecc mode values", (cur.value, pend.value), (1, 0))
    count = c_ulonglong()
    t.eq("ecc errors", nvml.nvmlDeviceGetTotalEccErrors(h, 1, 1, byref(count)), SUCCESS)
    t.eq("ecc errors value", count.value, 11)
    t.eq("clocks event reasons", nvml.nvmlDeviceGetCurrentClocksEventReasons(h, byref(count)), SUCCESS)
    t.eq("clocks event reasons value", count.value, 1 << 32)
    t.eq("serial", nvml.nvmlDeviceGetSerial(h, buf, 64), SUCCESS)
    t.eq("serial value", buf.value, b"1650000000001")
    t.eq("inforom version", nvml.nvmlDeviceGetInforomVersion(h, 2, buf, 64), SUCCESS)
    t.eq("inforom version value", buf.value, b"inforom-2")
    bar1 = (c_ulonglong * 3)()
    t.eq("bar1", nvml.nvmlDeviceGetBAR1MemoryInfo(h, bar1), SUCCESS)
    t.eq("bar1 values", tuple(bar1), (1 << 34, (1 << 34) - 4096, 4096))
    class FieldValue(ctypes.Structure):
        _fields_ = [("fieldId", c_uint), ("scopeId", c_uint), ("timestamp", ctypes.c_longlong),
                    ("latencyUsec", ctypes.c_longlong), ("valueType", c_uint), ("nvmlReturn", c_uint),
                    ("value", c_ulonglong)]

    fields = (FieldValue * 300)()
    for k in range(300):
        fields[k].fieldId = k
    t.eq("field values (300: two pieces)", nvml.nvmlDeviceGetFieldValues(h, 300, fields), SUCCESS)
    t.eq("field values filled", [(f.nvmlReturn, f.value) for f in fields[:3]] + [(fields[299].nvmlReturn, fields[299].value)],
         [(INVALID_ARGUMENT, 0), (SUCCESS, 2), (SUCCESS, 4), (SUCCESS, 598)])
    t.eq("field values NULL", nvml.nvmlDeviceGetFieldValues(h, 1, None), INVALID_ARGUMENT)
    mem = Memory()
    t.eq("memory", nvml.nvmlDeviceGetMemoryInfo(h, byref(mem)), SUCCESS)
    t.eq("memory total is the host NVML's", mem.total, 1 << 35)
    t.eq("memory free + used = total", mem.free + mem.used, mem.total)
    t.eq("a host function the stand-in lacks", nvml.nvmlDeviceGetPowerUsage(h, byref(v)), NOT_SUPPORTED)
    t.eq("shutdown", nvml.nvmlShutdown(), SUCCESS)


def allocate(t, cuda, device, size, who=""):
    """cuInit, the primary context of `device` made current, and `size` bytes
    allocated in it; returns the allocation."""
    ctx, dptr = c_void_p(), c_ulonglong()
    t.eq(f"{who}cuInit", cuda.cuInit(0), 0)
    t.eq(f"{who}context on {device}", cuda.cuDevicePrimaryCtxRetain(byref(ctx), device), 0)
    t.eq(f"{who}set context", cuda.cuCtxSetCurrent(ctx), 0)
    t.eq(f"{who}cuMemAlloc {size >> 20} MiB on {device}", cuda.cuMemAlloc_v2(byref(dptr), c_size_t(size)), 0)
    return dptr


def used(nvml, h):
    """The memory used on `h`."""
    m = Memory()
    nvml.nvmlDeviceGetMemoryInfo(h, byref(m))
    return m.used


def processes(nvml, t, h, name="processes"):
    """The (pid, memory) of every compute process on `h`, sorted."""
    n = c_uint(16)
    infos = (ProcessInfo * 16)()
    t.eq(name, nvml.nvmlDeviceGetComputeRunningProcesses_v3(h, byref(n), infos), SUCCESS)
    return sorted((p.pid, p.usedGpuMemory) for p in infos[: n.value])


def usage(t):
    nvml = load()
    cuda = ctypes.CDLL("libcuda.so.1")
    t.eq("init", nvml.nvmlInit_v2(), SUCCESS)
    h = handle(nvml, t)
    before = Memory()
    t.eq("memory before", nvml.nvmlDeviceGetMemoryInfo(h, byref(before)), SUCCESS)
    size = 64 << 20
    dptr = allocate(t, cuda, 0, size)
    after = Memory()
    t.eq("memory after", nvml.nvmlDeviceGetMemoryInfo(h, byref(after)), SUCCESS)
    # Other sessions of this uid (tests running beside this one) may come and
    # go meanwhile: only this process's share is certain.
    t.true("used counts the allocation", after.used >= size, f"used {before.used} -> {after.used}")
    t.eq("free + used = total", after.free + after.used, after.total)
    n = c_uint(0)
    t.eq("process count query", nvml.nvmlDeviceGetComputeRunningProcesses_v3(h, byref(n), None), INSUFFICIENT_SIZE)
    t.true("at least one process", n.value >= 1, f"count {n.value}")
    infos = (ProcessInfo * n.value)()
    t.eq("processes", nvml.nvmlDeviceGetComputeRunningProcesses_v3(h, byref(n), infos), SUCCESS)
    mine = [p for p in infos[: n.value] if p.pid == os.getpid()]
    t.eq("this process listed once", len(mine), 1)
    t.true("its memory counts the allocation", mine and mine[0].usedGpuMemory >= size,
           f"{[(p.pid, p.usedGpuMemory) for p in infos[: n.value]]}")
    # nvidia-smi's table takes its compute, graphics and MPS processes from
    # private slots 213, 214 and 215: this process is a compute one only.
    table = ctypes.POINTER(c_void_p)()
    smi_id = bytes.fromhex("c4fe3e6cc98f6c4ea327ee696e12f7c4")
    t.eq("smi export table", nvml.nvmlInternalGetExportTable(byref(table), smi_id), SUCCESS)
    slot = ctypes.CFUNCTYPE(c_int, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_size_t)
    for n_slot, kind in ((213, "compute"), (214, "graphics"), (215, "MPS")):
        room = c_uint(64)
        entries = ctypes.create_string_buffer(64 * 4128)
        rc = slot(table[n_slot])(h.value, ctypes.addressof(room), ctypes.addressof(entries))
        pids = [int.from_bytes(entries.raw[k * 4128:k * 4128 + 4], "little") for k in range(room.value)]
        t.eq(f"smi {kind} processes", rc, SUCCESS)
        t.eq(f"smi {kind} list has this process", os.getpid() in pids, kind == "compute")
    t.eq("cuMemFree", cuda.cuMemFree_v2(dptr), 0)
    t.eq("shutdown", nvml.nvmlShutdown(), SUCCESS)


def uuid_text(raw):
    hexed = bytes(raw).hex()
    return f"GPU-{hexed[:8]}-{hexed[8:12]}-{hexed[12:16]}-{hexed[16:20]}-{hexed[20:]}"


def hold(t):
    """Holds 32 MiB on this process's device 0 until stdin closes."""
    cuda = ctypes.CDLL("libcuda.so.1")
    dptr = allocate(t, cuda, 0, 32 << 20, "child ")
    print("held", flush=True)
    sys.stdin.read()
    t.eq("child cuMemFree", cuda.cuMemFree_v2(dptr), 0)


def exact(t):
    nvml = load()
    cuda = ctypes.CDLL("libcuda.so.1")
    t.eq("init", nvml.nvmlInit_v2(), SUCCESS)
    h = handle(nvml, t)
    t.eq("nothing used before", used(nvml, h), 0)
    t.eq("no process before", processes(nvml, t, h), [])
    size = 64 << 20
    dptr = allocate(t, cuda, 0, size)
    t.eq("used is the allocation", used(nvml, h), size)
    t.eq("this process alone", processes(nvml, t, h), [(os.getpid(), size)])
    t.eq("cuMemFree", cuda.cuMemFree_v2(dptr), 0)
    t.eq("used after free", used(nvml, h), 0)
    t.eq("shutdown", nvml.nvmlShutdown(), SUCCESS)


def devices(t):
    import subprocess
    nvml = load()
    cuda = ctypes.CDLL("libcuda.so.1")
    t.eq("init", nvml.nvmlInit_v2(), SUCCESS)
    t.eq("cuInit", cuda.cuInit(0), 0)
    count = c_uint()
    t.eq("device_count", nvml.nvmlDeviceGetCount_v2(byref(count)), SUCCESS)
    t.eq("three devices", count.value, 3)
    # NVML's handle of each CUDA ordinal of this process (no
    # CUDA_VISIBLE_DEVICES here: the host's numbering), matched by UUID.
    by_uuid = {}
    for i in range(count.value):
        h, text = c_void_p(), ctypes.create_string_buffer(96)
        nvml.nvmlDeviceGetHandleByIndex_v2(i, byref(h))
        t.eq(f"uuid {i}", nvml.nvmlDeviceGetUUID(h, text, 96), SUCCESS)
        by_uuid[text.value.decode()] = h
    handles = []
    for ordinal in range(3):
        raw = (ctypes.c_ubyte * 16)()
        t.eq(f"cuDeviceGetUuid {ordinal}", cuda.cuDeviceGetUuid_v2(raw, ordinal), 0)
        handles.append(by_uuid.get(uuid_text(raw)))
    t.true("every device found by uuid", all(h is not None for h in handles), f"{by_uuid}")
    if not all(h is not None for h in handles):
        return

    def memory():
        return [used(nvml, handles[d]) for d in range(3)]

    def on(d):
        return processes(nvml, t, handles[d], f"processes on {d}")

    t.eq("nothing used before", memory(), [0, 0, 0])
    size = 64 << 20
    dptr = allocate(t, cuda, 1, size)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="2,1")
    child = subprocess.Popen([sys.executable, __file__, "hold"], env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    lines = []
    while not lines or lines[-1] not in ("held", ""):
        lines.append(child.stdout.readline().strip())
    t.true("child holds memory", lines[-1] == "held", f"{lines}")
    me = os.getpid()
    t.eq("memory by device", memory(), [0, size, 32 << 20])
    t.eq("no process on 0", on(0), [])
    t.eq("this process on 1 only", on(1), [(me, size)])
    t.eq("the child on the host's 2", on(2), [(child.pid, 32 << 20)])
    # A context and no memory: listed, holding nothing (ADR 0007).
    ctx0, free, total = c_void_p(), c_size_t(), c_size_t()
    t.eq("context on 0", cuda.cuDevicePrimaryCtxRetain(byref(ctx0), 0), 0)
    t.eq("a synchronous call", cuda.cuMemGetInfo_v2(byref(free), byref(total)), 0)
    t.eq("a context alone lists the process", on(0), [(me, 0)])
    t.eq("release context on 0", cuda.cuDevicePrimaryCtxRelease_v2(0), 0)
    t.eq("a released context is gone", on(0), [])
    child.stdin.close()
    t.eq("child done", child.wait(timeout=60), 0)
    t.eq("the child's memory went with it", used(nvml, handles[2]), 0)
    t.eq("cuMemFree", cuda.cuMemFree_v2(dptr), 0)
    t.eq("memory after free", memory(), [0, 0, 0])
    t.eq("context stays listed without memory", on(1), [(me, 0)])
    # cuMemCreate counts on the device its location names (0), not on the
    # current context's (1). CUmemAllocationProp: pinned, on device 0.
    prop = (c_uint * 8)(1, 0, 1, 0, 0, 0, 0, 0)
    gran, vmm = c_size_t(), c_ulonglong()
    t.eq("granularity", cuda.cuMemGetAllocationGranularity(byref(gran), prop, 0), 0)
    t.eq("cuMemCreate on 0", cuda.cuMemCreate(byref(vmm), gran, prop, c_ulonglong(0)), 0)
    t.eq("cuMemCreate counts on its location", memory(), [gran.value, 0, 0])
    t.eq("and lists the process there", on(0), [(me, gran.value)])
    t.eq("cuMemRelease", cuda.cuMemRelease(vmm), 0)
    t.eq("released", memory(), [0, 0, 0])
    t.eq("shutdown", nvml.nvmlShutdown(), SUCCESS)


def main():
    t = Checks()
    modes = {"basic": basic, "uninit": uninit, "lost": lost, "host": host, "usage": usage,
             "devices": devices, "hold": hold, "exact": exact}
    modes[sys.argv[1]](t)
    print(f"{t.count} checks, {t.failed} failed")
    return 0 if t.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
