#!/usr/bin/env bash
# Build vgpu in release mode on this (build) machine and stage dist/ for a GPU
# machine, which has no Rust toolchain:
#
#   dist/bin/{vgpu, vgpu-mediator, vector_add_driver}
#   dist/lib/{libvgpu-cuda.so, libcuda.so.1 -> libvgpu-cuda.so,
#             libcuda.so -> libvgpu-cuda.so, libvgpu-sim.so, libvgpu-nvml.so}
#   dist/nvml/{libnvidia-ml.so.1, libnvidia-ml.so} -> ../lib/libvgpu-nvml.so
#             (a folder of its own: only runs that put it on LD_LIBRARY_PATH,
#             such as gpu/nvml.sh, use vgpu's NVML)
#   dist/gpu/   the GPU test scripts and programs
#
# Binaries are stripped so dist/ stays small (well under 64 MiB).
#
#   gpu/stage.sh            then, on the GPU machine:   gpu/e2e.sh
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."

cargo build --release -p vgpu-cli -p vgpu-client -p vgpu-mediator -p vgpu-sim -p vgpu-nvml
target=$(cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/release

rm -rf dist
mkdir -p dist/bin dist/lib dist/gpu dist/nvml
install -m 0755 "$target/vgpu" "$target/vgpu-mediator" dist/bin/
install -m 0755 "$target/libvgpu_cuda.so" dist/lib/libvgpu-cuda.so
install -m 0755 "$target/libvgpu_sim.so" dist/lib/libvgpu-sim.so
install -m 0755 "$target/libvgpu_nvml.so" dist/lib/libvgpu-nvml.so
ln -s ../lib/libvgpu-nvml.so dist/nvml/libnvidia-ml.so.1
ln -s ../lib/libvgpu-nvml.so dist/nvml/libnvidia-ml.so
ln -s libvgpu-cuda.so dist/lib/libcuda.so.1
ln -s libvgpu-cuda.so dist/lib/libcuda.so
cc -std=c11 -O2 -Wall -o dist/bin/vector_add_driver gpu/vector_add_driver.c -ldl

# --strip-unneeded keeps the dynamic symbol table the loader needs.
strip --strip-unneeded dist/bin/* dist/lib/libvgpu-cuda.so dist/lib/libvgpu-sim.so \
    dist/lib/libvgpu-nvml.so

cp -rL gpu/* dist/gpu/

echo "staged dist/ ($(du -sh dist | cut -f1)):"
find dist -mindepth 2 | sort | sed 's/^/  /'
