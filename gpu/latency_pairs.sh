#!/usr/bin/env bash
# launch + sync latency through vgpu with the client pinned to one CPU and the
# mediator (its workers and lanes) pinned to another, for several pairs; the
# native figure with the client on the same CPU. Shows whether the distance
# between the two CPUs sets the latency.
#   OUT=dir gpu/latency_pairs.sh CLIENT_CPU MEDIATOR_CPU...   (after gpu/stage.sh)
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/latency-pairs-out}
mkdir -p "$OUT"
DRIVER=${VGPU_E2E_DRIVER:-/usr/local/nvidia/lib64/libcuda.so.1}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cc -std=c11 -O2 -pthread -o "$WORK/vb" gpu/bench/vgpu_bench.c -ldl
client=$1
shift
fig() { grep '^launch_sync' | awk '{print $2}'; }
echo "native client cpu $client: $(taskset -c "$client" "$WORK/vb" launch_sync -n 5000 -w 200 | fig) us"
for m in "$@"; do
    sock=$WORK/m$m.sock
    taskset -c "$m" dist/bin/vgpu-mediator --listen "unix:$sock" --driver "$DRIVER" --log "$OUT/mediator-$m.log" >/dev/null 2>&1 &
    med=$!
    for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.1; done
    v=$(VGPU_MEDIATOR=unix:$sock LD_LIBRARY_PATH=$PWD/dist/lib taskset -c "$client" "$WORK/vb" launch_sync -n 5000 -w 200 | fig)
    echo "vgpu client cpu $client, mediator cpu $m: $v us"
    kill $med; wait $med 2>/dev/null
done
echo "native client cpu $client: $(taskset -c "$client" "$WORK/vb" launch_sync -n 5000 -w 200 | fig) us"
