"""Native facts for TCP copies: how fast the driver copies 4 MiB pieces
between the device and pageable or pinned host memory, against a plain
host memcpy of the same size. A worker's TCP copy buffers are pageable;
this says what pinning them could gain. Also the raw loopback TCP link
two ways: streaming 256 MiB from and into one 4 MiB buffer (as `vgpu
bench` measures the link) and from and into 256 MiB buffers (as a 256 MiB
copy's bytes leave and reach memory). Prints one line per case (GB/s).

    python3 gpu/copy_probe.py
"""
import socket
import threading
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


LINK = 256 << 20


def link(whole):
    """GB/s of LINK bytes over loopback TCP, 4 MiB per call; `whole`: from
    and into LINK-byte buffers, else one 4 MiB buffer each side."""
    size = LINK if whole else PIECE
    src, dst = bytearray(b"\x5a" * size), bytearray(size)
    listener = socket.create_server(("127.0.0.1", 0))

    def receive():
        conn, _ = listener.accept()
        view, got = memoryview(dst), 0
        while got < LINK:
            at = got if whole else 0
            got += conn.recv_into(view[at : at + min(PIECE, LINK - got)])
        conn.sendall(b"!")
        conn.close()

    rx = threading.Thread(target=receive)
    rx.start()
    conn = socket.create_connection(listener.getsockname())
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    view = memoryview(src)
    t = time.perf_counter()
    for at in range(0, LINK, PIECE):
        conn.sendall(view[at : at + PIECE] if whole else view)
    conn.recv(1)
    took = time.perf_counter() - t
    rx.join()
    conn.close()
    listener.close()
    return LINK / took / 1e9


for _ in range(3):
    print(f"tcp_4mib_buffers {link(False):.2f} GB/s   tcp_256mib_buffers {link(True):.2f} GB/s")
