#!/usr/bin/env bash
# NVML through vgpu beside the real one: `nvidia-smi`, `nvidia-smi -q`, the
# NVML queries vgpu implements (gpu/nvml_compare.py), PyTorch and CuPy
# (gpu/nvml_frameworks.py), each run natively and with vgpu's library as
# libnvidia-ml.so.1.
#
# Run on a GPU machine from the repository root, with dist/ staged by
# gpu/stage.sh on the build machine:
#
#   OUT=/some/folder gpu/nvml.sh        (OUT defaults to ./nvml-out)
#
# nvidia-smi is not linked against NVML: it dlopens "libnvidia-ml.so.1" by
# name, so dist/nvml/ (libnvidia-ml.so.1 -> ../lib/libvgpu-nvml.so) first on
# LD_LIBRARY_PATH makes it load vgpu's. Every vgpu run prints the
# libnvidia-ml it mapped (LD_DEBUG=libs for nvidia-smi, /proc/self/maps for
# the Python programs). The vgpu runs happen twice: with no CUDA client, and
# while a PyTorch process holding 1 GiB through vgpu is alive (its pid and
# memory should show as the tenant's).
#
# On a host of two GPUs or more, gpu/nvml_devices.py then checks, through
# vgpu, that the holder's pid and memory show on GPU 0 only.
#
# Leaves in $OUT (9 files): nvml.log (everything, in order), smi-native.txt,
# smi-vgpu.txt, smi-q-native.txt, smi-q-vgpu.txt, compare.diff (native vs
# vgpu answers of nvml_compare.py, tenant lines dropped), devices-vgpu.txt
# and devices-native.txt (memory and processes by device while the holder
# lives; the vgpu one ends in PASS or FAIL per-device) and mediator.log.
# Exit: 0 when every program ran, 2 when set-up failed; the comparison is for
# reading, not a verdict.
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."

OUT=${OUT:-$PWD/nvml-out}
DRIVER=${VGPU_E2E_DRIVER:-/usr/local/nvidia/lib64/libcuda.so.1}
LIMIT=${VGPU_E2E_TIMEOUT:-120}
SOCK=/tmp/vgpu-nvml.sock
DIST=$PWD/dist
WORK=$(mktemp -d)
mkdir -p "$OUT"
LOG=$OUT/nvml.log
: >"$LOG"

die() { echo "SETUP FAIL: $*" | tee -a "$LOG"; exit 2; }
say() { printf '\n===== %s\n' "$*" | tee -a "$LOG"; }

[[ -x $DIST/bin/vgpu-mediator && -e $DIST/nvml/libnvidia-ml.so.1 ]] ||
    die "dist/ is not staged with NVML: run gpu/stage.sh on the build machine and carry dist/"
[[ -e $DRIVER ]] || die "no NVIDIA driver at $DRIVER (set VGPU_E2E_DRIVER)"
SMI=$(command -v nvidia-smi || echo /usr/local/nvidia/bin/nvidia-smi)

rm -f "$SOCK"
"$DIST/bin/vgpu-mediator" --listen "unix:$SOCK" --driver "$DRIVER" --log "$OUT/mediator.log" \
    >"$WORK/mediator.out" 2>&1 &
MEDIATOR=$!
HOLDER=
finish() {
    [[ -n $HOLDER ]] && kill "$HOLDER" 2>/dev/null
    kill "$MEDIATOR" 2>/dev/null
    wait "$MEDIATOR" 2>/dev/null
    { echo "--- mediator stdout/stderr ---"; cat "$WORK/mediator.out"; } >>"$OUT/mediator.log" 2>/dev/null
    rm -rf "$WORK"
}
trap finish EXIT
for _ in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.1; done
[[ -S $SOCK ]] || die "the mediator did not open $SOCK within 10 s"

# The environment of a vgpu run: vgpu's NVML and CUDA libraries first.
# VGPU_LOG collects what vgpu's NVML could not answer (functions, and slots of
# nvidia-smi's private table); it is appended to nvml.log at the end.
VGPU_ENV=(env "LD_LIBRARY_PATH=$DIST/nvml:$DIST/lib:${LD_LIBRARY_PATH:-}" "VGPU_MEDIATOR=unix:$SOCK"
    "VGPU_LOG=$WORK/vgpu-nvml.log")

# run NAME FILE CMD...: runs CMD with a deadline, its output to FILE and the log.
run() {
    local name=$1 file=$2
    shift 2
    say "$name"
    timeout "$LIMIT" "$@" >"$file" 2>&1
    local rc=$?
    cat "$file" >>"$LOG"
    echo "(exit $rc)" | tee -a "$LOG"
    cat "$file"
}

# smi NAME FILE [vgpu] ARGS...: nvidia-smi, printing which libnvidia-ml it loaded.
smi() {
    local name=$1 file=$2 prefix=()
    shift 2
    if [[ ${1:-} == vgpu ]]; then prefix=("${VGPU_ENV[@]}"); shift; fi
    run "$name" "$file" "${prefix[@]}" "$SMI" "$@"
    say "$name: the libnvidia-ml it loaded"
    "${prefix[@]}" env LD_DEBUG=libs timeout "$LIMIT" "$SMI" -L 2>&1 >/dev/null |
        grep -E 'calling init: .*(nvidia-ml|nvml)' | tee -a "$LOG"
}

smi "nvidia-smi, native" "$OUT/smi-native.txt"
smi "nvidia-smi, through vgpu (no CUDA client)" "$OUT/smi-vgpu.txt" vgpu
smi "nvidia-smi -q, native" "$OUT/smi-q-native.txt" -q
smi "nvidia-smi -q, through vgpu (no CUDA client)" "$OUT/smi-q-vgpu.txt" vgpu -q

run "NVML queries, native" "$WORK/compare-native.txt" python3 gpu/nvml_compare.py
run "NVML queries, through vgpu" "$WORK/compare-vgpu.txt" "${VGPU_ENV[@]}" python3 gpu/nvml_compare.py
say "NVML queries: native vs vgpu (tenant: and live: lines, which differ by design or by moment, dropped)"
diff <(grep -Ev '^(tenant|live):' "$WORK/compare-native.txt") <(grep -Ev '^(tenant|live):' "$WORK/compare-vgpu.txt") \
    >"$OUT/compare.diff"
echo "(diff exit $?: 0 = identical)" >>"$OUT/compare.diff"
tee -a "$LOG" <"$OUT/compare.diff"

say "a live CUDA client through vgpu: PyTorch holding 1 GiB on device 0"
"${VGPU_ENV[@]}" timeout "$LIMIT" python3 -c '
import os, sys, time, torch
x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda:0"); torch.cuda.synchronize()
try:
    device = "GPU-%s" % torch.cuda.get_device_properties(0).uuid
except Exception:
    device = "0"
print("holder device", device, flush=True)
print("holder pid", os.getpid(), "holds 1 GiB", flush=True); time.sleep(600)' \
    >"$WORK/holder.txt" 2>&1 &
HOLDER=$!
for _ in $(seq 300); do grep -q "holds 1 GiB" "$WORK/holder.txt" && break; sleep 0.2; done
tee -a "$LOG" <"$WORK/holder.txt"
run "nvidia-smi through vgpu, with the holder alive" "$WORK/smi-holder.txt" "${VGPU_ENV[@]}" "$SMI"
run "nvidia-smi native, with the holder alive (the worker's process is what the host sees)" \
    "$WORK/smi-holder-native.txt" "$SMI"
run "nvidia-smi -q through vgpu, with the holder alive: memory and processes" \
    "$WORK/smi-q-holder.txt" "${VGPU_ENV[@]}" "$SMI" -q -d MEMORY,PIDS
# Per device (a host of two GPUs or more): the holder uses GPU 0 only, so
# through vgpu its pid and memory must show on GPU 0 and nowhere else
# (PASS per-device); natively, the worker process is what each GPU lists.
HOLDER_PID=$(sed -n 's/^holder pid \([0-9]*\) .*/\1/p' "$WORK/holder.txt")
HOLDER_GPU=$(sed -n 's/^holder device \(.*\)/\1/p' "$WORK/holder.txt")
run "memory and processes by device through vgpu, with the holder alive (want PASS per-device)" \
    "$OUT/devices-vgpu.txt" "${VGPU_ENV[@]}" python3 gpu/nvml_devices.py "${HOLDER_PID:-0}" "${HOLDER_GPU:-0}"
run "memory and processes by device natively, with the holder alive" \
    "$OUT/devices-native.txt" python3 gpu/nvml_devices.py
kill "$HOLDER" 2>/dev/null
wait "$HOLDER" 2>/dev/null
HOLDER=

for fw in torch cupy; do
    run "$fw with NVML, native" "$WORK/$fw-native.txt" python3 gpu/nvml_frameworks.py "$fw"
    run "$fw with NVML, through vgpu" "$WORK/$fw-vgpu.txt" "${VGPU_ENV[@]}" python3 gpu/nvml_frameworks.py "$fw"
    say "$fw: native vs vgpu"
    diff "$WORK/$fw-native.txt" "$WORK/$fw-vgpu.txt" | tee -a "$LOG"
done
say "what vgpu's NVML did not answer (VGPU_LOG), counted"
sed 's/^vgpu-nvml\[[0-9]*\]: //' "$WORK/vgpu-nvml.log" 2>/dev/null | sort | uniq -c | sort -rn | tee -a "$LOG"
say "done; files in $OUT"
ls "$OUT" | tee -a "$LOG"
