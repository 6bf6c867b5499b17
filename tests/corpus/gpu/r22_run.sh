#!/bin/bash
# Round 22: real GPU/host failures in server/trainer process shapes (vLLM API server + EngineCore, sglang launcher +
# scheduler + sigquit, torchrun's elastic agent and an sbatch job script, HF/accelerate loops with tqdm, JAX jobs,
# Triton / CuPy / driver-API kernel jobs). Every scenario runs under `timeout -s KILL` and writes
# r22_logs/<name>.log (+ .exit); what it leaves behind (its process group) is killed. Phase B (run first) runs the
# scenario that needs the card to itself; phase A runs up to $P scenarios at once.
# Usage (on the device machine, from the repository root):
#   bash tests/corpus/gpu/r22_run.sh        # writes tests/corpus/gpu/r22_logs/ and tars it to $OUT/r22-logs.tgz
#   ONLY='^(sg_|tr_jit)' bash tests/corpus/gpu/r22_run.sh   # a subset (NOPREP=1: skip the CPU prep)
#   by hand: tar czf "$OUT/r22-logs.tgz" -C tests/corpus/gpu r22_logs
cd "$(dirname "$0")"; L=r22_logs; rm -rf $L; mkdir -p $L
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false TOKENIZERS_PARALLELISM=false
unset CUBLAS_WORKSPACE_CONFIG TRITON_CACHE_DIR TRITON_HOME TORCH_EXTENSIONS_DIR SLURM_ARRAY_TASK_ID
R=/tmp/r22_files
P=${P:-12}
T0=$(date +%s)
{ date -u; timeout 60 python3 -c 'import torch; print("device_count", torch.cuda.device_count())'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  timeout 90 python3 -c "import sys, torch, triton, jax, cupy, safetensors, numpy, filelock; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'jax', jax.__version__, 'cupy', cupy.__version__, 'safetensors', safetensors.__version__, 'numpy', numpy.__version__)"
  which nvcc ninja c++; nvcc --version | tail -2
  nproc; grep MemTotal /proc/meminfo; bash --version | head -1; df -h /tmp | tail -1; } > $L/env.txt 2>&1 &
want() { [[ -z $ONLY || $1 =~ $ONLY ]]; }
PREP=
if [ -z "$NOPREP" ]; then
  timeout 180 python3 r22_common.py --prep > $L/prep.txt 2>&1 & PREP=$!  # CPU only: runs beside phase B
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

# ---------------------------------------------------------------- phase B first: alone on the card
nvidia-smi --query-compute-apps=pid,used_memory --format=csv >> $L/env.txt 2>&1
PIDS=()
run vllm_topk_oom 120 python3 r22_vllm.py --scenario topk_oom --port 8970
[ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}"
echo "phase B done after $(( $(date +%s) - T0 )) s"
[ -n "$PREP" ] && { wait $PREP; cat $L/prep.txt; }
PIDS=()

# ---------------------------------------------------------------- phase A: side by side (the slowest first)
rm -rf $R/sgl_jit $R/torch_extensions $R/runs/pretrain-350m-*
run sg_nvcc_errors 240 python3 r22_sglang.py --scenario nvcc_errors --port 30970
run tr_jit_ld 240 env TORCH_EXTENSIONS_DIR=$R/torch_extensions \
  torchrun --nproc-per-node 2 --master-port 29971 r22_tr.py --scenario jit_ld
run sg_recompile_fullgraph 200 python3 r22_sglang.py --scenario recompile_fullgraph --port 30971
stop sg_health_503 TERM main '/v1/chat/completions' 25 160 python3 r22_sglang.py --scenario health_503 --port 30972
stop sg_healthy_warnings TERM main '/v1/chat/completions' 15 120 \
  python3 r22_sglang.py --scenario healthy_warnings --port 30973
stop vllm_sigint_loading INT group '25% Completed' 1 120 python3 r22_vllm.py --scenario sigint_loading --port 8971
run vllm_illegal_cancel 120 python3 r22_vllm.py --scenario illegal_cancel --port 8972
run vllm_lora_copy 120 python3 r22_vllm.py --scenario lora_copy --port 8973
run tr_unused_params 120 torchrun --nproc-per-node 2 --master-port 29972 r22_tr.py --scenario unused_params
# an sbatch job script outside a job array (SLURM_ARRAY_TASK_ID unset), as `sbatch` would run it on the node
run tr_slurm_unbound 150 env SLURM_JOB_ID=48877 SLURM_NTASKS=1 SLURM_JOB_NAME=pretrain-350m SCRIPT_DIR="$PWD" \
  MASTER_PORT=29973 bash $R/jobs/pretrain_350m.sbatch
run hf_vocab_pad_assert 120 python3 r22_hf.py --scenario vocab_pad_assert
run hf_weights_only 150 python3 r22_hf.py --scenario weights_only
run hf_mask_dtype 80 python3 r22_hf.py --scenario mask_dtype
run jax_callback_shape 100 python3 r22_jax.py --scenario callback_shape
run jax_custom_vjp 80 python3 r22_jax.py --scenario custom_vjp
run jax_healthy_warnings 100 python3 r22_jax.py --scenario healthy_warnings
run bench_misaligned_bf16 80 python3 r22_bench.py --scenario misaligned_bf16
run bench_ctx_reset 80 python3 r22_bench.py --scenario ctx_reset
run bench_dot_dtype 80 python3 r22_bench.py --scenario dot_dtype
[ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}"
echo "phase A done after $(( $(date +%s) - T0 )) s"

echo "all done after $(( $(date +%s) - T0 )) s"
cat $L/env.txt
for f in $L/*.log; do n=${f%.log}; echo "## $(basename $n) $(cat $n.exit 2>/dev/null) lines=$(wc -l < $f)"; done
tar czf "${OUT:-/tmp}/r22-logs.tgz" $L
