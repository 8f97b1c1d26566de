#!/usr/bin/env bash
# The bounded fuzzing loop every crate's fuzz/run.sh calls:
#
#   scripts/fuzz-run.sh FUZZ_DIR SECONDS "LIBFUZZER FLAGS" TARGET...
#
# Runs each TARGET of the cargo-fuzz folder FUZZ_DIR for SECONDS seconds,
# seeded from FUZZ_DIR/corpus/<target>/. New inputs go to a scratch
# directory, not to the committed corpus; a crash leaves its input under
# artifacts/<target>/ and makes the script exit non-zero. Needs `cargo
# +nightly` and cargo-fuzz: without them it FAILS (exit 3), so that CI
# cannot pass without fuzzing (.ci/run installs them).
set -euo pipefail

fuzz_dir=$1 seconds=$2 flags=$3
shift 3
targets=("$@")
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
    # shellcheck disable=SC2086 # the flags are words
    cargo +nightly fuzz run --fuzz-dir "$fuzz_dir" "$target" \
        "$scratch/$target" "$fuzz_dir/corpus/$target" -- \
        -max_total_time="$seconds" -timeout=10 $flags
done
echo "fuzzing done: ${targets[*]}, ${seconds}s each, no crash"
