#!/bin/bash
# Round 30: real GPU/host failures (and five runs that do not crash) in varied process shapes:
#   vllm_dtype        vLLM API server + EngineCore: a float32 weight (loaded without a cast) meets bf16 activations in the
#                     profile run's F.linear -> "expected mat1 and mat2 to have the same dtype", engine fails to start
#   vllm_gqa          vLLM offline batch: config's num_key_value_heads=6 vs k_proj weights of 8 heads -> .view() shape
#                     error in the profile run; the batch script dies with "Engine core initialization failed"
#   vllm_seed         vLLM serving completions: one request's seed=2**64 -> torch.Generator.manual_seed overflow, 500,
#                     serves on; SIGTERM (no crash)
#   sg_pool           sglang launcher + scheduler: max_running_requests 512 over a 256-slot req_to_token pool; a burst
#                     exhausts it, alloc() returns None -> TypeError in the scheduler, sigquit
#   sg_topk_n         sglang scheduler: a best-of-64 request sampled without replacement from top-40 probabilities ->
#                     "cannot sample n_sample > prob_dist.size(-1) samples without replacement", sigquit
#   tr_save_dir       torchrun, 2 ranks: rank 0's torch.save into a step folder never created -> "Parent directory ...
#                     does not exist"; rank 1 waits in the barrier and is stopped; ChildFailedError
#   tr_no_destroy     torchrun, 1 rank on NCCL: trains to the end without destroy_process_group(): exit-time warning
#                     (no crash)
#   tr_restart_port   torchrun, 2 ranks, --max-restarts 1: a leftover exporter holds rank 1's metrics port -> EADDRINUSE,
#                     the agent restarts the group, the port is free by then, training finishes (no crash)
#   hf_ckpt_recompute ViT with token dropping drawn from Python's random under non-reentrant activation checkpointing:
#                     the recompute keeps another token count -> CheckpointError (different metadata)
#   hf_sparse_adam    two-tower recommender, nn.Embedding(sparse=True) under torch.optim.Adam -> "Adam does not support
#                     sparse gradients"
#   hf_resume_noopt   resume from a checkpoint without optimizer.pt: FileNotFoundError caught, warning, finishes (no crash)
#   dl_spawn_pickle   DataLoader with multiprocessing_context="spawn" and a collate_fn defined in a function -> the
#                     workers cannot be started (pickling a local object)
#   lt_log_vector     Lightning: self.log of a 10-element per-class accuracy tensor at validation end -> ValueError
#   pipe_head         an eval wrapper pipes the script through `head -n 30` -> BrokenPipeError once head exits
#   tri_lora_expand   Punica-style LoRA Triton kernels: rank 8 as the expand dot's K dimension -> Triton's K >= 16 check
#   event_notready    GEMM benchmark reads elapsed_time before the end event completed -> "CUDA error: device not ready"
#   jax_static_list   jit with static_argnames given a list from the JSON config -> "Non-hashable static arguments"
#   jax_donate        jitted step donates f32 params, returns one packed bf16 vector: "Some donated buffers were not usable",
#                     finishes (no crash)
#   cu_fir            nightly FIR job: 127 taps copied into a 64-float __constant__ array -> cudaMemcpyToSymbol
#                     cudaErrorInvalidValue (checkCudaErrors line), after the first bank ran
#   cu_coop           `make run` of a grid-synced normalization kernel: 16384 blocks in cudaLaunchCooperativeKernel ->
#                     cudaErrorCooperativeLaunchTooLarge; make's failed-target line
# Every scenario runs under `timeout -s KILL` and writes r30_logs/<name>.log (+ .exit); what it leaves behind (its
# process group) is killed. Nothing here fills the card.
# Usage (on the device machine, from the repository root):
#   bash tests/corpus/gpu/r30_run.sh        # prints each scenario's exit code and line count, tars r30_logs to $OUT/r30-logs.tgz
#   ONLY='regex' bash tests/corpus/gpu/r30_run.sh   # only the scenarios whose name matches
cd "$(dirname "$0")"; L=r30_logs; rm -rf $L; mkdir -p $L
HERE=$PWD
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
unset CUBLAS_WORKSPACE_CONFIG TRITON_CACHE_DIR TORCHINDUCTOR_CACHE_DIR PYTORCH_CUDA_ALLOC_CONF CUDA_LAUNCH_BLOCKING \
  PYTHONFAULTHANDLER MASTER_ADDR MASTER_PORT RANK WORLD_SIZE NODE_RANK SHAPES_DRY NCCL_NET NCCL_DEBUG CC CXX \
  TRITON_PRINT_AUTOTUNING JAX_PLATFORMS
export R30_ROOT=${R30_ROOT:-/tmp/r30_files}
R=$R30_ROOT; rm -rf $R; mkdir -p $R/jobs $R/native
P=${P:-10}
T0=$(date +%s)
{ date -u; timeout 60 python3 -c 'import torch; print("device_count", torch.cuda.device_count())'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  timeout 90 python3 -c "import sys, torch, triton, jax, lightning; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'jax', jax.__version__, 'lightning', lightning.__version__)"
  command -v nvcc make gcc torchrun; nvcc --version | tail -1; nproc; grep MemTotal /proc/meminfo; } > $L/env.txt 2>&1
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
stop() {  # stop NAME SIG MARKER COUNT DELAY TIMEOUT CMD...: once MARKER was logged COUNT times and DELAY seconds more
          # have passed, SIG to the command's main process (an operator's `kill`)
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

# --- files and job scripts the scenarios use (written here, outside the repository) ---
python3 r30_native.py --write $R/native > /dev/null
cat > $R/jobs/quick_ppl.sh <<EOF
#!/bin/bash
# quick look at a checkpoint's perplexity: the first shards are enough
echo "[quick_ppl] \$(date -u +%FT%TZ) checkpoint=/ckpt/ppl-eval/step-30000"
python3 $HERE/r30_train.py --scenario pipe_head | head -n 30
echo "[quick_ppl] exit codes: \${PIPESTATUS[*]}"
EOF
chmod +x $R/jobs/*.sh

# --- the scenarios ---
run vllm_dtype 100 python3 r30_srv.py --scenario vllm_dtype --port 8993
run vllm_gqa 100 python3 r30_srv.py --scenario vllm_gqa
stop vllm_seed TERM '500 Internal Server Error' 1 5 100 python3 r30_srv.py --scenario vllm_seed --port 8994
run sg_pool 100 python3 r30_srv.py --scenario sg_pool --port 30993
run sg_topk_n 100 python3 r30_srv.py --scenario sg_topk_n --port 30994
run tr_save_dir 120 torchrun --nproc-per-node 2 --master-port 29931 r30_tr.py --scenario save_dir --ckpt-root $R/ckpt
run tr_no_destroy 120 torchrun --nproc-per-node 1 --master-port 29932 r30_tr.py --scenario no_destroy --steps 300
if want tr_restart_port; then  # an exporter left from an earlier job holds port 9401 until the ops cron cleans it up
  setsid timeout -s KILL 200 python3 -c 'import socket, time; s = socket.socket(); s.bind(("0.0.0.0", 9401)); s.listen(16); time.sleep(200)' > /dev/null 2>&1 &
  HOLDER=$!
  ( for i in $(seq 300); do grep -q "Address already in use" $L/tr_restart_port.log 2>/dev/null && break; sleep 0.5; done
    kill -KILL -- -$HOLDER 2>/dev/null ) &
  sleep 1
fi
run tr_restart_port 120 torchrun --nnodes 1 --nproc-per-node 2 --max-restarts 1 --rdzv-backend c10d --rdzv-endpoint localhost:29933 --rdzv-id vit-pretrain-0412 r30_tr.py --scenario restart_port --steps 200
run hf_ckpt_recompute 120 python3 r30_train.py --scenario ckpt_recompute
run hf_sparse_adam 120 python3 r30_train.py --scenario sparse_adam
run hf_resume_noopt 120 python3 r30_train.py --scenario resume_noopt
run dl_spawn_pickle 120 python3 r30_train.py --scenario spawn_pickle
run lt_log_vector 150 python3 r30_train.py --scenario lt_log_vector
run pipe_head 90 bash $R/jobs/quick_ppl.sh
run tri_lora_expand 120 python3 r30_kern.py --scenario tri_lora_expand
run event_notready 90 python3 r30_kern.py --scenario event_notready
run jax_static_list 100 python3 r30_kern.py --scenario jax_static_list
run jax_donate 100 python3 r30_kern.py --scenario jax_donate
run cu_fir 100 bash $R/native/fir/run_banks.sh
run cu_coop 100 make -C $R/native/coop run
# wait for every scenario, but never past 330 s of the whole run (what is still running then is left out of .exit)
while :; do
  left=0; for p in "${PIDS[@]}"; do kill -0 $p 2>/dev/null && left=1; done
  [ $left = 0 ] && break
  [ $(( $(date +%s) - T0 )) -ge 330 ] && { echo "deadline: scenarios still running are cut off"; break; }
  sleep 1
done
[ -n "$HOLDER" ] && kill -KILL -- -$HOLDER 2>/dev/null
echo "all done after $(( $(date +%s) - T0 )) s"

for f in $L/*.log; do n=${f%.log}; echo "## $(basename $n) $(cat $n.exit 2>/dev/null) lines=$(wc -l < $f)"; done
tar czf "${OUT:-/tmp}/r30-logs.tgz" -C "$HERE" r30_logs
