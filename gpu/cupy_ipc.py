"""A CuPy IPC round trip: the parent exports a device buffer with
cupy.cuda.runtime.ipcGetMemHandle and passes the handle (bytes) to a child
process through a pipe; the child opens it with ipcOpenMemHandle, checks the
parent's values, writes its own and closes it; the parent sees the child's
values. The output must be identical natively and through vgpu."""

import multiprocessing as mp
import sys

import cupy as cp
import numpy as np

N = 1 << 16


def child(conn):
    handle = conn.recv()
    ptr = cp.cuda.runtime.ipcOpenMemHandle(handle)
    mem = cp.cuda.UnownedMemory(ptr, N * 4, None)
    view = cp.ndarray((N,), dtype=cp.float32, memptr=cp.cuda.MemoryPointer(mem, 0))
    print("child reads:", float(view.sum()), flush=True)
    view[: N // 2] = 7.0
    cp.cuda.runtime.deviceSynchronize()
    del view, mem
    cp.cuda.runtime.ipcCloseMemHandle(ptr)
    conn.send("done")


def main():
    ctx = mp.get_context("spawn")
    a = cp.arange(N, dtype=cp.float32)
    cp.cuda.runtime.deviceSynchronize()
    handle = cp.cuda.runtime.ipcGetMemHandle(a.data.ptr)
    print("handle bytes:", len(handle), flush=True)
    parent_end, child_end = ctx.Pipe()
    p = ctx.Process(target=child, args=(child_end,))
    p.start()
    parent_end.send(handle)
    print("child says:", parent_end.recv(), flush=True)
    p.join(60)
    host = cp.asnumpy(a)
    want = np.arange(N, dtype=np.float32)
    want[: N // 2] = 7.0
    ok = p.exitcode == 0 and bool(np.array_equal(host, want))
    print("parent sees child write:", ok, flush=True)
    print("PASS" if ok else "FAIL", flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
