"""CUDA tensors shared between processes with torch.multiprocessing (spawn),
both ways: the parent sends a tensor to a child, which reads it and writes
into it; the child sends back a tensor it made, which the parent reads and
writes, and the child sees the parent's write. Sharing goes through
cudaIpcGetMemHandle / cudaIpcOpenMemHandle (and interprocess events) under
PyTorch's CUDA IPC. The output must be identical natively and through vgpu."""

import sys

import torch
import torch.multiprocessing as mp


def child(inbox, outbox, done):
    shared = inbox.get()
    print("child sees parent tensor:", float(shared.sum()), flush=True)
    shared[512:] = 2.0
    torch.cuda.synchronize()
    mine = torch.full((1024,), 3.0, device="cuda")
    outbox.put(mine)
    done.wait()
    torch.cuda.synchronize()
    print("child sees parent write:", float(mine[:256].sum()), float(mine[256:].sum()), flush=True)
    outbox.put("bye")


def main():
    ctx = mp.get_context("spawn")
    inbox, outbox, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    t = torch.ones(1024, device="cuda")
    torch.cuda.synchronize()
    p = ctx.Process(target=child, args=(inbox, outbox, done))
    p.start()
    inbox.put(t)
    theirs = outbox.get()
    torch.cuda.synchronize()
    print("parent sees child write:", float(t[:512].sum()), float(t[512:].sum()), flush=True)
    print("parent sees child tensor:", float(theirs.sum()), flush=True)
    theirs[:256] = 4.0
    torch.cuda.synchronize()
    done.set()
    print("child says:", outbox.get(), flush=True)
    del theirs
    p.join(60)
    print("child exit:", p.exitcode, flush=True)
    ok = p.exitcode == 0 and float(t.sum()) == 512 * 1.0 + 512 * 2.0
    print("PASS" if ok else "FAIL", flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
