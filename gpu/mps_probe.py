"""One client of gpu/mps.sh, through vgpu or natively (CuPy). One of:
  busy SECONDS   launch a small kernel and synchronize, for that long:
                 prints "busy TAG iters=N err=ERROR-OR-None"
  fault          after 1.5 s, launch a kernel that writes far out of
                 bounds: prints "fault ERROR"
  alloc MIB      prints "alloc MIB ok" or "alloc MIB ERROR"
  sms            prints "sms N": the multiprocessor count the client sees
TAG is $TAG."""
import os
import sys
import time

import cupy as cp

what = sys.argv[1]
tag = os.environ.get("TAG", "-")
if what == "busy":
    k = cp.RawKernel(
        r"""extern "C" __global__ void spin(float* x, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) { float v = x[i]; for (int j = 0; j < 2000; j++) v = v * 0.999f + 1.0f; x[i] = v; }
        }""",
        "spin",
    )
    x = cp.zeros(1 << 16, dtype=cp.float32)
    end = time.time() + float(sys.argv[2])
    n, err = 0, None
    while time.time() < end:
        try:
            k((256,), (256,), (x, cp.int32(1 << 16)))
            cp.cuda.runtime.deviceSynchronize()
            n += 1
        except Exception as e:  # the error is the result
            err = type(e).__name__ + ": " + str(e).split("\n")[0]
            break
    print(f"busy {tag} iters={n} err={err}", flush=True)
elif what == "fault":
    k = cp.RawKernel(
        r"""extern "C" __global__ void bad(int* p) { *(volatile int*)(p + 0x10000000000ll) = 1; }""",
        "bad",
    )
    x = cp.zeros(4, dtype=cp.int32)
    time.sleep(1.5)
    try:
        k((1,), (1,), (x,))
        cp.cuda.runtime.deviceSynchronize()
        print(f"fault {tag} none", flush=True)
    except Exception as e:
        print(f"fault {tag} " + type(e).__name__ + ": " + str(e).split("\n")[0], flush=True)
elif what == "alloc":
    mib = int(sys.argv[2])
    try:
        a = cp.zeros(mib << 20, dtype=cp.uint8)
        cp.cuda.runtime.deviceSynchronize()
        print(f"alloc {mib} ok", flush=True)
    except Exception as e:
        print(f"alloc {mib} " + type(e).__name__ + ": " + str(e).split("\n")[0], flush=True)
elif what == "sms":
    print("sms", cp.cuda.Device(0).attributes["MultiProcessorCount"], flush=True)
else:
    sys.exit(f"unknown {what}")
