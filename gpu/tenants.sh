#!/usr/bin/env bash
# Tenants on the real driver: one mediator with a mediator file of two
# tenants, "a" (uid 0, 1024 MiB, at most 2 sessions, weight 1) and "b"
# (uid 65534, nobody, 512 MiB, weight 3). Checks, each printed PASS/FAIL:
#  - tests/c/tenant_quota.c as tenant a and as tenant b: cuMemAlloc,
#    cuMemAllocPitch, cuMemAllocAsync, cuMemCreate and cuArrayCreate stop at the tenant's
#    limit with CUDA_ERROR_OUT_OF_MEMORY, cuMemGetInfo reports the tenant's
#    view (total = the limit);
#  - while a session of a holds 512 MiB: a second session of a sees 512 MiB
#    free of 1024, tenant b still gets its whole 512 MiB, a third session of
#    a is refused (cuInit: CUDA_ERROR_NO_DEVICE), and /metrics shows a's
#    512 MiB and its limit;
#  - a uid that no tenant names is refused;
#  - compute weights: gpu/tenant_launches.py runs as a and as b at once for
#    $SHARE_SECONDS (10) seconds; b's share of the launches must be 0.65-0.85
#    (weights 1:3 give 0.75). The same pair run natively (no vgpu, no
#    weights) is printed beside it as INFO (about 0.5).
# Writes $OUT/tenants.log (every program's output, the scrape) and
# $OUT/mediator.log.
# Usage on a GPU machine, as root, after gpu/stage.sh:   OUT=dir gpu/tenants.sh
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/tenants-out}
mkdir -p "$OUT"
LOG=$OUT/tenants.log
: >"$LOG"
SOCK=/tmp/vgpu-tenants.sock
PORT=${METRICS_PORT:-19401}
DRIVER=${VGPU_E2E_DRIVER:-/usr/local/nvidia/lib64/libcuda.so.1}
WORK=$(mktemp -d)
chmod 0755 "$WORK"
# The other uid reads the client library and the programs from here.
mkdir -p "$WORK/lib"
cp -L dist/lib/libcuda.so.1 "$WORK/lib/libcuda.so.1"
chmod -R a+rX "$WORK"
cat >"$WORK/mediator.toml" <<'EOF'
[unix]
mode = "0666"

[[tenant]]
name = "a"
uids = [0]
memory_limit = "1024MiB"
max_sessions = 2
weight = 1

[[tenant]]
name = "b"
uids = [65534]
memory_limit = "512MiB"
weight = 3
EOF
rm -f "$SOCK"
dist/bin/vgpu-mediator --config "$WORK/mediator.toml" --listen "unix:$SOCK" --driver "$DRIVER" \
    --metrics "127.0.0.1:$PORT" --log "$OUT/mediator.log" >/dev/null 2>&1 &
MED=$!
trap 'kill $MED 2>/dev/null; exec 3>&- 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.1; done
cc -std=c11 -O2 -Wall -o "$WORK/tenant_quota" tests/c/tenant_quota.c -ldl >>"$LOG" 2>&1
chmod 0755 "$WORK/tenant_quota"
cp gpu/tenant_launches.py "$WORK/tenant_launches.py"
chmod 0644 "$WORK/tenant_launches.py"
failed=0
check() { # NAME CONDITION-EXIT-STATUS
    if [[ $2 -eq 0 ]]; then echo "PASS $1"; else echo "FAIL $1"; failed=1; fi
}
as_root() { LD_LIBRARY_PATH=$WORK/lib VGPU_MEDIATOR=unix:$SOCK timeout 300 "$@"; }
as_nobody() {
    setpriv --reuid=65534 --regid=65534 --clear-groups \
        env LD_LIBRARY_PATH="$WORK/lib" VGPU_MEDIATOR="unix:$SOCK" timeout 300 "$@"
}
# cuInit's status, then cuMemGetInfo's free and total in MiB (python ctypes).
INFO='import ctypes, sys
cu = ctypes.CDLL("libcuda.so.1")
r = cu.cuInit(0)
if r:
    print("init", r); sys.exit(0)
ctx = ctypes.c_void_p(); cu.cuCtxCreate_v2(ctypes.byref(ctx), 0, 0)
f, t = ctypes.c_size_t(), ctypes.c_size_t()
cu.cuMemGetInfo_v2(ctypes.byref(f), ctypes.byref(t))
print("info", f.value >> 20, t.value >> 20)'

out=$(as_root "$WORK/tenant_quota" 1024 2>&1); echo "=== a alone" >>"$LOG"; echo "$out" >>"$LOG"
grep -qx 'PASS: 0 failed' <<<"$out"; check "tenant a: every allocation path stops at 1024 MiB" $?
out=$(as_nobody "$WORK/tenant_quota" 512 2>&1); echo "=== b alone" >>"$LOG"; echo "$out" >>"$LOG"
grep -qx 'PASS: 0 failed' <<<"$out"; check "tenant b: every allocation path stops at 512 MiB" $?

# A session of a holds 512 MiB (4 chunks of 128) until told to go on.
mkfifo "$WORK/in"
HOLD=1 as_root "$WORK/tenant_quota" 1024 <"$WORK/in" >"$WORK/hold.out" 2>&1 &
HOLDER=$!
exec 3>"$WORK/in"
for _ in $(seq 300); do grep -q '^ready' "$WORK/hold.out" && break; sleep 0.1; done
out=$(as_root python3 -c "$INFO" 2>&1); echo "=== a, second session: $out" >>"$LOG"
[[ $out == "info 512 1024" ]]; check "a second session of a sees 512 of 1024 MiB free ($out)" $?
out=$(as_nobody "$WORK/tenant_quota" 512 2>&1); echo "=== b beside a" >>"$LOG"; echo "$out" >>"$LOG"
grep -qx 'PASS: 0 failed' <<<"$out"; check "tenant b unaffected by a's use" $?
scrape=$(python3 -c 'import sys,urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
    "http://127.0.0.1:$PORT/metrics")
echo "=== metrics" >>"$LOG"; echo "$scrape" >>"$LOG"
grep -qx 'vgpu_tenant_device_memory_used_bytes{tenant="a"} 536870912' <<<"$scrape"
check "metrics: tenant a holds 512 MiB" $?
grep -qx 'vgpu_tenant_device_memory_limit_bytes{tenant="a"} 1073741824' <<<"$scrape"
check "metrics: tenant a's limit" $?
# Two sessions of a at once: the holder and this one; a third is refused.
mkfifo "$WORK/in2"
as_root python3 -c "$INFO"'
sys.stdout.flush(); sys.stdin.readline()' <"$WORK/in2" >"$WORK/second.out" 2>&1 &
SECOND=$!
exec 4>"$WORK/in2"
for _ in $(seq 300); do grep -q '^info' "$WORK/second.out" && break; sleep 0.1; done
out=$(as_root python3 -c "$INFO" 2>&1); echo "=== a, third session: $out" >>"$LOG"
[[ $out == "init 100" ]]; check "a third session of a is refused ($out)" $?
exec 4>&-
wait $SECOND
echo go >&3
exec 3>&-
wait $HOLDER
echo "=== holder" >>"$LOG"; cat "$WORK/hold.out" >>"$LOG"
grep -qx 'PASS: 0 failed' "$WORK/hold.out"; check "the holding session's own checks" $?

out=$(setpriv --reuid=4343 --regid=4343 --clear-groups env LD_LIBRARY_PATH="$WORK/lib" \
    VGPU_MEDIATOR="unix:$SOCK" timeout 60 python3 -c "$INFO" 2>&1)
echo "=== uid 4343: $out" >>"$LOG"
[[ $out == "init 100" ]]; check "a uid no tenant names is refused ($out)" $?
grep -q 'refusing a session.*uid=4343' "$OUT/mediator.log"; check "the refusal is logged with the uid" $?

# Compute weights: both tenants busy at once.
SECS=${SHARE_SECONDS:-10}
share() { # LAUNCHES-A LAUNCHES-B: b's share
    python3 -c 'import sys; a, b = int(sys.argv[1]), int(sys.argv[2]); print(f"{b / max(a + b, 1):.3f}")' "$1" "$2"
}
count() { sed -n 's/^launches //p' "$1"; }
native_lib=$(dirname "$DRIVER")
LD_LIBRARY_PATH=$native_lib timeout 120 python3 "$WORK/tenant_launches.py" "$SECS" >"$WORK/na.out" 2>&1 &
NA=$!
setpriv --reuid=65534 --regid=65534 --clear-groups env LD_LIBRARY_PATH="$native_lib" \
    timeout 120 python3 "$WORK/tenant_launches.py" "$SECS" >"$WORK/nb.out" 2>&1 &
NB=$!
wait $NA $NB
na=$(count "$WORK/na.out"); nb=$(count "$WORK/nb.out")
echo "=== native pair: $na / $nb" >>"$LOG"; cat "$WORK/na.out" "$WORK/nb.out" >>"$LOG"
echo "INFO native, no weights: a $na launches, b $nb launches, b's share $(share "${na:-0}" "${nb:-0}")"
as_root python3 "$WORK/tenant_launches.py" "$SECS" >"$WORK/va.out" 2>&1 &
VA=$!
as_nobody python3 "$WORK/tenant_launches.py" "$SECS" >"$WORK/vb.out" 2>&1 &
VB=$!
wait $VA $VB
va=$(count "$WORK/va.out"); vb=$(count "$WORK/vb.out")
echo "=== vgpu pair: $va / $vb" >>"$LOG"; cat "$WORK/va.out" "$WORK/vb.out" >>"$LOG"
s=$(share "${va:-0}" "${vb:-0}")
echo "INFO through vgpu, weights 1:3: a $va launches, b $vb launches, b's share $s"
python3 -c 'import sys; sys.exit(0 if 0.65 <= float(sys.argv[1]) <= 0.85 else 1)' "$s"
check "weights 1:3 give b about 3/4 of the launches (share $s)" $?
exit $failed
