#!/bin/bash
# Round 17: real GPU/host failures in server/trainer process shapes (sglang, vLLM, torchrun, an accelerate /
# HF-Trainer-style loop, Lightning, JAX, a Triton benchmark, an OpenAI-style server). Every scenario runs under
# `timeout -s KILL` (40 s at most) and writes r17_logs/<name>.log (+ .exit); what it leaves behind (its process
# group) is killed. Phase 1 runs up to $P scenarios at once; phase 2 runs the two heaviest (a TP=2 CUDA-graph
# capture with Triton autotuning, an inductor compile) last. The whole runner ends well inside 400 s.
# The logs are tarred into $OUT. ONLY=regex runs a subset.
cd "$(dirname "$0")"; L=r17_logs; rm -rf $L; mkdir -p $L
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false TOKENIZERS_PARALLELISM=false
P=${P:-8}
T0=$(date +%s)
{ date -u; timeout 60 python3 -c 'import torch; print(torch.cuda.device_count())'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  timeout 60 python3 -c "import torch, triton, jax, transformers, lightning, safetensors; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'jax', jax.__version__, 'transformers', transformers.__version__, 'lightning', lightning.__version__, 'safetensors', safetensors.__version__)"
  nproc; grep MemTotal /proc/meminfo; ulimit -n; } > $L/env.txt 2>&1
cat $L/env.txt
want() { [[ -z $ONLY || $1 =~ $ONLY ]]; }
timeout 90 python3 r17_common.py --prep > $L/prep.txt 2>&1; tail -1 $L/prep.txt

# the job's scratch filesystem for hf_disk_full: one and a half checkpoints fit
SCRATCH=
if want hf_disk_full; then
  mkdir -p /tmp/r17_scratch && mount -t tmpfs -o size=320m tmpfs /tmp/r17_scratch && SCRATCH=/tmp/r17_scratch
  echo "scratch: ${SCRATCH:-none}" | tee -a $L/env.txt
fi

PIDS=()
group_pids() { python3 -c "
import os, sys
for d in os.listdir('/proc'):
    if d.isdigit():
        try:
            if os.getpgid(int(d)) == int(sys.argv[1]): print(d)
        except OSError: pass" $1; }
slot() { while [ "$(jobs -rp | wc -l)" -ge $P ]; do sleep 0.3; done; }
run() {  # run NAME TIMEOUT CMD...: a crash-shaped scenario; what it leaves behind (its process group) is killed
  local n=$1 t=$2; shift 2; want $n || return; slot; echo "== $n $(date +%T)"
  (
    timeout -s KILL $t "$@" > $L/$n.log 2>&1 & tp=$!
    wait $tp; echo "exit=$?" > $L/$n.exit
    sleep 1; kill -KILL -- -$tp 2>/dev/null
  ) & PIDS+=($!)
}
serve() {  # serve NAME SIG MARKER COUNT TIMEOUT CMD...: wait for COUNT marker lines, then the operator's SIG
  local n=$1 sig=$2 mk=$3 cnt=$4 t=$5; shift 5; want $n || return; slot; echo "== $n $(date +%T)"
  (
    setsid timeout --foreground -s KILL $t "$@" > $L/$n.log 2>&1 & pg=$!
    for i in $(seq $((t * 2))); do [ "$(grep -c -- "$mk" $L/$n.log)" -ge $cnt ] && break; sleep 0.5; done
    sleep 1.5
    for p in $(group_pids $pg); do [ "$p" != "$pg" ] && kill -$sig $p 2>/dev/null; done  # not timeout itself
    wait $pg; echo "exit=$?" > $L/$n.exit
    sleep 1; kill -KILL -- -$pg 2>/dev/null
  ) & PIDS+=($!)
}

# ---------------------------------------------------------------- phase 1: side by side
run tr_cuda1_resume 40 torchrun --nproc-per-node 2 --max-restarts 1 --master-port 29951 r17_tr.py --scenario cuda1_resume
run jax_debug_nans 40 python3 r17_jax.py --scenario debug_nans
run pl_monitor_key 40 python3 r17_pl.py --scenario monitor_key
run hf_fd_limit 40 bash -c 'ulimit -n 1024; exec python3 r17_hf.py --scenario fd_limit'
run tr_gather_assert 40 torchrun --nproc-per-node 2 --master-port 29953 r17_tr.py --scenario gather_assert
run tr_healthy_nccl 40 env NCCL_DEBUG=WARN NCCL_ASYNC_ERROR_HANDLING=1 torchrun --nproc-per-node 1 --master-port 29954 r17_tr.py --scenario healthy_nccl
serve oai_grid_y TERM 'POST /v1/completions' 20 40 python3 r17_oai.py --scenario grid_y
serve hf_sigint INT "'loss'" 4 40 python3 r17_hf.py --scenario sigint
run tr_ddp_mismatch 40 torchrun --nproc-per-node 2 --master-port 29952 r17_tr.py --scenario ddp_mismatch
run vllm_missing_shard 40 python3 r17_vllm.py --scenario missing_shard --port 8501
run sg_unknown_model_type 40 python3 r17_sglang.py --scenario unknown_model_type --port 30501
[ -n "$SCRATCH" ] && run hf_disk_full 40 python3 r17_hf.py --scenario disk_full --out $SCRATCH/sft-qwen2.5-0.5b
run hf_device_mismatch 40 python3 r17_hf.py --scenario device_mismatch
run tri_splitk_atomic 40 env TRITON_PRINT_AUTOTUNING=1 python3 r17_triton.py --scenario splitk_atomic
run jax_xla_flags 30 env PYTHONFAULTHANDLER=1 XLA_FLAGS="--xla_gpu_enable_latency_hiding_scheduler=true --xla_gpu_enable_async_all_gather=true --xla_gpu_enable_async_reduce_scatter=true --xla_gpu_enable_triton_gemm=false" python3 r17_jax.py --scenario xla_flags
wait "${PIDS[@]}"
echo "phase 1 done after $(( $(date +%s) - T0 )) s"

# ---------------------------------------------------------------- phase 2: the two heaviest, last
PIDS=()
run sg_autotune_capture 40 python3 r17_sglang.py --scenario autotune_capture --port 30502
run hf_reduce_overhead 40 python3 r17_hf.py --scenario reduce_overhead
wait "${PIDS[@]}"
echo "phase 2 done after $(( $(date +%s) - T0 )) s"
for f in $L/*.log; do n=${f%.log}; echo "## $(basename $n) $(cat $n.exit 2>/dev/null) lines=$(wc -l < $f)"; done
[ -n "$SCRATCH" ] && umount $SCRATCH 2>/dev/null
tar czf "${OUT:-/tmp}/r17-logs.tgz" $L
