"""Native facts for TCP copies: how fast the driver copies 4 MiB pieces
between the device and pageable or pinned host memory, against a plain
host memcpy of the same size. A worker's TCP copy buffers are pageable;
this says what pinning them could gain. Prints one line per case (GB/s).

    python3 gpu/copy_probe.py
"""
import time

import numpy as np
import torch

PIECE = 4 << 20
REPS = 200


def rate(fn):
    fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(REPS):
        fn()
    torch.cuda.synchronize()
    return PIECE * REPS / (time.perf_counter() - t) / 1e9


dev = torch.empty(PIECE, dtype=torch.uint8, device="cuda")
pageable = torch.empty(PIECE, dtype=torch.uint8)
pageable.fill_(1)
pinned = torch.empty(PIECE, dtype=torch.uint8).pin_memory()
print(f"d2h_pageable {rate(lambda: pageable.copy_(dev)):.2f} GB/s")
print(f"d2h_pinned   {rate(lambda: pinned.copy_(dev)):.2f} GB/s")
print(f"h2d_pageable {rate(lambda: dev.copy_(pageable)):.2f} GB/s")
print(f"h2d_pinned   {rate(lambda: dev.copy_(pinned)):.2f} GB/s")
a = np.ones(PIECE, dtype=np.uint8)
b = np.empty_like(a)
print(f"host_memcpy  {rate(lambda: np.copyto(b, a)):.2f} GB/s")
