#!/bin/bash
# Round 19: real GPU/host failures in server/trainer process shapes (vLLM API server + EngineCore, sglang
# launcher + schedulers, torchrun, an HF/accelerate loop, a JAX multi-host start). Every scenario runs under
# `timeout -s KILL` and writes r19_logs/<name>.log (+ .exit); what it leaves behind (its process group) is
# killed. Phase A runs up to $P scenarios at once; phase B runs the ones that take most of the card's memory
# one at a time. The logs are tarred into $OUT. ONLY=regex runs a subset.
cd "$(dirname "$0")"; L=r19_logs; rm -rf $L; mkdir -p $L
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false TOKENIZERS_PARALLELISM=false
P=${P:-10}
T0=$(date +%s)
{ date -u; timeout 60 python3 -c 'import torch; print(torch.cuda.device_count())'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  timeout 60 python3 -c "import torch, triton, jax, cupy, pydantic, tokenizers, accelerate; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'jax', jax.__version__, 'cupy', cupy.__version__, 'pydantic', pydantic.VERSION, 'tokenizers', tokenizers.__version__, 'accelerate', accelerate.__version__)"
  nproc; grep MemTotal /proc/meminfo; } > $L/env.txt 2>&1
cat $L/env.txt
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
run() {  # run NAME TIMEOUT CMD...: a crash-shaped scenario; what it leaves behind (its process group) is killed
  local n=$1 t=$2; shift 2; want $n || return; slot; echo "== $n $(date +%T)"
  (
    setsid timeout -s KILL $t "$@" > $L/$n.log 2>&1 & pg=$!
    wait $pg; echo "exit=$?" > $L/$n.exit
    sleep 1; kill -KILL -- -$pg 2>/dev/null
  ) & PIDS+=($!)
}
serve() {  # serve NAME MARKER COUNT TIMEOUT CMD...: wait for COUNT marker lines, then SIGTERM to the main process
  local n=$1 mk=$2 cnt=$3 t=$4; shift 4; want $n || return; slot; echo "== $n $(date +%T)"
  (
    setsid timeout --foreground -s KILL $t "$@" > $L/$n.log 2>&1 & pg=$!
    for i in $(seq $((t * 2))); do [ "$(grep -c -- "$mk" $L/$n.log)" -ge $cnt ] && break; sleep 0.5; done
    sleep 1.5
    for p in $(kids $pg); do kill -TERM $p 2>/dev/null; done  # the operator's SIGTERM, to the main process only
    wait $pg; echo "exit=$?" > $L/$n.exit
    sleep 1; kill -KILL -- -$pg 2>/dev/null
  ) & PIDS+=($!)
}

# ---- phase A
run tr_nccl_watchdog 90 env TORCH_NCCL_ASYNC_ERROR_HANDLING=1 torchrun --nproc-per-node 2 --master-port 29971 r19_tr.py --scenario nccl_watchdog
run sg_watchdog 100 python3 r19_sglang.py --scenario watchdog --port 30901
run tr_int32_offsets 75 torchrun --nproc-per-node 2 --master-port 29972 r19_tr.py --scenario int32_offsets
run vllm_stream_unjoined 75 python3 r19_vllm.py --scenario stream_unjoined --port 8901
run vllm_mxfp8_gemm 75 python3 r19_vllm.py --scenario mxfp8_gemm --port 8902
run vllm_lora_rank 75 python3 r19_vllm.py --scenario lora_rank --port 8903
run sg_launch_oor 75 python3 r19_sglang.py --scenario launch_oor --port 30902
run sg_ipc_same_process 75 python3 r19_sglang.py --scenario ipc_same_process --port 30903
run sg_chat_template 60 python3 r19_sglang.py --scenario chat_template --port 30904
run vllm_quant_capability 50 python3 r19_vllm.py --scenario quant_capability --port 8904
run vllm_kv_role_typo 50 python3 r19_vllm.py --scenario kv_role_typo --port 8905
run vllm_tokenizer_truncated 50 python3 r19_vllm.py --scenario tokenizer_truncated --port 8906
run jax_coord_timeout 60 python3 r19_jax.py --scenario coord_timeout --port 12377
run hf_fp16_unscale 75 python3 r19_hf.py --scenario fp16_unscale
run hf_healthy_warnings 120 python3 r19_hf.py --scenario healthy_warnings
serve vllm_max_tokens_400 'loggers.py' 5 90 python3 r19_vllm.py --scenario max_tokens_400 --port 8907
serve vllm_shutdown_inflight '200 OK' 8 90 python3 r19_vllm.py --scenario shutdown_inflight --port 8908
serve sg_long_input 'Decode batch' 9 90 python3 r19_sglang.py --scenario long_input --port 30905
wait "${PIDS[@]}"
echo "phase A done after $(( $(date +%s) - T0 )) s"
# ---- phase B: one at a time (each takes most of the card)
PIDS=()
run vllm_kv_too_small 90 python3 r19_vllm.py --scenario kv_too_small --port 8909
wait "${PIDS[@]}"
PIDS=()
run sg_expandable_oom 90 env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python3 r19_sglang.py --scenario expandable_oom --port 30906
wait "${PIDS[@]}"
echo "all done after $(( $(date +%s) - T0 )) s"
for f in $L/*.log; do n=${f%.log}; echo "## $(basename $n) $(cat $n.exit 2>/dev/null) lines=$(wc -l < $f)"; done
tar czf "${OUT:-/tmp}/r19-logs.tgz" $L
