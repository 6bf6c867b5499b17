#!/bin/bash
# Round 21: real GPU/host failures in server/trainer process shapes (vLLM API server + EngineCore, sglang launcher +
# scheduler, torchrun and Slurm-task jobs, HF/accelerate and fairseq-style loops, JAX jobs, CuPy and Triton kernel
# jobs). Every scenario runs under `timeout -s KILL` and writes r21_logs/<name>.log (+ .exit); what it leaves behind
# (its process group) is killed. Phase B (run first) runs the scenario that needs the card to itself; phase A runs up
# to $P scenarios at once. The logs are tarred into $OUT. ONLY=regex runs a subset (NOPREP=1: skip the CPU prep).
cd "$(dirname "$0")"; L=r21_logs; rm -rf $L; mkdir -p $L
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false TOKENIZERS_PARALLELISM=false
unset CUBLAS_WORKSPACE_CONFIG TRITON_CACHE_DIR TRITON_HOME
P=${P:-12}
T0=$(date +%s)
{ date -u; timeout 60 python3 -c 'import torch; print("device_count", torch.cuda.device_count())'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  timeout 90 python3 -c "import sys, torch, triton, jax, cupy, transformers, safetensors, accelerate, numpy, filelock, jinja2; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'jax', jax.__version__, 'cupy', cupy.__version__, 'transformers', transformers.__version__, 'safetensors', safetensors.__version__, 'accelerate', accelerate.__version__, 'numpy', numpy.__version__, 'filelock', filelock.__version__)"
  python3 -c "import flash_attn" 2>&1 | tail -1
  nproc; grep MemTotal /proc/meminfo; unshare --version; df -h /tmp | tail -1; } > $L/env.txt 2>&1 &
want() { [[ -z $ONLY || $1 =~ $ONLY ]]; }
PREP=
if [ -z "$NOPREP" ]; then
  timeout 120 python3 r21_common.py --prep > $L/prep.txt 2>&1 & PREP=$!  # CPU only: runs beside phase B
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
restart_recover() {  # torchrun with --max-restarts 1; the data-prep job starts writing the index once rank 0 waits for it
  local n=tr_restart_recover; want $n || return; slot; echo "== $n $(date +%T)"
  (
    rm -f /tmp/r21_files/data/fineweb-edu-10BT/index.json
    setsid timeout -s KILL 120 torchrun --nproc-per-node 2 --max-restarts 1 --master-port 29991 \
      r21_tr.py --scenario restart_recover > $L/$n.log 2>&1 & pg=$!
    for i in $(seq 300); do grep -q "attempt 0: loading dataset index" $L/$n.log && break; sleep 0.3; done
    timeout 60 python3 r21_tr.py --scenario restart_recover --write-index > $L/${n}_writer.txt 2>&1
    wait $pg; echo "exit=$?" > $L/$n.exit
    sleep 1; kill -KILL -- -$pg 2>/dev/null
  ) & PIDS+=($!)
}

# ---------------------------------------------------------------- phase B first: alone on the card
nvidia-smi --query-compute-apps=pid,used_memory --format=csv >> $L/env.txt 2>&1
PIDS=()
# a process left over from an earlier run (a notebook kernel) still holds 35 % of the card
run vllm_free_mem 70 bash -c 'rm -f /tmp/r21_holder.txt; python3 r21_common.py --hold-gpu 0.35 60 > /tmp/r21_holder.txt 2>&1 &
  for i in $(seq 100); do grep -q holding /tmp/r21_holder.txt 2>/dev/null && break; sleep 0.3; done
  exec python3 r21_vllm.py --scenario free_mem --port 8960'
[ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}"
echo "phase B done after $(( $(date +%s) - T0 )) s"
[ -n "$PREP" ] && { wait $PREP; cat $L/prep.txt; }
PIDS=()

# ---------------------------------------------------------------- phase A: side by side (the slowest first)
run vllm_sigbus_reload 100 env PYTHONFAULTHANDLER=1 python3 r21_vllm.py --scenario sigbus_reload --port 8961
restart_recover
stop vllm_tool_parse TERM main '/v1/chat/completions' 24 80 python3 r21_vllm.py --scenario tool_parse --port 8962
stop sg_template_400 TERM main '/v1/chat/completions' 30 80 python3 r21_sglang.py --scenario template_400 --port 30961
run sg_jit_lock 80 bash -c 'python3 r21_common.py --hold-lock jit 75 > /dev/null 2>&1 & sleep 2
  exec python3 r21_sglang.py --scenario jit_lock --port 30962'
run hf_oom_skip 100 python3 r21_hf.py --scenario oom_skip
run hf_rope_inference 100 python3 r21_hf.py --scenario rope_inference
run hf_shared_save 100 python3 r21_hf.py --scenario shared_save
run vllm_graph_generator 60 python3 r21_vllm.py --scenario graph_generator --port 8963
run sg_graph_sync 60 python3 r21_sglang.py --scenario graph_sync --port 30963
run tr_determinism 70 torchrun --nproc-per-node 2 --master-port 29992 r21_tr.py --scenario determinism
run tr_fsdp_flat 70 torchrun --nproc-per-node 2 --master-port 29993 r21_tr.py --scenario fsdp_flat
run tr_inplace_noise 80 torchrun --nproc-per-node 2 --master-port 29994 r21_tr.py --scenario inplace_noise
run tr_master_addr 50 env -u MASTER_ADDR -u MASTER_PORT bash -c 'for t in 0 1; do
  SLURM_JOB_ID=48213 SLURM_NTASKS=2 SLURM_PROCID=$t SLURM_LOCALID=$t python3 r21_tr.py --scenario master_addr &
  done; wait'
run hf_flash_attn 60 python3 r21_hf.py --scenario flash_attn
run hf_fsdp_eval 60 python3 r21_hf.py --scenario fsdp_eval
run hf_rnn_eval 80 python3 r21_hf.py --scenario rnn_eval
run jax_clip_numpy 80 python3 r21_jax.py --scenario clip_numpy
run jax_scan_bf16 60 python3 r21_jax.py --scenario scan_bf16
run jax_pallas_oob 60 python3 r21_jax.py --scenario pallas_oob
run bench_cupy_mangled 60 python3 r21_bench.py --scenario cupy_mangled
run bench_cupy_shfl 60 python3 r21_bench.py --scenario cupy_shfl
run bench_triton_cpu_ptr 60 python3 r21_bench.py --scenario triton_cpu_ptr
# a container whose home directory is read-only (readOnlyRootFilesystem); /tmp stays writable
run bench_readonly_cache 60 unshare -m --propagation private bash -c 'mkdir -p /home/app &&
  mount -t tmpfs -o ro,size=1m tmpfs /home/app && HOME=/home/app exec python3 r21_bench.py --scenario readonly_cache'
[ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}"
echo "phase A done after $(( $(date +%s) - T0 )) s"

echo "all done after $(( $(date +%s) - T0 )) s"
cat $L/env.txt
for f in $L/*.log; do n=${f%.log}; echo "## $(basename $n) $(cat $n.exit 2>/dev/null) lines=$(wc -l < $f)"; done
tar czf "${OUT:-/tmp}/r21-logs.tgz" $L
