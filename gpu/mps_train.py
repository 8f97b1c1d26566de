"""One small training process of gpu/mps.sh's throughput runs (PyTorch).

A three-layer MLP, batch 64: short kernels, so a process alone leaves most
of the GPU idle. It warms up, creates READY_DIR/PID, waits for the file GO
to appear, trains for SECONDS, and prints "rate STEPS_PER_SECOND".

Usage: mps_train.py GO READY_DIR SECONDS"""
import os
import sys
import time

import torch
import torch.nn.functional as F

go, ready_dir, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(256, 512),
    torch.nn.ReLU(),
    torch.nn.Linear(512, 512),
    torch.nn.ReLU(),
    torch.nn.Linear(512, 10),
).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 256, device="cuda")
y = torch.randint(0, 10, (64,), device="cuda")


def step():
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


for _ in range(30):
    step()
torch.cuda.synchronize()
open(os.path.join(ready_dir, str(os.getpid())), "w").close()
while not os.path.exists(go):
    time.sleep(0.005)
n, t0 = 0, time.perf_counter()
while True:
    loss = step()
    n += 1
    if n % 10 == 0:
        loss.item()
        if time.perf_counter() - t0 >= seconds:
            break
took = time.perf_counter() - t0
print(f"rate {n / took:.2f} steps {n} seconds {took:.3f}", flush=True)
