#!/bin/bash
# Round 18: real GPU/host failures in server/trainer process shapes (vLLM API server + EngineCore (+ TP
# workers), sglang launcher + schedulers, torchrun, an HF-Trainer-style loop, JAX, a Triton benchmark, an
# OpenAI-style server). Every scenario runs under `timeout -s KILL` and writes r18_logs/<name>.log (+ .exit);
# what it leaves behind (its process group) is killed. Up to $P scenarios run at once. The logs are tarred
# into $OUT. ONLY=regex runs a subset.
cd "$(dirname "$0")"; L=r18_logs; rm -rf $L; mkdir -p $L
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false TOKENIZERS_PARALLELISM=false
P=${P:-10}
T0=$(date +%s)
{ date -u; timeout 60 python3 -c 'import torch; print(torch.cuda.device_count())'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  timeout 60 python3 -c "import torch, triton, jax, cupy; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'jax', jax.__version__, 'cupy', cupy.__version__)"
  nproc; grep MemTotal /proc/meminfo; gcc --version | head -1; unshare --version; df -h /dev/shm | tail -1; } > $L/env.txt 2>&1
cat $L/env.txt
want() { [[ -z $ONLY || $1 =~ $ONLY ]]; }
timeout 90 python3 r18_common.py --prep > $L/prep.txt 2>&1; tail -3 $L/prep.txt

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

# the heavier ones first
run vllm_rpc_timeout 75 python3 r18_vllm.py --scenario rpc_timeout --port 8801
run vllm_dynamo_overrides 75 python3 r18_vllm.py --scenario dynamo_overrides --port 8802
run tr_mark_ready 75 torchrun --nproc-per-node 2 --master-port 29961 r18_tr.py --scenario mark_ready
run tr_ckpt_keys 75 torchrun --nproc-per-node 2 --master-port 29962 r18_tr.py --scenario ckpt_keys
run vllm_ready_timeout 75 env VLLM_ENGINE_READY_TIMEOUT_S=25 python3 r18_vllm.py --scenario ready_timeout --port 8803
run vllm_graph_repeat 60 python3 r18_vllm.py --scenario graph_repeat --port 8804
run sg_vocab_narrow 60 python3 r18_sglang.py --scenario vocab_narrow --port 30801
run sg_fp8_torch_native 60 python3 r18_sglang.py --scenario fp8_torch_native --port 30802
serve vllm_healthy_warnings 'loggers.py' 5 75 python3 r18_vllm.py --scenario healthy_warnings --port 8805
serve jax_preempt 'tokens/s)' 5 90 python3 r18_jax.py --scenario preempt
run tr_cpu_nccl 60 env NCCL_DEBUG=WARN torchrun --nproc-per-node 2 --master-port 29963 r18_tr.py --scenario cpu_nccl
run tr_double_free 60 env PYTHONFAULTHANDLER=1 LIBC_FATAL_STDERR_=1 torchrun --nproc-per-node 2 --master-port 29964 r18_tr.py --scenario double_free
run vllm_sigill 50 env PYTHONFAULTHANDLER=1 python3 r18_vllm.py --scenario sigill --port 8806
run vllm_port_in_use 40 bash -c 'python3 -c "import socket, time; s = socket.socket(); s.bind((\"0.0.0.0\", 8807)); s.listen(); time.sleep(60)" & sleep 2; exec python3 r18_vllm.py --scenario port_in_use --port 8807'
run sg_ptx_version 50 python3 r18_sglang.py --scenario ptx_version --port 30803
run sg_sgl_kernel_abi 50 python3 r18_sglang.py --scenario sgl_kernel_abi --port 30804
run sg_alloc_conf 50 env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,garbage_collection_threshold:90 python3 r18_sglang.py --scenario alloc_conf --port 30805
run hf_optim_resume 50 python3 r18_hf.py --scenario optim_resume
run hf_shm_bus 60 unshare -m --propagation private bash -c 'mount -t tmpfs -o size=64m shm /dev/shm && exec python3 r18_hf.py --scenario shm_bus'
run jax_ffi_target 50 python3 r18_jax.py --scenario ffi_target
run jax_mesh_shape 40 python3 r18_jax.py --scenario mesh_shape
run tri_fp8e4b15 50 env TRITON_PRINT_AUTOTUNING=1 python3 r18_triton.py
serve oai_sample_n '/v1/completions' 14 60 python3 r18_oai.py
wait "${PIDS[@]}"
echo "all done after $(( $(date +%s) - T0 )) s"
for f in $L/*.log; do n=${f%.log}; echo "## $(basename $n) $(cat $n.exit 2>/dev/null) lines=$(wc -l < $f)"; done
tar czf "${OUT:-/tmp}/r18-logs.tgz" $L
