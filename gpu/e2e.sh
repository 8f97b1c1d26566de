#!/usr/bin/env bash
# GPU end-to-end test: every program runs twice, on the native driver and
# through vgpu, and the two standard outputs must be identical.
#
# Run on a GPU machine from the repository root, with dist/ staged by
# gpu/stage.sh on the build machine:
#
#   OUT=/some/folder gpu/e2e.sh        (OUT defaults to ./e2e-out)
#
# It prints PASS or FAIL per program and leaves in $OUT: summary.txt (with the
# output of `vgpu status`), mediator.log, vgpu_demo.log and one <name>.log per
# program (native and vgpu stdout and stderr, and their diff). Keep the total
# at 8 files or fewer: the GPU runner brings back no more. The vgpu run
# must also show that libvgpu-cuda.so was the libcuda the process mapped.
# Exit: 0 all passed, 1 a program failed, 2 set-up failed.
#
# Environment: VGPU_E2E_DRIVER, the real driver (default below);
# VGPU_E2E_TIMEOUT, seconds per program run (default 120).
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."

OUT=${OUT:-$PWD/e2e-out}
DRIVER=${VGPU_E2E_DRIVER:-/usr/local/nvidia/lib64/libcuda.so.1}
LIMIT=${VGPU_E2E_TIMEOUT:-120}
SOCK=/tmp/vgpu.sock
DIST=$PWD/dist
WORK=$(mktemp -d)
mkdir -p "$OUT"

die() { echo "SETUP FAIL: $*"; exit 2; }

[[ -x $DIST/bin/vgpu-mediator && -e $DIST/lib/libcuda.so.1 ]] ||
    die "dist/ is not staged: run gpu/stage.sh on the build machine and carry dist/"
[[ -e $DRIVER ]] || die "no NVIDIA driver at $DRIVER (set VGPU_E2E_DRIVER)"

echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true
echo "driver: $DRIVER"

echo "== mediator"
rm -f "$SOCK"
"$DIST/bin/vgpu-mediator" --listen "unix:$SOCK" --driver "$DRIVER" --log "$OUT/mediator.log" \
    >"$WORK/mediator.out" 2>&1 &
MEDIATOR=$!
finish() {
    kill "$MEDIATOR" 2>/dev/null
    wait "$MEDIATOR" 2>/dev/null
    { echo "--- mediator stdout/stderr ---"; cat "$WORK/mediator.out"; } >>"$OUT/mediator.log" 2>/dev/null
    rm -rf "$WORK"
}
trap finish EXIT
for _ in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.1; done
if [[ ! -S $SOCK ]]; then
    cat "$WORK/mediator.out" "$OUT/mediator.log" 2>/dev/null | tail -20
    die "the mediator did not open $SOCK within 10 s"
fi
echo "listening on unix:$SOCK (pid $MEDIATOR)"
"$DIST/bin/vgpu" status --mediator "unix:$SOCK" --lib-dir "$DIST/lib" | tee "$WORK/status.log"

results=()
failed=0

# run_pair NAME CMD...: runs CMD natively and through vgpu and compares.
run_pair() {
    local name=$1
    shift
    echo "== $name"
    local w=$WORK/$name
    timeout "$LIMIT" "$@" 2>"$w.native.err" | tee "$w.native.out"
    local native=${PIPESTATUS[0]}
    LD_LIBRARY_PATH=$DIST/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} VGPU_MEDIATOR=unix:$SOCK \
        timeout "$LIMIT" "$@" 2>"$w.vgpu.err" >"$w.vgpu.out"
    local vgpu=$?

    local why=()
    ((native == 0)) || why+=("native run exited $native")
    ((vgpu == native)) || why+=("vgpu run exited $vgpu, native $native")
    diff -u --label native --label vgpu "$w.native.out" "$w.vgpu.out" >"$w.diff" ||
        why+=("outputs differ")
    grep -q 'libvgpu-cuda\.so' "$w.vgpu.err" ||
        why+=("the vgpu run did not report libvgpu-cuda.so as its libcuda")
    if grep -q 'libvgpu-cuda\.so' "$w.native.err"; then
        why+=("the native run mapped libvgpu-cuda.so")
    fi
    grep -h 'libcuda' "$w.native.err" | sed 's/^/  native: /'
    grep -h 'libcuda\|libvgpu' "$w.vgpu.err" | sed 's/^/  vgpu:   /'
    {
        echo "=== $* (native: exit $native; vgpu: exit $vgpu)"
        for part in native.out native.err vgpu.out vgpu.err diff; do
            echo "--- $part ---"
            cat "$w.$part"
        done
    } >"$OUT/$name.log"

    if ((${#why[@]} == 0)); then
        results+=("PASS $name")
    else
        results+=("FAIL $name: $(IFS=';'; echo "${why[*]}")")
        failed=1
        head -40 "$w.diff"
        tail -5 "$w.vgpu.err"
    fi
    echo "${results[-1]}"
}

# (a) the C Driver API program, PTX module (the device is not simulated).
vector_add=$DIST/bin/vector_add_driver
if [[ ! -x $vector_add ]]; then
    vector_add=$WORK/vector_add_driver
    cc -std=c11 -O2 -Wall -o "$vector_add" gpu/vector_add_driver.c -ldl || die "cannot build vector_add_driver"
fi
run_pair vector_add_driver "$vector_add" -n 1048576

# (a2) nvcc-built: the same program compiled by nvcc, loading a cubin (ELF) and
# a fatbin that nvcc compiled from gpu/vector_add.cu.
if command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]]; then
    NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    arch=${VGPU_E2E_ARCH:-sm_90}
    if "$NVCC" -O2 -o "$WORK/vector_add_nvcc" gpu/vector_add_driver.c -ldl &&
        "$NVCC" -cubin -arch="$arch" -o "$WORK/vector_add.cubin" gpu/vector_add.cu &&
        "$NVCC" -fatbin -arch="$arch" -o "$WORK/vector_add.fatbin" gpu/vector_add.cu; then
        run_pair vector_add_nvcc_cubin "$WORK/vector_add_nvcc" -n 1048576 -m "$WORK/vector_add.cubin"
        run_pair vector_add_nvcc_fatbin "$WORK/vector_add_nvcc" -n 1048576 -m "$WORK/vector_add.fatbin"
    else
        results+=("FAIL nvcc: could not build the nvcc programs")
        failed=1
    fi
else
    results+=("FAIL nvcc: nvcc not found")
    failed=1
fi

# (c) cuGetErrorName/String: vgpu's local table against the driver's.
run_pair error_strings python3 gpu/error_strings.py

# (b) cuda-python (cuda.bindings.driver + NVRTC).
run_pair driver_api python3 gpu/driver_api.py

# (c) vgpu demo: its own private mediator, the driver chosen by --driver auto.
echo "== vgpu_demo"
if timeout "$LIMIT" "$DIST/bin/vgpu" demo >"$OUT/vgpu_demo.log" 2>&1; then
    results+=("PASS vgpu_demo")
else
    results+=("FAIL vgpu_demo: exit $? (see vgpu_demo.log)")
    failed=1
fi
tail -30 "$OUT/vgpu_demo.log"
echo "${results[-1]}"

echo "== worker"
grep -i 'driver loaded\|error\|panic' "$OUT/mediator.log" | head -20

echo "== summary"
printf '%s\n' "${results[@]}" | tee "$OUT/summary.txt"
{ echo "--- vgpu status ---"; cat "$WORK/status.log"; } >>"$OUT/summary.txt"
exit "$failed"
