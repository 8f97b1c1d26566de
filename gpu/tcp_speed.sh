#!/usr/bin/env bash
# TCP speed against the real GPU: vgpu bench's launch rate, launch+sync
# latency and 256 MiB copies over rings, socket and loopback TCP, with the
# raw TCP link measured in the same run (issue 15, "TCP speed"), and
# PyTorch training over the rings and TCP. Runs once per variant in RUNS
# (default "default nosender"), each a whole bench run with its own native
# figures:
#   default      as built
#   nosender     VGPU_TCP_SENDER=0: clients write each posted call themselves
# MODELS (default resnet50,gpt2) picks the PyTorch models; MODELS= skips
# them. TRANSPORTS (default rings,socket,tcp) picks vgpu's transports;
# ONLY (default launch_1t,launch_sync,memcpy_256mb) the C benchmarks.
#
# Run from the repository root on a GPU machine after gpu/stage.sh:
#   OUT=dir [ROUNDS=3] [MODELS=resnet50] [MODEL_ROUNDS=1] [RUNS="default nosender"] gpu/tcp_speed.sh
# Writes $OUT/tcp-speed-RUN.txt and .json for each run.
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/tcp-speed-out}
ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT"
DRIVER=${VGPU_E2E_DRIVER:-/usr/local/nvidia/lib64/libcuda.so.1}
status=0
MODELS=${MODELS-resnet50,gpt2}
ONLY=${ONLY-launch_1t,launch_sync,memcpy_256mb}
for run in ${RUNS:-default nosender}; do
    case $run in
    default) setting=() ;;
    nosender) setting=(VGPU_TCP_SENDER=0) ;;
    *) echo "unknown run $run" >&2; exit 2 ;;
    esac
    only=$ONLY${MODELS:+,$MODELS}
    env "${setting[@]}" dist/bin/vgpu bench --driver "$DRIVER" \
        --only "${only#,}" \
        --transports "${TRANSPORTS:-rings,socket,tcp}" --rounds "$ROUNDS" --model-rounds "${MODEL_ROUNDS:-1}" \
        --json "$OUT/tcp-speed-$run.json" --log-dir "$OUT/logs-$run" \
        >"$OUT/tcp-speed-$run.txt" 2>&1 || status=1
    echo "=== $run"
    grep -E '^(launch|memcpy_256mb|resnet|gpt2)|raw loopback|over tcp' "$OUT/tcp-speed-$run.txt"
done
exit $status
