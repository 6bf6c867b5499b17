#!/bin/bash
# Round 26: real GPU/host failures in other process shapes: vLLM offline batch inference dying on NaN
# probabilities (fp16 overflow), a vLLM EngineCore whose CUDA-graph capture hits an .item() sync; sglang's HTTP
# port already taken, a TP-2 scheduler watchdog over a GPU handshake kernel that never ends, a healthy sglang start
# with real warnings stopped by the operator; torchrun with torch.compile(fullgraph=True) over a data-dependent
# branch, a float4 CuPy kernel on a misaligned shard (rank 1 only); an HF-style SFT loop with an unresized
# embedding, a resume from a truncated optimizer.pt; a Triton tile sweep over the shared-memory limit; a JAX loop
# with jax_debug_nans; an OpenAI-style server that answers one bad logit_bias request with 500 and serves on.
# Every scenario runs under `timeout -s KILL` and writes r26_logs/<name>.log (+ .exit); what it leaves behind (its
# process group) is killed.
# Usage (on the device machine, from the repository root):
#   bash tests/corpus/gpu/r26_run.sh        # writes tests/corpus/gpu/r26_logs/ and tars it to $OUT/r26-logs.tgz
cd "$(dirname "$0")"; L=r26_logs; rm -rf $L; mkdir -p $L
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false TOKENIZERS_PARALLELISM=false
unset CUBLAS_WORKSPACE_CONFIG TRITON_CACHE_DIR PYTORCH_CUDA_ALLOC_CONF CUDA_LAUNCH_BLOCKING PYTHONFAULTHANDLER \
  MASTER_ADDR MASTER_PORT RANK WORLD_SIZE NODE_RANK SHAPES_DRY
P=${P:-12}
T0=$(date +%s)
{ date -u; timeout 60 python3 -c 'import torch; print("device_count", torch.cuda.device_count())'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  timeout 90 python3 -c "import sys, torch, triton, jax, cupy, optax; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'jax', jax.__version__, 'cupy', cupy.__version__)"
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
    sleep 1.5
    for p in $(kids $pg); do kill -$sig $p 2>/dev/null; done
    wait $pg; echo "exit=$?" > $L/$n.exit
    sleep 1; kill -KILL -- -$pg 2>/dev/null
  ) & PIDS+=($!)
}

wait $ENVJOB
timeout 90 python3 r26_misc.py --scenario prep > $L/prep.txt 2>&1; tail -n 2 $L/prep.txt

run vllm_offline_nan 100 python3 r26_vllm.py --scenario offline_nan
run vllm_graph_item 100 python3 r26_vllm.py --scenario graph_item --port 8961
run sg_port_in_use 100 bash -c 'python3 -c "import socket,time; s=socket.socket(); s.bind((\"0.0.0.0\",30961)); s.listen(8); time.sleep(600)" & sleep 1; exec python3 r26_sglang.py --scenario port_in_use --port 30961'
run sg_watchdog 100 python3 r26_sglang.py --scenario watchdog --port 30962 --tp 2
stop sg_healthy_warn TERM 'Decode batch' 4 100 python3 r26_sglang.py --scenario healthy_warn --port 30963
run tr_compile_fullgraph 100 torchrun --nproc-per-node 2 --master-port 29861 r26_tr.py --scenario compile_fullgraph
run tr_misaligned 100 torchrun --nproc-per-node 2 --master-port 29862 r26_tr.py --scenario misaligned
run hf_embed_vocab 100 python3 r26_misc.py --scenario hf_embed_vocab
run hf_resume_corrupt 100 python3 r26_misc.py --scenario hf_resume_corrupt
run triton_oor 100 python3 r26_misc.py --scenario triton_oor
run jax_nan 100 python3 r26_misc.py --scenario jax_nan
stop oai_logit_bias TERM '500 Internal' 2 100 python3 r26_misc.py --scenario oai_logit_bias
[ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}"
echo "all done after $(( $(date +%s) - T0 )) s"

cat $L/env.txt
for f in $L/*.log; do n=${f%.log}; echo "## $(basename $n) $(cat $n.exit 2>/dev/null) lines=$(wc -l < $f)"; done
tar czf "${OUT:-/tmp}/r26-logs.tgz" $L
