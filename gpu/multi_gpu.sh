#!/usr/bin/env bash
# Several GPUs, natively and through vgpu in the same run (needs 2+ GPUs):
# device enumeration (PyTorch, CuPy), the C peer test, a 1 GiB peer copy each
# way, and 2-rank DistributedDataParallel training with NCCL plus a 256 MiB
# all_reduce. Deterministic lines must match; speeds are printed as
# vgpu/native ratios. Writes $OUT/multi_gpu.log and $OUT/summary.txt.
#
#   OUT=dir gpu/multi_gpu.sh            (after gpu/stage.sh; from the repo root)
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/multi-gpu-out}
mkdir -p "$OUT"
LOG=$OUT/multi_gpu.log
SUM=$OUT/summary.txt
: >"$LOG"
: >"$SUM"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
SOCK=/tmp/vgpu-mg.sock
DRIVER=${VGPU_E2E_DRIVER:-/usr/local/nvidia/lib64/libcuda.so.1}
WORK=$(mktemp -d)
rm -f "$SOCK"
dist/bin/vgpu-mediator --listen "unix:$SOCK" --driver "$DRIVER" --log "$OUT/mediator.log" >/dev/null 2>&1 &
MED=$!
trap 'kill $MED 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.1; done
nvidia-smi -L >>"$LOG" 2>&1
nvidia-smi topo -m >>"$LOG" 2>&1
cc -std=c11 -O2 -o "$WORK/peer" tests/c/peer.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -pthread -o "$WORK/multi_device" tests/c/multi_device.c -ldl >>"$LOG" 2>&1
LIMIT=${MG_LIMIT:-300}
# Speed runs alternate native and vgpu, twice unless MG_ROUNDS says otherwise.
ROUNDS=()
for _ in $(seq "${MG_ROUNDS:-2}"); do ROUNDS+=(native vgpu); done

# through MODE CMD...: run CMD natively (MODE=native) or through vgpu.
through() {
    local mode=$1
    shift
    if [[ $mode == native ]]; then
        timeout "$LIMIT" "$@"
    else
        VGPU_LOG=$WORK/client.log LD_LIBRARY_PATH=$PWD/dist/lib:${LD_LIBRARY_PATH:-} \
            VGPU_MEDIATOR=unix:$SOCK timeout "$LIMIT" "$@"
    fi
}

# ddp MODE PORT: two ranks, one process each; prints rank 0's output. NCCL's
# log goes to $WORK/nccl.*, which transports() reads.
ddp() {
    local mode=$1 port=$2
    export NCCL_DEBUG=INFO NCCL_DEBUG_FILE=$WORK/nccl.$mode.%p
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port through "$mode" python3 gpu/multi_gpu.py ddp 1 2 \
        >"$WORK/ddp1.$mode.out" 2>"$WORK/ddp1.$mode.err" &
    local r1=$!
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port through "$mode" python3 gpu/multi_gpu.py ddp 0 2 2>"$WORK/ddp0.$mode.err"
    local rc=$?
    wait $r1 || rc=$?
    return $rc
}

ratio() { python3 -c "import sys; print(f'{float(sys.argv[2]) / float(sys.argv[1]):.3f}')" "$1" "$2"; }
field() { grep "^$1 $2" | awk '{print $3}' | head -1; }

failed=0
# compare NAME: the deterministic lines of $WORK/NAME.{native,vgpu}.
compare() {
    local n=$1 nrc=$2 vrc=$3
    {
        echo "=== $n: native (exit $nrc)"; cat "$WORK/$n.native"
        echo "=== $n: vgpu (exit $vrc)"; cat "$WORK/$n.vgpu"
        echo "=== $n: diff (deterministic lines)"
        diff <(grep -v '^bw \|^rate \|^busbw ' "$WORK/$n.native") <(grep -v '^bw \|^rate \|^busbw ' "$WORK/$n.vgpu")
    } >>"$LOG" 2>&1
    if [[ $nrc -eq 0 && $vrc -eq 0 ]] &&
        diff -q <(grep -v '^bw \|^rate \|^busbw ' "$WORK/$n.native") <(grep -v '^bw \|^rate \|^busbw ' "$WORK/$n.vgpu") >/dev/null; then
        echo "PASS $n" | tee -a "$SUM"
    else
        echo "FAIL $n (native exit $nrc, vgpu exit $vrc)" | tee -a "$SUM"
        failed=1
    fi
}

for mode in native vgpu; do through $mode python3 gpu/multi_gpu.py enum >"$WORK/enum.$mode" 2>>"$LOG"; eval "enum_$mode=$?"; done
compare enum "$enum_native" "$enum_vgpu"

for mode in native vgpu; do through $mode "$WORK/peer" >"$WORK/peer_c.$mode" 2>>"$LOG"; eval "pc_$mode=$?"; done
compare peer_c "$pc_native" "$pc_vgpu"

for mode in native vgpu; do through $mode "$WORK/multi_device" >"$WORK/multi_device.$mode" 2>>"$LOG"; eval "md_$mode=$?"; done
compare multi_device "$md_native" "$md_vgpu"

for mode in "${ROUNDS[@]}"; do through $mode python3 gpu/multi_gpu.py peer 1024 >>"$WORK/peer.$mode" 2>>"$LOG"; eval "peer_$mode=$?"; done
compare peer "$peer_native" "$peer_vgpu"
for dir in "0->1" "1->0"; do
    n=$(grep "^bw $dir" "$WORK/peer.native" | awk '{print $3}' | sort -n | tail -1)
    v=$(grep "^bw $dir" "$WORK/peer.vgpu" | awk '{print $3}' | sort -n | tail -1)
    [[ -n $n && -n $v ]] && echo "peer copy $dir 1 GiB: native $n GB/s, vgpu $v GB/s, ratio $(ratio "$n" "$v") (best of ${MG_ROUNDS:-2})" | tee -a "$SUM"
done

port=29600
for mode in "${ROUNDS[@]}"; do
    port=$((port + 1))
    ddp $mode $port >>"$WORK/ddp.$mode" 2>>"$LOG"
    eval "ddp_$mode=$?"
    cat "$WORK/ddp0.$mode.err" "$WORK/ddp1.$mode.err" 2>/dev/null | tail -20 >>"$LOG"
done
# Both runs of each mode are in the file: the loss lines appear twice.
compare ddp "$ddp_native" "$ddp_vgpu"
# NCCL's transports between the ranks, as its log names them.
transports() { cat "$WORK"/nccl.$1.* 2>/dev/null | grep -o 'via [A-Za-z0-9/]*' | sort -u | tr '\n' ' '; rm -f "$WORK"/nccl.$1.*; }
echo "ddp transports: native $(transports native)| vgpu $(transports vgpu)" | tee -a "$SUM"
for key in rate busbw; do
    n=$(grep "^$key " "$WORK/ddp.native" | awk '{print $2}' | sort -n | tail -1)
    v=$(grep "^$key " "$WORK/ddp.vgpu" | awk '{print $2}' | sort -n | tail -1)
    [[ -n $n && -n $v ]] && echo "ddp $key: native $n, vgpu $v, ratio $(ratio "$n" "$v") (best of ${MG_ROUNDS:-2})" | tee -a "$SUM"
done
# NCCL's shared-memory transport between the two workers: P2P off.
for mode in native vgpu; do
    port=$((port + 1))
    NCCL_P2P_DISABLE=1 ddp $mode $port >>"$WORK/ddp_shm.$mode" 2>>"$LOG"
    eval "shm_$mode=$?"
done
compare ddp_shm "$shm_native" "$shm_vgpu"
echo "ddp_shm transports: native $(transports native)| vgpu $(transports vgpu)" | tee -a "$SUM"
{
    echo "=== client logs"
    cat "$WORK"/client.* 2>/dev/null | sort | uniq -c | sort -rn | head -40
} >>"$LOG"
cp "$WORK"/*.err "$WORK"/client.log "$OUT/" 2>/dev/null
# One archive besides the summary: the device tool fetches few files.
tar czf "$OUT/multi_gpu-logs.tgz" -C "$OUT" --exclude summary.txt --exclude multi_gpu-logs.tgz . 2>/dev/null &&
    find "$OUT" -mindepth 1 ! -name summary.txt ! -name multi_gpu-logs.tgz -delete
exit $failed
