#!/usr/bin/env bash
# Where a PyTorch training step spends its CUDA calls through vgpu. Runs
# gpu/bench/torch_train.py (MODEL: resnet50 or gpt2) natively, then through
# vgpu with VGPU_TRACE, and prints the calls per step by function: count,
# time inside the client, and how many took longer than 20 us (round trips
# that waited). Also the CPU time of the worker's and the client's threads.
# VIA=tcp reaches the mediator over loopback TCP instead of its Unix socket
# (rings). Usage on a GPU machine, after gpu/stage.sh:
#   OUT=dir [VIA=tcp] gpu/torch_profile.sh [MODEL] [STEPS]
set -uo pipefail
MODEL=${1:-resnet50}
STEPS=${2:-30}
OUT=${OUT:-$PWD/profile-out}
DRIVER=${DRIVER:-/usr/local/nvidia/lib64/libcuda.so.1}
mkdir -p "$OUT"
sock=$(mktemp -u /tmp/vgpu-profile-XXXXXX.sock)
port=${PORT:-17321}
case ${VIA:-unix} in
unix) where="unix:$sock" ;;
tcp) where="tcp://127.0.0.1:$port" ;;
*) echo "VIA is unix or tcp" >&2; exit 2 ;;
esac
dist/bin/vgpu-mediator --listen "unix:$sock" --listen "tcp://127.0.0.1:$port" --driver "$DRIVER" \
    --log "$OUT/mediator.log" >/dev/null 2>&1 &
med=$!
trap 'kill $med 2>/dev/null' EXIT
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
echo "== native"
timeout 300 python3 gpu/bench/torch_train.py "$MODEL" --warmup 10 --steps "$STEPS" 2>&1 | tail -2
echo "== vgpu (traced: the trace itself costs time)"
VGPU_TRACE=$OUT/$MODEL.trace LD_LIBRARY_PATH=$PWD/dist/lib:${LD_LIBRARY_PATH:-} \
    VGPU_MEDIATOR="$where" timeout 300 python3 gpu/bench/torch_train.py "$MODEL" \
    --warmup 10 --steps "$STEPS" 2>&1 | tail -2
echo "== vgpu (untraced), with the worker's CPU time"
LD_LIBRARY_PATH=$PWD/dist/lib:${LD_LIBRARY_PATH:-} VGPU_MEDIATOR="$where" \
    timeout 300 python3 gpu/bench/torch_train.py "$MODEL" --warmup 10 --steps "$STEPS" 2>&1 | tail -2 &
client=$!
# The worker's and the client's threads' CPU time, sampled until the
# client ends.
threads() { # PID
    for t in /proc/$1/task/*; do awk '{print $2, $14 + $15}' "$t/stat" 2>/dev/null; done |
        sort -k2 -rn | head -8
}
snap=""
while kill -0 $client 2>/dev/null; do
    for w in $(pgrep -f "vgpu-mediator worker"); do
        s=$(threads "$w")
        [ -n "$s" ] && snap="worker $w threads (name, utime+stime in ticks of 10 ms):
$s"
    done
    for c in $(pgrep -f "torch_train.py $MODEL"); do
        s=$(threads "$c")
        [ -n "$s" ] && csnap="client $c threads (name, utime+stime in ticks of 10 ms):
$s"
    done
    sleep 1
done
echo "$snap"
echo "${csnap:-}"
wait $client
echo "== calls in the traced run's last $STEPS steps, per step (count, client us, calls > 20 us, round trips)"
# The timed steps are the calls after the warm-up's synchronize: take the
# last fraction of lines proportional to the steps.
lines=$(grep -c ' -> ' "$OUT/$MODEL.trace")
grep ' -> ' "$OUT/$MODEL.trace" | tail -n $((lines * STEPS / (STEPS + 10) )) >"$OUT/steps.trace"
awk -v steps="$STEPS" '{n[$1]++; us=$5; sub(/us/, "", us); t[$1]+=us; if (us+0 > 20) slow[$1]++;
        if (match($0, / trips=[0-9]+/)) trips[$1] += substr($0, RSTART + 7, RLENGTH - 7)}
    END {for (f in n) printf "%9.1f %10.1f %8.1f %8.1f  %s\n", n[f]/steps, t[f]/steps, slow[f]/steps, trips[f]/steps, f}' \
    "$OUT/steps.trace" | sort -k2 -rn | head -30
echo "== the calls before three slow cuLaunchKernelEx calls"
grep -n -B3 '^cuLaunchKernelEx .* [0-9]\{3,\}us' "$OUT/steps.trace" | head -16
grep '^== vgpu lanes' "$OUT/$MODEL.trace"
