#!/usr/bin/env bash
# Empty-kernel launch rate from one thread, natively and through vgpu, in
# ROUNDS fresh client processes against one mediator; between rounds, the
# mediator's processes and the GPU's compute processes. Shows whether a
# session's launch rate depends on the sessions before it.
#   OUT=dir gpu/launch_rounds.sh [ROUNDS]          (after gpu/stage.sh)
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/launch-rounds-out}
ROUNDS=${1:-4}
mkdir -p "$OUT"
DRIVER=${VGPU_E2E_DRIVER:-/usr/local/nvidia/lib64/libcuda.so.1}
SOCK=/tmp/vgpu-rounds.sock
WORK=$(mktemp -d)
cc -std=c11 -O2 -pthread -o "$WORK/vb" gpu/bench/vgpu_bench.c -ldl
rm -f "$SOCK"
${MEDIATOR_PREFIX:-} dist/bin/vgpu-mediator --listen "unix:$SOCK" --driver "$DRIVER" --log "$OUT/mediator.log" >/dev/null 2>&1 &
MED=$!
trap 'kill $MED 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.1; done
for r in $(seq "$ROUNDS"); do
    n=$(${CLIENT_PREFIX:-} "$WORK/vb" launch -t 1 -n 200000 -w 2000)
    v=$(VGPU_MEDIATOR=unix:$SOCK LD_LIBRARY_PATH=$PWD/dist/lib ${CLIENT_PREFIX:-} "$WORK/vb" launch -t 1 -n 200000 -w 2000)
    echo "round $r native: $n  vgpu: $v"
    echo "  mediator processes: $(pgrep -c -f vgpu-mediator)  gpu compute processes: $(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | wc -l)"
done
