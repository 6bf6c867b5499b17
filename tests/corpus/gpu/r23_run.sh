#!/bin/bash
# Round 23: real GPU/host failures in server/trainer process shapes (vLLM API server + EngineCore + TP workers under
# a retrying supervisor, sglang launcher + scheduler + sigquit, torchrun's elastic agent, a hand-started second
# node, ranks started by a shell loop, HF Trainer/accelerate loops with tqdm, a Megatron-style run, a notebook's
# cell outputs, an OpenAI-style server, a JAX job, CuPy/Triton benchmarks). Every scenario runs under
# `timeout -s KILL` and writes r23_logs/<name>.log (+ .exit); what it leaves behind (its process group) is killed.
# Phase B (run first, one at a time) holds the scenarios that need the card to themselves; phase A runs up to $P
# scenarios at once.
# Usage (on the device machine, from the repository root):
#   bash tests/corpus/gpu/r23_run.sh        # writes tests/corpus/gpu/r23_logs/ and tars it to $OUT/r23-logs.tgz
#   ONLY='^(sg_|hf_fp16)' bash tests/corpus/gpu/r23_run.sh   # a subset (NOPREP=1: skip the CPU prep)
cd "$(dirname "$0")"; L=r23_logs; rm -rf $L; mkdir -p $L
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false TOKENIZERS_PARALLELISM=false
unset CUBLAS_WORKSPACE_CONFIG TRITON_CACHE_DIR TRITON_HOME TORCH_EXTENSIONS_DIR PYTHONFAULTHANDLER HF_HUB_OFFLINE \
  MASTER_ADDR MASTER_PORT RANK WORLD_SIZE NODE_RANK
R=/tmp/r23_files
P=${P:-12}
T0=$(date +%s)
{ date -u; timeout 60 python3 -c 'import torch; print("device_count", torch.cuda.device_count())'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  timeout 90 python3 -c "import sys, torch, triton, jax, cupy, numpy, transformers, huggingface_hub; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'jax', jax.__version__, 'cupy', cupy.__version__, 'numpy', numpy.__version__, 'transformers', transformers.__version__, 'hub', huggingface_hub.__version__)"
  which cc c++; ulimit -n; nproc; grep MemTotal /proc/meminfo; df -h /tmp | tail -1; } > $L/env.txt 2>&1
want() { [[ -z $ONLY || $1 =~ $ONLY ]]; }
NB_PATH=
if ! python3 -c 'import IPython' 2>/dev/null; then  # the notebook scenario needs IPython (wheels: see r23_nb.py)
  python3 -m pip install -q --no-index --no-deps --target /tmp/r23_site r23_whl/*.whl >> $L/env.txt 2>&1 && NB_PATH=/tmp/r23_site
  echo "IPython installed from r23_whl into /tmp/r23_site" >> $L/env.txt
fi
if [ -z "$NOPREP" ]; then
  rm -rf $R
  timeout 120 python3 r23_common.py --prep > $L/prep.txt 2>&1
  cat $L/prep.txt
fi

group_pids() { python3 -c "
import os, sys
for d in os.listdir('/proc'):
    if d.isdigit():
        try:
            if os.getpgid(int(d)) == int(sys.argv[1]): print(d)
        except OSError: pass" $1; }
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
stop() {  # stop NAME SIG WHO MARKER COUNT TIMEOUT CMD...: wait for COUNT marker lines, then the operator's SIG to
          # the main process (WHO=main, a `kill`) or to every process of the job (WHO=group, a terminal's Ctrl-C)
  local n=$1 sig=$2 who=$3 mk=$4 cnt=$5 t=$6; shift 6; want $n || return; slot; echo "== $n $(date +%T)"
  (
    setsid timeout --foreground -s KILL $t "$@" > $L/$n.log 2>&1 & pg=$!
    for i in $(seq $((t * 2))); do [ "$(grep -c -- "$mk" $L/$n.log)" -ge $cnt ] && break; sleep 0.5; done
    sleep 1.5
    if [ $who = group ]; then
      for p in $(group_pids $pg); do [ "$p" != "$pg" ] && kill -$sig $p 2>/dev/null; done
    else
      for p in $(kids $pg); do kill -$sig $p 2>/dev/null; done
    fi
    wait $pg; echo "exit=$?" > $L/$n.exit
    sleep 1; kill -KILL -- -$pg 2>/dev/null
  ) & PIDS+=($!)
}

# ---------------------------------------------------------------- phase B first: alone on the card, one at a time
nvidia-smi --query-compute-apps=pid,used_memory --format=csv >> $L/env.txt 2>&1
PIDS=()
run nb_oom_then_device 150 env PYTHONPATH=$NB_PATH python3 r23_nb.py --scenario oom_then_device
[ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}"
PIDS=()
# the node's supervisor script (r23_common.py wrote it): three attempts appended to one log, then the operator
stop vllm_relaunch TERM main 'POST /v1/chat/completions' 40 240 env SCRIPT_DIR="$PWD" bash $R/node/serve.sh
[ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}"
echo "phase B done after $(( $(date +%s) - T0 )) s"
PIDS=()

# ---------------------------------------------------------------- phase A: side by side (the slowest first)
run hf_compile_warnings 300 python3 r23_hf.py --scenario compile_warnings
run tr_world_mismatch 100 torchrun --nproc-per-node 2 --master-port 29831 r23_tr.py --scenario world_mismatch
run tr_store_timeout 90 env NODE_RANK=1 NNODES=2 MASTER_PORT=29834 python3 r23_tr.py --scenario store_timeout
run hf_fullgraph_branch 180 python3 r23_hf.py --scenario fullgraph_branch
run sg_moe_fp32_tiles 180 python3 r23_sglang.py --scenario moe_fp32_tiles --port 30931
run sg_capture_nonzero 180 python3 r23_sglang.py --scenario capture_nonzero --port 30932
run vllm_hf_offline 100 env HF_HUB_OFFLINE=1 HF_HOME=$R/hf_home python3 r23_vllm.py --scenario hf_offline --port 8931
run vllm_fp8_router 180 python3 r23_vllm.py --scenario fp8_router --quantization fp8 --max-model-len 8192 --port 8932
stop oai_nan_served_past TERM main 'POST /v1/completions' 30 180 python3 r23_oai.py --scenario nan_served_past --port 8933
stop oai_zero_temp_served_past TERM main 'POST /v1/completions' 30 180 \
  python3 r23_oai.py --scenario zero_temp_served_past --port 8934
stop tr_sigterm TERM main 'step ' 6 180 torchrun --nproc-per-node 2 --master-port 29832 r23_tr.py --scenario sigterm
# two ranks started by the job's launch loop (no torchrun), both writing to one log
run tr_shard_missing 120 bash -c 'for r in 0 1; do RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29833 \
  python3 r23_tr.py --scenario shard_missing & done; wait'
run hf_packing_sigfpe 180 python3 r23_hf.py --scenario packing_sigfpe
run hf_fp16_nan 150 python3 r23_hf.py --scenario fp16_nan
run hf_fd_limit 150 bash -c 'ulimit -n 1024; exec python3 r23_hf.py --scenario fd_limit'
run hf_ema_recursion 150 python3 r23_hf.py --scenario ema_recursion
run hf_sdpa_flash_only 100 python3 r23_hf.py --scenario sdpa_flash_only
run mg_blend_abort 150 env PYTHONFAULTHANDLER=1 python3 r23_megatron.py --scenario blend_abort
run bench_cublas_ld 100 python3 r23_bench.py --scenario cublas_ld
run bench_triton_tiles_ok 180 python3 r23_bench.py --scenario triton_tiles_ok
run jax_pallas_headdim 180 python3 r23_jax.py --scenario pallas_headdim
[ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}"
echo "phase A done after $(( $(date +%s) - T0 )) s"

echo "all done after $(( $(date +%s) - T0 )) s"
cat $L/env.txt
for f in $L/*.log; do n=${f%.log}; echo "## $(basename $n) $(cat $n.exit 2>/dev/null) lines=$(wc -l < $f)"; done
tar czf "${OUT:-/tmp}/r23-logs.tgz" $L
