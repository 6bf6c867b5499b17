#!/bin/bash
# Round 32: real GPU/host failures (and four runs that do not crash) in varied process shapes; five print no Python
# traceback at all, several put a wrapper's or a generic error after the real one:
#   bpe_alloc        tokenizer job: a C BPE trainer's dense pair table (128256^2 x 8 bytes) under `ulimit -v`:
#                    "memory allocation of N bytes failed", abort, bash's "Aborted"
#   cu_embed_assert  CUDA embedding export: the third table's ids hold one id past its 32000 rows: the device
#                    "Assertion `row < nrows` failed." lines, then cudaErrorAssert on one CUDA_CHECK line
#   make_nvcc        make -j2 of two CUDA sources: a __host__ helper called from a __global__ function -> nvcc's
#                    "errors detected in the compilation of", make's "Error 2"
#   cu_tile_smem     transpose benchmark: TILE=128 needs 64 KiB of dynamic shared memory without the opt-in attribute
#                    -> launch "invalid argument" after TILE 32/64 ran
#   nms_dfree        C++ NMS post-processor copying a raw-pointer struct: "free(): double free detected in tcache 2",
#                    "Aborted"
#   vllm_rmsnorm     vLLM API server + EngineCore: a final RMSNorm of intermediate_size width -> rms_norm shape error in
#                    the profile run, "EngineCore failed to start", then "Engine core initialization failed"
#   sg_topk          sglang launcher + scheduler: warmup request with top_k=200000 over a 151936 vocabulary ->
#                    torch.topk "selected index k out of range", sigquit
#   vis_b64_400      vLLM-style vision server: one truncated base64 image -> binascii.Error at ERROR, 400, serving goes
#                    on; operator's SIGTERM (no crash)
#   sub_bincount     label-stat sweep: the child's torch.bincount on -100 labels (CUDA), then the parent's
#                    CalledProcessError
#   tr_singular      torchrun, 2 ranks: rank 1's Shampoo statistics singular -> torch.linalg.inv _LinAlgError;
#                    ChildFailedError
#   warn_finish      fine-tune with deprecated AMP calls and a scheduler stepped first: warnings, finishes (no crash)
#   recompile_warn   torch.compile(dynamic=False) over a changing Python int: recompile-limit warning, eager
#                    fallback, finishes (no crash)
#   tri_bitand       Triton quantize kernel: `x & 0x7FFFFFFF` on a float32 tile -> CompilationError
#   autotune_sigint  Triton autotuner sweep stopped by the operator's Ctrl-C (SIGINT): KeyboardInterrupt (stopped)
#   jax_prngkey      JAX resume: threefry key data wrapped under the rbg PRNG -> wrap_key_data shape error
# Every scenario runs under `timeout -s KILL` and writes r32_logs/<name>.log (+ .exit). Nothing here fills the card.
# Usage (on the device machine, from the repository root):
#   bash tests/corpus/gpu/r32_run.sh      # prints exit codes and line counts, tars r32_logs to $OUT/r32-logs.tgz
cd "$(dirname "$0")"; L=r32_logs; rm -rf $L; mkdir -p $L
HERE=$PWD
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
unset CUBLAS_WORKSPACE_CONFIG TRITON_CACHE_DIR TORCHINDUCTOR_CACHE_DIR PYTORCH_CUDA_ALLOC_CONF CUDA_LAUNCH_BLOCKING \
  PYTHONFAULTHANDLER MASTER_ADDR MASTER_PORT RANK WORLD_SIZE NODE_RANK SHAPES_DRY NCCL_NET NCCL_DEBUG CC CXX \
  TRITON_PRINT_AUTOTUNING JAX_PLATFORMS
R=${R32_ROOT:-/tmp/r32_files}; rm -rf $R; mkdir -p $R /tmp/r32_out
P=${P:-10}
T0=$(date +%s)
{ date -u; timeout 60 python3 -c 'import torch; print("device_count", torch.cuda.device_count())'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  command -v nvcc make gcc g++ torchrun; nvcc --version | tail -1; nproc; grep MemTotal /proc/meminfo; } > $L/env.txt 2>&1
cat $L/env.txt
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
run() {  # run NAME TIMEOUT CMD...
  local n=$1 t=$2; shift 2; want $n || return; slot; echo "== $n $(date +%T)"
  (
    setsid timeout -s KILL $t "$@" > $L/$n.log 2>&1 & pg=$!
    wait $pg; echo "exit=$?" > $L/$n.exit
    sleep 1; kill -KILL -- -$pg 2>/dev/null
  ) & PIDS+=($!)
}
stop() {  # stop NAME SIG MARKER COUNT DELAY TIMEOUT CMD...: SIG to the command's main process once MARKER was logged
  local n=$1 sig=$2 mk=$3 cnt=$4 dl=$5 t=$6; shift 6; want $n || return; slot; echo "== $n $(date +%T)"
  (
    setsid timeout --foreground -s KILL $t "$@" > $L/$n.log 2>&1 & pg=$!
    for i in $(seq $((t * 2))); do
      [ "$(grep -c -- "$mk" $L/$n.log)" -ge $cnt ] && break
      kill -0 $pg 2>/dev/null || break
      sleep 0.5
    done
    sleep $dl
    for p in $(kids $pg); do kill -$sig $p 2>/dev/null; done
    wait $pg; echo "exit=$?" > $L/$n.exit
    sleep 1; kill -KILL -- -$pg 2>/dev/null
  ) & PIDS+=($!)
}

python3 r32_native.py --write $R > /dev/null

# --- the scenarios (the longest first) ---
run recompile_warn 200 python3 r32_train.py --scenario recompile_warn
run tr_singular 150 torchrun --nproc-per-node 2 --master-port 29942 r32_train.py --scenario tr_singular
run sub_bincount 150 python3 r32_train.py --scenario sub_bincount
run warn_finish 150 python3 r32_train.py --scenario warn_finish
run vllm_rmsnorm 120 python3 r32_srv.py --scenario vllm_rmsnorm --port 8932
run sg_topk 120 python3 r32_srv.py --scenario sg_topk --port 30942
stop vis_b64_400 TERM 'Bad Request' 1 5 120 python3 r32_srv.py --scenario vis_b64_400 --port 8933
stop autotune_sigint INT 'tuning mm_kernel' 1 6 120 python3 r32_kern.py --scenario autotune_sigint
run tri_bitand 120 python3 r32_kern.py --scenario tri_bitand
run jax_prngkey 120 python3 r32_kern.py --scenario jax_prngkey
run bpe_alloc 120 bash $R/bpe/run.sh
run cu_embed_assert 120 bash $R/embed/run.sh
run make_nvcc 120 bash $R/mk/run.sh
run cu_tile_smem 120 bash $R/tile/run.sh
run nms_dfree 120 bash $R/nms/run.sh
# wait for every scenario, but never past 330 s of the whole run
while :; do
  left=0; for p in "${PIDS[@]}"; do kill -0 $p 2>/dev/null && left=1; done
  [ $left = 0 ] && break
  [ $(( $(date +%s) - T0 )) -ge 330 ] && { echo "deadline: scenarios still running are cut off"; break; }
  sleep 1
done
echo "all done after $(( $(date +%s) - T0 )) s"

for f in $L/*.log; do n=${f%.log}; echo "## $(basename $n) $(cat $n.exit 2>/dev/null) lines=$(wc -l < $f)"; done
tar czf "${OUT:-/tmp}/r32-logs.tgz" -C "$HERE" r32_logs
