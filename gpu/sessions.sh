#!/usr/bin/env bash
# Live sessions and metrics on the real driver. A client (tests/c/session_hold.c)
# runs natively, then through vgpu. The client through vgpu holds 256 MiB of
# device memory while these are checked:
#  - `vgpu status --json` lists its session, with its pid, its uid, the
#    transport and exactly 256 MiB held;
#  - nvidia-smi's process list is printed beside the worker's pid (INFO);
#  - /metrics shows one live session, 256 MiB held for that uid, the calls,
#    the error and the bytes the client made and copied.
# Then the client frees its memory (0 held) and ends (no live session).
# Prints PASS/FAIL per check and writes $OUT/sessions.log (the JSON, the
# scrapes, nvidia-smi) and $OUT/mediator.log.
# Usage on a GPU machine after gpu/stage.sh:   OUT=dir gpu/sessions.sh
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/sessions-out}
mkdir -p "$OUT"
LOG=$OUT/sessions.log
: >"$LOG"
SOCK=/tmp/vgpu-sessions.sock
PORT=${METRICS_PORT:-19400}
DRIVER=${VGPU_E2E_DRIVER:-/usr/local/nvidia/lib64/libcuda.so.1}
WORK=$(mktemp -d)
rm -f "$SOCK"
dist/bin/vgpu-mediator --listen "unix:$SOCK" --driver "$DRIVER" --metrics "127.0.0.1:$PORT" \
    --log "$OUT/mediator.log" >/dev/null 2>&1 &
MED=$!
trap 'kill $MED 2>/dev/null; exec 3>&- 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.1; done
cc -std=c11 -O2 -Wall -o "$WORK/session_hold" tests/c/session_hold.c -ldl >>"$LOG" 2>&1
BYTES=$((256 << 20))
COPIES=10
failed=0
check() { # NAME CONDITION-EXIT-STATUS
    if [[ $2 -eq 0 ]]; then echo "PASS $1"; else echo "FAIL $1"; failed=1; fi
}
scrape() { python3 -c 'import sys,urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
    "http://127.0.0.1:$PORT/metrics"; }
sample() { scrape | awk -v n="$1" '$1 == n { print $2 }'; }

# Native: the same program, the same lines (the pid aside).
native=$(timeout 120 "$WORK/session_hold" $BYTES $COPIES </dev/null 2>&1 | sed 's/^ready .*/ready/')
echo "=== native" >>"$LOG"; echo "$native" >>"$LOG"

# Through vgpu, driven by a fifo so that it holds its memory while we look.
mkfifo "$WORK/in"
LD_LIBRARY_PATH=$PWD/dist/lib:${LD_LIBRARY_PATH:-} VGPU_MEDIATOR=unix:$SOCK \
    timeout 300 "$WORK/session_hold" $BYTES $COPIES <"$WORK/in" >"$WORK/vgpu.out" 2>&1 &
CLIENT=$!
exec 3>"$WORK/in"
for _ in $(seq 300); do grep -q '^ready' "$WORK/vgpu.out" && break; sleep 0.1; done
pid=$(sed -n 's/^ready //p' "$WORK/vgpu.out")
status=$(dist/bin/vgpu status --json --mediator "unix:$SOCK")
echo "=== vgpu status --json (client $pid)" >>"$LOG"; echo "$status" >>"$LOG"
session=$(echo "$status" | python3 -c '
import json, sys
pid, uid, want = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
for s in json.load(sys.stdin)["sessions"]:
    if s["client_pid"] == pid:
        ok = s["uid"] == uid and s["device_memory"] == want and s["transport"] == "unix+rings"
        print(s["worker_pid"] if ok else "")
' "${pid:-0}" "$(id -u)" $BYTES)
check "status lists the client (pid $pid, uid $(id -u), unix+rings, $BYTES bytes)" $([[ -n $session ]]; echo $?)
smi=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader 2>&1)
echo "=== nvidia-smi compute apps" >>"$LOG"; echo "$smi" >>"$LOG"
# Informational: nvidia-smi lists no processes inside some containers.
echo "INFO nvidia-smi compute apps (the worker is $session): $(echo "$smi" | tr '\n' ';')"
uid=$(id -u)
scrape >"$OUT/metrics-live.txt"
cat "$OUT/metrics-live.txt" >>"$LOG"
want() { # SAMPLE VALUE
    got=$(awk -v n="$1" '$1 == n { print $2 }' "$OUT/metrics-live.txt")
    check "metrics $1 = $2 (got ${got:-none})" $([[ $got == "$2" ]]; echo $?)
}
want vgpu_sessions_live 1
want "vgpu_device_memory_used_bytes{uid=\"$uid\"}" $BYTES
want 'vgpu_calls_total{op="MemcpyHtoD"}' $COPIES
want 'vgpu_calls_total{op="MemcpyDtoH"}' $COPIES
want 'vgpu_call_errors_total{op="MemFree"}' 1
want 'vgpu_copied_bytes_total{direction="htod"}' $((COPIES * 4096))
want 'vgpu_copied_bytes_total{direction="dtoh"}' $((COPIES * 4096))

echo go >&3
for _ in $(seq 100); do grep -q '^freed' "$WORK/vgpu.out" && break; sleep 0.1; done
for _ in $(seq 50); do [[ $(sample "vgpu_device_memory_used_bytes{uid=\"$uid\"}") == 0 ]] && break; sleep 0.1; done
check "freed: 0 bytes held" $([[ $(sample "vgpu_device_memory_used_bytes{uid=\"$uid\"}") == 0 ]]; echo $?)
echo go >&3
exec 3>&-
wait $CLIENT 2>/dev/null
for _ in $(seq 50); do [[ $(sample vgpu_sessions_live) == 0 ]] && break; sleep 0.1; done
check "ended: no live session" $([[ $(sample vgpu_sessions_live) == 0 ]]; echo $?)
vgpu=$(sed 's/^ready .*/ready/' "$WORK/vgpu.out")
echo "=== vgpu" >>"$LOG"; echo "$vgpu" >>"$LOG"
check "same output natively and through vgpu" $([[ "$native" == "$vgpu" ]]; echo $?)
scrape >"$OUT/metrics-end.txt"
grep '^vgpu_lane_round_trip_seconds' "$OUT/metrics-end.txt"
exit $failed
