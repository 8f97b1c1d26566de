"""DLPack: a CuPy array handed to PyTorch and back shares the device pointer
(zero copy) and the data."""

import sys

import cupy as cp
import torch

a = cp.arange(1 << 20, dtype=cp.float32)
t = torch.from_dlpack(a)
print("cupy -> torch same pointer:", t.data_ptr() == a.data.ptr)
print("cupy -> torch same data:", bool((t[:5].cpu() == torch.arange(5, dtype=torch.float32)).all()))
t.mul_(2)
torch.cuda.synchronize()
print("write through torch seen by cupy:", float(a[3]) == 6.0)
b = cp.from_dlpack(t)
print("torch -> cupy same pointer:", b.data.ptr == t.data_ptr())
with open("/proc/self/maps") as maps:
    libs = sorted({l.split()[-1] for l in maps if "libcuda" in l or "libvgpu" in l})
print("libcuda mapped:", " ".join(libs), file=sys.stderr)
print("PASS")
