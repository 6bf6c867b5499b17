#!/bin/bash
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cd "$(dirname "$0")"; mkdir -p logs
run() { name=$1; shift; echo "== $name"; timeout 150 "$@" > logs/$name.log 2>&1; echo "exit=$?" >> logs/$name.exit; tail -2 logs/$name.log | cut -c1-200; }
nvcc -gencode arch=compute_80,code=sm_80 -o noimage noimage.cu && run no_kernel_image ./noimage
run gloo_timeout torchrun --nproc-per-node 2 --master-port 29521 gloo_timeout.py
run no_cuda_gpus env CUDA_VISIBLE_DEVICES= python3 no_gpus.py
run missing_module python3 missing_module.py
run jit_build_failed python3 jit_build.py
run host_memory_error bash -c 'ulimit -v 8000000; exec python3 host_mem.py'
tar czf "$OUT/gpu-logs2.tgz" logs
