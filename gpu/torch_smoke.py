"""A small PyTorch program whose output must be identical natively and
through vgpu: tensor ops, a cuBLAS matmul, a cuDNN conv2d forward and
backward, streams and events, synchronize and memory statistics."""

import sys

import torch

torch.manual_seed(0)
dev = torch.device("cuda")
print("cuda available:", torch.cuda.is_available())
print("device:", torch.cuda.get_device_name(0))
x = torch.ones(1024, device=dev) * 2
print("ones*2 sum:", x.sum().item())
a = torch.randn(256, 256, device=dev)
b = torch.randn(256, 256, device=dev)
c = a @ b
print("matmul checksum: %.3f" % c.double().sum().item())
ref = (a.cpu().double() @ b.cpu().double())
print("matmul matches CPU:", torch.allclose(c.cpu().double(), ref, atol=1e-2, rtol=1e-3))
conv = torch.nn.Conv2d(3, 8, 3, padding=1).to(dev)
inp = torch.randn(4, 3, 32, 32, device=dev, requires_grad=True)
out = conv(inp)
out.sum().backward()
print("conv out shape:", tuple(out.shape))
print("conv grad finite:", bool(torch.isfinite(inp.grad).all().item()))
s = torch.cuda.Stream()
e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
with torch.cuda.stream(s):
    e0.record()
    y = (a * 3).relu().sum()
    e1.record()
torch.cuda.synchronize()
print("stream result: %.3f" % y.item())
print("event elapsed >= 0:", e0.elapsed_time(e1) >= 0)
print("memory allocated > 0:", torch.cuda.memory_allocated() > 0)
with open("/proc/self/maps") as maps:
    libs = sorted({l.split()[-1] for l in maps if "libcuda" in l or "libvgpu" in l})
print("libcuda mapped:", " ".join(libs), file=sys.stderr)
print("PASS")
