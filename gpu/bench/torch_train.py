"""Training throughput of three PyTorch models, and compiled inference, for `vgpu bench`.

`vgpu bench` runs this script twice, on the native driver and through vgpu,
and compares the figures. The source is built into the vgpu binary and
written to a private folder at run time.

    python3 torch_train.py resnet50 [--warmup N] [--steps N]
        torchvision's ResNet-50 (a plain torch.nn copy of it when torchvision
        is absent), bf16 autocast, batch 64 of random 224x224 images, SGD
        -> resnet50_train <images/s> images/s
    python3 torch_train.py gpt2 [--warmup N] [--steps N]
        a GPT-2-small-sized decoder (12 layers, 768 wide, 12 heads, 1024
        positions, 50257-token vocabulary) in plain torch.nn, random init,
        bf16 autocast, batch 8 of 1024 random tokens, AdamW
        -> gpt2_train <tokens/s> tokens/s  (steps/s = tokens/s / 8192)
    python3 torch_train.py small_transformer [--warmup N] [--steps N]
        a small decoder (4 layers, 256 wide, 4 heads, 64 positions, 4096-token
        vocabulary), fp32, batch 16 of 64 random tokens, Adam (one kernel per
        parameter and operation, not fused): hundreds of short kernels per
        step, so the step is bound by launching them, not by the GPU
        -> small_transformer_train <tokens/s> tokens/s  (steps/s = tokens/s / 1024)
    python3 torch_train.py compile_ro [--warmup N] [--steps N]
        inference of the small decoder above (no grad), compiled with
        torch.compile(mode="reduce-overhead"): inductor's Triton kernels
        replayed as one CUDA graph per step, fp32, batch 16 of 64 tokens
        -> compile_ro_infer <tokens/s> tokens/s

Output: `name value unit` lines for figures, `# key text` lines about the
run, `FAIL reason` and exit 1 when CUDA is unusable. Timing starts after the
warm-up steps (which include cuDNN autotuning) and a synchronize, and ends
with a synchronize after the last step.
"""

import argparse
import ctypes
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


# --- ResNet-50 (torchvision's architecture, used when torchvision is absent) ---


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet50(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = self._layer(64, 3)
        self.layer2 = self._layer(128, 4, stride=2)
        self.layer3 = self._layer(256, 6, stride=2)
        self.layer4 = self._layer(512, 3, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2048, num_classes)

    def _layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * 4:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * 4, 1, stride=stride, bias=False),
                nn.BatchNorm2d(planes * 4),
            )
        layers = [Bottleneck(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * 4
        layers += [Bottleneck(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet50():
    try:
        import torchvision

        print(f"# model torchvision.models.resnet50 (torchvision {torchvision.__version__})")
        return torchvision.models.resnet50(weights=None)
    except ImportError:
        print("# model ResNet-50 in plain torch.nn (torchvision is not installed)")
        return ResNet50()


# --- GPT-2 small ---


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.out = nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, vocab=50257, positions=1024, width=768, layers=12, heads=12):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(positions, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.wte.weight  # tied, as in GPT-2

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def report_library():
    """Prints `# library PATH shim=0|1`: the libcuda this process mapped, and
    whether it is vgpu's client (which exports vgpu_shim_marker)."""
    mapped = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            path = fields[5] if len(fields) >= 6 else ""
            base = os.path.basename(path)
            if (base.startswith("libcuda.so") or base.startswith("libvgpu")) and path not in mapped:
                mapped.append(path)
    found = []
    for path in mapped:
        try:
            found.append((path, hasattr(ctypes.CDLL(path), "vgpu_shim_marker")))
        except OSError:
            continue
    # vgpu's client first: it must never be mapped on the native side.
    found.sort(key=lambda f: not f[1])
    if found:
        path, shim = found[0]
        print(f"# library {os.path.realpath(path)} shim={int(shim)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=["resnet50", "gpt2", "small_transformer", "compile_ro"])
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--steps", type=int, default=50)
    a = ap.parse_args()

    if not torch.cuda.is_available():
        print("FAIL torch.cuda.is_available() is False")
        return 1
    dev = torch.device("cuda")
    torch.cuda.init()
    report_library()
    print(f"# device {torch.cuda.get_device_name(0)}")
    print(f"# torch {torch.__version__}")
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True

    if a.model == "compile_ro":
        return compiled_inference(a, dev)

    if a.model == "resnet50":
        batch = 64
        model = resnet50().to(dev, memory_format=torch.channels_last)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        x = torch.randn(batch, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
        y = torch.randint(0, 1000, (batch,), device=dev)
        per_step, name, unit = batch, "resnet50_train", "images/s"

        def loss_fn():
            return F.cross_entropy(model(x), y)

    elif a.model == "small_transformer":
        batch, seq, vocab = 16, 64, 4096
        model = GPT2(vocab=vocab, positions=seq, width=256, layers=4, heads=4).to(dev)
        # foreach=False: one kernel per parameter, as many optimizers do.
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)
        tokens = torch.randint(0, vocab, (batch, seq + 1), device=dev)
        x, y = tokens[:, :-1], tokens[:, 1:]
        per_step, name, unit = batch * seq, "small_transformer_train", "tokens/s"
        print(f"# parameters {sum(p.numel() for p in model.parameters())}")

        def loss_fn():
            return F.cross_entropy(model(x).flatten(0, 1), y.flatten())

    else:
        batch, seq = 8, 1024
        model = GPT2().to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
        tokens = torch.randint(0, 50257, (batch, seq + 1), device=dev)
        x, y = tokens[:, :-1], tokens[:, 1:]
        per_step, name, unit = batch * seq, "gpt2_train", "tokens/s"
        print(f"# parameters {sum(p.numel() for p in model.parameters())}")

        def loss_fn():
            return F.cross_entropy(model(x).flatten(0, 1), y.flatten())

    model.train()

    # The small model runs in fp32: autocast's casts would only add kernels.
    autocast = a.model != "small_transformer"

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = loss_fn()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(f"# steps {a.steps} in {dt:.3f} s, last loss {loss.item():.4f}")
    print(f"{name} {a.steps * per_step / dt:.2f} {unit}")
    return 0


def compiled_inference(a, dev):
    """torch.compile(mode="reduce-overhead") inference: after compiling, each
    step is one CUDA graph replay plus the copies around it."""
    batch, seq, vocab = 16, 64, 4096
    model = GPT2(vocab=vocab, positions=seq, width=256, layers=4, heads=4).to(dev).eval()
    compiled = torch.compile(model, mode="reduce-overhead")
    x = torch.randint(0, vocab, (batch, seq), device=dev)
    with torch.no_grad():
        # Compiling and recording the graph happen in the first few calls.
        for _ in range(max(a.warmup, 3)):
            out = compiled(x)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(a.steps):
            out = compiled(x)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
    print(f"# steps {a.steps} in {dt:.3f} s, checksum {out.float().sum().item():.4f}")
    print(f"compile_ro_infer {a.steps * batch * seq / dt:.2f} tokens/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
