#!/bin/bash
# Batch of (ONLY=regex: a subset of) the shapes_* scenarios (sglang- and vLLM-shaped multi-process logs of real GPU failures); logs tarred into $OUT.
cd "$(dirname "$0")"; mkdir -p shapes_logs; L=shapes_logs
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'triton', triton.__version__)"; python3 --version; } > $L/env.txt 2>&1
run() {  # run NAME CMD...: one log per scenario, its exit status beside it
  local n=$1; shift; [[ -n $ONLY && ! $n =~ $ONLY ]] && return; echo "== $n"
  timeout -s KILL 60 "$@" > $L/$n.log 2>&1; echo "exit=$?" > $L/$n.exit
  sleep 1; wc -l < $L/$n.log
}
for s in illegal_tb_first assert_wrapper_first oom_tb_first oom_wrapper_first assert_interleave nccl_two_ranks_one_gpu gloo_mismatch_wrapper_first; do
  run sglang_crash.$s python3 shapes_sglang_crash.py --scenario $s
done
for s in oom_above oom_below illegal_above assert_below; do
  run vllm_crash.$s python3 shapes_vllm_crash.py --scenario $s
done
serve() {  # serve SCRIPT SCENARIO MARKER COUNT: start, wait for COUNT request lines, then an operator's SIGTERM
  local n=${1%.py}.$2; n=${n#shapes_}; [[ -n $ONLY && ! $n =~ $ONLY ]] && return; echo "== $n"
  python3 $1 --scenario $2 > $L/$n.log 2>&1 & local pid=$!
  for i in $(seq 300); do [ "$(grep -c "$3" $L/$n.log)" -ge $4 ] && break; sleep 0.5; done
  sleep 2; kill -TERM $pid; wait $pid; echo "exit=$?" > $L/$n.exit; sleep 1; wc -l < $L/$n.log
}
serve shapes_sglang_serve.py request_oom_then_sigterm 'POST /generate' 9
serve shapes_vllm_serve.py clean_sigterm 'POST /v1/completions' 8
serve shapes_vllm_serve.py request_oom_then_sigterm 'POST /v1/completions' 8
tar czf "${OUT:-/tmp}/shapes-logs.tgz" $L
