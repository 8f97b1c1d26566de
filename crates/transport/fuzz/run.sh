#!/usr/bin/env bash
# Bounded fuzzing of the ivshmem region table and doorbell protocol, and of
# the shared-memory rings under a peer that forges their indices.
#
#   crates/transport/fuzz/run.sh SECONDS [TARGET...]
#
# Runs each target (default: ivshmem shm_ring) for SECONDS seconds, seeded
# from corpus/<target>/. New inputs go to a scratch directory; a crash
# leaves its input under artifacts/<target>/ and makes the script exit
# non-zero. Needs `cargo +nightly` and cargo-fuzz: without them it FAILS
# (exit 3), so that CI cannot pass without fuzzing (.ci/run installs them).
set -euo pipefail

[[ $# -ge 1 && $1 =~ ^[0-9]+$ ]] || { echo "usage: $0 SECONDS [TARGET...]" >&2; exit 2; }
seconds=$((10#$1))
shift
targets=("$@")
((${#targets[@]})) || targets=(ivshmem shm_ring)
fuzz_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "error: no nightly toolchain (cargo +nightly): cannot fuzz (rustup toolchain install nightly)" >&2
    exit 3
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "error: cargo-fuzz is not installed: cannot fuzz (cargo install --locked cargo-fuzz)" >&2
    exit 3
fi
scratch=$(mktemp -d)
trap 'rm -rf -- "$scratch"' EXIT
cd -- "$fuzz_dir/.."
for target in "${targets[@]}"; do
    echo "== fuzzing $target for ${seconds}s"
    mkdir -p -- "$scratch/$target"
    cargo +nightly fuzz run --fuzz-dir "$fuzz_dir" "$target" "$scratch/$target" "$fuzz_dir/corpus/$target" -- \
        -max_total_time="$seconds" -max_len=16384 -timeout=10
done
echo "fuzzing done: ${targets[*]}, ${seconds}s each, no crash"
