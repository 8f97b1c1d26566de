"""Several GPUs through one driver: what gpu/multi_gpu.sh runs natively and
through vgpu, with the same arguments, on a machine with two or more GPUs.

  multi_gpu.py enum            device enumeration in PyTorch and CuPy (deterministic)
  multi_gpu.py peer [MiB]      a peer copy each way (default 1024 MiB): every byte
                               checked by a checksum on each device, bandwidth in
                               GB/s on a `bw` line (not deterministic)
  multi_gpu.py ddp RANK WORLD  one rank of DistributedDataParallel training of a
                               small transformer with NCCL, then all_reduce of
                               256 MiB; rank 0 prints every loss (deterministic)
                               and `rate`/`busbw` lines (not deterministic)

NVLink multicast stays off (NCCL_NVLS_ENABLE=0 and friends are set before
NCCL loads); cuMulticastCreate is never called.
"""

import os
import sys
import time

for key, value in (
    # cuBLAS is deterministic only with a fixed workspace.
    ("CUBLAS_WORKSPACE_CONFIG", ":4096:8"),
    ("NCCL_NVLS_ENABLE", "0"),
    ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
    ("NVSHMEM_DISABLE_NVLS", "1"),
):
    os.environ[key] = value

import torch


def enum():
    n = torch.cuda.device_count()
    print("torch devices", n)
    for i in range(n):
        p = torch.cuda.get_device_properties(i)
        print(f"torch {i} {p.name} cc {p.major}.{p.minor} mem {p.total_memory}")
    for i in range(n):
        for j in range(n):
            if i != j:
                print(f"torch peer {i}->{j} {torch.cuda.can_device_access_peer(i, j)}")
    import cupy

    m = cupy.cuda.runtime.getDeviceCount()
    print("cupy devices", m)
    for i in range(m):
        p = cupy.cuda.runtime.getDeviceProperties(i)
        print(f"cupy {i} {p['name'].decode()} pci {p['pciBusID']}:{p['pciDeviceID']}")
        with cupy.cuda.Device(i):
            a = cupy.arange(1000, dtype=cupy.float32) * (i + 1)
            print(f"cupy {i} sum {float(a.sum())}")
    for i in range(m):
        for j in range(m):
            if i != j:
                print(f"cupy peer {i}->{j} {cupy.cuda.runtime.deviceCanAccessPeer(i, j)}")


def checksum(t):
    # Position-weighted, so a shifted or partial copy changes it.
    w = torch.arange(t.numel(), device=t.device, dtype=torch.int64) % 65521
    return int((t.to(torch.int64) * w).sum())


def peer(mib=1024):
    size = mib << 20
    a = torch.randint(0, 256, (size,), dtype=torch.uint8, device="cuda:0",
                      generator=torch.Generator("cuda:0").manual_seed(7))
    b = torch.empty(size, dtype=torch.uint8, device="cuda:1")
    want = checksum(a)
    for src, dst, name in ((a, b, "0->1"), (b, a, "1->0")):
        if name == "1->0":
            b.add_(1)  # each way moves different bytes
            want = checksum(b)
            torch.cuda.synchronize(1)
        dst.copy_(src)  # warm-up, and peer access enabled by PyTorch
        torch.cuda.synchronize(0)
        torch.cuda.synchronize(1)
        rounds = 10
        t0 = time.perf_counter()
        for _ in range(rounds):
            dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize(src.device)
        torch.cuda.synchronize(dst.device)
        dt = time.perf_counter() - t0
        got = checksum(dst)
        print(f"peer {name} {mib} MiB checksum {'ok' if got == want else 'MISMATCH'}")
        print(f"bw {name} {rounds * size / dt / 1e9:.2f} GB/s")


class Model(torch.nn.Module):
    def __init__(self, vocab=512, dim=256, layers=4):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        layer = torch.nn.TransformerEncoderLayer(dim, 4, 4 * dim, dropout=0.0, batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, layers)
        self.out = torch.nn.Linear(dim, vocab)

    def forward(self, x):
        return self.out(self.enc(self.emb(x)))


def ddp(rank, world):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    torch.manual_seed(0)
    # The same losses in every run, native or not: deterministic kernels,
    # and attention by the math path (the fused ones' backward passes add
    # in an order that varies between runs).
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cuda.enable_flash_sdp(False)
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    model = DistributedDataParallel(Model().cuda(), device_ids=[rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100 + rank)
    batches = [torch.randint(0, 512, (16, 128), generator=g) for _ in range(8)]
    batches = [b.cuda() for b in batches]
    loss_fn = torch.nn.CrossEntropyLoss()

    def step(x):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x).flatten(0, 1), x.roll(1, 1).flatten())
        loss.backward()
        opt.step()
        return loss

    for i in range(20):
        loss = step(batches[i % 8])
        if rank == 0:
            print(f"step {i} loss {loss.item():.6f}")
    torch.cuda.synchronize()
    dist.barrier()
    steps = 200
    t0 = time.perf_counter()
    for i in range(steps):
        step(batches[i % 8])
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    dist.barrier()

    n = 64 << 20  # 256 MiB of float32
    t = torch.ones(n, device="cuda")
    for _ in range(3):
        dist.all_reduce(t)
    torch.cuda.synchronize()
    dist.barrier()
    iters = 20
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(t)
    torch.cuda.synchronize()
    ar = (time.perf_counter() - t0) / iters
    check = t[:4].tolist()
    if rank == 0:
        print(f"all_reduce 256 MiB first {check}")
        print(f"rate {steps / dt:.2f} steps/s")
        busbw = 4 * n / ar * 2 * (world - 1) / world / 1e9
        print(f"busbw {busbw:.2f} GB/s")
    dist.destroy_process_group()


def main():
    cmd = sys.argv[1]
    if cmd == "enum":
        enum()
    elif cmd == "peer":
        peer(int(sys.argv[2]) if len(sys.argv) > 2 else 1024)
    elif cmd == "ddp":
        ddp(int(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit(f"unknown command {cmd!r}")


if __name__ == "__main__":
    main()
