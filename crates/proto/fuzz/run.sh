#!/usr/bin/env bash
# Bounded fuzzing of the vgpu-proto decoders (style.md section 11).
#
#   crates/proto/fuzz/run.sh SECONDS
#
# Runs each fuzz target (request, response, hello, welcome) for SECONDS
# seconds, seeded from the committed corpus in corpus/<target>/. New inputs go
# to a scratch directory, not to the committed corpus; a crash leaves its
# input under artifacts/<target>/ and makes the script exit non-zero.
#
# Needs `cargo +nightly` and cargo-fuzz (`cargo install cargo-fuzz`): without
# them it FAILS (exit 3), so that CI cannot pass without fuzzing (.ci/run
# installs them). The corpus replay test (`cargo test -p vgpu-proto --test
# corpus_replay`) runs every corpus input through the same decoders on the
# stable toolchain as well.
set -euo pipefail

usage() {
    echo "usage: $0 SECONDS   (fuzz each vgpu-proto decoder for SECONDS seconds)" >&2
    exit 2
}

[[ $# -eq 1 ]] || usage
seconds=$1
[[ $seconds =~ ^[0-9]+$ ]] && ((10#$seconds > 0)) || usage
seconds=$((10#$seconds))

targets=(request response hello welcome)
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

# cargo-fuzz finds fuzz/ under the crate it is run from.
cd -- "$fuzz_dir/.."
for target in "${targets[@]}"; do
    echo "== fuzzing $target for ${seconds}s"
    mkdir -p -- "$scratch/$target"
    # The first corpus directory receives new inputs; the committed one only seeds.
    cargo +nightly fuzz run --fuzz-dir "$fuzz_dir" "$target" \
        "$scratch/$target" "$fuzz_dir/corpus/$target" -- \
        -max_total_time="$seconds" -max_len=8192 -timeout=10
done
echo "fuzzing done: ${#targets[@]} targets, ${seconds}s each, no crash"
