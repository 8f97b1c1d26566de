#!/usr/bin/env bash
# Worker privileges and admission on the real driver (docs/security.md).
# Run AS ROOT on a GPU machine after gpu/stage.sh:   OUT=dir gpu/admission.sh
#
# The mediator runs as root with its default worker user (vgpu-worker if it
# exists, else nobody). Checks, PASS/FAIL each:
#  - vector_add_driver prints the same lines natively and through vgpu: the
#    real driver opens the GPU and JIT-compiles PTX as the worker user;
#  - a live worker (tests/c/session_hold.c) runs as the worker user in every
#    uid field, with CapEff 0 and NoNewPrivs 1 (its groups are printed, INFO);
#  - CUDA_CACHE_PATH under /root is ignored with a log line, and one under
#    /tmp that the worker user owns is applied: the driver's JIT cache
#    writes files there;
#  - a silent connection is closed at the handshake deadline without a
#    worker, and a client is served afterwards.
# Writes $OUT/admission.log and $OUT/mediator.log.
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/admission-out}
mkdir -p "$OUT"
LOG=$OUT/admission.log
: >"$LOG"
[[ $(id -u) -eq 0 ]] || { echo "FAIL run as root (the privilege drop needs it)"; exit 1; }
SOCK=/tmp/vgpu-admission.sock
DRIVER=${VGPU_E2E_DRIVER:-/usr/local/nvidia/lib64/libcuda.so.1}
WORK=$(mktemp -d)
chmod 0755 "$WORK"
rm -f "$SOCK"
dist/bin/vgpu-mediator --listen "unix:$SOCK" --driver "$DRIVER" --handshake-timeout-ms 2000 \
    --log "$OUT/mediator.log" >>"$LOG" 2>&1 &
MED=$!
trap 'kill $MED 2>/dev/null; exec 3>&- 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.1; done
if [[ ! -S $SOCK ]]; then
    # E.g. the checkout is in a directory the worker user cannot enter.
    echo "FAIL the mediator did not start:"; tail -n 5 "$LOG" "$OUT/mediator.log" 2>/dev/null
    exit 1
fi
failed=0
check() { # NAME CONDITION-EXIT-STATUS
    if [[ $2 -eq 0 ]]; then echo "PASS $1"; else echo "FAIL $1"; failed=1; fi
}
worker_user=nobody
id vgpu-worker >/dev/null 2>&1 && worker_user=vgpu-worker
wuid=$(id -u "$worker_user")
vgpu() { LD_LIBRARY_PATH=$PWD/dist/lib:${LD_LIBRARY_PATH:-} VGPU_MEDIATOR=unix:$SOCK "$@"; }
cc -std=c11 -O2 -Wall -o "$WORK/vector_add_driver" gpu/vector_add_driver.c -ldl >>"$LOG" 2>&1
cc -std=c11 -O2 -Wall -o "$WORK/session_hold" tests/c/session_hold.c -ldl >>"$LOG" 2>&1

# 1. The same lines natively and through vgpu, with a JIT cache the worker may write.
cache=$WORK/cache
mkdir -p "$cache"
chown "$wuid" "$cache"
native=$(CUDA_CACHE_PATH=$WORK/native-cache timeout 120 "$WORK/vector_add_driver" 2>>"$LOG")
through=$(CUDA_CACHE_PATH=$cache vgpu timeout 120 "$WORK/vector_add_driver" 2>>"$LOG")
{ echo "=== native"; echo "$native"; echo "=== vgpu"; echo "$through"; } >>"$LOG"
[[ -n $native && $native == "$through" ]]
check "vector_add_driver: same lines natively and through vgpu" $?
files=$(find "$cache" -type f | wc -l)
owners=$(find "$cache" -type f -printf '%u\n' | sort -u | tr '\n' ' ')
echo "INFO JIT cache under the worker's CUDA_CACHE_PATH: $files files, owned by: ${owners:-(no files)}"
! grep -q "CUDA_CACHE_PATH from the client ignored" "$OUT/mediator.log"
check "CUDA_CACHE_PATH the worker user owns is applied" $?

# 2. A live worker's credentials, and a CUDA_CACHE_PATH under /root refused.
mkfifo "$WORK/in"
CUDA_CACHE_PATH=/root/vgpu-admission-cache vgpu timeout 300 "$WORK/session_hold" $((64 << 20)) 2 \
    <"$WORK/in" >"$WORK/hold.out" 2>&1 &
HOLD=$!
exec 3>"$WORK/in"
for _ in $(seq 300); do grep -q '^ready' "$WORK/hold.out" && break; sleep 0.1; done
worker=$(sed -n 's/.*session accepted worker=\([0-9]*\).*/\1/p' "$OUT/mediator.log" | tail -n1)
status=$(cat "/proc/$worker/status" 2>/dev/null)
echo "=== /proc/$worker/status" >>"$LOG"; echo "$status" >>"$LOG"
uids=$(echo "$status" | awk '$1 == "Uid:" { print $2, $3, $4, $5 }')
[[ $uids == "$wuid $wuid $wuid $wuid" ]]
check "the worker runs as $worker_user ($wuid) in every uid field (got: $uids)" $?
echo "$status" | grep -q '^CapEff:[[:space:]]*0000000000000000$'
check "the worker has no capabilities" $?
echo "$status" | grep -q '^NoNewPrivs:[[:space:]]*1$'
check "the worker has no_new_privs" $?
echo "INFO worker groups: $(echo "$status" | awk '$1 == "Groups:" { $1 = ""; print }')"
grep -q "CUDA_CACHE_PATH from the client ignored" "$OUT/mediator.log"
check "CUDA_CACHE_PATH under /root is refused and logged" $?
echo go >&3; echo go >&3; exec 3>&-
wait "$HOLD"
grep -q '^done' "$WORK/hold.out"
check "session_hold through vgpu ran to its end" $?

# 3. A silent connection: closed at the deadline, no worker; a client after it is served.
before=$(grep -c "session accepted" "$OUT/mediator.log")
python3 - "$SOCK" <<'EOF' >>"$LOG" 2>&1
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
start = time.time()
s.settimeout(10)
data = s.recv(16)
print(f"silent connection closed after {time.time() - start:.1f}s with {len(data)} bytes")
sys.exit(0 if data == b"" and time.time() - start < 5 else 1)
EOF
check "a silent connection is closed at the deadline" $?
after=$(grep -c "session accepted" "$OUT/mediator.log")
[[ $before -eq $after ]]
check "the silent connection got no worker" $?
again=$(vgpu timeout 120 "$WORK/vector_add_driver" 2>>"$LOG")
[[ $again == "$native" ]]
check "a client after it is served" $?
exit $failed
