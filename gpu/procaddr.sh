#!/usr/bin/env bash
# Compares cuGetProcAddress_v2 answers of the real driver and of vgpu for
# every exported API name at every version boundary, flags 0/1/2.
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/procaddr-out}
mkdir -p "$OUT"
python3 gpu/procaddr_compare.py fixtures/libcuda-580-exports.txt >"$OUT/native.txt"
LD_LIBRARY_PATH=$PWD/dist/lib:${LD_LIBRARY_PATH:-} VGPU_MEDIATOR=unix:/nonexistent \
    python3 gpu/procaddr_compare.py fixtures/libcuda-580-exports.txt >"$OUT/vgpu.txt"
echo "requests: $(wc -l <"$OUT/native.txt")"
if diff "$OUT/native.txt" "$OUT/vgpu.txt" >"$OUT/procaddr.diff"; then
    echo "PASS cuGetProcAddress: identical answers"
else
    echo "FAIL cuGetProcAddress: $(grep -c '^<' "$OUT/procaddr.diff") answers differ"
    head -30 "$OUT/procaddr.diff"
fi
