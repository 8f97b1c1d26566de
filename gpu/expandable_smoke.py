"""Training with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the
caching allocator maps its segments with the driver's virtual memory API
(cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess). Trains a small
MLP on growing batches (so segments grow) and prints the losses."""

import os

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
import torch

torch.manual_seed(0)
dev = torch.device("cuda")
model = torch.nn.Sequential(
    torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)
).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
g = torch.Generator(device="cpu").manual_seed(1)
for step in range(12):
    batch = 64 << (step % 6)
    x = torch.randn(batch, 256, generator=g).to(dev)
    y = torch.randint(0, 10, (batch,), generator=g).to(dev)
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    print(f"expandable step {step:2d} batch {batch:5d} loss {loss.item():.3f}")
print("segments reserved > 0:", torch.cuda.memory_reserved() > 0)
