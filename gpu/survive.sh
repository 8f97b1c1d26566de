#!/usr/bin/env bash
# GPU parts of the survive checks, natively and through vgpu:
#  1. a client holding 8 GiB is SIGKILLed mid-copy: the GPU memory comes back
#     (nvidia-smi before / after), and another session carries on;
#  2. the CFFI constructor library hands its buffer to PyTorch via DLPack.
# Usage on a GPU machine after gpu/stage.sh:   OUT=dir gpu/survive.sh
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/survive-out}
mkdir -p "$OUT"
SOCK=/tmp/vgpu-sv.sock
rm -f "$SOCK"
dist/bin/vgpu-mediator --listen "unix:$SOCK" --driver /usr/local/nvidia/lib64/libcuda.so.1 --log "$OUT/mediator.log" >/dev/null 2>&1 &
for _ in $(seq 50); do [[ -S $SOCK ]] && break; sleep 0.1; done
used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1; }
vg() { LD_LIBRARY_PATH=$PWD/dist/lib:${LD_LIBRARY_PATH:-} VGPU_MEDIATOR=unix:$SOCK "$@"; }
for side in native vgpu; do
    before=$(used)
    # `env` execs python, so $! is python's own pid and SIGKILL reaches it.
    if [[ $side == vgpu ]]; then
        env LD_LIBRARY_PATH="$PWD/dist/lib:${LD_LIBRARY_PATH:-}" VGPU_MEDIATOR="unix:$SOCK" \
            python3 gpu/reclaim.py 8 >"$OUT/reclaim.$side" 2>&1 &
    else
        python3 gpu/reclaim.py 8 >"$OUT/reclaim.$side" 2>&1 &
    fi
    pid=$!
    for _ in $(seq 100); do grep -q copying "$OUT/reclaim.$side" && break; sleep 0.1; done
    during=$(used)
    sleep 1
    kill -9 $pid; wait $pid 2>/dev/null
    for _ in $(seq 50); do [[ $(used) -le $((before + 64)) ]] && break; sleep 0.2; done
    after=$(used)
    echo "reclaim $side: before ${before} MiB, while running ${during} MiB, after SIGKILL ${after} MiB"
done
echo "another session after the kill:"
vg timeout 60 dist/bin/vector_add_driver -n 1048576 | tail -1
cc -std=c11 -O2 -shared -fPIC -o /tmp/libctor_lib.so tests/c/ctor_lib.c -L/usr/local/nvidia/lib64 -lcuda -lpthread
echo "== cffi + DLPack, native"
timeout 120 python3 gpu/cffi_dlpack.py /tmp/libctor_lib.so 2>&1
echo "== cffi + DLPack, vgpu"
vg timeout 120 python3 gpu/cffi_dlpack.py /tmp/libctor_lib.so 2>&1
echo "== worker log lines"
grep -c "session ended\|ended abnormally" "$OUT/mediator.log"
