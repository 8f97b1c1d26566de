#!/usr/bin/env bash
# Bounded fuzzing of the vgpu-proto decoders (style.md section 11).
#
#   crates/proto/fuzz/run.sh SECONDS
#
# Runs each fuzz target (request, response, hello, welcome) for SECONDS
# seconds with scripts/fuzz-run.sh (which says what it needs and does). The
# corpus replay test (`cargo test -p vgpu-proto --test corpus_replay`) runs
# every corpus input through the same decoders on the stable toolchain too.
set -euo pipefail

[[ $# -eq 1 && $1 =~ ^[0-9]+$ ]] && ((10#$1 > 0)) || {
    echo "usage: $0 SECONDS   (fuzz each vgpu-proto decoder for SECONDS seconds)" >&2
    exit 2
}
fuzz_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
exec "$fuzz_dir/../../../scripts/fuzz-run.sh" "$fuzz_dir" "$((10#$1))" "-max_len=8192" \
    request response hello welcome
