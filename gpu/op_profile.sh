#!/usr/bin/env bash
# Which remoted calls a PyTorch training step makes, and how many: runs
# gpu/bench/torch_train.py MODEL (default resnet50) through vgpu twice, with
# 10 and with 60 timed steps after the same warm-up, and prints the
# difference of the mediator's per-operation call counters (/metrics,
# vgpu_calls_total) divided by 50: the calls of one step. Synchronous calls
# are the ones that cost a round trip over TCP. Also prints the model's
# figure natively, over the rings and over loopback TCP.
# Usage on a GPU machine, after gpu/stage.sh:   OUT=dir gpu/op_profile.sh [MODEL]
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/op-profile-out}
MODEL=${1:-resnet50}
mkdir -p "$OUT"
SOCK=/tmp/vgpu-op-profile.sock
PORT=${PORT:-17311}
MPORT=${MPORT:-19411}
DRIVER=${VGPU_E2E_DRIVER:-/usr/local/nvidia/lib64/libcuda.so.1}
rm -f "$SOCK"
dist/bin/vgpu-mediator --listen "unix:$SOCK" --listen "tcp://127.0.0.1:$PORT" --driver "$DRIVER" \
    --metrics "127.0.0.1:$MPORT" --log "$OUT/mediator.log" >/dev/null 2>&1 &
MED=$!
trap 'kill $MED 2>/dev/null' EXIT
for _ in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.1; done
scrape() { python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$MPORT/metrics').read().decode())" | grep '^vgpu_calls_total' | sed 's/.*op="\([^"]*\)"} \(.*\)/\1 \2/' | sort; }
train() { # WHERE STEPS
    local env=()
    case $1 in
    rings) env=(LD_LIBRARY_PATH="$PWD/dist/lib" VGPU_MEDIATOR="unix:$SOCK") ;;
    tcp) env=(LD_LIBRARY_PATH="$PWD/dist/lib" VGPU_MEDIATOR="tcp://127.0.0.1:$PORT") ;;
    esac
    env "${env[@]}" timeout 600 python3 gpu/bench/torch_train.py "$MODEL" --warmup 10 --steps "$2" 2>&1 | tail -1
}
echo "native: $(train native 50)"
echo "rings:  $(train rings 50)"
scrape >"$OUT/before"
echo "tcp:    $(train tcp 10)"
scrape >"$OUT/mid"
echo "tcp:    $(train tcp 60)"
scrape >"$OUT/after"
echo "== calls per step over TCP (60 - 10 steps, / 50), most first"
join -a1 -e 0 -o 0,1.2,2.2 "$OUT/after" "$OUT/mid" |
    awk '{d = ($2 - $3) / 50; if (d >= 0.5) printf "%10.1f %s\n", d, $1}' | sort -rn | head -40
echo "== attribute calls of a traced run over TCP (VGPU_TRACE), most first"
LD_LIBRARY_PATH="$PWD/dist/lib" VGPU_MEDIATOR="tcp://127.0.0.1:$PORT" VGPU_TRACE="$OUT/trace.txt" \
    timeout 600 python3 gpu/bench/torch_train.py "$MODEL" --warmup 3 --steps 3 >/dev/null 2>&1
grep -E "cu(Kernel|Func)(Get|Set)Attribute|cuStreamIsCapturing|cuOccupancy" "$OUT/trace.txt" |
    sed -E 's/0x[0-9a-f]+/P/g; s/^[^c]*(cu)/\1/' | sort | uniq -c | sort -rn | head -30
tail -5 "$OUT/trace.txt"
