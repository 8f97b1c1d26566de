set -u
O=$OUT
SOCK=/tmp/p2.sock
dist/bin/vgpu-mediator --listen unix:$SOCK --driver /usr/local/nvidia/lib64/libcuda.so.1 --log $O/mediator.log >/dev/null 2>&1 &
MED=$!
for _ in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.1; done
echo "== nvidia-smi via vgpu NVML"
VGPU_MEDIATOR=unix:$SOCK VGPU_LOG=$O/nvml.log LD_LIBRARY_PATH=$PWD/dist/nvml:$PWD/dist/lib:$LD_LIBRARY_PATH timeout 60 nvidia-smi 2>&1 | head -30
grep -v "connected to" $O/nvml.log | sort | uniq -c | sort -rn | head -30
cc -std=c11 -O2 -pthread -o /tmp/md tests/c/multi_device.c -ldl
echo "== multi_device native"; timeout 60 /tmp/md | grep -v "^ok"
echo "== multi_device vgpu"; VGPU_MEDIATOR=unix:$SOCK LD_LIBRARY_PATH=$PWD/dist/lib:$LD_LIBRARY_PATH timeout 60 /tmp/md | grep -v "^ok"
for cvd in 0 ""; do
  echo "== torch_ipc vgpu CUDA_VISIBLE_DEVICES=$cvd"
  if [ -n "$cvd" ]; then export CUDA_VISIBLE_DEVICES=$cvd; else unset CUDA_VISIBLE_DEVICES; fi
  VGPU_MEDIATOR=unix:$SOCK VGPU_LOG=$O/ipc.$cvd.log LD_LIBRARY_PATH=$PWD/dist/lib:$LD_LIBRARY_PATH timeout 60 python3 gpu/torch_ipc.py 2>&1 | tail -4
done
unset CUDA_VISIBLE_DEVICES
echo "== native torch_ipc"; timeout 60 python3 gpu/torch_ipc.py 2>&1 | tail -2
tail -5 $O/ipc..log 2>/dev/null
kill $MED
echo "== samples"; VGPU_EXT_SUITES=samples VGPU_EXT_BUDGET=120 timeout 150 bash dist/ext-suites/run.sh dist $O/ext >/dev/null 2>&1; grep -A3 "^suite\|samples" $O/ext/summary.txt | head -12
