#!/usr/bin/env bash
# Bounded fuzzing of the ivshmem region table and doorbell protocol, and of
# the shared-memory rings under a peer that forges their indices.
#
#   crates/transport/fuzz/run.sh SECONDS [TARGET...]
#
# Runs each target (default: ivshmem shm_ring) for SECONDS seconds with
# scripts/fuzz-run.sh (which says what it needs and does).
set -euo pipefail

[[ $# -ge 1 && $1 =~ ^[0-9]+$ ]] || { echo "usage: $0 SECONDS [TARGET...]" >&2; exit 2; }
seconds=$((10#$1))
shift
targets=("$@")
((${#targets[@]})) || targets=(ivshmem shm_ring)
fuzz_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
exec "$fuzz_dir/../../../scripts/fuzz-run.sh" "$fuzz_dir" "$seconds" "-max_len=16384" "${targets[@]}"
