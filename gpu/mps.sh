#!/usr/bin/env bash
# MPS mode on the real driver (crate::mps, docs/mps.md). Two parts.
#
# 1. Checks, each printed PASS/FAIL, with one mediator whose file puts
#    tenant "a" (uid 0; 50% of the SMs, 2 GiB pinned memory) in MPS group
#    "ga" and tenant "b" (uid 65534) in group "gb" (gpu/mps_probe.py):
#    - both groups busy at once: nvidia-smi shows two MPS servers;
#    - a's pinned-memory limit: 1 GiB allocates, 3 GiB fails;
#    - the SM count each tenant's client sees (INFO);
#    - a session of a faults (an illegal address) while a second session
#      of a and one of b run: the second a session fails, b's runs on
#      unharmed, the mediator logs the group's restart, and a new session
#      of a works afterwards.
# 2. Throughput: N = 1, 4 and 16 small training processes at once
#    (gpu/mps_train.py), aggregate steps/s, in four modes in this run:
#    native time-slicing, native under a plain MPS daemon, through vgpu
#    (a context per session) and through vgpu in MPS mode. Each figure is
#    also printed as a ratio to native time-slicing with the same N.
# Writes $OUT/mps.log and the mediators' logs. MPS_PARTS ("1 2"), MPS_NS
# ("1 4 16"), MPS_MODES (all four) and MPS_SECONDS (6) narrow a run.
# Usage on a GPU machine, as root, after gpu/stage.sh:   OUT=dir gpu/mps.sh
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/mps-out}
mkdir -p "$OUT"
LOG=$OUT/mps.log
: >"$LOG"
DRIVER=${VGPU_E2E_DRIVER:-/usr/local/nvidia/lib64/libcuda.so.1}
PARTS=${MPS_PARTS:-1 2}
NS=${MPS_NS:-1 4 16}
MODES=${MPS_MODES:-native native_mps vgpu vgpu_mps}
SECONDS_EACH=${MPS_SECONDS:-6}
WORK=$(mktemp -d)
chmod 0755 "$WORK"
mkdir -p "$WORK/lib" "$WORK/home0" "$WORK/home1"
cp -L dist/lib/libcuda.so.1 "$WORK/lib/libcuda.so.1"
cp gpu/mps_probe.py gpu/mps_train.py "$WORK/"
chown 65534:65534 "$WORK/home1"
chmod -R a+rX "$WORK"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for d in "$WORK"/nmps; do
        [[ -d $d ]] && echo quit | CUDA_MPS_PIPE_DIRECTORY=$d timeout 10 nvidia-cuda-mps-control
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
failed=0
check() { # NAME STATUS
    if [[ $2 -eq 0 ]]; then echo "PASS $1"; else echo "FAIL $1"; failed=1; fi
}
start_mediator() { # SOCKET LOGNAME [--config FILE]
    local sock=$1 name=$2
    shift 2
    rm -f "$sock"
    dist/bin/vgpu-mediator "$@" --listen "unix:$sock" --driver "$DRIVER" \
        --log "$OUT/$name.log" >/dev/null 2>&1 &
    PIDS+=($!)
    for _ in $(seq 150); do [[ -S $sock ]] && break; sleep 0.1; done
}
# A client as tenant a (root) or b (nobody) of the socket $SOCK.
as_a() {
    HOME=$WORK/home0 CUPY_CACHE_DIR=$WORK/home0/cupy LD_LIBRARY_PATH=$WORK/lib \
        VGPU_MEDIATOR=unix:$SOCK timeout 120 python3 "$WORK/mps_probe.py" "$@"
}
as_b() {
    setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$WORK/home1" \
        CUPY_CACHE_DIR="$WORK/home1/cupy" LD_LIBRARY_PATH="$WORK/lib" VGPU_MEDIATOR="unix:$SOCK" \
        timeout 120 python3 "$WORK/mps_probe.py" "$@"
}

part1() {
echo "== part 1: checks through vgpu in MPS mode" | tee -a "$LOG"
cat >"$WORK/groups.toml" <<EOF
[unix]
mode = "0666"

[mps]
dir = "$WORK/mps"

[[tenant]]
name = "a"
uids = [0]
mps_group = "ga"
mps_active_thread_percentage = 50
mps_pinned_memory_limit = "2GiB"

[[tenant]]
name = "b"
uids = [65534]
mps_group = "gb"
EOF
SOCK=/tmp/vgpu-mps-groups.sock
start_mediator "$SOCK" mediator-groups --config "$WORK/groups.toml"
sleep 1
grep -c "MPS control daemon ready" "$OUT/mediator-groups.log" | grep -qx 2
check "both groups' control daemons started" $?

TAG=a1 as_a busy 8 >>"$LOG" 2>&1 &
a1=$!
TAG=b1 as_b busy 8 >>"$LOG" 2>&1 &
b1=$!
sleep 6
nvidia-smi >>"$LOG" 2>&1
servers=$(nvidia-smi --query-compute-apps=process_name --format=csv,noheader | grep -c nvidia-cuda-mps-server)
echo "INFO MPS servers running: $servers" | tee -a "$LOG"
wait $a1 $b1
[[ $servers -ge 2 ]]
check "two groups, two MPS servers" $?
grep -q "busy a1 iters=[1-9][0-9]* err=None" "$LOG" && grep -q "busy b1 iters=[1-9][0-9]* err=None" "$LOG"
check "both groups ran kernels at once" $?

as_a alloc 1024 >>"$LOG" 2>&1
as_a alloc 3072 >>"$LOG" 2>&1
grep -q "^alloc 1024 ok" "$LOG" && grep "^alloc 3072" "$LOG" | grep -qv " ok"
check "tenant a's 2 GiB pinned-memory limit: 1 GiB allocates, 3 GiB does not" $?
echo "INFO SMs seen: tenant a (50%) $(as_a sms 2>&1 | tail -1), tenant b $(as_b sms 2>&1 | tail -1), native $(python3 "$WORK/mps_probe.py" sms 2>&1 | tail -1)" | tee -a "$LOG"

TAG=a2 as_a busy 12 >>"$LOG" 2>&1 &
a2=$!
TAG=b2 as_b busy 12 >>"$LOG" 2>&1 &
b2=$!
TAG=af as_a fault >>"$LOG" 2>&1
wait $a2 $b2
grep "^fault af" "$LOG" | grep -qv " none"
check "the faulting session of a gets an error" $?
grep "^busy a2" "$LOG" | grep -qv "err=None"
check "the other session of a (same MPS server) fails too" $?
grep -q "busy b2 iters=[1-9][0-9]* err=None" "$LOG"
check "tenant b's session (group gb) runs on unharmed" $?
grep -q "restarting the group" "$OUT/mediator-groups.log"
check "the mediator restarted group ga" $?
sleep 2
TAG=a3 as_a busy 3 >>"$LOG" 2>&1
grep -q "busy a3 iters=[1-9][0-9]* err=None" "$LOG"
check "a new session of a works after the restart" $?
grep -E "MPS|restart|ended its sessions" "$OUT/mediator-groups.log" >>"$LOG"
}
[[ " $PARTS " == *" 1 "* ]] && part1
[[ " $PARTS " == *" 2 "* ]] || exit $failed

echo "== part 2: N small training processes at once, aggregate steps/s" | tee -a "$LOG"
cat >"$WORK/one.toml" <<EOF
[mps]
dir = "$WORK/mps1"

[[tenant]]
name = "train"
uids = [0]
mps_group = "train"
EOF
start_mediator /tmp/vgpu-mps-plain.sock mediator-plain
start_mediator /tmp/vgpu-mps-one.sock mediator-one --config "$WORK/one.toml"
mkdir -p "$WORK/nmps" "$WORK/nmpslog"
CUDA_MPS_PIPE_DIRECTORY=$WORK/nmps CUDA_MPS_LOG_DIRECTORY=$WORK/nmpslog nvidia-cuda-mps-control -d
run_n() { # MODE N -> prints aggregate steps/s
    local mode=$1 n=$2 ready=$WORK/ready-$1-$2 go=$WORK/go-$1-$2
    mkdir -p "$ready"
    local env=()
    case $mode in
    native) ;;
    native_mps) env=(CUDA_MPS_PIPE_DIRECTORY="$WORK/nmps") ;;
    vgpu) env=(LD_LIBRARY_PATH="$WORK/lib" VGPU_MEDIATOR=unix:/tmp/vgpu-mps-plain.sock) ;;
    vgpu_mps) env=(LD_LIBRARY_PATH="$WORK/lib" VGPU_MEDIATOR=unix:/tmp/vgpu-mps-one.sock) ;;
    esac
    local pids=()
    for i in $(seq "$n"); do
        env "${env[@]}" timeout 300 python3 "$WORK/mps_train.py" "$go" "$ready" "$SECONDS_EACH" \
            >"$WORK/train-$mode-$n-$i.log" 2>&1 &
        pids+=($!)
    done
    for _ in $(seq 1800); do
        [[ $(ls "$ready" | wc -l) -ge $n ]] && break
        sleep 0.1
    done
    touch "$go"
    wait "${pids[@]}"
    cat "$WORK"/train-"$mode"-"$n"-*.log >>"$LOG"
    cat "$WORK"/train-"$mode"-"$n"-*.log | awk '/^rate/ {s += $2; k++} END {printf "%.1f %d\n", s, k}'
}
declare -A RATE
for n in $NS; do
    for mode in $MODES; do
        read -r rate done_n < <(run_n "$mode" "$n")
        RATE[$mode-$n]=$rate
        echo "RESULT mode=$mode n=$n aggregate_steps_per_s=$rate processes_reporting=$done_n" | tee -a "$LOG"
        [[ $done_n -eq $n ]]
        check "all $n $mode processes reported" $?
    done
done
echo "== table (aggregate steps/s; ratio to native time-slicing, same N)" | tee -a "$LOG"
for n in $NS; do
    base=${RATE[native-$n]:-0}
    line="N=$n"
    for mode in $MODES; do
        r=${RATE[$mode-$n]}
        line+=$(awk -v r="$r" -v b="$base" -v m="$mode" 'BEGIN {printf "  %s %.1f (%.2fx)", m, r, (b > 0 ? r / b : 0)}')
    done
    echo "$line" | tee -a "$LOG"
done
grep -E "MPS|restart" "$OUT/mediator-one.log" | head -20 >>"$LOG"
exit $failed
