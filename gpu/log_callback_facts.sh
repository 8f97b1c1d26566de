#!/usr/bin/env bash
# Driver 580's own answers for log callbacks and async notifications that the
# line-for-line comparison (gpu/frameworks.sh log_callbacks) leaves out:
#  1. tests/c/log_callbacks.c with CU_TEST_INVALID_HANDLES=1, natively and
#     through vgpu: the codes for unregistering twice, a NULL or a forged
#     handle, and a NULL handle pointer. Natively the driver may crash on a
#     stale handle (it reads what the handle points at); the exit status
#     says so. Through vgpu these are answered by the client or the
#     simulated device's rules; any difference from native is a finding.
#  2. --blocked, natively: exit 124 (the timeout) means the driver runs log
#     callbacks inside the failing call, on the caller's thread; exit 0
#     means it runs them elsewhere. Through vgpu it must exit 0.
# Run from the repository root on a GPU machine after gpu/stage.sh:
#   OUT=dir gpu/log_callback_facts.sh
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/log-callback-facts-out}
mkdir -p "$OUT"
SOCK=/tmp/vgpu-logcb.sock
DRIVER=${VGPU_E2E_DRIVER:-/usr/local/nvidia/lib64/libcuda.so.1}
WORK=$(mktemp -d)
rm -f "$SOCK"
dist/bin/vgpu-mediator --listen "unix:$SOCK" --driver "$DRIVER" --log "$OUT/mediator.log" >/dev/null 2>&1 &
MED=$!
trap 'kill $MED 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.1; done
cc -std=c11 -O2 -pthread -o "$WORK/log_callbacks" tests/c/log_callbacks.c -ldl
vgpu() {
    LD_LIBRARY_PATH=$PWD/dist/lib:${LD_LIBRARY_PATH:-} VGPU_MEDIATOR=unix:$SOCK "$@"
}
{
    echo "=== invalid handles: native"
    CU_TEST_INVALID_HANDLES=1 timeout 60 "$WORK/log_callbacks"; echo "exit $?"
    echo "=== invalid handles: vgpu"
    CU_TEST_INVALID_HANDLES=1 vgpu timeout 60 "$WORK/log_callbacks"; echo "exit $?"
    echo "=== blocked log function: native (124: runs inside the failing call)"
    timeout 20 "$WORK/log_callbacks" libcuda.so.1 --blocked; echo "exit $?"
    echo "=== blocked log function: vgpu (must be 0)"
    vgpu timeout 20 "$WORK/log_callbacks" libcuda.so.1 --blocked; echo "exit $?"
    echo "=== worker log lines about events"
    grep -i "event" "$OUT/mediator.log" | tail -5
} 2>&1 | tee "$OUT/log_callback_facts.txt"
