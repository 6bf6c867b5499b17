#!/bin/bash
# Round 25: real GPU/host failures in new process shapes: vLLM's API server + EngineCore dying of a real fault
# after serving (a block-table bounds assert, the front-end's EngineDeadError first; an EAGLE draft head of
# another target's size, the engine's traceback first), 400s for too-long prompts served past, a malformed
# allocator option, a host tensor built inside graph capture; sglang's DetokenizerManager child dying on padded
# -1 ids, a Triton GEMM on MI300 (fnuz) FP8 weights, a truncated safetensors shard on two TP ranks; torchrun with
# CUDA_VISIBLE_DEVICES of another node, an all-reduce bucket OOM with two ranks on one card, a job's wall-clock
# SIGTERM; HF-style loops (an async gather assert seen at a later sync, a bf16 eigh in Shampoo, fp16 overflow
# steps skipped, a DataLoader timeout); JAX (a BFC allocator OOM, a donated buffer read again); a healthy
# benchmark that says "error", a CuPy launch of 2048 threads per block, an FP8 _scaled_mm with a row-major B.
# Every scenario runs under `timeout -s KILL` and writes r25_logs/<name>.log (+ .exit); what it leaves behind (its
# process group) is killed. The all-reduce OOM (two ranks filling the card) runs alone first (phase B), beside the
# CPU-only prep; phase A runs up to $P scenarios at once.
# Not run yet: written in the helper's session of round 25, whose three calls found no machine (about 360 s of
# device time spent on starts); no log exists. Nothing to carry (no wheels needed).
# Usage (on the device machine, from the repository root):
#   bash tests/corpus/gpu/r25_run.sh        # writes tests/corpus/gpu/r25_logs/ and tars it to $OUT/r25-logs.tgz
#   ONLY='^(vllm_|sg_)' bash tests/corpus/gpu/r25_run.sh   # a subset (NOPREP=1: skip the prep)
cd "$(dirname "$0")"; L=r25_logs; rm -rf $L; mkdir -p $L
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false TOKENIZERS_PARALLELISM=false
unset CUBLAS_WORKSPACE_CONFIG TRITON_CACHE_DIR PYTORCH_CUDA_ALLOC_CONF CUDA_LAUNCH_BLOCKING PYTHONFAULTHANDLER \
  MASTER_ADDR MASTER_PORT RANK WORLD_SIZE NODE_RANK SHAPES_DRY R25_ROOT
R=/tmp/r25_files
P=${P:-10}
T0=$(date +%s)
{ date -u; timeout 60 python3 -c 'import torch; print("device_count", torch.cuda.device_count())'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  timeout 90 python3 -c "import sys, torch, triton, jax, cupy, numpy, tokenizers, safetensors, optax, tqdm; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'jax', jax.__version__, 'cupy', cupy.__version__, 'numpy', numpy.__version__, 'tokenizers', tokenizers.__version__, 'safetensors', safetensors.__version__)"
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
run() {  # run NAME TIMEOUT CMD...: what it leaves behind (its process group) is killed
  local n=$1 t=$2; shift 2; want $n || return; slot; echo "== $n $(date +%T)"
  (
    setsid timeout -s KILL $t "$@" > $L/$n.log 2>&1 & pg=$!
    wait $pg; echo "exit=$?" > $L/$n.exit
    sleep 1; kill -KILL -- -$pg 2>/dev/null
  ) & PIDS+=($!)
}
stop() {  # stop NAME SIG MARKER COUNT TIMEOUT CMD...: once COUNT marker lines are in the log, the operator's SIG to
          # the server's main process (unless it ended first)
  local n=$1 sig=$2 mk=$3 cnt=$4 t=$5; shift 5; want $n || return; slot; echo "== $n $(date +%T)"
  (
    setsid timeout --foreground -s KILL $t "$@" > $L/$n.log 2>&1 & pg=$!
    for i in $(seq $((t * 2))); do
      [ "$(grep -c -- "$mk" $L/$n.log)" -ge $cnt ] && break
      kill -0 $pg 2>/dev/null || break
      sleep 0.5
    done
    sleep 1.5
    for p in $(kids $pg); do kill -$sig $p 2>/dev/null; done
    wait $pg; echo "exit=$?" > $L/$n.exit
    sleep 1; kill -KILL -- -$pg 2>/dev/null
  ) & PIDS+=($!)
}

wait $ENVJOB
# ---------------------------------------------------------------- phase B: the two ranks that fill the card, alone
PIDS=()
run tr_allreduce_oom 120 torchrun --nproc-per-node 2 --master-port 29851 r25_tr.py --scenario allreduce_oom
if [ -z "$NOPREP" ]; then
  rm -rf $R; mkdir -p $R
  timeout 150 python3 r25_common.py --prep > $L/prep.txt 2>&1
  tail -n 3 $L/prep.txt
fi
[ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}"
echo "phase B done after $(( $(date +%s) - T0 )) s"
PIDS=()

# ---------------------------------------------------------------- phase A: side by side
stop vllm_dead_blocktable TERM 'Finished server process' 1 150 python3 r25_vllm.py --scenario dead_blocktable --port 8951
stop vllm_dead_specdec TERM 'Finished server process' 1 150 python3 r25_vllm.py --scenario dead_specdec --port 8952
stop vllm_prompt_400 TERM '400 Bad Request' 3 150 python3 r25_vllm.py --scenario prompt_400 --port 8953 --max-model-len 32768
stop vllm_alloc_conf TERM 'Application startup complete' 1 120 env PYTORCH_CUDA_ALLOC_CONF=expandable_segment:True python3 r25_vllm.py --scenario alloc_conf --port 8954
stop vllm_capture_cpu TERM 'Application startup complete' 1 120 python3 r25_vllm.py --scenario capture_cpu --port 8955
stop sg_detok_negative TERM 'Abort request' 3 150 python3 r25_sglang.py --scenario detok_negative --port 30951
run sg_fp8_fnuz 150 python3 r25_sglang.py --scenario fp8_fnuz --port 30952
run sg_shard_trunc 150 python3 r25_sglang.py --scenario shard_trunc --port 30953 --tp 2
run tr_cvd 120 env CUDA_VISIBLE_DEVICES=2,3 torchrun --nproc-per-node 2 --master-port 29852 r25_tr.py --scenario cvd
run tr_walltime_sigterm 120 bash -c 'echo "[job 77120] $(date "+%F %T") pretrain-ddp on $(hostname -s): torchrun --nproc-per-node 2 (wall-clock limit 40s)"; timeout -s TERM 40 torchrun --nproc-per-node 2 --master-port 29853 r25_tr.py --scenario train; rc=$?; echo "[job 77120] $(date "+%F %T") torchrun exited with code $rc"; exit $rc'
run hf_async_gather 150 python3 r25_hf.py --scenario async_gather
run hf_shampoo_bf16 150 python3 r25_hf.py --scenario shampoo_bf16
run hf_fp16_scaler 150 python3 r25_hf.py --scenario fp16_scaler
run hf_dl_timeout 150 python3 r25_hf.py --scenario dl_timeout
run jax_oom_bfc 150 python3 r25_jax.py --scenario oom_bfc
run jax_donated 150 python3 r25_jax.py --scenario donated
run bench_gemm_healthy 150 python3 r25_bench.py --scenario gemm_healthy
run bench_cupy_block 120 python3 r25_bench.py --scenario cupy_block
run bench_fp8_layout 120 python3 r25_bench.py --scenario fp8_layout
[ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}"
echo "phase A done after $(( $(date +%s) - T0 )) s"

cat $L/env.txt
for f in $L/*.log; do n=${f%.log}; echo "## $(basename $n) $(cat $n.exit 2>/dev/null) lines=$(wc -l < $f)"; done
tar czf "${OUT:-/tmp}/r25-logs.tgz" $L
