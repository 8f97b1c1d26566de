#!/usr/bin/env bash
# Facts about the host's NVML for the NVML library: where libnvidia-ml.so.1
# lives, every symbol it exports, how nvidia-smi loads it, and nvidia-smi's
# own output, as one archive: $OUT/nvml-facts.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/nvml-facts-out}
dir=$OUT/nvml-facts
mkdir -p "$dir"
lib=$(ldconfig -p | awk '/libnvidia-ml.so.1 /{print $NF; exit}')
[[ -n $lib ]] || lib=$(ls /usr/local/nvidia/lib64/libnvidia-ml.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 2>/dev/null | head -1)
echo "library: $lib -> $(readlink -f "$lib")" >"$dir/where.txt"
smi=$(command -v nvidia-smi)
echo "nvidia-smi: $smi" >>"$dir/where.txt"
ldd "$smi" >>"$dir/where.txt" 2>&1
(nm -D --defined-only "$lib" 2>/dev/null || readelf -W --dyn-syms "$lib" 2>/dev/null) >"$dir/exports.txt"
strings -a "$smi" 2>/dev/null | grep -E '^nvml[A-Z]' | sort -u >"$dir/smi-strings.txt"
nvidia-smi >"$dir/smi.txt" 2>&1
nvidia-smi -q >"$dir/smi-q.txt" 2>&1
LD_DEBUG=libs nvidia-smi -L >"$dir/smi-ld-debug.txt" 2>&1
tar czf "$OUT/nvml-facts.tgz" -C "$OUT" nvml-facts && rm -rf "$dir"
