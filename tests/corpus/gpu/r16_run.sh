#!/bin/bash
# Round 16: real GPU/host failures in server/trainer process shapes (sglang, vLLM, torchrun, an accelerate-style
# loop, a GRPO-style loop, JAX, CuPy/cuBLAS, Triton). Every scenario runs under `timeout -s KILL`, writes
# r16_logs/<name>.log (+ .exit). Phase 1 runs up to $P scenarios at once; phase 2 runs the two that fill the
# card (KV pools sized from the free memory) one at a time, alone on the GPU. The logs are tarred into $OUT.
# ONLY=regex runs a subset.
cd "$(dirname "$0")"; L=r16_logs; rm -rf $L; mkdir -p $L
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false TOKENIZERS_PARALLELISM=false
P=${P:-9}
{ date -u; python3 -c 'import torch; print(torch.cuda.device_count())'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, triton, jax, cupy, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'jax', jax.__version__, 'cupy', cupy.__version__, 'transformers', transformers.__version__)"
  nproc; grep MemTotal /proc/meminfo; } > $L/env.txt 2>&1
cat $L/env.txt
want() { [[ -z $ONLY || $1 =~ $ONLY ]]; }
if want vllm_tokcfg_truncated; then python3 r16_common.py --prep > $L/prep.txt 2>&1; tail -1 $L/prep.txt; fi

# a cgroup v2 with a memory limit for the loader job (a batch scheduler's --mem=16G)
CG=
cg_setup() {
  local root=/sys/fs/cgroup
  if [ "$(stat -fc %T $root 2>/dev/null)" != cgroup2fs ]; then
    mkdir -p /tmp/r16_cg && mount -t cgroup2 none /tmp/r16_cg && root=/tmp/r16_cg || return 1
  fi
  grep -qw memory $root/cgroup.controllers || { echo "no memory controller in $root"; return 1; }
  grep -qw memory $root/cgroup.subtree_control || echo +memory > $root/cgroup.subtree_control
  mkdir -p $root/r16_job && echo 16G > $root/r16_job/memory.max || return 1
  [ -f $root/r16_job/memory.swap.max ] && echo 0 > $root/r16_job/memory.swap.max
  CG=$root/r16_job
}
if want hf_loader_oomkill; then cg_setup > $L/cgroup.txt 2>&1; echo "cgroup: ${CG:-none}" | tee -a $L/cgroup.txt; fi

PIDS=()
kids() { python3 -c "
import os, sys
for d in os.listdir('/proc'):
    if d.isdigit():
        try:
            st = open(f'/proc/{d}/stat').read().rsplit(')', 1)[1].split()
            if st[1] == sys.argv[1]: print(d)
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

# ---------------------------------------------------------------- phase 1: side by side
serve sg_recompile_sigterm '"POST /generate HTTP/1.1" 200' 17 120 env TORCHINDUCTOR_COMPILE_THREADS=1 python3 r16_sglang.py --scenario recompile_sigterm --port 30403
run vllm_tp2_graph_break 100 python3 r16_vllm.py --scenario tp2_graph_break --port 8402
run tr_cholesky 100 torchrun --nproc-per-node 2 --master-port 29901 r16_tr.py --scenario cholesky
if [ -n "$CG" ]; then
  run hf_loader_oomkill 100 bash -c "echo \$\$ > $CG/cgroup.procs && exec python3 r16_hf.py --scenario loader_oomkill"
fi
run sg_tp3_heads 90 python3 r16_sglang.py --scenario tp3_heads --port 30401
run sg_assert_serving 90 env TRITON_DEBUG=1 python3 r16_sglang.py --scenario assert_serving --port 30402
run vllm_tokcfg_truncated 90 python3 r16_vllm.py --scenario tokcfg_truncated --port 8401
run vllm_embed_numpy 90 python3 r16_vllm.py --scenario embed_numpy --port 8403
serve vllm_oov_refused_sigterm 'POST /v1/completions' 14 100 python3 r16_vllm.py --scenario oov_refused_sigterm --port 8404
run hf_rl_pickle 90 python3 r16_hf.py --scenario rl_pickle
run hf_fp16_overflow 100 python3 r16_hf.py --scenario fp16_overflow
serve jax_serve_oom 'POST /v1/completions' 14 100 python3 r16_jax.py --scenario serve_oom
run tr_nccl_net_ib 90 env NCCL_NET=IB NCCL_IB_HCA=mlx5_0:1,mlx5_3:1 NCCL_DEBUG=WARN torchrun --nproc-per-node 1 --master-port 29902 r16_tr.py --scenario nccl_net_ib
run jax_bad_cvd 90 env SLURM_PROCID=1 SLURM_LOCALID=1 CUDA_VISIBLE_DEVICES=1 JAX_PLATFORMS=cuda python3 r16_jax.py --scenario bad_cvd
run bench_cublas_int8 90 python3 r16_bench.py --scenario cublas_int8
run tri_lora_expand_k8 90 python3 r16_bench.py --scenario lora_expand_k8
wait "${PIDS[@]}"

# ---------------------------------------------------------------- phase 2: alone on the card
nvidia-smi --query-compute-apps=pid,used_memory --format=csv >> $L/env.txt 2>&1
PIDS=()
P=1
run sg_kv_pool_oom 90 python3 r16_sglang.py --scenario kv_pool_oom --port 30404
wait "${PIDS[@]}"
run vllm_graph_oom 100 python3 r16_vllm.py --scenario graph_oom --port 8405
wait "${PIDS[@]}"
for f in $L/*.log; do n=${f%.log}; echo "## $(basename $n) $(cat $n.exit 2>/dev/null) lines=$(wc -l < $f)"; done
[ -n "$CG" ] && rmdir $CG 2>/dev/null
tar czf "${OUT:-/tmp}/r16-logs.tgz" $L
