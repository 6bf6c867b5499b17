#!/bin/bash
# Round 14: real GPU/host failures in server/trainer process shapes (sglang, vLLM, torchrun, HF Trainer /
# accelerate, Lightning, JAX, Triton, CuPy, an OpenAI-style asyncio server). Every scenario runs under
# `timeout -s KILL`, writes r14_logs/<name>.log (+ .exit); up to $P at once; the logs are tarred into $OUT.
# ONLY=regex runs a subset.
cd "$(dirname "$0")"; L=r14_logs; rm -rf $L; mkdir -p $L
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false TOKENIZERS_PARALLELISM=false
P=${P:-6}
{ date -u; python3 -c 'import torch; print(torch.cuda.device_count())'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, triton, jax, cupy, transformers, lightning; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'jax', jax.__version__, 'cupy', cupy.__version__, 'transformers', transformers.__version__, 'lightning', lightning.__version__)"
  which g++ nvcc; } > $L/env.txt 2>&1
cat $L/env.txt
python3 r14_common.py --prep > $L/prep.txt 2>&1; tail -3 $L/prep.txt
want() { [[ -z $ONLY || $1 =~ $ONLY ]]; }
LP=
if want pl_ckpt_truncated; then python3 r14_lightning.py --prep > $L/prep_lightning.txt 2>&1 & LP=$!; fi

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
run() {  # run NAME TIMEOUT CMD...: a crash-shaped scenario
  local n=$1 t=$2; shift 2; want $n || return; slot; echo "== $n $(date +%T)"
  ( timeout -s KILL $t "$@" > $L/$n.log 2>&1; echo "exit=$?" > $L/$n.exit ) & PIDS+=($!)
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

run sg_compile_nofake 200 python3 r14_sglang.py --scenario compile_nofake --port 30205
run tr_dynamic_guard 240 torchrun --nproc-per-node 2 --master-port 29704 r14_tr.py --scenario dynamic_guard
run sg_int32_overflow 200 python3 r14_sglang.py --scenario int32_overflow --port 30201
run vllm_maxlen 150 python3 r14_vllm.py --scenario maxlen --port 8201
run vllm_tp_shape 150 python3 r14_vllm.py --scenario tp_shape --port 8203
run vllm_dp_nvml 150 python3 r14_vllm.py --scenario dp_nvml --port 8204
run tr_monitored_barrier 150 torchrun --nproc-per-node 2 --master-port 29701 r14_tr.py --scenario monitored_barrier
run hf_fft_fp16 180 python3 r14_hf.py --scenario fft_fp16
run vllm_kv_fraction 150 python3 r14_vllm.py --scenario kv_fraction --port 8202
run sg_thread_ctx 150 python3 r14_sglang.py --scenario thread_ctx --port 30203
run sg_tokenizer_cut 120 python3 r14_sglang.py --scenario tokenizer_cut --port 30202
serve vllm_chat_template '400 Bad Request' 5 150 python3 r14_vllm.py --scenario chat_template --port 8206
run hf_lock_deadlock 150 python3 r14_hf.py --scenario lock_deadlock
run tr_stale_ext 120 torchrun --nproc-per-node 2 --master-port 29702 r14_tr.py --scenario stale_ext
serve tr_sigterm 'step ' 6 180 torchrun --nproc-per-node 2 --master-port 29703 r14_tr.py --scenario sigterm
run vllm_fp8_k16 150 python3 r14_vllm.py --scenario fp8_k16 --port 8205
run sg_graph_default_stream 150 python3 r14_sglang.py --scenario graph_default_stream --port 30204
serve oai_fraction_oom '/v1/completions' 14 150 python3 r14_oai.py --scenario fraction_oom
serve vllm_healthy_sigterm 'POST /v1/' 12 150 python3 r14_vllm.py --scenario healthy_sigterm --port 8207
run hf_pack_memerror 150 bash -c 'ulimit -v 33554432; exec python3 r14_hf.py --scenario pack_memerror'
run pl_devices2 120 python3 r14_lightning.py --scenario devices2
run jax_donated 120 python3 r14_jax.py --scenario donated
run jax_cudnn_attn 120 python3 r14_jax.py --scenario cudnn_attn
run tri_fp4_ptxas 120 python3 r14_triton.py --scenario fp4_ptxas
run cupy_cublas_lda 90 python3 r14_cupy.py --scenario cublas_lda
run cupy_launch_resources 90 python3 r14_cupy.py --scenario launch_resources
serve oai_asyncio_task '/v1/completions' 20 150 python3 r14_oai.py --scenario asyncio_task
if [ -n "$LP" ]; then wait $LP; tail -2 $L/prep_lightning.txt; fi
run pl_ckpt_truncated 150 python3 r14_lightning.py --scenario ckpt_truncated
run tri_spin_hang 120 python3 r14_triton.py --scenario spin_hang
wait "${PIDS[@]}"
for f in $L/*.log; do n=${f%.log}; echo "## $(basename $n) $(cat $n.exit 2>/dev/null) lines=$(wc -l < $f)"; grep -v '^\s*$' $f | tail -2 | cut -c1-200; done
tar czf "${OUT:-/tmp}/r14-logs.tgz" $L
