"""Function attributes that read back as set (gpu/frameworks.sh runs it
natively and through vgpu; the lines must match). vgpu's client keeps the
value of a set of these attributes as the answer of a later get, so that a
library that sets them before every launch costs no round trip; this checks
on the real driver that a get returns what the set gave."""
import cupy as cp
from cuda.bindings import driver as cu

k = cp.RawKernel(
    r"""extern "C" __global__ void f(float* x) {
        extern __shared__ float s[];
        s[threadIdx.x] = 1.0f;
        x[threadIdx.x] = s[threadIdx.x];
    }""",
    "f",
)
x = cp.zeros(32, dtype=cp.float32)
k((1,), (32,), (x,), shared_mem=128)
f = cu.CUfunction(k.kernel.ptr)
A = cu.CUfunction_attribute
for name, attr, values in [
    ("dynamic", A.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, [0x12000, 0x14000, 0x12000]),
    ("carveout", A.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, [100, 50, -1, 100]),
    ("nonportable", A.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, [1, 0, 1]),
]:
    for v in values:
        (err,) = cu.cuFuncSetAttribute(f, attr, v)
        err2, got = cu.cuFuncGetAttribute(attr, f)
        print(f"{name} set {v}: {err.name} get {err2.name} {got}")
k((1,), (32,), (x,), shared_mem=0x12000)
cp.cuda.runtime.deviceSynchronize()
print("launch ok", float(x[0]))
