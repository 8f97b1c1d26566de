"""Launches a short spinning kernel for SECONDS and prints how many ran.

gpu/tenants.sh runs two of these at once, as two tenants of one mediator
with compute weights 1 and 3, and prints each one's share of the launches.
The kernel is PTX that the driver compiles: one thread spinning ITERS
steps of a linear congruential generator (about 50 us on an H100 at the
default), so both processes are bound by the GPU, not by the CPU.

Usage: python3 gpu/tenant_launches.py SECONDS [ITERS]
Output: `launches N` (and nothing else on stdout); exit 1 when a call fails.
"""
import ctypes
import sys
import time

PTX = b"""
.version 7.0
.target sm_70
.address_size 64

.visible .entry spin(.param .u64 out, .param .u32 iters)
{
    .reg .pred p;
    .reg .b32 r<4>;
    .reg .b64 rd<3>;
    ld.param.u64 rd1, [out];
    ld.param.u32 r1, [iters];
    mov.u32 r2, 0;
    mov.u32 r3, 1;
LOOP:
    mad.lo.u32 r3, r3, 1664525, 1013904223;
    add.u32 r2, r2, 1;
    setp.lt.u32 p, r2, r1;
    @p bra LOOP;
    cvta.to.global.u64 rd2, rd1;
    st.global.u32 [rd2], r3;
    ret;
}
\0"""


def check(what, r):
    if r != 0:
        print(f"{what} failed: {r}", file=sys.stderr)
        sys.exit(1)


def main():
    seconds = float(sys.argv[1])
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    cu = ctypes.CDLL("libcuda.so.1")
    check("cuInit", cu.cuInit(0))
    ctx = ctypes.c_void_p()
    check("cuCtxCreate", cu.cuCtxCreate_v2(ctypes.byref(ctx), 0, 0))
    module = ctypes.c_void_p()
    check("cuModuleLoadData", cu.cuModuleLoadData(ctypes.byref(module), PTX))
    fn = ctypes.c_void_p()
    check("cuModuleGetFunction", cu.cuModuleGetFunction(ctypes.byref(fn), module, b"spin"))
    out = ctypes.c_uint64()
    check("cuMemAlloc", cu.cuMemAlloc_v2(ctypes.byref(out), ctypes.c_size_t(4)))
    n = ctypes.c_uint32(iters)
    params = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(out), ctypes.c_void_p),
                                   ctypes.cast(ctypes.byref(n), ctypes.c_void_p))
    launches = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        check("cuLaunchKernel", cu.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, None, params, None))
        launches += 1
        if launches % 8 == 0:
            check("cuCtxSynchronize", cu.cuCtxSynchronize())
    check("cuCtxSynchronize", cu.cuCtxSynchronize())
    print(f"launches {launches}")


main()
