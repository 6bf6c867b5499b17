#!/bin/bash
# Each scenario's output as a server log; all logs come back in one tarball.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cd "$(dirname "$0")"; mkdir -p logs
run() { name=$1; shift; echo "== $name"; timeout 180 "$@" > logs/$name.log 2>&1; echo "exit=$?" >> logs/$name.exit; tail -3 logs/$name.log; }
nvidia-smi -L; python3 -c 'import torch; print(torch.__version__, torch.cuda.get_device_name())'
run cuda_oom python3 oom.py
run device_assert python3 assert.py
run illegal_address python3 illegal.py
run graph_capture_sync python3 graph.py
run graph_capture_oom python3 graph_oom.py
run invalid_ordinal python3 ordinal.py
nvcc -arch=sm_70 -o noimage noimage.cu 2> logs/nvcc.err && run no_kernel_image ./noimage
run triton_smem python3 smem.py
run torchrun_child_failed torchrun --nproc-per-node 2 --master-port 29511 dist_fail.py
run gloo_mismatch torchrun --nproc-per-node 2 --master-port 29512 gloo_mismatch.py
run nccl_duplicate_gpu torchrun --nproc-per-node 2 --master-port 29513 nccl_dup.py
run rendezvous_timeout python3 rdzv.py
run cupy_oom python3 cupy_oom.py
run jax_oom python3 jax_oom.py
run healthy python3 healthy.py
tar czf "$OUT/gpu-logs.tgz" logs
