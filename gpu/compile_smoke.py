"""torch.compile training (default mode): a small MLP for 20 steps from a
fixed seed; prints the losses. Autograd runs the compiled backward on its own
thread, which launches Triton kernels through inductor's static launcher
(cuCtxGetCurrent / cuDevicePrimaryCtxRetain / cuCtxSetCurrent, then
cuLaunchKernel on that thread)."""

import torch

torch.manual_seed(0)
dev = torch.device("cuda")
model = torch.nn.Sequential(
    torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 10)
).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
step_fn = torch.compile(lambda x, y: torch.nn.functional.cross_entropy(model(x), y))
g = torch.Generator(device="cpu").manual_seed(1)
xs = torch.randn(4, 32, 64, generator=g)
ys = torch.randint(0, 10, (4, 32), generator=g)
for step in range(20):
    opt.zero_grad()
    loss = step_fn(xs[step % 4].to(dev), ys[step % 4].to(dev))
    loss.backward()
    opt.step()
    if step % 5 == 0 or step == 19:
        print(f"compile step {step:2d} loss {loss.item():.3f}")
