#!/usr/bin/env bash
# Whether a busy CPU slows the driver's launches on another: the native
# empty-kernel launch rate of one thread on CPU $HOME_CPU (default 2), alone,
# then beside a busy loop on each other CPU in turn. A CPU whose busy loop
# costs much more than the others shares a physical core (or its power
# budget) with $HOME_CPU below the virtual machine, which a guest's
# topology does not show. vgpu's client and worker are two busy threads
# where a native program is one, so this bounds what placement costs it.
#   OUT=dir gpu/neighbours.sh        (needs only the driver and a C compiler)
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/neighbours-out}
HOME_CPU=${HOME_CPU:-2}
mkdir -p "$OUT"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cc -std=c11 -O2 -pthread -o "$WORK/vb" gpu/bench/vgpu_bench.c -ldl
rate() { ${AS:-} taskset -c "$HOME_CPU" "$WORK/vb" launch -t 1 -n 100000 -w 2000 | sed -n 's/^launch_1t \([0-9.]*\).*/\1/p'; }
{
    echo "alone: $(rate) $(rate) launches/s"
    for cpu in $(seq 0 $(($(nproc) - 1))); do
        [[ $cpu == "$HOME_CPU" ]] && continue
        taskset -c "$cpu" sh -c 'while :; do :; done' &
        spin=$!
        echo "busy CPU $cpu: $(rate) $(rate) launches/s"
        kill "$spin"
        wait "$spin" 2>/dev/null
    done
    echo "alone: $(rate) $(rate) launches/s"
    # A worker runs as an unprivileged user: does the driver care?
    chmod 0755 "$WORK" "$WORK/vb"
    echo "alone, as nobody: $(AS='setpriv --reuid=65534 --regid=65534 --clear-groups' rate) launches/s"
} 2>&1 | tee "$OUT/neighbours.txt"
