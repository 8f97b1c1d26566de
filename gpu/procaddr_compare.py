"""cuGetProcAddress_v2 for every exported API name, at every CUDA version
boundary, with flags 0, 1 and 2: prints the status and the symbol the answer
resolves to (dladdr). Run natively and through vgpu; the outputs must match."""

import ctypes
import re
import sys

VERSIONS = [2000, 2010, 2020, 2030, 3000, 3010, 3020, 3030, 3040, 3050, 4000, 4010, 4020,
            5000, 5050, 6000, 6050, 6500, 7000, 7050, 8000, 9000, 9010, 9020, 10000, 10010,
            10020, 11000, 11010, 11020, 11030, 11040, 11050, 11060, 11070, 11080, 12000,
            12010, 12020, 12030, 12040, 12050, 12060, 12080, 12090, 13000]


class DlInfo(ctypes.Structure):
    _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p),
                ("sname", ctypes.c_char_p), ("saddr", ctypes.c_void_p)]


exports = [l.strip() for l in open(sys.argv[1]) if l.strip()]
names = sorted({re.sub(r"(_v\d+)?(_ptds|_ptsz)?$", "", e) for e in exports if e.startswith("cu")})
cu = ctypes.CDLL("libcuda.so.1")
libc = ctypes.CDLL(None)
gpa = cu.cuGetProcAddress_v2
gpa.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_uint64,
                ctypes.POINTER(ctypes.c_int)]
lines = 0
for name in names:
    for v in VERSIONS:
        for flags in (0, 1, 2):
            pfn, st = ctypes.c_void_p(), ctypes.c_int(-1)
            rc = gpa(name.encode(), ctypes.byref(pfn), v, flags, ctypes.byref(st))
            sym = "-"
            if pfn.value:
                info = DlInfo()
                if libc.dladdr(ctypes.c_void_p(pfn.value), ctypes.byref(info)) and info.sname:
                    sym = info.sname.decode()
                    if info.saddr != pfn.value:
                        sym += "+?"
            print(name, v, flags, rc, st.value, sym)
            lines += 1
print("requests:", lines, file=sys.stderr)
