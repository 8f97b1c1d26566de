"""numba: a @cuda.jit kernel, output identical natively and through vgpu."""

import sys

import numpy as np

# numba-cuda on the GPU machine still names np.row_stack, which NumPy 2.x
# removed; the alias lets it import (natively and through vgpu alike).
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack
from numba import cuda  # noqa: E402


@cuda.jit
def axpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


n = 1 << 16
x = np.arange(n, dtype=np.float32)
y = np.ones(n, dtype=np.float32)
d_out = cuda.device_array(n, dtype=np.float32)
axpy[(n + 255) // 256, 256](np.float32(2.0), cuda.to_device(x), cuda.to_device(y), d_out)
out = d_out.copy_to_host()
print("numba device:", cuda.get_current_device().name.decode() if isinstance(cuda.get_current_device().name, bytes) else cuda.get_current_device().name)
print("axpy[12345]:", float(out[12345]))
print("axpy matches numpy:", bool(np.allclose(out, 2 * x + y)))
with open("/proc/self/maps") as maps:
    libs = sorted({l.split()[-1] for l in maps if "libcuda" in l or "libvgpu" in l})
print("libcuda mapped:", " ".join(libs), file=sys.stderr)
print("PASS")
