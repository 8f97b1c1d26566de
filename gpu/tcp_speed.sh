#!/usr/bin/env bash
# TCP speed against the real GPU: vgpu bench's launch rate, launch+sync
# latency and 256 MiB copies over rings, socket and loopback TCP, with the
# raw TCP link measured in the same run (issue 15, "TCP speed"). Runs twice:
# as built (TCP lanes send large replies from a sender thread on hosts of
# 4 CPUs or more) and with VGPU_LANE_SENDER=0, so the sender's effect on
# device-to-host copies shows in one session.
#
# Run from the repository root on a GPU machine after gpu/stage.sh:
#   OUT=dir [ROUNDS=3] gpu/tcp_speed.sh
# Writes $OUT/tcp-speed-{default,nosender}.txt and .json.
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/tcp-speed-out}
ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT"
DRIVER=${VGPU_E2E_DRIVER:-/usr/local/nvidia/lib64/libcuda.so.1}
status=0
for run in default nosender; do
    sender=()
    [[ $run == nosender ]] && sender=(VGPU_LANE_SENDER=0)
    env "${sender[@]}" dist/bin/vgpu bench --driver "$DRIVER" \
        --only launch_1t,launch_sync,memcpy_256mb \
        --transports rings,socket,tcp --rounds "$ROUNDS" \
        --json "$OUT/tcp-speed-$run.json" --log-dir "$OUT/logs-$run" \
        >"$OUT/tcp-speed-$run.txt" 2>&1 || status=1
    echo "=== $run"
    grep -E '^(launch|memcpy_256mb)|raw loopback|over tcp' "$OUT/tcp-speed-$run.txt"
done
exit $status
