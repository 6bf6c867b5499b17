#!/bin/bash
# Round 20: real GPU/host failures in server/trainer process shapes (vLLM API server + EngineCore, vLLM's offline
# LLM class, sglang launcher + scheduler (+ detokenizer), torchrun, HF/accelerate loops, JAX, CuPy and Triton
# kernel jobs, an OpenAI-style embeddings server). Every scenario runs under `timeout -s KILL` and writes
# r20_logs/<name>.log (+ .exit); what it leaves behind (its process group) is killed. Phase A runs up to $P
# scenarios at once; phase B (run first) runs the two that take most of the card's memory, one at a time. The logs are
# tarred into $OUT. ONLY=regex runs a subset (with NOPREP=1, one that needs none of the prepared files).
cd "$(dirname "$0")"; L=r20_logs; rm -rf $L; mkdir -p $L
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false TOKENIZERS_PARALLELISM=false
P=${P:-14}
T0=$(date +%s)
{ date -u; timeout 60 python3 -c 'import torch; print("device_count", torch.cuda.device_count())'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  timeout 90 python3 -c "import torch, triton, jax, cupy, transformers, safetensors, accelerate, numpy; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'jax', jax.__version__, 'cupy', cupy.__version__, 'transformers', transformers.__version__, 'safetensors', safetensors.__version__, 'accelerate', accelerate.__version__, 'numpy', numpy.__version__)"
  nproc; grep MemTotal /proc/meminfo; bash --version | head -1; df -h /tmp | tail -1; } > $L/env.txt 2>&1 &  # beside the prep and phase B
want() { [[ -z $ONLY || $1 =~ $ONLY ]]; }
PREP=
if [ -z "$NOPREP" ]; then  # NOPREP=1: a subset that reads none of the prepared files
  timeout 80 python3 r20_common.py --prep > $L/prep.txt 2>&1 & PREP=$!  # CPU only: runs beside phase B
fi

# a cgroup v2 with a memory limit for the data-prep job (a batch scheduler's --mem=4G)
CG=
cg_setup() {
  local root=/sys/fs/cgroup
  if [ "$(stat -fc %T $root 2>/dev/null)" != cgroup2fs ]; then
    mkdir -p /tmp/r20_cg && mount -t cgroup2 none /tmp/r20_cg && root=/tmp/r20_cg || return 1
  fi
  grep -qw memory $root/cgroup.controllers || { echo "no memory controller in $root"; return 1; }
  grep -qw memory $root/cgroup.subtree_control || echo +memory > $root/cgroup.subtree_control
  mkdir -p $root/r20_job && echo 4G > $root/r20_job/memory.max || return 1
  [ -f $root/r20_job/memory.swap.max ] && echo 0 > $root/r20_job/memory.swap.max
  CG=$root/r20_job
}
if want hf_memmap_killed; then cg_setup > $L/cgroup.txt 2>&1; echo "cgroup: ${CG:-none}" | tee -a $L/cgroup.txt; fi

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

# ---------------------------------------------------------------- phase B first: one at a time, alone on the card
# (each takes most of the card's memory)
nvidia-smi --query-compute-apps=pid,used_memory --format=csv >> $L/env.txt 2>&1
PIDS=()
run sg_mem_fraction 40 python3 r20_sglang.py --scenario mem_fraction --port 30953
[ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}"
PIDS=()
run jax_torch_prealloc 40 env -u XLA_PYTHON_CLIENT_PREALLOCATE python3 r20_jax.py --scenario torch_prealloc
[ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}"
echo "phase B done after $(( $(date +%s) - T0 )) s"
[ -n "$PREP" ] && { wait $PREP; cat $L/prep.txt; }
PIDS=()

# ---------------------------------------------------------------- phase A: side by side (the slowest first)
run hf_fused_ce_oor 65 env TRITON_PRINT_AUTOTUNING=1 python3 r20_hf.py --scenario fused_ce_oor
run vllm_inductor_nochoice 65 python3 r20_vllm.py --scenario inductor_nochoice --port 8951
run bench_graph_skip 65 env TORCH_LOGS=perf_hints python3 r20_bench.py --scenario graph_skip
run vllm_sleep_replay 65 python3 r20_vllm.py --scenario sleep_replay --port 8952
stop vllm_offline_sigint INT group 'Processed prompts' 1 65 python3 r20_vllm.py --scenario offline_sigint
run tr_nan_gradnorm 65 torchrun --nproc-per-node 2 --master-port 29981 r20_tr.py --scenario nan_gradnorm
run tr_dcp_resume 65 torchrun --nproc-per-node 2 --master-port 29982 r20_tr.py --scenario dcp_resume
run sg_tma_thread 65 python3 r20_sglang.py --scenario tma_thread --port 30951
run sg_detok_unicode 65 python3 r20_sglang.py --scenario detok_unicode --port 30952
run hf_loader_timeout 65 python3 r20_hf.py --scenario loader_timeout
run hf_healthy_newinit 65 python3 r20_hf.py --scenario healthy_newinit
run vllm_fork_cuda 65 env VLLM_WORKER_MULTIPROC_METHOD=fork python3 r20_vllm.py --scenario fork_cuda --port 8953
run tr_store_port 55 bash -c 'python3 -c "import socket, time; s = socket.socket(); s.bind((\"0.0.0.0\", 29983)); s.listen(); time.sleep(50)" & sleep 2; exec torchrun --nproc-per-node 2 --master-port 29983 r20_tr.py --scenario store_port'
run hf_html_weights 65 python3 r20_hf.py --scenario html_weights
if [ -n "$CG" ]; then
  run hf_memmap_killed 65 bash -c "echo \$\$ > $CG/cgroup.procs && python3 r20_hf.py --scenario memmap_killed; exit \$?"
fi
run jax_cache_dir_file 65 python3 r20_jax.py --scenario cache_dir_file
run bench_forest_stack 65 python3 r20_bench.py --scenario forest_stack
run bench_old_tma_api 65 python3 r20_bench.py --scenario old_tma_api
stop oai_embed_500 TERM main '/v1/embeddings' 20 65 python3 r20_oai.py
[ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}"
echo "phase A done after $(( $(date +%s) - T0 )) s"

echo "all done after $(( $(date +%s) - T0 )) s"
cat $L/env.txt
for f in $L/*.log; do n=${f%.log}; echo "## $(basename $n) $(cat $n.exit 2>/dev/null) lines=$(wc -l < $f)"; done
[ -n "$CG" ] && rmdir $CG 2>/dev/null
tar czf "${OUT:-/tmp}/r20-logs.tgz" $L
