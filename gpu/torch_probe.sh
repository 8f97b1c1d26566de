#!/usr/bin/env bash
# Diagnostic run for framework bring-up: each program natively, then through
# vgpu with VGPU_TRACE, then the calls that failed. Usage on a GPU machine:
#   OUT=dir gpu/torch_probe.sh [program.py ...]   (default: torch and cupy smoke)
set -uo pipefail
OUT=${OUT:-$PWD/probe-out}
mkdir -p "$OUT"
rm -f /tmp/vgpu.sock
dist/bin/vgpu-mediator --listen unix:/tmp/vgpu.sock --driver /usr/local/nvidia/lib64/libcuda.so.1 \
    --log "$OUT/mediator.log" >/dev/null 2>&1 &
for _ in $(seq 50); do [ -S /tmp/vgpu.sock ] && break; sleep 0.1; done
progs=("$@")
((${#progs[@]})) || progs=(gpu/torch_smoke.py gpu/cupy_smoke.py)
for p in "${progs[@]}"; do
    n=$(basename "$p" .py)
    echo "== $n native"
    timeout 300 python3 "$p" 2>&1 | tail -12
    echo "== $n vgpu"
    VGPU_TRACE=$OUT/$n.trace VGPU_LOG=$OUT/$n.client LD_LIBRARY_PATH=$PWD/dist/lib:${LD_LIBRARY_PATH:-} \
        VGPU_MEDIATOR=unix:/tmp/vgpu.sock timeout 300 python3 "$p" 2>&1 | tail -25
    echo "== $n failing calls"
    grep -v " -> 0 " "$OUT/$n.trace" | grep -v '^ \|^==' | awk '{print $1, $3, $4}' | sort | uniq -c | sort -rn | head -20
    grep -v "session\|unknown table" "$OUT/$n.client" 2>/dev/null | sort | uniq -c | head -20
done
echo "== mediator warnings"
grep -v INFO "$OUT/mediator.log" | head -20
