#!/usr/bin/env bash
# Frameworks on vgpu: every program runs natively and through vgpu, and the
# standard outputs must match line for line. Prints PASS/FAIL per program with
# the native result beside it; writes $OUT/frameworks.log (everything) and
# $OUT/summary.txt. Run from the repository root on a GPU machine after
# gpu/stage.sh on the build machine:   OUT=dir [FW_LIMIT=seconds] gpu/frameworks.sh [names...]
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/frameworks-out}
mkdir -p "$OUT"
LOG=$OUT/frameworks.log
: >"$LOG"
SOCK=/tmp/vgpu-fw.sock
DRIVER=${VGPU_E2E_DRIVER:-/usr/local/nvidia/lib64/libcuda.so.1}
WORK=$(mktemp -d)
rm -f "$SOCK"
dist/bin/vgpu-mediator --listen "unix:$SOCK" --driver "$DRIVER" --log "$OUT/mediator.log" >/dev/null 2>&1 &
MED=$!
trap 'kill $MED 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.1; done
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$NVCC" -O2 -o "$WORK/runtime_api" gpu/runtime_api.cu >>"$LOG" 2>&1
cc -std=c11 -O2 -pthread -o "$WORK/thread_context" tests/c/thread_context.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -pthread -o "$WORK/pools" tests/c/pools.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/vmm" tests/c/vmm.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -pthread -o "$WORK/arrays" tests/c/arrays.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -pthread -o "$WORK/graphs" tests/c/graphs.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/tensormap" tests/c/tensormap.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -pthread -o "$WORK/callbacks" tests/c/callbacks.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/graph_nodes" tests/c/graph_nodes.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/graph_nodes2" tests/c/graph_nodes2.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/graph_nodes3" tests/c/graph_nodes3.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/stream_memops" tests/c/stream_memops.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/linker" tests/c/linker.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/occupancy" tests/c/occupancy.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/legacy_launch" tests/c/legacy_launch.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/printf" tests/c/printf.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/managed" tests/c/managed.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/host_register" tests/c/host_register.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/tail_copies" tests/c/tail_copies.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/peer" tests/c/peer.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/nvml_info" tests/c/nvml_info.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/multicast" tests/c/multicast.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/green_contexts" tests/c/green_contexts.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -pthread -o "$WORK/ipc" tests/c/ipc.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/extmem" tests/c/extmem.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/decompress" tests/c/decompress.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/assert" tests/c/assert.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/checkpoint" tests/c/checkpoint.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/coredump" tests/c/coredump.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/logs" tests/c/logs.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -pthread -o "$WORK/log_callbacks" tests/c/log_callbacks.c -ldl >>"$LOG" 2>&1

declare -A CMD=(
    [torch]="python3 gpu/torch_smoke.py"
    [train]="python3 gpu/train_smoke.py"
    [cupy]="python3 gpu/cupy_smoke.py"
    [attr_readback]="python3 gpu/attr_readback.py"
    [numba]="python3 gpu/numba_smoke.py"
    [triton]="python3 gpu/triton_smoke.py"
    [dlpack]="python3 gpu/dlpack_smoke.py"
    [cuda_python]="python3 gpu/driver_api.py"
    [runtime_api]="$WORK/runtime_api"
    [thread_context]="$WORK/thread_context"
    [pools]="$WORK/pools"
    [vmm]="$WORK/vmm"
    [arrays]="$WORK/arrays"
    [graphs]="$WORK/graphs"
    [tensormap]="$WORK/tensormap"
    [callbacks]="$WORK/callbacks"
    [graph_nodes]="$WORK/graph_nodes"
    [graph_nodes2]="$WORK/graph_nodes2"
    [graph_nodes3]="$WORK/graph_nodes3"
    [stream_memops]="$WORK/stream_memops"
    [linker]="$WORK/linker"
    [occupancy]="$WORK/occupancy"
    [legacy_launch]="$WORK/legacy_launch"
    [printf]="$WORK/printf"
    [managed]="$WORK/managed"
    [host_register]="$WORK/host_register"
    [managed_py]="python3 gpu/managed_smoke.py"
    [tail_copies]="$WORK/tail_copies"
    [peer]="$WORK/peer"
    [nvml_info]="$WORK/nvml_info"
    [multicast]="$WORK/multicast"
    [green_contexts]="$WORK/green_contexts"
    [ipc]="$WORK/ipc"
    [extmem]="$WORK/extmem"
    [decompress]="$WORK/decompress"
    [torch_ipc]="python3 gpu/torch_ipc.py"
    [cupy_ipc]="python3 gpu/cupy_ipc.py"
    [assert]="$WORK/assert"
    [checkpoint]="$WORK/checkpoint"
    [coredump]="$WORK/coredump"
    [logs]="$WORK/logs"
    [log_callbacks]="$WORK/log_callbacks"
    [compile]="python3 gpu/compile_smoke.py"
    [cudagraph]="python3 gpu/cudagraph_smoke.py"
    [expandable]="python3 gpu/expandable_smoke.py"
    [jax]="python3 gpu/jax_smoke.py"
    [nccl]="python3 gpu/nccl_smoke.py"
)
names=("$@")
((${#names[@]})) || names=(torch train cupy attr_readback numba triton dlpack cuda_python runtime_api thread_context pools vmm arrays graphs tensormap callbacks graph_nodes graph_nodes2 stream_memops linker occupancy legacy_launch printf managed host_register managed_py tail_copies peer multicast green_contexts ipc torch_ipc cupy_ipc extmem checkpoint coredump logs log_callbacks assert graph_nodes3 decompress compile cudagraph expandable jax nccl nvml_info)
# Each program, native and through vgpu, gets FW_LIMIT seconds (exit 124 when
# it runs out): one program that hangs must not take the others' time.
LIMIT=${FW_LIMIT:-240}
failed=0
: >"$OUT/summary.txt"
for n in "${names[@]}"; do
    cmd=${CMD[$n]}
    native=$(timeout "$LIMIT" $cmd 2>"$WORK/$n.native.err"); nrc=$?
    vgpu=$(VGPU_TRACE=$WORK/$n.trace VGPU_LOG=$WORK/$n.client LD_LIBRARY_PATH=$PWD/dist/lib:${LD_LIBRARY_PATH:-} TRITON_LIBCUDA_PATH=$PWD/dist/lib \
        VGPU_MEDIATOR=unix:$SOCK timeout "$LIMIT" $cmd 2>"$WORK/$n.vgpu.err"); vrc=$?
    {
        echo "=== $n: native (exit $nrc)"; echo "$native"; tail -3 "$WORK/$n.native.err"
        echo "=== $n: vgpu (exit $vrc)"; echo "$vgpu"; tail -12 "$WORK/$n.vgpu.err"
        echo "=== $n: diff"; diff <(echo "$native") <(echo "$vgpu")
        echo "=== $n: client log"
        sort "$WORK/$n.client" 2>/dev/null | uniq -c | sort -rn | head -15
        echo "=== $n: failing calls through vgpu"
        grep -v " -> 0 " "$WORK/$n.trace" 2>/dev/null | grep -v '^ \|^==' | awk '{print $1, $3, $4}' | sort | uniq -c | sort -rn | head -15
    } >>"$LOG" 2>&1
    # Only vgpu's library writes VGPU_TRACE: a non-empty trace proves it was the libcuda used.
    if [[ $nrc -eq 0 && $vrc -eq 0 && "$native" == "$vgpu" && -s $WORK/$n.trace ]]; then
        line="PASS $n"
    else
        line="FAIL $n (native exit $nrc, vgpu exit $vrc)"
        failed=1
    fi
    echo "$line   native: $(echo "$native" | grep -v '^PASS' | tail -1)" | tee -a "$OUT/summary.txt"
done
exit $failed
