#!/usr/bin/env bash
# 2-rank DDP through vgpu only, traced, with NCCL_DEBUG=INFO: what failed and
# where, when gpu/multi_gpu.sh reports a ddp failure. Writes under $OUT.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 NCCL_DEBUG=INFO
SOCK=/tmp/vgpu-d.sock
dist/bin/vgpu-mediator --listen unix:$SOCK --driver "${VGPU_E2E_DRIVER:-/usr/local/nvidia/lib64/libcuda.so.1}" --log $OUT/mediator.log >/dev/null 2>&1 &
for _ in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.1; done
pids=()
for r in 1 0; do
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29700 VGPU_TRACE=$OUT/trace.$r VGPU_LOG=$OUT/client.$r LD_LIBRARY_PATH=$PWD/dist/lib:${LD_LIBRARY_PATH:-} VGPU_MEDIATOR=unix:$SOCK timeout 120 python3 gpu/multi_gpu.py ddp $r 2 > $OUT/ddp$r.out 2> $OUT/ddp$r.err &
  pids+=($!)
done
wait "${pids[@]}"
kill %1 2>/dev/null
for r in 0 1; do [ -f $OUT/trace.$r ] && grep -v " -> 0 " $OUT/trace.$r | grep -v '^ \|^==' | tail -15; rm -f $OUT/trace.$r; done
grep -h "NCCL WARN\|Error" $OUT/ddp0.out $OUT/ddp0.err | tail -40
