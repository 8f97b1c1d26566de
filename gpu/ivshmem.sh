#!/usr/bin/env bash
# The ivshmem (VM guest) transport against the real GPU, without a VM: the
# mediator listens on ivshmem:, `vgpu ivshmem-peer` stands in for QEMU and
# its guest's sysfs (it connects as QEMU does and lays out a fake PCI device
# whose resource2 is the guest's shared memory), and each program runs
# natively and then as a guest process through that device
# (VGPU_MEDIATOR=pci:BDF, VGPU_SYSFS_ROOT). Outputs must match line for
# line, the client must report lanes on the ivshmem BAR, and a killed
# stand-in must leave the mediator serving the next one. Ends with vgpu
# bench figures for the local rings beside the ivshmem path.
#
# Run from the repository root on a GPU machine after gpu/stage.sh:
#   OUT=dir [IV_LIMIT=seconds] [IV_BENCH=0] gpu/ivshmem.sh [names...]
# Writes $OUT/ivshmem.log (everything) and $OUT/ivshmem-summary.txt.
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/ivshmem-out}
mkdir -p "$OUT"
LOG=$OUT/ivshmem.log
: >"$LOG"
DRIVER=${VGPU_E2E_DRIVER:-/usr/local/nvidia/lib64/libcuda.so.1}
WORK=$(mktemp -d)
SOCK=$WORK/ivshmem.sock
BDF=0000:00:05.0
LIMIT=${IV_LIMIT:-240}
dist/bin/vgpu-mediator --listen "unix:$WORK/m.sock" --listen "ivshmem:$SOCK" --driver "$DRIVER" \
    --log "$OUT/mediator.log" >/dev/null 2>&1 &
MED=$!
PEER=
trap 'kill $PEER $MED 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.1; done

start_peer() { # $1: sysfs root
    dist/bin/vgpu ivshmem-peer --socket "$SOCK" --sysfs "$1" --bdf "$BDF" >"$WORK/peer.out" 2>&1 &
    PEER=$!
    for _ in $(seq 100); do grep -q '^ready' "$WORK/peer.out" && return 0; sleep 0.1; done
    echo "FAIL the QEMU stand-in did not connect: $(cat "$WORK/peer.out")" | tee -a "$OUT/ivshmem-summary.txt"
    exit 1
}
start_peer "$WORK/sys"
SYSFS=$WORK/sys

NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$NVCC" -O2 -o "$WORK/runtime_api" gpu/runtime_api.cu >>"$LOG" 2>&1
declare -A CMD=(
    [vector_add]="dist/bin/vector_add_driver -n 1000003"
    [runtime_api]="$WORK/runtime_api"
    [cuda_python]="python3 gpu/driver_api.py"
    [torch]="python3 gpu/torch_smoke.py"
)
names=("$@")
((${#names[@]})) || names=(vector_add runtime_api cuda_python torch)
failed=0
: >"$OUT/ivshmem-summary.txt"
run_one() { # $1: name; compares native with the ivshmem path
    local n=$1 cmd=${CMD[$1]} native vgpu nrc vrc line
    native=$(timeout "$LIMIT" $cmd 2>"$WORK/$n.native.err"); nrc=$?
    vgpu=$(VGPU_LOG=$WORK/$n.client LD_LIBRARY_PATH=$PWD/dist/lib:${LD_LIBRARY_PATH:-} \
        VGPU_MEDIATOR=pci:$BDF VGPU_SYSFS_ROOT=$SYSFS VGPU_CLIENT_CONFIG=/nonexistent \
        timeout "$LIMIT" $cmd 2>"$WORK/$n.vgpu.err"); vrc=$?
    {
        echo "=== $n: native (exit $nrc)"; echo "$native"; tail -3 "$WORK/$n.native.err"
        echo "=== $n: through ivshmem (exit $vrc)"; echo "$vgpu"; tail -12 "$WORK/$n.vgpu.err"
        echo "=== $n: diff"; diff <(echo "$native") <(echo "$vgpu")
        echo "=== $n: client log"; cat "$WORK/$n.client" 2>/dev/null | head -20
    } >>"$LOG" 2>&1
    # The client's log proves the session ran on the ivshmem BAR.
    if [[ $nrc -eq 0 && $vrc -eq 0 && "$native" == "$vgpu" ]] &&
        grep -q 'lanes on rings in the ivshmem BAR' "$WORK/$n.client" 2>/dev/null; then
        line="PASS $n"
    else
        line="FAIL $n (native exit $nrc, ivshmem exit $vrc)"
        failed=1
    fi
    echo "$line   native: $(echo "$native" | grep -v '^PASS' | tail -1)" | tee -a "$OUT/ivshmem-summary.txt"
}
for n in "${names[@]}"; do run_one "$n"; done

# QEMU dies: the mediator frees the guest and serves the next one.
kill "$PEER"; wait "$PEER" 2>/dev/null
for _ in $(seq 50); do grep -q 'ivshmem guest disconnected' "$OUT/mediator.log" && break; sleep 0.1; done
start_peer "$WORK/sys2"
SYSFS=$WORK/sys2
run_one vector_add
if grep -q 'ivshmem guest disconnected' "$OUT/mediator.log"; then
    echo "PASS a killed QEMU stand-in freed its guest; the next one was served" | tee -a "$OUT/ivshmem-summary.txt"
else
    echo "FAIL the mediator did not log the guest's disconnection" | tee -a "$OUT/ivshmem-summary.txt"
    failed=1
fi

if [[ ${IV_BENCH:-1} != 0 ]]; then
    echo "=== vgpu bench: local rings beside the ivshmem path" | tee -a "$OUT/ivshmem-summary.txt"
    dist/bin/vgpu bench --driver "$DRIVER" --only launch_1t,launch_sync,sync_idle,memcpy_8b,memcpy_256mb \
        --transports rings,ivshmem --rounds 3 2>&1 | tee -a "$OUT/ivshmem-summary.txt" >>"$LOG"
fi
exit $failed
