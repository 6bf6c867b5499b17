#!/bin/bash
# Round 11: real GPU/host failures in server/trainer process shapes (sglang, vLLM, torchrun, HF/accelerate,
# Lightning, JAX, Triton autotuner, an OpenAI-style server). Every scenario runs under `timeout -s KILL`,
# writes logs/<name>.log (+ .exit); up to $P at once; all logs tarred into $OUT. ONLY=regex: a subset.
cd "$(dirname "$0")"; L=r11_logs; rm -rf $L; mkdir -p $L
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false TOKENIZERS_PARALLELISM=false
P=${P:-6}
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch; print(torch.cuda.device_count())'
  python3 -c "import torch, triton, jax; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'jax', jax.__version__)"; } > $L/env.txt 2>&1
cat $L/env.txt
python3 r11_tr.py --make-ckpt /tmp/r11_ckpt/step_1200.pt > $L/prep.txt 2>&1
python3 -m http.server 30150 --bind 127.0.0.1 > /dev/null 2>&1 & holder=$!

PIDS=()
group_pids() { python3 -c "
import os, sys
for d in os.listdir('/proc'):
    if d.isdigit():
        try:
            if os.getpgid(int(d)) == int(sys.argv[1]): print(d)
        except OSError: pass" $1; }
slot() { while [ "$(jobs -rp | wc -l)" -gt $P ]; do sleep 0.3; done; }
want() { [[ -z $ONLY || $1 =~ $ONLY ]]; }
run() {  # run NAME TIMEOUT CMD...: a crash-shaped scenario
  local n=$1 t=$2; shift 2; want $n || return; slot; echo "== $n"
  ( timeout -s KILL $t "$@" > $L/$n.log 2>&1; echo "exit=$?" > $L/$n.exit ) & PIDS+=($!)
}
serve() {  # serve NAME SIG MARKER COUNT TIMEOUT CMD...: wait for COUNT marker lines, then the operator's SIG
  local n=$1 sig=$2 mk=$3 cnt=$4 t=$5; shift 5; want $n || return; slot; echo "== $n"
  (
    setsid timeout --foreground -s KILL $t "$@" > $L/$n.log 2>&1 & pg=$!
    for i in $(seq $((t * 2))); do [ "$(grep -c -- "$mk" $L/$n.log)" -ge $cnt ] && break; sleep 0.5; done
    sleep 2
    for p in $(group_pids $pg); do [ "$p" != "$pg" ] && kill -$sig $p 2>/dev/null; done  # not timeout itself
    wait $pg; echo "exit=$?" > $L/$n.exit
    kill -KILL -- -$pg 2>/dev/null
  ) & PIDS+=($!)
}

run sg_watchdog 120 python3 r11_sglang.py --scenario watchdog --port 30101
run vllm_graph_tp2 150 python3 r11_vllm.py --scenario graph_tp2 --port 8101
run tr_nccl_watchdog 120 torchrun --nproc-per-node 1 --master-port 29611 r11_tr.py --scenario nccl_watchdog
run jax_dist_timeout 90 python3 r11_jax.py --scenario dist_timeout
serve sg_ctrlc INT 'POST /generate' 5 150 python3 r11_sglang.py --scenario ctrlc --port 30102
serve vllm_healthy_sigint INT 'POST /v1/chat/completions' 8 150 python3 r11_vllm.py --scenario healthy_sigint --port 8102
run sg_nan 120 python3 r11_sglang.py --scenario nan --port 30103
run sg_mxfp8 120 python3 r11_sglang.py --scenario mxfp8 --port 30104
run sg_port 120 python3 r11_sglang.py --scenario port --port 30150
run vllm_safetensors 120 python3 r11_vllm.py --scenario safetensors --port 8103
run vllm_dead_misaligned 150 python3 r11_vllm.py --scenario dead_misaligned --port 8104
serve oai_request_nan TERM 'POST /v1/chat/completions' 12 120 python3 r11_oai_server.py --bad temperature0
run tr_ddp_unused 120 torchrun --nproc-per-node 2 --master-port 29612 r11_tr.py --scenario ddp_unused
run tr_weights_only 120 torchrun --nproc-per-node 2 --master-port 29613 r11_tr.py --scenario weights_only
run tr_healthy 150 torchrun --nproc-per-node 2 --master-port 29614 r11_tr.py --scenario healthy
run hf_trainer_vocab 150 python3 r11_hf.py --scenario trainer_vocab
run hf_fp16_unscale 120 python3 r11_hf.py --scenario fp16_unscale
run hf_dataloader_fork 120 python3 r11_hf.py --scenario dataloader_fork
run hf_sdpa_flash_fp32 120 python3 r11_hf.py --scenario sdpa_flash_fp32
run hf_compile_fullgraph 150 python3 r11_hf.py --scenario compile_fullgraph
run lightning_eigh_bf16 150 python3 r11_lightning.py
run jax_pallas_smem 150 python3 r11_jax.py --scenario pallas_smem
run jax_healthy 120 env TF_CPP_MIN_LOG_LEVEL=0 python3 r11_jax.py --scenario healthy
run triton_autotune_smem 150 python3 r11_triton_autotune.py
wait "${PIDS[@]}"
kill $holder 2>/dev/null
for f in $L/*.log; do n=${f%.log}; echo "## $(basename $n) $(cat $n.exit 2>/dev/null) lines=$(wc -l < $f)"; grep -v '^\s*$' $f | tail -2 | cut -c1-220; done
tar czf "${OUT:-/tmp}/r11-logs.tgz" $L
