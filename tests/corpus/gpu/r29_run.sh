#!/bin/bash
# Round 29: real GPU/host failures (and six runs that do not crash) in varied process shapes:
#   vllm_mark_dynamic      vLLM API server + EngineCore: a plugin model adds its whole learned position table; dynamo
#                          specializes num_tokens marked dynamic -> ConstraintViolationError, engine fails to start
#   vllm_lora_header       vLLM serving with runtime LoRA loading: an adapter whose safetensors header JSON was edited in
#                          place -> SafetensorError, 400 for the load, 404 for its requests, serves on; SIGTERM (no crash)
#   vllm_offline_recursion vLLM offline batch: a remote-code tokenizer's recursive segmentation on a 6 KB base64 blob ->
#                          RecursionError while adding requests
#   sg_ipc_stale           sglang launcher + scheduler: weights pushed as CUDA IPC handles; the second push re-sends the
#                          handles of a trainer process that has exited -> cudaIpcOpenMemHandle fails, sigquit
#   sg_vlm_bomb            sglang VLM server: a 31000x29000 image -> PIL DecompressionBombError, 400, serves on;
#                          SIGTERM (no crash)
#   tr_pin_cuda            torchrun, 2 ranks: dataset preloaded to the GPU + DataLoader(pin_memory=True) -> "cannot pin
#                          'torch.cuda.FloatTensor'" in both ranks, ChildFailedError
#   tr_sigint              torchrun, 2 ranks, healthy; the operator's Ctrl-C (SIGINT to the whole job): KeyboardInterrupt
#                          in the ranks, the agent's SignalException (no crash)
#   lt_slogdet_half        Lightning, precision="16-true": torch.linalg.slogdet in an invertible 1x1 conv refuses Half
#   hf_inductor_nocc       `accelerate launch` of a torch.compile'd loop from a job script exporting CC to a compiler
#                          that is not installed: Triton cannot build its launcher, Inductor fails; CalledProcessError
#   hf_cudagraph_overwrite eval loop, decode step compiled with mode="reduce-overhead", keeps the previous step's logits:
#                          "accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run"
#   rl_temp_zero           GRPO-style supervisor + rollout worker: eval rollouts with temperature 0.0 -> inf/nan
#                          probabilities, torch.multinomial error; the supervisor's failure line comes before the stderr
#   det_upsample           timm segmentation fine-tune with use_deterministic_algorithms(True): the CUDA backward of
#                          bilinear interpolation has no deterministic implementation
#   healthy_warnings       fp16 fine-tune with deprecated AMP APIs, 20 DataLoader workers on 16 cores, checkpoint without
#                          use_reentrant, GradScaler's skipped first steps; finishes (no crash)
#   pbs_walltime           a PBS job script at its walltime: PBS's kill line, SIGTERM, emergency checkpoint, exit 0
#                          (no crash)
#   tri_autotune_fp8       Triton GEMM benchmark: fp8 rows reuse the fp16 autotune configs; BLOCK_K=16 < 32 for 8-bit
#                          tl.dot -> CompilationError during autotuning
#   cupy_potrf             CuPy whitening under cupyx.errstate(linalg='raise'): a shard with fewer rows than dimensions
#                          -> cuSOLVER potrf devInfo != 0, LinAlgError
#   numba_typing           numba-cuda kernel with NumPy array ops (row difference, np.linalg.norm) -> TypingError at launch
#   cudapy_dynsmem         cuda.bindings prototype: 96 KiB of dynamic shared memory without the opt-in attribute ->
#                          cuLaunchKernel CUDA_ERROR_INVALID_VALUE
#   jit_nvrtc              torch.cuda.jiterator GELU using M_SQRT1_2 -> NVRTC compile error at the first forward
#   ort_cpu_fallback       ONNX export + onnxruntime asked for the CUDA provider on a CPU-only build: warnings, runs on
#                          the CPU, finishes (no crash)
#   jax_eigh_bf16          JAX Shampoo-style loop: jnp.linalg.eigh on bfloat16 statistics at the first preconditioner
#                          update -> GPU eigh has no bf16 kernel
#   jax_coord_port         a launch script; jax.distributed.initialize's coordinator port is held by a leftover process
#                          -> the coordination service cannot bind
#   cu_misaligned          a nightly job script: nvcc-built CSR SpMV with float4 loads on an unpadded matrix -> misaligned
#                          address; the script's failure line first, then the program's log tail
#   cu_gemmex              `make run` of a cuBLAS int8 GEMM: int8 inputs, float32 C, CUBLAS_COMPUTE_32I -> cuBLAS status
#                          error; make's failed-target line
# Every scenario runs under `timeout -s KILL` and writes r29_logs/<name>.log (+ .exit); what it leaves behind (its
# process group) is killed. Nothing here fills the card.
# Usage (on the device machine, from the repository root):
#   bash tests/corpus/gpu/r29_run.sh        # prints each scenario's exit code and line count, tars r29_logs to $OUT/r29-logs.tgz
#   ONLY='regex' bash tests/corpus/gpu/r29_run.sh   # only the scenarios whose name matches
cd "$(dirname "$0")"; L=r29_logs; rm -rf $L; mkdir -p $L
HERE=$PWD
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
unset CUBLAS_WORKSPACE_CONFIG TRITON_CACHE_DIR TORCHINDUCTOR_CACHE_DIR PYTORCH_CUDA_ALLOC_CONF CUDA_LAUNCH_BLOCKING \
  PYTHONFAULTHANDLER MASTER_ADDR MASTER_PORT RANK WORLD_SIZE NODE_RANK SHAPES_DRY NCCL_NET NCCL_DEBUG R29_DEV CC CXX \
  TRITON_PRINT_AUTOTUNING JAX_PLATFORMS
export R29_ROOT=${R29_ROOT:-/tmp/r29_files}
R=$R29_ROOT; rm -rf $R; mkdir -p $R/jobs $R/native $R/cache
P=${P:-8}
T0=$(date +%s)
{ date -u; timeout 60 python3 -c 'import torch; print("device_count", torch.cuda.device_count())'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  timeout 90 python3 -c "import sys, torch, triton, jax, cupy, numba, lightning, accelerate, timm, onnxruntime; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'jax', jax.__version__, 'cupy', cupy.__version__, 'numba', numba.__version__, 'lightning', lightning.__version__, 'accelerate', accelerate.__version__, 'timm', timm.__version__, 'onnxruntime', onnxruntime.__version__, onnxruntime.get_available_providers())"
  timeout 60 python3 -c "import numba_cuda, cuda.bindings; print('numba_cuda', getattr(numba_cuda, '__version__', '?'), 'cuda.bindings', cuda.bindings.__version__)"
  command -v nvcc make gcc accelerate; nvcc --version | tail -1; nproc; grep MemTotal /proc/meminfo; } > $L/env.txt 2>&1
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
group_pids() { python3 -c "
import os, sys
for d in os.listdir('/proc'):
    if d.isdigit():
        try:
            if os.getpgid(int(d)) == int(sys.argv[1]): print(d)
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
stop() {  # stop NAME SIG WHO MARKER COUNT DELAY TIMEOUT CMD...: once MARKER was logged COUNT times and DELAY seconds more
          # have passed, SIG to the command's main process (WHO=main, a `kill`) or to every process of the job
          # (WHO=group, a terminal's Ctrl-C)
  local n=$1 sig=$2 who=$3 mk=$4 cnt=$5 dl=$6 t=$7; shift 7; want $n || return; slot; echo "== $n $(date +%T)"
  (
    setsid timeout --foreground -s KILL $t "$@" > $L/$n.log 2>&1 & pg=$!
    for i in $(seq $((t * 2))); do
      [ "$(grep -c -- "$mk" $L/$n.log)" -ge $cnt ] && break
      kill -0 $pg 2>/dev/null || break
      sleep 0.5
    done
    sleep $dl
    if [ $who = group ]; then
      for p in $(group_pids $pg); do [ "$p" != "$pg" ] && kill -$sig $p 2>/dev/null; done
    else
      for p in $(kids $pg); do kill -$sig $p 2>/dev/null; done
    fi
    wait $pg; echo "exit=$?" > $L/$n.exit
    sleep 1; kill -KILL -- -$pg 2>/dev/null
  ) & PIDS+=($!)
}

# --- files and job scripts the scenarios use (written here, outside the repository) ---
python3 r29_native.py --write $R/native > /dev/null
python3 - $R/native/int8gemm/config.mk <<'EOF'
# where cuBLAS's headers are: the CUDA toolkit's, or the pip wheel's (nvidia/cu13) beside PyTorch
import glob, os, sys
for inc in ["/usr/local/cuda/include"] + sorted(glob.glob("/usr/local/cuda-*/include")):
    if os.path.exists(f"{inc}/cublas_v2.h"):
        sys.exit(0)
try:
    import nvidia
    roots = list(nvidia.__path__)
except ImportError:
    roots = []
for r in roots:
    for inc in glob.glob(f"{r}/*/include") + glob.glob(f"{r}/cublas/include"):
        if os.path.exists(f"{inc}/cublas_v2.h"):
            lib = os.path.join(os.path.dirname(inc), "lib")
            so = sorted(os.path.basename(p) for p in glob.glob(f"{lib}/libcublas.so*"))
            with open(sys.argv[1], "w") as f:
                f.write(f"CUBLAS_CFLAGS = -I{inc}\nCUBLAS_LIBS = -L{lib} -l:{so[0]} -Xlinker -rpath={lib}\n")
            sys.exit(0)
print("cublas_v2.h not found")
EOF
ACC="accelerate launch"; command -v accelerate > /dev/null || ACC="python3 -m accelerate.commands.launch"
cat > $R/jobs/train_clm.sh <<EOF
#!/bin/bash
# clm pretraining smoke run (image: ml-train:2026.10)
export CC=/opt/rh/gcc-toolset-11/root/usr/bin/gcc CXX=/opt/rh/gcc-toolset-11/root/usr/bin/g++
export TRITON_CACHE_DIR=$R/cache/triton TORCHINDUCTOR_CACHE_DIR=$R/cache/inductor
echo "[\$(date -u +%FT%TZ)] host=\$(hostname) gpus=\$(nvidia-smi -L | wc -l) torch=\$(python3 -c 'import torch; print(torch.__version__)')"
$ACC --num_processes 1 --mixed_precision bf16 $HERE/r29_train.py --scenario inductor_nocc
EOF
cat > $R/jobs/vit_pbs.sh <<EOF
#!/bin/bash
#PBS -N vit-l16-pretrain
#PBS -l select=1:ncpus=16:ngpus=1:mem=120gb
#PBS -l walltime=12:00:00
#PBS -j oe
export PBS_JOBID=8812345.pbs01 PBS_O_WORKDIR=$R
cd \$PBS_O_WORKDIR
echo "PBS job \$PBS_JOBID (vit-l16-pretrain) started on \$(hostname) at \$(date)"
echo "CUDA_VISIBLE_DEVICES=\${CUDA_VISIBLE_DEVICES:-0}"
python3 $HERE/r29_train.py --scenario pbs_train &
PID=\$!
sleep 25
echo "=>> PBS: job killed: walltime 43231 exceeded limit 43200"
kill -TERM \$PID
wait \$PID
echo "train exited with status \$?"
EOF
cat > $R/jobs/launch_vit.sh <<EOF
#!/bin/bash
# single-host launch of the JAX ViT trainer (same entry point as the multi-host jobs)
export COORDINATOR_ADDRESS=127.0.0.1:8476 NUM_PROCESSES=1 PROCESS_ID=0
echo "launch_vit: \$(date) host=\$(hostname) coordinator=\$COORDINATOR_ADDRESS"
python3 $HERE/r29_jax.py --scenario coord_port
echo "launch_vit: trainer exited with status \$?"
EOF
cat > $R/jobs/run_spmv.sh <<EOF
#!/bin/bash
# nightly SpMV kernel benchmark
cd $R/native/spmv
echo "[\$(date '+%F %T')] building spmv_bench with \$(nvcc --version | tail -1)"
nvcc -O3 -arch=sm_90 -lineinfo -o spmv_bench spmv_bench.cu || exit 1
for spec in "web-Google-padded 1048576 1" "hollywood-2009 1048576 0" "kron-g500-logn20 1048576 1"; do
  set -- \$spec
  ./spmv_bench \$1 \$2 \$3 > bench_\$1.log 2>&1
  rc=\$?
  if [ \$rc -ne 0 ]; then
    echo "[\$(date '+%F %T')] FAILED: spmv_bench \$1 exited with status \$rc; last lines of bench_\$1.log:"
    tail -n 15 bench_\$1.log
    exit \$rc
  fi
  echo "[\$(date '+%F %T')] ok \$1: \$(grep -h GFLOP bench_\$1.log)"
done
EOF
chmod +x $R/jobs/*.sh

# --- the scenarios ---
run vllm_mark_dynamic 150 python3 r29_vllm.py --scenario mark_dynamic --port 8991
stop vllm_lora_header TERM main '404 Not Found' 3 2 150 python3 r29_vllm.py --scenario lora_header --port 8992
run vllm_offline_recursion 150 python3 r29_vllm.py --scenario offline_recursion
run sg_ipc_stale 150 python3 r29_sglang.py --scenario ipc_stale --port 30991
stop sg_vlm_bomb TERM main '400 Bad Request' 1 6 150 python3 r29_sglang.py --scenario vlm_bomb --port 30992
run tr_pin_cuda 150 torchrun --nproc-per-node 2 --master-port 29891 r29_tr.py --scenario pin_cuda
stop tr_sigint INT group 'step 40 ' 2 1 150 torchrun --nproc-per-node 2 --master-port 29892 r29_tr.py --scenario sigint
run lt_slogdet_half 150 python3 r29_train.py --scenario lt_slogdet_half
run hf_inductor_nocc 200 bash $R/jobs/train_clm.sh
run hf_cudagraph_overwrite 240 python3 r29_train.py --scenario cudagraph_overwrite
run rl_temp_zero 150 python3 r29_train.py --scenario rl_temp_zero
run det_upsample 150 python3 r29_train.py --scenario det_upsample
run healthy_warnings 240 python3 r29_train.py --scenario healthy_warnings
run pbs_walltime 120 bash $R/jobs/vit_pbs.sh
run tri_autotune_fp8 240 env TRITON_PRINT_AUTOTUNING=1 python3 r29_kern.py --scenario tri_autotune_fp8
run cupy_potrf 100 python3 r29_kern.py --scenario cupy_potrf
run numba_typing 100 python3 r29_kern.py --scenario numba_typing
run cudapy_dynsmem 100 python3 r29_kern.py --scenario cudapy_dynsmem
run jit_nvrtc 120 python3 r29_kern.py --scenario jit_nvrtc
run ort_cpu_fallback 150 python3 r29_kern.py --scenario ort_cpu_fallback
run jax_eigh_bf16 150 python3 r29_jax.py --scenario eigh_bf16
if want jax_coord_port; then  # a process left from an earlier run still holds the coordinator port
  setsid timeout -s KILL 200 python3 -c 'import socket, time; s = socket.socket(); s.bind(("0.0.0.0", 8476)); s.listen(16); time.sleep(200)' > /dev/null 2>&1 &
  HOLDER=$!
  sleep 1
fi
run jax_coord_port 100 bash $R/jobs/launch_vit.sh
run cu_misaligned 120 bash $R/jobs/run_spmv.sh
run cu_gemmex 150 make -C $R/native/int8gemm run
[ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}"
[ -n "$HOLDER" ] && kill -KILL -- -$HOLDER 2>/dev/null
echo "all done after $(( $(date +%s) - T0 )) s"

for f in $L/*.log; do n=${f%.log}; echo "## $(basename $n) $(cat $n.exit 2>/dev/null) lines=$(wc -l < $f)"; done
tar czf "${OUT:-/tmp}/r29-logs.tgz" -C "$HERE" r29_logs
