#!/bin/bash
# Round 15: real GPU/host failures in server/trainer process shapes (sglang, vLLM, torchrun, HF Trainer /
# accelerate, Lightning, an OpenAI-style asyncio server). Every scenario runs under `timeout -s KILL`,
# writes r15_logs/<name>.log (+ .exit); up to $P at once; the logs are tarred into $OUT. ONLY=regex runs a subset.
cd "$(dirname "$0")"; L=r15_logs; rm -rf $L; mkdir -p $L
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TOKENIZERS_PARALLELISM=false
P=${P:-6}
{ date -u; python3 -c 'import torch; print(torch.cuda.device_count())'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } > $L/env.txt 2>&1
cat $L/env.txt
want() { [[ -z $ONLY || $1 =~ $ONLY ]]; }
if want sg_safetensors_corrupt; then python3 r15_common.py --prep > $L/prep.txt 2>&1; tail -1 $L/prep.txt; fi

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

run tr_inductor_cxx 200 env CXX=/opt/rh/gcc-toolset-13/root/usr/bin/g++ torchrun --nproc-per-node 2 --master-port 29803 r15_tr.py --scenario inductor_cxx
run vllm_graph_item 150 python3 r15_vllm.py --scenario graph_item --port 8301
run sg_nan_sampling 150 python3 r15_sglang.py --scenario nan_sampling --port 30301
run vllm_triton_smem 150 python3 r15_vllm.py --scenario triton_smem --port 8303
run sg_safetensors_corrupt 150 python3 r15_sglang.py --scenario safetensors_corrupt --port 30302
run tr_nccl_same_gpu 150 env NCCL_DEBUG=WARN torchrun --nproc-per-node 2 --master-port 29801 r15_tr.py --scenario nccl_same_gpu
run tr_watchdog_misaligned 150 env PYTHONFAULTHANDLER=1 torchrun --nproc-per-node 1 --master-port 29802 r15_tr.py --scenario watchdog_misaligned
run vllm_fp8_fnuz 120 python3 r15_vllm.py --scenario fp8_fnuz --port 8304
run sg_port_in_use 150 bash -c 'python3 r15_common.py --hold-port 30303 100 >/dev/null 2>&1 & sleep 3; exec python3 r15_sglang.py --scenario port_in_use --port 30303'
run sg_watchdog 150 python3 r15_sglang.py --scenario watchdog --port 30304
serve vllm_sigterm_loading 'Capturing CUDA graphs' 1 150 python3 r15_vllm.py --scenario sigterm_loading --port 8302
run vllm_serving_assert 150 python3 r15_vllm.py --scenario serving_assert --port 8305
run hf_vocab_assert 150 python3 r15_hf.py --scenario vocab_assert
run hf_sdpa_flash_fp32 150 python3 r15_hf.py --scenario sdpa_flash_fp32
serve sg_too_long_sigterm '"POST /generate HTTP/1.1" 200' 9 150 python3 r15_sglang.py --scenario too_long_sigterm --port 30305
run pl_anomaly_nan 180 python3 r15_pl.py --scenario anomaly_nan
serve oai_nan_request '/v1/completions' 16 150 python3 r15_oai.py --scenario nan_request
run tr_healthy_warnings 180 torchrun --nproc-per-node 2 --master-port 29804 r15_tr.py --scenario healthy_warnings
wait "${PIDS[@]}"
for f in $L/*.log; do n=${f%.log}; echo "## $(basename $n) $(cat $n.exit 2>/dev/null) lines=$(wc -l < $f)"; done
tar czf "${OUT:-/tmp}/r15-logs.tgz" $L
