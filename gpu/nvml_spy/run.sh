#!/usr/bin/env bash
# Which private NVML calls does nvidia-smi's default view make, and what do
# they return? Builds the spy (gen.py + spy_head.c: a libnvidia-ml.so.1 that
# forwards every export to a real library and logs the private-table slots
# nvidia-smi calls, with the memory their arguments point at before and
# after), then runs nvidia-smi natively through it while a PyTorch process
# holds 1 GiB, and through vgpu's NVML while a vgpu PyTorch client does.
#
#   OUT=dir gpu/nvml_spy/run.sh [SLOTS]     (SLOTS: comma list to dump, default 237,249)
#
# Leaves in $OUT: spy-native.log, spy-vgpu.log, smi-native.txt, smi-vgpu.txt,
# mediator.log. An investigation tool for the GPU machine.
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-$PWD/spy-out}
SLOTS=${1:-237,249}
DRIVER=${VGPU_E2E_DRIVER:-/usr/local/nvidia/lib64/libcuda.so.1}
REAL=${NVML_REAL:-$(dirname "$DRIVER")/libnvidia-ml.so.1}
DIST=$PWD/dist
WORK=$(mktemp -d)
SOCK=/tmp/vgpu-spy.sock
mkdir -p "$OUT"
SPY_SRC=$(dirname -- "${BASH_SOURCE[0]}")
python3 "$SPY_SRC/gen.py" fixtures/libnvidia-ml-580-exports.txt >"$WORK/spy.c" 2>/dev/null ||
    python3 "$SPY_SRC/gen.py" "$SPY_SRC/../../fixtures/libnvidia-ml-580-exports.txt" >"$WORK/spy.c"
mkdir -p "$WORK/lib"
gcc -shared -fPIC -O1 -o "$WORK/lib/libnvidia-ml.so.1" "$WORK/spy.c" -ldl \
    -Wl,-soname,libnvidia-ml.so.1 || { echo "spy build failed"; exit 2; }
SMI=$(command -v nvidia-smi || echo /usr/local/nvidia/bin/nvidia-smi)

hold() { # hold 1 GiB on GPU 0 for 60 s
    python3 -c 'import torch,time; x=torch.empty(1<<30,dtype=torch.uint8,device="cuda:0"); torch.cuda.synchronize(); print("holding",flush=True); time.sleep(60)'
}

echo "== native"
hold >"$WORK/hold-native.txt" 2>&1 &
H=$!
for _ in $(seq 100); do grep -q holding "$WORK/hold-native.txt" 2>/dev/null && break; sleep 0.2; done
NVML_SPY_REAL=$REAL NVML_SPY_SLOTS=$SLOTS NVML_SPY_LOG=$OUT/spy-native.log \
    LD_LIBRARY_PATH=$WORK/lib "$SMI" >"$OUT/smi-native.txt" 2>&1
"$SMI" --query-compute-apps=pid,used_memory --format=csv >>"$OUT/smi-native.txt" 2>&1
kill $H 2>/dev/null; wait $H 2>/dev/null

echo "== vgpu"
rm -f "$SOCK"
"$DIST/bin/vgpu-mediator" --listen "unix:$SOCK" --driver "$DRIVER" --log "$OUT/mediator.log" >/dev/null 2>&1 &
M=$!
for _ in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.1; done
VGPU_MEDIATOR=unix:$SOCK LD_LIBRARY_PATH=$DIST/lib hold >"$WORK/hold-vgpu.txt" 2>&1 &
H=$!
for _ in $(seq 150); do grep -q holding "$WORK/hold-vgpu.txt" 2>/dev/null && break; sleep 0.2; done
VGPU_MEDIATOR=unix:$SOCK VGPU_LOG=1 NVML_SPY_REAL=$DIST/lib/libvgpu-nvml.so NVML_SPY_SLOTS=$SLOTS \
    NVML_SPY_LOG=$OUT/spy-vgpu.log LD_LIBRARY_PATH=$WORK/lib "$SMI" >"$OUT/smi-vgpu.txt" 2>&1
kill $H 2>/dev/null; wait $H 2>/dev/null
kill $M 2>/dev/null; wait $M 2>/dev/null
cat "$WORK/hold-native.txt" "$WORK/hold-vgpu.txt"
echo "== native table"; cat "$OUT/smi-native.txt"
echo "== vgpu table"; cat "$OUT/smi-vgpu.txt"
echo "== slots called (native)"; grep -o '^slot [0-9]*' "$OUT/spy-native.log" | sort | uniq -c | sort -k3 -n | tr '\n' ';'
echo; echo "== slots called (vgpu)"; grep -o '^slot [0-9]*' "$OUT/spy-vgpu.log" | sort | uniq -c | sort -k3 -n | tr '\n' ';'
echo
rm -rf "$WORK"
