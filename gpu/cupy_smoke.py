"""A small CuPy program whose output must be identical natively and through
vgpu: elementwise, reductions, a RawKernel, FFT (cuFFT) and a matmul."""

import sys

import cupy as cp
import numpy as np

x = cp.arange(1 << 20, dtype=cp.float32)
print("elementwise:", float((x * 2 + 1)[12345]))
print("reduction sum:", float(x.sum()))
print("reduction max:", float(x.max()))
kernel = cp.RawKernel(r"""
extern "C" __global__ void scale(const float *a, float *b, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i] * s;
}""", "scale")
y = cp.empty_like(x)
kernel(((x.size + 255) // 256,), (256,), (x, y, cp.float32(3.0), cp.int32(x.size)))
print("RawKernel:", float(y[1000]), bool(cp.allclose(y, x * 3)))
rng = np.random.default_rng(0)
h = rng.standard_normal(4096).astype(np.complex64)
f = cp.fft.fft(cp.asarray(h))
print("fft matches numpy:", bool(np.allclose(cp.asnumpy(f), np.fft.fft(h), atol=1e-2)))
a = cp.asarray(rng.standard_normal((128, 128)).astype(np.float32))
b = cp.asarray(rng.standard_normal((128, 128)).astype(np.float32))
c = a @ b
print("matmul matches numpy:", bool(np.allclose(cp.asnumpy(c), cp.asnumpy(a) @ cp.asnumpy(b), atol=1e-3)))
with open("/proc/self/maps") as maps:
    libs = sorted({l.split()[-1] for l in maps if "libcuda" in l or "libvgpu" in l})
print("libcuda mapped:", " ".join(libs), file=sys.stderr)
print("PASS")
