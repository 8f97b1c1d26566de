#!/usr/bin/env python3
"""CUDA Driver API tour through cuda-python (``cuda.bindings.driver``).

gpu/e2e.sh runs it on the native driver and through vgpu and compares the two
standard outputs, so stdout holds only deterministic lines: values that are
the same on every run on the same GPU, and booleans instead of timings or
free-memory figures. Which libcuda the process mapped goes to stderr.

Covers: cuInit, device count/name/UUID/PCI bus id/total memory/attributes,
primary context retain + set current, memory alloc/free, HtoD/DtoH/DtoD
copies, memsets, an NVRTC-compiled saxpy kernel loaded with cuModuleLoadData
and launched with cuLaunchKernel, streams, events and elapsed time, the error
codes of a few bad calls, and cleanup.

Exit: 0 every check passed; 1 a call failed or a result was wrong.
"""

import sys

import numpy as np
from cuda.bindings import driver as cu
from cuda.bindings import nvrtc

SAXPY = b"""
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
"""

A = cu.CUdevice_attribute
FAILURES = []


class CallFailed(Exception):
    pass


def err_name(err):
    if isinstance(err, nvrtc.nvrtcResult):
        return err.name
    e, name = cu.cuGetErrorName(err)
    return name.decode() if e == cu.CUresult.CUDA_SUCCESS else str(err)


def call(what, result):
    """Checks a (status, *outputs) tuple; returns the outputs."""
    err, *outs = result
    ok = cu.CUresult.CUDA_SUCCESS if isinstance(err, cu.CUresult) else nvrtc.nvrtcResult.NVRTC_SUCCESS
    if err != ok:
        raise CallFailed(f"{what} returned {err_name(err)}")
    if not outs:
        return None
    return outs[0] if len(outs) == 1 else outs


def check(what, cond):
    print(f"{what}: {'ok' if cond else 'WRONG'}")
    if not cond:
        FAILURES.append(what)


def status_of(result):
    """The error name of a call expected to fail (for the bad-input lines)."""
    err = result[0] if isinstance(result, tuple) else result
    return err_name(err)


def c_string(raw):
    return bytes(raw).split(b"\0", 1)[0].decode()


def report_mapped_libcuda():
    with open("/proc/self/maps") as maps:
        paths = sorted({line.split()[-1] for line in maps if "libcuda" in line or "libvgpu" in line})
    for p in paths:
        print(f"libcuda mapped: {p}", file=sys.stderr)
    if not paths:
        print("libcuda mapped: none found in /proc/self/maps", file=sys.stderr)


def device_info(dev):
    name = call("cuDeviceGetName", cu.cuDeviceGetName(256, dev))
    print(f"name: {c_string(name)}")
    uuid = call("cuDeviceGetUuid", cu.cuDeviceGetUuid(dev))
    print(f"uuid: {bytes(uuid.bytes).hex()}")
    bus = call("cuDeviceGetPCIBusId", cu.cuDeviceGetPCIBusId(64, dev))
    print(f"pci bus id: {c_string(bus)}")
    total = call("cuDeviceTotalMem", cu.cuDeviceTotalMem(dev))
    print(f"total memory: {total} bytes")
    for attr in (
        A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
        A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
        A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        A.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
        A.CU_DEVICE_ATTRIBUTE_WARP_SIZE,
        A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
        A.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
        A.CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING,
        A.CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS,
    ):
        value = call(f"cuDeviceGetAttribute({attr.name})", cu.cuDeviceGetAttribute(attr, dev))
        print(f"{attr.name}: {value}")
    major = call("cc major", cu.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
    minor = call("cc minor", cu.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
    return major, minor


def memory():
    n = 1 << 16
    size = n * 4
    host = np.arange(n, dtype=np.uint32)
    back = np.zeros(n, dtype=np.uint32)
    a = call("cuMemAlloc", cu.cuMemAlloc(size))
    b = call("cuMemAlloc", cu.cuMemAlloc(size))
    free, total = call("cuMemGetInfo", cu.cuMemGetInfo())
    check("cuMemGetInfo free <= total", 0 < free <= total)
    call("cuMemcpyHtoD", cu.cuMemcpyHtoD(a, host.ctypes.data, size))
    call("cuMemcpyDtoD", cu.cuMemcpyDtoD(b, a, size))
    call("cuMemcpyDtoH", cu.cuMemcpyDtoH(back.ctypes.data, b, size))
    check("HtoD, DtoD, DtoH round trip", np.array_equal(host, back))
    call("cuMemsetD32", cu.cuMemsetD32(a, 0xDEADBEEF, n))
    call("cuMemcpyDtoH", cu.cuMemcpyDtoH(back.ctypes.data, a, size))
    check("cuMemsetD32", bool((back == 0xDEADBEEF).all()))
    call("cuMemsetD8", cu.cuMemsetD8(a, 0x5A, size))
    raw = np.zeros(size, dtype=np.uint8)
    call("cuMemcpyDtoH", cu.cuMemcpyDtoH(raw.ctypes.data, a, size))
    check("cuMemsetD8", bool((raw == 0x5A).all()))
    base, extent = call("cuMemGetAddressRange", cu.cuMemGetAddressRange(int(a) + 100))
    check("cuMemGetAddressRange", int(base) == int(a) and extent == size)
    call("cuMemFree", cu.cuMemFree(a))
    call("cuMemFree", cu.cuMemFree(b))
    print(f"cuMemFree twice: {status_of(cu.cuMemFree(a))}")
    print(f"cuMemAlloc(0): {status_of(cu.cuMemAlloc(0))}")


def compile_saxpy(major, minor):
    prog = call("nvrtcCreateProgram", nvrtc.nvrtcCreateProgram(SAXPY, b"saxpy.cu", 0, [], []))
    opts = [f"--gpu-architecture=sm_{major}{minor}".encode()]
    try:
        call("nvrtcCompileProgram", nvrtc.nvrtcCompileProgram(prog, len(opts), opts))
    except CallFailed:
        size = call("nvrtcGetProgramLogSize", nvrtc.nvrtcGetProgramLogSize(prog))
        log = b" " * size
        call("nvrtcGetProgramLog", nvrtc.nvrtcGetProgramLog(prog, log))
        print(log.decode(errors="replace"), file=sys.stderr)
        raise
    size = call("nvrtcGetCUBINSize", nvrtc.nvrtcGetCUBINSize(prog))
    cubin = b" " * size
    call("nvrtcGetCUBIN", nvrtc.nvrtcGetCUBIN(prog, cubin))
    call("nvrtcDestroyProgram", nvrtc.nvrtcDestroyProgram(prog))
    print(f"nvrtc: saxpy compiled for sm_{major}{minor}")
    return cubin


def kernel_streams_events(cubin):
    image = np.frombuffer(cubin, dtype=np.uint8).copy()
    module = call("cuModuleLoadData", cu.cuModuleLoadData(image.ctypes.data))
    fn = call("cuModuleGetFunction", cu.cuModuleGetFunction(module, b"saxpy"))
    print("module: loaded, saxpy found")
    print(f"cuModuleGetFunction(missing): {status_of(cu.cuModuleGetFunction(module, b'no_such_kernel'))}")

    n = 1 << 20
    size = n * 4
    alpha = np.float32(2.5)
    x = np.linspace(-1.0, 1.0, n, dtype=np.float32)
    y = np.full(n, 0.25, dtype=np.float32)
    out = np.zeros(n, dtype=np.float32)

    stream = call("cuStreamCreate", cu.cuStreamCreate(0))
    start = call("cuEventCreate", cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DEFAULT))
    stop = call("cuEventCreate", cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DEFAULT))
    dx = call("cuMemAlloc", cu.cuMemAlloc(size))
    dy = call("cuMemAlloc", cu.cuMemAlloc(size))

    call("cuEventRecord", cu.cuEventRecord(start, stream))
    call("cuMemcpyHtoDAsync", cu.cuMemcpyHtoDAsync(dx, x.ctypes.data, size, stream))
    call("cuMemcpyHtoDAsync", cu.cuMemcpyHtoDAsync(dy, y.ctypes.data, size, stream))
    args = [np.array([alpha], dtype=np.float32), np.array([int(dx)], dtype=np.uint64),
            np.array([int(dy)], dtype=np.uint64), np.array([n], dtype=np.int32)]
    params = np.array([arg.ctypes.data for arg in args], dtype=np.uint64)
    block = 256
    grid = (n + block - 1) // block
    call("cuLaunchKernel", cu.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, stream, params.ctypes.data, 0))
    call("cuMemcpyDtoHAsync", cu.cuMemcpyDtoHAsync(out.ctypes.data, dy, size, stream))
    call("cuEventRecord", cu.cuEventRecord(stop, stream))
    call("cuStreamSynchronize", cu.cuStreamSynchronize(stream))
    call("cuEventSynchronize", cu.cuEventSynchronize(stop))
    print(f"cuStreamQuery after sync: {status_of(cu.cuStreamQuery(stream))}")
    elapsed = getattr(cu, "cuEventElapsedTime", None) or cu.cuEventElapsedTime_v2
    ms = call("cuEventElapsedTime", elapsed(start, stop))
    check("elapsed>0", ms > 0)
    print(f"saxpy: launched <<<{grid}, {block}>>> on a stream, n = {n}")

    expected = alpha * x + y
    check("saxpy result within 1e-6", bool(np.allclose(out, expected, rtol=0, atol=1e-6)))
    print(f"saxpy sample: {' '.join(f'{v:.6f}' for v in out[[0, 1, n // 2, n - 1]])}")

    call("cuMemFree", cu.cuMemFree(dx))
    call("cuMemFree", cu.cuMemFree(dy))
    call("cuEventDestroy", cu.cuEventDestroy(start))
    call("cuEventDestroy", cu.cuEventDestroy(stop))
    call("cuStreamDestroy", cu.cuStreamDestroy(stream))
    call("cuModuleUnload", cu.cuModuleUnload(module))


def main():
    call("cuInit", cu.cuInit(0))
    print("cuInit: ok")
    version = call("cuDriverGetVersion", cu.cuDriverGetVersion())
    print(f"driver version: {version}")
    count = call("cuDeviceGetCount", cu.cuDeviceGetCount())
    print(f"device count: {count}")
    print(f"cuDeviceGet(out of range): {status_of(cu.cuDeviceGet(count))}")
    dev = call("cuDeviceGet", cu.cuDeviceGet(0))
    major, minor = device_info(dev)

    ctx = call("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(dev))
    call("cuCtxSetCurrent", cu.cuCtxSetCurrent(ctx))
    current = call("cuCtxGetCurrent", cu.cuCtxGetCurrent())
    check("primary context is current", int(current) == int(ctx))
    _flags, active = call("cuDevicePrimaryCtxGetState", cu.cuDevicePrimaryCtxGetState(dev))
    print(f"primary context active: {active}")

    memory()
    kernel_streams_events(compile_saxpy(major, minor))

    call("cuCtxSynchronize", cu.cuCtxSynchronize())
    call("cuDevicePrimaryCtxRelease", cu.cuDevicePrimaryCtxRelease(dev))
    print("cleanup: ok")


if __name__ == "__main__":
    try:
        main()
    except (CallFailed, RuntimeError) as e:
        print(f"FAIL: {e}")
        sys.exit(1)
    finally:
        report_mapped_libcuda()
    if FAILURES:
        print(f"FAIL: {len(FAILURES)} check(s) wrong: {', '.join(FAILURES)}")
        sys.exit(1)
    print("PASS")
