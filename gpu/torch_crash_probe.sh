#!/usr/bin/env bash
# Runs the PyTorch programs through vgpu on each transport, with a core
# backtrace-free crash report: the last calls of the trace before a crash.
set -uo pipefail
OUT=${OUT:-$PWD/crash-out}
mkdir -p "$OUT"
rm -f /tmp/vgpu-cp.sock
dist/bin/vgpu-mediator --listen unix:/tmp/vgpu-cp.sock --driver /usr/local/nvidia/lib64/libcuda.so.1 --log "$OUT/mediator.log" >/dev/null 2>&1 &
for _ in $(seq 50); do [ -S /tmp/vgpu-cp.sock ] && break; sleep 0.1; done
for t in socket rings; do
  for p in gpu/torch_smoke.py gpu/train_smoke.py; do
    n=$(basename $p .py)-$t
    VGPU_TRANSPORT=$t VGPU_TRACE=/tmp/$n.trace VGPU_LOG=/tmp/$n.log LD_LIBRARY_PATH=$PWD/dist/lib:${LD_LIBRARY_PATH:-} \
      VGPU_MEDIATOR=unix:/tmp/vgpu-cp.sock timeout 200 python3 $p > /tmp/$n.out 2>&1
    echo "== $n exit $?"; tail -3 /tmp/$n.out
    echo "-- last calls"; grep -v "^ \|^==" /tmp/$n.trace | tail -8
    sort /tmp/$n.log | uniq -c | sort -rn | head -5
  done
done 2>&1 | tee $OUT/crash.txt
