"""Trains a small CNN and a small transformer for 50 steps each from a fixed
seed, with deterministic algorithms, and prints the losses: natively and
through vgpu they must agree within floating-point tolerance."""

import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch

torch.manual_seed(0)
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False
torch.use_deterministic_algorithms(True)
dev = torch.device("cuda")


def run(name, model, make_batch, loss_fn, steps=50):
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for step in range(steps):
        x, y = make_batch(step)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    for step in (0, 10, 20, 30, 40, 49):
        print(f"{name} step {step:2d} loss {losses[step]:.4f}")
    return losses


g = torch.Generator(device="cpu").manual_seed(1)
images = torch.randn(8, 32, 3, 32, 32, generator=g)
labels = torch.randint(0, 10, (8, 32), generator=g)
cnn = torch.nn.Sequential(
    torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
    torch.nn.Flatten(), torch.nn.Linear(32, 10),
).to(dev)
run("cnn", cnn, lambda s: (images[s % 8].to(dev), labels[s % 8].to(dev)), torch.nn.functional.cross_entropy)

tokens = torch.randint(0, 100, (8, 16, 33), generator=g)
class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(100, 64)
        layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, 2)
        self.out = torch.nn.Linear(64, 100)
    def forward(self, x):
        return self.out(self.enc(self.emb(x)))
tiny = Tiny().to(dev)
run("transformer", tiny,
    lambda s: (tokens[s % 8, :, :-1].to(dev), tokens[s % 8, :, 1:].to(dev)),
    lambda logits, y: torch.nn.functional.cross_entropy(logits.reshape(-1, 100), y.reshape(-1)))
with open("/proc/self/maps") as maps:
    libs = sorted({l.split()[-1] for l in maps if "libcuda" in l or "libvgpu" in l})
print("libcuda mapped:", " ".join(libs), file=sys.stderr)
print("PASS")
