#!/usr/bin/env bash
# Bounded fuzzing of the mediator: the supervisor's handshake reader and the
# worker's handling of decoded requests.
#
#   crates/mediator/fuzz/run.sh SECONDS [TARGET...]
#
# Runs each target (default: handshake worker_requests) for SECONDS seconds
# with scripts/fuzz-run.sh (which says what it needs and does). Leak
# detection is off: the worker's target releases what each input made
# itself, and libFuzzer's RSS limit catches growth.
set -euo pipefail

[[ $# -ge 1 && $1 =~ ^[0-9]+$ ]] || { echo "usage: $0 SECONDS [TARGET...]" >&2; exit 2; }
seconds=$((10#$1))
shift
targets=("$@")
((${#targets[@]})) || targets=(handshake worker_requests)
fuzz_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# The worker's target drives the simulated device (a test double), built
# by the stable toolchain as the tests build it.
repo=$(cd -- "$fuzz_dir/../../.." && pwd)
(cd -- "$repo" && cargo build -p vgpu-sim)
export VGPU_FUZZ_SIM="${CARGO_TARGET_DIR:-$repo/target}/debug/libvgpu_sim.so"
[[ -f $VGPU_FUZZ_SIM ]] || { echo "error: $VGPU_FUZZ_SIM was not built" >&2; exit 1; }
exec "$repo/scripts/fuzz-run.sh" "$fuzz_dir" "$seconds" "-max_len=16384 -detect_leaks=0" "${targets[@]}"
