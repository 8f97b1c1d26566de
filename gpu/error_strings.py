"""Prints cuGetErrorName / cuGetErrorString for every code 0..1000 that the
driver knows. Run natively and through vgpu (gpu/e2e.sh diffs the two):
vgpu answers these locally from its own table, so this checks that table
against the real driver's wording."""

import ctypes
import sys

cu = ctypes.CDLL("libcuda.so.1")
known = 0
for code in range(1000 + 1):
    name = ctypes.c_char_p()
    text = ctypes.c_char_p()
    r1 = cu.cuGetErrorName(code, ctypes.byref(name))
    r2 = cu.cuGetErrorString(code, ctypes.byref(text))
    if r1 == 0 or r2 == 0:
        known += 1
        print(code, r1, r2, (name.value or b"").decode(), "|", (text.value or b"").decode())
print("unknown code:", cu.cuGetErrorName(12345, ctypes.byref(ctypes.c_char_p())))
print("known codes:", known)
with open("/proc/self/maps") as maps:
    libs = sorted({l.split()[-1] for l in maps if "libcuda" in l or "libvgpu" in l})
print("libcuda mapped:", " ".join(libs), file=sys.stderr)
