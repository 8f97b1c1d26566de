"""torch.cuda.CUDAGraph: capture a small MLP's forward pass on a side stream,
replay it on new inputs, and print checksums; then torch.compile with
mode="reduce-overhead" (inductor's CUDA graphs) on the same model."""

import torch

torch.manual_seed(0)
dev = torch.device("cuda")
model = torch.nn.Sequential(
    torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 16)
).to(dev).eval()
static_in = torch.zeros(32, 64, device=dev)

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s), torch.no_grad():
    for _ in range(3):  # warm-up on the side stream, as the docs advise
        model(static_in)
torch.cuda.current_stream().wait_stream(s)

graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph), torch.no_grad():
    static_out = model(static_in)

g = torch.Generator(device="cpu").manual_seed(1)
for i in range(5):
    static_in.copy_(torch.randn(32, 64, generator=g))
    graph.replay()
    torch.cuda.synchronize()
    print(f"graph replay {i} sum {static_out.sum().item():.3f}")

compiled = torch.compile(model, mode="reduce-overhead")
with torch.no_grad():
    for i in range(5):
        x = torch.randn(32, 64, generator=g).to(dev)
        y = compiled(x)
        print(f"reduce-overhead {i} sum {y.sum().item():.3f}")
