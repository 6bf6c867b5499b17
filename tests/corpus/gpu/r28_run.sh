#!/bin/bash
# Round 28: real GPU/host failures, many of them without a Python traceback, in several process shapes:
#   vllm_int8_bmm      vLLM engine core: int8 x int8 torch.bmm in a W8A8 MoE fallback (no CUDA kernel) -> engine fails to start
#   vllm_cpu_rlimit    vLLM under `ulimit -t 25`: the busy-polling engine core is killed by SIGXCPU while serving; the
#                      front end's ERROR "Engine core proc ... died unexpectedly" is the last word (no traceback)
#   vllm_bad_token_ids vLLM serving completions; two requests with token ids past the vocabulary get 400; SIGTERM (no crash)
#   sg_topk_range      sglang scheduler: torch.topk with k=200000 > vocab 128256 while serving -> traceback, sigquit
#   sg_triton_silu     sglang scheduler: Triton SiLU-and-mul calls tl.sigmoid on bf16 -> CompilationError over ValueError
#   sg_module_spec     a launch script runs `python3 -m sglang.launch_server` where sglang is not installed:
#                      "Error while finding module specification" (no traceback), the script reports the early exit
#   tr_device_mismatch torchrun, 2 ranks: rotary inv_freq left on the CPU -> cuda:0/cpu mismatch in both ranks, ChildFailedError
#   tok_rust_alloc     a data-prep job pads to model_max_length 2**45: Rust tokenizers "memory allocation of N bytes failed",
#                      abort, the job script's shell reports it (no Python traceback)
#   cupy_setmaxnreg    CuPy kernel with setmaxnreg (sm_90a only) compiled for sm_90: ptxas error under CuPy's compile exception
#   subproc_import     eval harness: child's ImportError (transformers.top_k_top_p_filtering), parent's CalledProcessError
#   hf_tqdm_shape      training loop, tqdm bar frozen at the last (smaller) batch: SDPA mask cached for batch 32 vs batch 8
#   pinned_overflow    fp32 rows memmove'd into a libc buffer sized for bf16: glibc "free(): invalid next size", Fatal Python error: Aborted
#   slurm_train        a batch script at its time limit: Slurm-style cancel line, SIGTERM, checkpoint saved, exit 0 (no crash)
#   oai_oom            OpenAI-style server: two n=64 requests hit a real CUDA OOM, answered 500, serving goes on; SIGTERM (no crash)
#   hf_warnings        transformers warnings (newly initialized score head, gradient checkpointing vs use_cache); finishes (no crash)
#   jax_unbound_axis   jitted step calls lax.pmean over axis 'batch' outside pmap/shard_map -> NameError: unbound axis name
#   compile_recompile  torch.compile called with 12 adapter-name strings: recompile limit warning, eager fallback, finishes (no crash)
#   ninja_nvcc         ninja + nvcc build of a .cu using __nv_bfloat162 without cuda_bf16.h: nvcc errors, "ninja: build stopped"
# Every scenario runs under `timeout -s KILL` and writes r28_logs/<name>.log (+ .exit); what it leaves behind (its process
# group) is killed. Nothing here fills the card.
# Usage (on the device machine, from the repository root):
#   bash tests/corpus/gpu/r28_run.sh        # prints each scenario's exit code and line count, tars r28_logs to $OUT/r28-logs.tgz
#   ONLY='regex' bash tests/corpus/gpu/r28_run.sh   # only the scenarios whose name matches
cd "$(dirname "$0")"; L=r28_logs; rm -rf $L; mkdir -p $L
HERE=$PWD
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
unset CUBLAS_WORKSPACE_CONFIG TRITON_CACHE_DIR PYTORCH_CUDA_ALLOC_CONF CUDA_LAUNCH_BLOCKING PYTHONFAULTHANDLER \
  MASTER_ADDR MASTER_PORT RANK WORLD_SIZE NODE_RANK SHAPES_DRY NCCL_NET NCCL_DEBUG RUST_BACKTRACE R28_SCENARIO
export R28_ROOT=${R28_ROOT:-/tmp/r28_files}
R=$R28_ROOT; rm -rf $R; mkdir -p $R/jobs $R/bin
P=${P:-8}
T0=$(date +%s)
{ date -u; timeout 60 python3 -c 'import torch; print("device_count", torch.cuda.device_count())'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  timeout 90 python3 -c "import sys, torch, triton, jax, cupy, transformers, tokenizers; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'jax', jax.__version__, 'cupy', cupy.__version__, 'transformers', transformers.__version__, 'tokenizers', tokenizers.__version__)"
  command -v nvcc ninja; nproc; grep MemTotal /proc/meminfo; } > $L/env.txt 2>&1
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
stop() {  # stop NAME SIG MARKER COUNT TIMEOUT CMD...: signal the command once MARKER was logged COUNT times
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

# --- job scripts the scenarios run (written here, outside the repository) ---
cp r28_misc.py $R/bin/prepare_data.py
cat > $R/jobs/prep_shard.sh <<EOF
#!/bin/bash
# tokenize + pad one shard of the pretraining mix
SHARD=\${1:-part-00017}
export R28_SCENARIO=tok_rust_alloc
echo "[\$(date -u +%FT%TZ)] prep_shard: host=\$(hostname) shard=\$SHARD"
python3 $R/bin/prepare_data.py --shard \$SHARD --tokenizer $R/models/olmo-style-1b-converted
echo "[\$(date -u +%FT%TZ)] prep_shard: uploading \$SHARD.arrow"
ls -la $R/out/\$SHARD.arrow
EOF
cat > $R/jobs/serve_sglang.sh <<'EOF'
#!/bin/bash
# start the sglang endpoint for the eval cluster and wait until it answers
set -x
export CUDA_VISIBLE_DEVICES=0
MODEL=/models/Qwen2.5-32B-Instruct-AWQ
PORT=30000
python3 -m sglang.launch_server --model-path $MODEL --port $PORT --host 0.0.0.0 --tp 1 --mem-fraction-static 0.88 --quantization awq_marlin &
SERVER_PID=$!
set +x
for i in $(seq 1 600); do
  if ! kill -0 $SERVER_PID 2>/dev/null; then
    wait $SERVER_PID; rc=$?
    echo "[serve_sglang] server process $SERVER_PID exited with code $rc before becoming healthy"
    exit 1
  fi
  if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/health', timeout=1)" 2>/dev/null; then
    echo "[serve_sglang] server is up after ${i}s"; exit 0
  fi
  echo "[serve_sglang] waiting for http://127.0.0.1:$PORT/health ... (${i}s)"
  sleep 1
done
EOF
cat > $R/jobs/train.sbatch <<EOF
#!/bin/bash
#SBATCH --job-name=ae-pretrain --gres=gpu:1 --time=04:00:00
export SLURM_JOB_ID=4471823
echo "SLURM_JOB_ID=\$SLURM_JOB_ID SLURM_JOB_NODELIST=gpu-h200-017 SLURM_NTASKS=1 SLURM_GPUS_ON_NODE=1"
echo "Starting at \$(date -u)"
python3 $HERE/r28_misc.py --scenario slurm_train &
PID=\$!
sleep 20   # the job's time limit, as slurmctld would enforce it
echo "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."
echo "slurmstepd: error: *** STEP \$SLURM_JOB_ID.0 ON gpu-h200-017 CANCELLED AT \$(date -u +%Y-%m-%dT%H:%M:%S) DUE TO TIME LIMIT ***"
kill -TERM \$PID
wait \$PID
echo "step exited with code \$?"
EOF

run vllm_int8_bmm 100 python3 r28_vllm.py --scenario int8_bmm --port 8981
run vllm_cpu_rlimit 150 bash -c 'ulimit -t 25; exec python3 r28_vllm.py --scenario cpu_rlimit --port 8982'
stop vllm_bad_token_ids TERM '400 Bad Request' 2 120 python3 r28_vllm.py --scenario bad_token_ids --port 8983
run sg_topk_range 100 python3 r28_sglang.py --scenario topk_range --port 30981
run sg_triton_silu 100 python3 r28_sglang.py --scenario triton_silu --port 30982
run sg_module_spec 40 bash $R/jobs/serve_sglang.sh
run tr_device_mismatch 120 torchrun --nproc-per-node 2 --master-port 29881 r28_tr.py
run tok_rust_alloc 60 bash $R/jobs/prep_shard.sh part-00017
run slurm_train 90 bash $R/jobs/train.sbatch
stop oai_oom TERM '500 Internal Server Error' 2 100 python3 r28_misc.py --scenario oai_oom
for s in cupy_setmaxnreg subproc_import hf_tqdm_shape pinned_overflow hf_warnings jax_unbound_axis compile_recompile ninja_nvcc; do
  run $s 150 python3 r28_misc.py --scenario $s
done
[ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}"
echo "all done after $(( $(date +%s) - T0 )) s"

cat $L/env.txt
for f in $L/*.log; do n=${f%.log}; echo "## $(basename $n) $(cat $n.exit 2>/dev/null) lines=$(wc -l < $f)"; done
tar czf "${OUT:-/tmp}/r28-logs.tgz" -C "$HERE" r28_logs
