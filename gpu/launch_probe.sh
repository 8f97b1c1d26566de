#!/usr/bin/env bash
# Where a launch's time goes through vgpu, and A/B comparisons of builds on
# one machine (docs/bench.md, "What bounds the launch figures"). Modes, each
# run natively and then through every entry of BUILDS in every round, so
# that the host's drift falls on all of them alike:
#   launch 200,000   empty-kernel launches from one thread (launch_1t)
#   launch 20,000    the same, fitting in a lane's ring: the per-call time is
#                    what posting a launch costs the application
#   launch_sync      launch + synchronize latency
#   sync_idle        synchronize of an idle stream: one round trip
# MODES (';'-separated vgpu_bench arguments) picks others.
# BUILDS (default "dist"): staged folders with bin/vgpu-mediator and
# lib/libvgpu-cuda.so (e.g. an older build staged as dist-base), each
# optionally followed by ":NAME=VALUE,..." settings for its mediator and
# client (e.g. "dist:VGPU_RING_YIELD_US=0"); each entry gets a mediator of
# its own. The mediators run with VGPU_LANE_PROFILE (docs/config.md): each
# lane's split of its time is printed after the rounds.
# VGPU_E2E_DRIVER=$PWD/dist/lib/libvgpu-sim.so puts the simulated device
# behind the mediators: vgpu's own cost on this machine's CPUs.
#   OUT=dir [ROUNDS=3] [BUILDS="dist dist-base"] [MODES=...] gpu/launch_probe.sh   (after gpu/stage.sh)
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/launch-probe-out}
ROUNDS=${ROUNDS:-3}
BUILDS=${BUILDS:-dist}
mkdir -p "$OUT"
DRIVER=${VGPU_E2E_DRIVER:-/usr/local/nvidia/lib64/libcuda.so.1}
WORK=$(mktemp -d)
MEDS=()
trap 'kill "${MEDS[@]}" 2>/dev/null; rm -rf "$WORK"' EXIT
cc -std=c11 -O2 -pthread -o "$WORK/vb" gpu/bench/vgpu_bench.c -ldl
{
    lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA node)'
    echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
} | tee "$OUT/cpus.txt"

read -ra ENTRIES <<<"$BUILDS"
# Entry i's folder and settings.
dir_of() { echo "${ENTRIES[$1]%%:*}"; }
settings_of() { [[ ${ENTRIES[$1]} == *:* ]] && echo "${ENTRIES[$1]#*:}" | tr , ' '; }
for i in "${!ENTRIES[@]}"; do
    b=$(dir_of "$i")
    mkdir -p "$WORK/lib$i"
    ln -s "$PWD/$b/lib/libvgpu-cuda.so" "$WORK/lib$i/libcuda.so.1"
    # shellcheck disable=SC2046
    env $(settings_of "$i") VGPU_LANE_PROFILE=1 "$b/bin/vgpu-mediator" --listen "unix:$WORK/$i.sock" \
        --driver "$DRIVER" --log "$OUT/mediator-$i.log" >/dev/null 2>&1 &
    MEDS+=($!)
done
for i in "${!ENTRIES[@]}"; do
    for _ in $(seq 100); do [[ -S $WORK/$i.sock ]] && break; sleep 0.1; done
done

# The figure line of a run, with the per-thread timing line of launch runs.
figures() { grep -E '^(launch|sync_idle|# thread|# launch call)' | sed 's/^# thread 0: /[/; s/ in cuStreamSynchronize/]/; s/^# launch call \(.*\) median/[call \1]/' | tr '\n' ' '; }
MODES=${MODES:-launch -t 1 -n 200000 -w 2000;launch -t 1 -n 20000 -w 2000;launch_sync -n 20000 -w 200;sync_idle -n 20000 -w 200}
IFS=';' read -ra MODE_LIST <<<"$MODES"
for r in $(seq "$ROUNDS"); do
    for mode in "${MODE_LIST[@]}"; do
        # shellcheck disable=SC2086
        line="round $r ${mode%% *}: native $("$WORK/vb" $mode | figures)"
        for i in "${!ENTRIES[@]}"; do
            # shellcheck disable=SC2046,SC2086
            line+=" | ${ENTRIES[$i]} $(env $(settings_of "$i") VGPU_MEDIATOR="unix:$WORK/$i.sock" LD_LIBRARY_PATH="$WORK/lib$i" "$WORK/vb" $mode | figures)"
        done
        echo "$line"
    done
done | tee "$OUT/probe.txt"
kill "${MEDS[@]}" 2>/dev/null
wait 2>/dev/null
for i in "${!ENTRIES[@]}"; do
    echo "== lane profiles, ${ENTRIES[$i]}"
    grep -h "lane profile" "$OUT/mediator-$i.log" | grep -Ev "requests=[0-9]{1,2} " | sed 's/^.*lane profile/  lane/'
done | tee -a "$OUT/probe.txt"
