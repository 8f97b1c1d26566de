"""The CFFI case on a GPU: tests/c/ctor_lib.c (its constructor runs cuInit,
creates a context, allocates 1 MiB and writes a pattern) is loaded with cffi
from a non-main thread while 8 threads run Python; then its buffer goes to
PyTorch through DLPack (via CuPy) without a copy, and PyTorch reads it."""

import hashlib
import sys
import threading

import cffi
import cupy as cp
import torch

lib_path = sys.argv[1]
ffi = cffi.FFI()
ffi.cdef("""
int ctor_status(void);
unsigned long long ctor_device_pointer(void);
size_t ctor_bytes(void);
void ctor_expected(unsigned char *out, size_t n);
""")
box = {}
stop = threading.Event()
def busy():
    x = 0
    while not stop.is_set():
        x = (x * 31 + 7) % 1000003
workers = [threading.Thread(target=busy) for _ in range(8)]
for w in workers:
    w.start()
loader = threading.Thread(target=lambda: box.setdefault("lib", ffi.dlopen(lib_path)))
loader.start()
loader.join(60)
stop.set()
for w in workers:
    w.join()
lib = box["lib"]
print("constructor status:", lib.ctor_status())
n = lib.ctor_bytes()
ptr = lib.ctor_device_pointer()
expected = ffi.new("unsigned char[]", n)
lib.ctor_expected(expected, n)
want = hashlib.sha256(ffi.buffer(expected, n)).hexdigest()[:16]
mem = cp.cuda.UnownedMemory(ptr, n, owner=None)
arr = cp.ndarray((n,), dtype=cp.uint8, memptr=cp.cuda.MemoryPointer(mem, 0))
t = torch.from_dlpack(arr)
print("torch tensor shares the library's pointer:", t.data_ptr() == ptr)
got = hashlib.sha256(t.cpu().numpy().tobytes()).hexdigest()[:16]
print("data read through torch matches the constructor's pattern:", got == want)
with open("/proc/self/maps") as maps:
    libs = sorted({l.split()[-1] for l in maps if "libcuda" in l or "libvgpu" in l})
print("libcuda mapped:", " ".join(libs), file=sys.stderr)
print("PASS" if got == want and t.data_ptr() == ptr else "FAIL")
