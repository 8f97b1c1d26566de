"""A single-rank NCCL group through torch.distributed: all_reduce,
broadcast and all_gather on one GPU; prints the results."""

import os

import torch
import torch.distributed as dist

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29513")
dist.init_process_group("nccl", rank=0, world_size=1)
dev = torch.device("cuda", 0)
t = torch.arange(8, dtype=torch.float32, device=dev)
dist.all_reduce(t)
print("all_reduce", t.tolist())
b = torch.full((4,), 3.0, device=dev)
dist.broadcast(b, src=0)
print("broadcast", b.tolist())
out = [torch.empty(4, device=dev)]
dist.all_gather(out, torch.ones(4, device=dev) * 2)
print("all_gather", out[0].tolist())
torch.cuda.synchronize()
dist.destroy_process_group()
print("nccl done")
