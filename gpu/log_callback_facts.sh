#!/usr/bin/env bash
# Driver 580's own answers for log callbacks and async notifications that the
# line-for-line comparison (gpu/frameworks.sh log_callbacks) leaves out:
#  1. tests/c/log_callbacks.c with CU_TEST_INVALID_HANDLES=1, natively and
#     through vgpu: the codes for unregistering twice, a NULL or a forged
#     handle, and a NULL handle pointer. Natively the driver may crash on a
#     stale handle (it reads what the handle points at); the exit status
#     says so. Through vgpu these are answered by the client or the
#     simulated device's rules; any difference from native is a finding.
#  2. --blocked, natively and through vgpu: a log function that blocks on
#     one thread's failing call holds that call (driver 580 runs log
#     callbacks inside the failing call, on the caller's thread), while
#     failing calls on another thread return, each with its message. Both
#     must exit 0 with the same lines; natively, exit 124 (the timeout)
#     would mean the driver holds other threads' calls while a log callback
#     runs, and blocked_call_waits failing that it runs callbacks elsewhere.
#  3. --host-func, natively and through vgpu: a message arrives while a host
#     function launched from another thread runs and waits for the failing
#     call to return (through vgpu that host function runs on the client's
#     callback thread, which the message must not need). Both must exit 0
#     with the same lines.
#  4. --reenter, natively and through vgpu: the code a CUDA call
#     (cuCtxGetDevice) gets from inside a log function; through vgpu it is
#     CUDA_SUCCESS, any other native answer (or a hang, exit 124) is a
#     finding.
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
    for mode in --blocked --host-func --reenter; do
        echo "=== $mode: native (must be 0)"
        timeout 60 "$WORK/log_callbacks" libcuda.so.1 "$mode" >"$WORK/native$mode.txt"
        echo "exit $?"
        cat "$WORK/native$mode.txt"
        echo "=== $mode: vgpu (must be 0, the same lines)"
        vgpu timeout 60 "$WORK/log_callbacks" libcuda.so.1 "$mode" >"$WORK/vgpu$mode.txt"
        echo "exit $?"
        cat "$WORK/vgpu$mode.txt"
        diff "$WORK/native$mode.txt" "$WORK/vgpu$mode.txt" && echo "same lines"
    done
    echo "=== worker log lines about events"
    grep -i "event" "$OUT/mediator.log" | tail -5
} 2>&1 | tee "$OUT/log_callback_facts.txt"
