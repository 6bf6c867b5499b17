#!/bin/bash
# Third batch: each scenario's output as a server log; all logs come back in one tarball.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cd "$(dirname "$0")"; mkdir -p logs
run() { name=$1; shift; echo "== $name"; timeout 150 "$@" > logs/$name.log 2>&1; echo "exit=$?" >> logs/$name.exit; tail -2 logs/$name.log | cut -c1-200; }
run nll_target_assert python3 nll_assert.py
run nccl_bad_socket_ifname env NCCL_SOCKET_IFNAME=nosuchif0 python3 nccl_iface.py
run cublas_handle_oom python3 cublas_oom.py
run torchrun_child_segv torchrun --nproc-per-node 2 --master-port 29532 segv.py
tar czf "$OUT/gpu-logs3.tgz" logs
