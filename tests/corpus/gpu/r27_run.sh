#!/bin/bash
# Round 27: real GPU/host failures in other process shapes: vLLM's front end on a tokenizer.model that is a git-lfs
# pointer, a vLLM engine core whose torch.distributed port a leftover process holds, a vLLM server answering 400 to
# cut json_schema strings and serving on, an fp8 KV cache read by an eager attention path without dequantization;
# sglang's scheduler on a model_type newer than transformers, TP=2 over a checkpoint sharded for TP=4, a healthy
# sglang server answering 400 to a stop regex that does not compile; torchrun restarting a worker group whose
# rank 1 has no data shard, a monitored_barrier that rank 1 misses, NCCL forced onto IB with no IB device; an
# accelerate-style loop backpropagating twice through a cached prefix, BCE under autocast, a DataLoader worker's
# glibc abort (double free), GPyTorch's Cholesky on a diverged GP, a JAX `if` on a tracer, pmap over 2 devices on
# one GPU, a Triton tile sweep skipping configs over shared memory (finishes), a checkpoint save that fails and is
# skipped (finishes), accelerate's fp8 mixed precision, a recursive CuPy kernel on deep trees.
# Every scenario runs under `timeout -s KILL` and writes r27_logs/<name>.log (+ .exit); what it leaves behind (its
# process group) is killed.
# Usage (on the device machine, from the repository root):
#   bash tests/corpus/gpu/r27_run.sh        # writes tests/corpus/gpu/r27_logs/ and tars it to $OUT/r27-logs.tgz
#   ONLY='regex' bash tests/corpus/gpu/r27_run.sh   # only the scenarios whose name matches
cd "$(dirname "$0")"; L=r27_logs; rm -rf $L; mkdir -p $L
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
unset CUBLAS_WORKSPACE_CONFIG TRITON_CACHE_DIR PYTORCH_CUDA_ALLOC_CONF CUDA_LAUNCH_BLOCKING PYTHONFAULTHANDLER \
  MASTER_ADDR MASTER_PORT RANK WORLD_SIZE NODE_RANK SHAPES_DRY NCCL_NET NCCL_DEBUG
P=${P:-10}
T0=$(date +%s)
{ date -u; timeout 60 python3 -c 'import torch; print("device_count", torch.cuda.device_count())'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  timeout 90 python3 -c "import sys, torch, triton, jax, cupy, transformers, accelerate; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'jax', jax.__version__, 'cupy', cupy.__version__, 'transformers', transformers.__version__, 'accelerate', accelerate.__version__)"
  timeout 60 python3 -c "import gpytorch, optax, sentencepiece; print('gpytorch', gpytorch.__version__)"
  nproc; grep MemTotal /proc/meminfo; } > $L/env.txt 2>&1 &
ENVJOB=$!
want() { [[ -z $ONLY || $1 =~ $ONLY ]]; }
kids() { python3 -c "
import os, sys
for d in os.listdir('/proc'):
    if d.isdigit():
        try:
            st = open(f'/proc/{d}/stat').read().rsplit(')', 1)[1].split()
            if st[1] == sys.argv[1]: print(d)
        except OSError: pass" $1; }
PIDS=()
slot() { while [ "$(jobs -rp | wc -l)" -ge $P ]; do sleep 0.3; done; }
run() {
  local n=$1 t=$2; shift 2; want $n || return; slot; echo "== $n $(date +%T)"
  (
    setsid timeout -s KILL $t "$@" > $L/$n.log 2>&1 & pg=$!
    wait $pg; echo "exit=$?" > $L/$n.exit
    sleep 1; kill -KILL -- -$pg 2>/dev/null
  ) & PIDS+=($!)
}
stop() {  # stop NAME SIG MARKER COUNT TIMEOUT CMD...
  local n=$1 sig=$2 mk=$3 cnt=$4 t=$5; shift 5; want $n || return; slot; echo "== $n $(date +%T)"
  (
    setsid timeout --foreground -s KILL $t "$@" > $L/$n.log 2>&1 & pg=$!
    for i in $(seq $((t * 2))); do
      [ "$(grep -c -- "$mk" $L/$n.log)" -ge $cnt ] && break
      kill -0 $pg 2>/dev/null || break
      sleep 0.5
    done
    sleep 2.5
    for p in $(kids $pg); do kill -$sig $p 2>/dev/null; done
    wait $pg; echo "exit=$?" > $L/$n.exit
    sleep 1; kill -KILL -- -$pg 2>/dev/null
  ) & PIDS+=($!)
}
HOLD='import socket, sys, time
p = int(sys.argv[1])
try:
    s = socket.create_server(("", p), family=socket.AF_INET6, dualstack_ipv6=True)
except OSError:
    s = socket.create_server(("0.0.0.0", p))
time.sleep(600)'

wait $ENVJOB
timeout 120 python3 r27_common.py --prep > $L/prep.txt 2>&1; cat $L/prep.txt

run vllm_spm_tokenizer 90 python3 r27_vllm.py --scenario spm_tokenizer --port 8971
run vllm_dist_port 100 bash -c "python3 -c '$HOLD' 29571 & sleep 1.5; export VLLM_PORT=29571; exec python3 r27_vllm.py --scenario dist_port --port 8972"
stop vllm_json_schema TERM '400 Bad Request' 2 120 python3 r27_vllm.py --scenario json_schema --port 8973
run vllm_fp8_kv 100 python3 r27_vllm.py --scenario fp8_kv --port 8974
run sg_unknown_arch 100 python3 r27_sglang.py --scenario unknown_arch --port 30971
run sg_tp4_shards 100 python3 r27_sglang.py --scenario tp4_shards --port 30972 --tp 2
stop sg_stop_regex TERM '400 Bad Request' 2 120 python3 r27_sglang.py --scenario stop_regex --port 30973
run tr_restart 150 torchrun --nproc-per-node 2 --max-restarts 1 --master-port 29871 r27_tr.py --scenario restart
run tr_monitored_barrier 120 torchrun --nproc-per-node 2 --master-port 29872 r27_tr.py --scenario monitored_barrier
run tr_nccl_net 100 env NCCL_NET=IB NCCL_DEBUG=WARN torchrun --nproc-per-node 1 --master-port 29873 r27_tr.py --scenario nccl_net
for s in hf_backward_twice hf_bce_autocast hf_dataloader_abort gp_notpsd jax_tracer_bool jax_pmap triton_pruned ckpt_retry accel_fp8 cupy_stack; do
  run $s 120 python3 r27_misc.py --scenario $s
done
[ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}"
echo "all done after $(( $(date +%s) - T0 )) s"

cat $L/env.txt
for f in $L/*.log; do n=${f%.log}; echo "## $(basename $n) $(cat $n.exit 2>/dev/null) lines=$(wc -l < $f)"; done
tar czf "${OUT:-/tmp}/r27-logs.tgz" $L
