#!/usr/bin/env bash
# Bounded fuzzing of the ivshmem region table and doorbell protocol.
#
#   crates/transport/fuzz/run.sh SECONDS
#
# Needs `cargo +nightly` and cargo-fuzz; without them it says fuzzing is
# skipped and exits 0 (the corpus replay test still runs:
# `cargo test -p vgpu-transport --test ivshmem_corpus`). New inputs go to a
# scratch directory; a crash leaves its input under artifacts/ivshmem/.
set -euo pipefail

[[ $# -eq 1 && $1 =~ ^[0-9]+$ ]] || { echo "usage: $0 SECONDS" >&2; exit 2; }
seconds=$((10#$1))
fuzz_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzzing skipped: no nightly toolchain with cargo-fuzz."
    echo "The corpus replay covers the target: cargo test -p vgpu-transport --test ivshmem_corpus"
    exit 0
fi
scratch=$(mktemp -d)
trap 'rm -rf -- "$scratch"' EXIT
cd -- "$fuzz_dir/.."
cargo +nightly fuzz run --fuzz-dir "$fuzz_dir" ivshmem "$scratch" "$fuzz_dir/corpus/ivshmem" -- \
    -max_total_time="$seconds" -max_len=16384 -timeout=10
echo "fuzzing done: ivshmem, ${seconds}s, no crash"
