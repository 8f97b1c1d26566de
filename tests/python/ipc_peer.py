"""One side of an inter-process handle exchange through ctypes, driven line by
line over stdin/stdout by crates/cli/tests/e2e_ipc.rs.

  ipc_peer.py export     allocates 1 MiB of 0x5a bytes, prints `handle HEX`,
                         waits for a line on stdin, then exits without freeing.
  ipc_peer.py open HEX   prints `open RESULT` (the CUresult of
                         cuIpcOpenMemHandle); on success waits for a line on
                         stdin, then prints `byte 0xNN`, the opened memory's
                         first byte, and `close RESULT`.
"""

import ctypes
import sys


class IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]


cu = ctypes.CDLL("libcuda.so.1")
cu.cuIpcOpenMemHandle_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), IpcHandle, ctypes.c_uint]


def must(result, what):
    if result != 0:
        print(f"FAIL {what}: {result}", flush=True)
        sys.exit(1)


def start():
    must(cu.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    must(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    must(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    must(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")


def export():
    start()
    p = ctypes.c_uint64()
    must(cu.cuMemAlloc_v2(ctypes.byref(p), 1 << 20), "cuMemAlloc")
    must(cu.cuMemsetD8_v2(p, 0x5A, 1 << 20), "cuMemsetD8")
    h = IpcHandle()
    must(cu.cuIpcGetMemHandle(ctypes.byref(h), p), "cuIpcGetMemHandle")
    print("handle", ctypes.string_at(ctypes.byref(h), 64).hex(), flush=True)
    sys.stdin.readline()


def open_handle(text):
    start()
    h = IpcHandle()
    ctypes.memmove(ctypes.byref(h), bytes.fromhex(text), 64)
    p = ctypes.c_uint64()
    r = cu.cuIpcOpenMemHandle_v2(ctypes.byref(p), h, 1)
    print("open", r, flush=True)
    if r != 0:
        return
    sys.stdin.readline()
    b = ctypes.c_ubyte()
    must(cu.cuMemcpyDtoH_v2(ctypes.byref(b), p, 1), "cuMemcpyDtoH")
    print(f"byte {b.value:#04x}", flush=True)
    print("close", cu.cuIpcCloseMemHandle(p), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "export":
        export()
    else:
        open_handle(sys.argv[2])
