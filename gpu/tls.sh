#!/usr/bin/env bash
# tls:// against the real GPU. One mediator listens on a Unix socket, on
# tls://127.0.0.1 (a CA, server and client certificate made here with
# openssl, and a bearer token) and on plain tcp://127.0.0.1. Each program
# runs natively, then through vgpu over TLS with the token, and the outputs
# must match line for line; driver_api also runs with the client certificate
# (mTLS) and over plain TCP. A wrong token and a client certificate of
# another CA must be refused, logged, and start no worker. Ends with vgpu
# bench figures for rings, socket, tcp and tls in the same run (TLS's cost).
#
# Run from the repository root on a GPU machine after gpu/stage.sh:
#   OUT=dir [TLS_LIMIT=seconds] [TLS_BENCH=0] gpu/tls.sh [names...]
# Writes $OUT/tls.log (everything) and $OUT/tls-summary.txt.
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/tls-out}
mkdir -p "$OUT"
LOG=$OUT/tls.log
SUM=$OUT/tls-summary.txt
: >"$LOG"
: >"$SUM"
DRIVER=${VGPU_E2E_DRIVER:-/usr/local/nvidia/lib64/libcuda.so.1}
LIMIT=${TLS_LIMIT:-240}
WORK=$(mktemp -d)
MED=
trap 'kill $MED 2>/dev/null; rm -rf "$WORK"' EXIT

# Certificates: a CA, the server (127.0.0.1), a client; another CA's client.
cd "$WORK"
ec() { echo "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"; }
openssl req -x509 $(ec) -keyout ca.key -out ca.pem -subj "/CN=tls.sh CA" -days 2 2>>"$LOG"
openssl req -x509 $(ec) -keyout other.key -out other.pem -subj "/CN=tls.sh other CA" -days 2 2>>"$LOG"
leaf() { # NAME CN CA EXT
    printf '%b' "$4" >"$1.ext"
    openssl req -new $(ec) -keyout "$1.key" -out "$1.csr" -subj "/CN=$2" 2>>"$LOG"
    openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" -CAcreateserial -days 2 \
        -extfile "$1.ext" -out "$1.pem" 2>>"$LOG"
}
leaf server localhost ca 'basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n'
leaf client gpu-client ca 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n'
leaf intruder intruder other 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n'
TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "gpu-tester $(printf %s "$TOKEN" | sha256sum | cut -c1-64)" >tokens
cd - >/dev/null

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
TLS_PORT=$(free_port)
TCP_PORT=$(free_port)
dist/bin/vgpu-mediator --listen "unix:$WORK/m.sock" --listen "tls://127.0.0.1:$TLS_PORT" \
    --listen "tcp://127.0.0.1:$TCP_PORT" --tls-cert "$WORK/server.pem" --tls-key "$WORK/server.key" \
    --tls-client-ca "$WORK/ca.pem" --tokens "$WORK/tokens" --driver "$DRIVER" \
    --log "$OUT/mediator.log" >/dev/null 2>&1 &
MED=$!
for _ in $(seq 100); do [[ -S $WORK/m.sock ]] && break; sleep 0.1; done

NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$NVCC" -O2 -o "$WORK/runtime_api" gpu/runtime_api.cu >>"$LOG" 2>&1
cc -std=c11 -O2 -pthread -o "$WORK/driver_smoke" tests/c/driver_smoke.c -ldl >>"$LOG" 2>&1
declare -A CMD=(
    [torch]="python3 gpu/torch_smoke.py"
    [train]="python3 gpu/train_smoke.py"
    [cupy]="python3 gpu/cupy_smoke.py"
    [cuda_python]="python3 gpu/driver_api.py"
    [runtime_api]="$WORK/runtime_api"
)
names=("$@")
((${#names[@]})) || names=(torch train cupy cuda_python runtime_api)

failed=0
through() { # MODE CMD...: runs CMD through vgpu; MODE is token, mtls or tcp
    local mode=$1; shift
    local env=(LD_LIBRARY_PATH="$PWD/dist/lib:${LD_LIBRARY_PATH:-}" VGPU_LOG="$WORK/client.$mode")
    case $mode in
        token) env+=(VGPU_MEDIATOR="tls://127.0.0.1:$TLS_PORT" VGPU_TLS_CA="$WORK/ca.pem" VGPU_TOKEN="$TOKEN") ;;
        mtls) env+=(VGPU_MEDIATOR="tls://localhost:$TLS_PORT" VGPU_TLS_CA="$WORK/ca.pem"
                    VGPU_TLS_CERT="$WORK/client.pem" VGPU_TLS_KEY="$WORK/client.key") ;;
        tcp) env+=(VGPU_MEDIATOR="tcp://127.0.0.1:$TCP_PORT") ;;
    esac
    env "${env[@]}" timeout "$LIMIT" "$@"
}
run_one() { # NAME MODE
    local n=$1 mode=$2 cmd=${CMD[$1]}
    local native vgpu nrc vrc
    native=$(timeout "$LIMIT" $cmd 2>"$WORK/$n.native.err"); nrc=$?
    vgpu=$(through "$mode" $cmd 2>"$WORK/$n.$mode.err"); vrc=$?
    {
        echo "=== $n over $mode: native (exit $nrc)"; echo "$native"; tail -3 "$WORK/$n.native.err"
        echo "=== $n over $mode: vgpu (exit $vrc)"; echo "$vgpu"; tail -12 "$WORK/$n.$mode.err"
        echo "=== $n over $mode: diff"; diff <(echo "$native") <(echo "$vgpu")
    } >>"$LOG" 2>&1
    if [[ $nrc -eq 0 && $vrc -eq 0 && "$native" == "$vgpu" ]]; then
        echo "PASS $n over $mode" | tee -a "$SUM"
    else
        echo "FAIL $n over $mode (native exit $nrc, vgpu exit $vrc)" | tee -a "$SUM"
        failed=1
    fi
}
for n in "${names[@]}"; do run_one "$n" token; done
run_one cuda_python mtls
run_one cuda_python tcp
if grep -q "lanes on TLS connections" "$WORK/client.token" 2>/dev/null; then
    echo "PASS the token sessions' lanes were TLS connections" | tee -a "$SUM"
else
    echo "FAIL no 'lanes on TLS connections' in the client log" | tee -a "$SUM"; failed=1
fi

# Refusals: logged, no worker, the mediator still serving.
before=$(grep -c "session accepted" "$OUT/mediator.log")
env LD_LIBRARY_PATH="$PWD/dist/lib" VGPU_MEDIATOR="tls://127.0.0.1:$TLS_PORT" VGPU_TLS_CA="$WORK/ca.pem" \
    VGPU_TOKEN=not-the-token "$WORK/driver_smoke" >"$WORK/wrong.out" 2>&1
env LD_LIBRARY_PATH="$PWD/dist/lib" VGPU_MEDIATOR="tls://127.0.0.1:$TLS_PORT" VGPU_TLS_CA="$WORK/ca.pem" \
    VGPU_TLS_CERT="$WORK/intruder.pem" VGPU_TLS_KEY="$WORK/intruder.key" "$WORK/driver_smoke" >"$WORK/intruder.out" 2>&1
after=$(grep -c "session accepted" "$OUT/mediator.log")
if [[ $before == "$after" ]] && grep -q "a token that matches no configured token" "$OUT/mediator.log" \
    && grep -q "TLS client refused: TLS handshake failed" "$OUT/mediator.log"; then
    echo "PASS a wrong token and another CA's certificate were refused and logged, no worker" | tee -a "$SUM"
else
    echo "FAIL refusals (workers before $before, after $after; see mediator.log)" | tee -a "$SUM"; failed=1
fi
if grep -q "$TOKEN" "$OUT/mediator.log" "$WORK"/client.* 2>/dev/null; then
    echo "FAIL the token appears in a log" | tee -a "$SUM"; failed=1
fi
run_one cuda_python token

if [[ ${TLS_BENCH:-1} != 0 ]]; then
    echo "=== vgpu bench: rings, socket, tcp and tls in the same run" | tee -a "$SUM"
    dist/bin/vgpu bench --driver "$DRIVER" --only launch_1t,launch_sync,sync_idle,memcpy_8b,memcpy_256mb,cold_start \
        --transports rings,socket,tcp,tls --rounds 3 --json "$OUT/bench-tls.json" 2>&1 | tee -a "$SUM" >>"$LOG"
fi
exit $failed
