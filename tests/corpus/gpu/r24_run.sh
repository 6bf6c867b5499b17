#!/bin/bash
# Round 24: real GPU/host failures in new process shapes: an IPython session whose later cells fail because of
# (or beside) an earlier one, aiohttp and werkzeug servers that log per-request tracebacks and serve on, a serving
# benchmark's table, pytest runs of GPU kernels (a worker segfault under xdist, an assert_close mismatch, a GPU
# hang under pytest-timeout, a healthy run with warnings), a start script whose pip build of a local CUDA
# extension fails before the server starts, torchrun ranks ended by SIGSEGV and SIGKILL, two ranks' tracebacks
# interleaved line by line, an sglang scheduler's segfault at start-up, a vLLM offline script with no
# main guard, HF-style loops, a video pipeline's decoder, an Orbax resume, compute-sanitizer's report, a Triton
# cache entry cut short, CUDA under a virtual-memory ulimit. Every scenario runs under `timeout -s KILL` and
# writes r24_logs/<name>.log (+ .exit); what it leaves behind (its process group) is killed. The notebook that fills the card
# (phase B) runs alone on the GPU beside the CPU-only prep; phase A runs up to $P scenarios at once.
# Ran 2026-12-06 on an H100 (one call, 69 s, after seven calls that found no machine): 22 logs, 20 kept as
# E231-E250 (hf_vae_conv3d decoded fine; tri_cache_corrupt segfaulted with no message).
# Usage (on the device machine, from the repository root; `carry: ["build/r24_whl"]` brings IPython's wheels):
#   bash tests/corpus/gpu/r24_run.sh        # writes tests/corpus/gpu/r24_logs/ and tars it to $OUT/r24-logs.tgz
#   ONLY='^(pt_|srv_)' bash tests/corpus/gpu/r24_run.sh   # a subset (NOPREP=1: skip the prep)
# IPython's wheels (the device lacks IPython): from the repository root, with pip:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_17_x86_64 -d build/r24_whl ipython==8.37.0 traitlets decorator jedi parso \
#     matplotlib-inline 'prompt_toolkit>=3.0.41,<3.1' wcwidth pexpect ptyprocess stack_data executing asttokens pure_eval
cd "$(dirname "$0")"; L=r24_logs; rm -rf $L; mkdir -p $L
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false TOKENIZERS_PARALLELISM=false
unset CUBLAS_WORKSPACE_CONFIG TRITON_CACHE_DIR TRITON_HOME TORCH_EXTENSIONS_DIR PYTHONFAULTHANDLER HF_HUB_OFFLINE \
  MASTER_ADDR MASTER_PORT RANK WORLD_SIZE NODE_RANK SHAPES_DRY R24_ROOT
R=/tmp/r24_files
P=${P:-12}
T0=$(date +%s)
{ date -u; timeout 60 python3 -c 'import torch; print("device_count", torch.cuda.device_count())'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  timeout 90 python3 -c "import sys, torch, triton, jax, cupy, numpy, aiohttp, werkzeug, pytest, xdist, pytest_timeout, orbax.checkpoint as ocp; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'jax', jax.__version__, 'cupy', cupy.__version__, 'numpy', numpy.__version__, 'aiohttp', aiohttp.__version__, 'pytest', pytest.__version__, 'orbax', ocp.__version__)"
  which cc nvcc ninja compute-sanitizer; nvcc --version | tail -2; ulimit -n; nproc; grep MemTotal /proc/meminfo
  df -h /tmp | tail -1; } > $L/env.txt 2>&1 &
ENVJOB=$!
want() { [[ -z $ONLY || $1 =~ $ONLY ]]; }
NB_PATH=
if ! python3 -c 'import IPython' 2>/dev/null; then  # the notebook scenarios need IPython
  python3 -m pip install -q --no-index --no-deps --target /tmp/r24_site ../../../build/r24_whl/*.whl > $L/pip_ipython.txt 2>&1 \
    && NB_PATH=/tmp/r24_site && echo "IPython installed from build/r24_whl into /tmp/r24_site" >> $L/pip_ipython.txt
fi

# a cgroup v2 with a memory limit for one torchrun job (the scheduler's --mem=8G)
CG=
cg_setup() {
  local root=/sys/fs/cgroup
  if [ "$(stat -fc %T $root 2>/dev/null)" != cgroup2fs ]; then
    mkdir -p /tmp/r24_cg && mount -t cgroup2 none /tmp/r24_cg && root=/tmp/r24_cg || return 1
  fi
  grep -qw memory $root/cgroup.controllers || { echo "no memory controller in $root"; return 1; }
  grep -qw memory $root/cgroup.subtree_control || echo +memory > $root/cgroup.subtree_control
  mkdir -p $root/r24_job && echo 8G > $root/r24_job/memory.max || return 1
  [ -f $root/r24_job/memory.swap.max ] && echo 0 > $root/r24_job/memory.swap.max
  CG=$root/r24_job
}


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

# the notebook that fills the card runs alone on the GPU, beside the CPU-only prep
wait $ENVJOB
PIDS=()
run nb_held_after_oom 120 env PYTHONPATH=$NB_PATH python3 r24_nb.py --scenario held_after_oom
if [ -z "$NOPREP" ]; then
  rm -rf $R
  mkdir -p $R
  timeout 150 python3 r24_common.py --prep > $L/prep.txt 2>&1 &
  timeout 120 env JAX_PLATFORMS=cpu python3 r24_jax.py --prep > $L/prep_jax.txt 2>&1 &
  wait $(jobs -p | grep -v -x -e "${PIDS[0]:-none}")
  tail -n 4 $L/prep.txt $L/prep_jax.txt
fi
if want tr_sigkill_rank; then cg_setup > $L/cgroup.txt 2>&1; echo "cgroup: ${CG:-none}" | tee -a $L/cgroup.txt; fi
echo "prep done after $(( $(date +%s) - T0 )) s"

[ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}"
echo "phase B done after $(( $(date +%s) - T0 )) s"
PIDS=()

# ---------------------------------------------------------------- phase A: side by side (the slowest first)
run hf_vae_conv3d 100 python3 r24_hf.py --scenario vae_conv3d
run san_rowsum 180 compute-sanitizer --tool memcheck --print-limit 12 python3 r24_bench.py --scenario rowsum
run build_sm70 150 env SCRIPT_DIR="$PWD" PORT=8944 bash $R/srv/start.sh
run pt_xdist_segv 150 bash -c "cd $R/kernels && exec python3 -m pytest -n 2 -p no:cacheprovider tests/test_kvtools.py tests/test_rmsnorm.py"
run pt_softmax_mismatch 150 bash -c "cd $R/kernels && exec python3 -m pytest -p no:cacheprovider tests/test_softmax.py tests/test_rmsnorm.py"
run pt_barrier_timeout 150 bash -c "cd $R/kernels && exec python3 -m pytest -v -p no:cacheprovider --timeout 30 --timeout-method thread tests/test_barrier.py"
run pt_healthy_warnings 150 bash -c "cd $R/kernels && exec python3 -m pytest -p no:cacheprovider tests/test_rmsnorm.py tests/test_kvtools.py -k 'not cuda'"
run nb_caught_then_fp8 150 env PYTHONPATH=$NB_PATH python3 r24_nb.py --scenario caught_then_fp8 --colors NoColor
stop srv_topk_served_past TERM main 'POST /v1/completions' 30 150 python3 r24_srv.py --scenario topk_served_past --port 8941
stop srv_rerank_served_past INT group 'POST /rerank' 25 180 python3 r24_srv.py --scenario rerank_served_past --port 8942
run srv_bench 180 python3 r24_srv.py --scenario bench --port 8943
run tr_segv_rank 150 torchrun --nproc-per-node 2 --master-port 29841 r24_tr.py --scenario segv_rank
if [ -n "$CG" ]; then
  run tr_sigkill_rank 150 bash -c "echo \$\$ > $CG/cgroup.procs && exec torchrun --nproc-per-node 2 --master-port 29842 r24_tr.py --scenario sigkill_rank"
fi
run tr_interleave_keys 150 torchrun --nproc-per-node 2 --master-port 29843 r24_tr.py --scenario interleave_keys
run sg_fsm_segv 150 python3 r24_sglang.py --scenario fsm_segv --port 30941
run vllm_no_main_guard 150 python3 r24_offline_batch.py
run hf_gc_no_grad 150 python3 r24_hf.py --scenario gc_no_grad
run hf_worker_stack_smash 150 python3 r24_hf.py --scenario worker_stack_smash
run jax_orbax_resume 150 python3 r24_jax.py --scenario orbax_resume
# the Triton cache of the node's shared folder: filled by a first (unlogged) run, then its entries cut short
run tri_cache_corrupt 150 bash -c "export TRITON_CACHE_DIR=$R/triton-cache; python3 r24_bench.py --scenario warm > $L/prep_triton.txt 2>&1; \
  for f in \$(find $R/triton-cache -name '*.cubin'); do echo \"cubin \$f \$(stat -c %s \$f) bytes -> 4096\" >> $L/prep_triton.txt; truncate -s 4096 \$f; done; \
  exec python3 r24_bench.py --scenario triton_cache"
run job_ulimit_as 120 bash -c 'echo "[job 48213] $(date "+%F %T") starting mmlu eval on $(hostname -s)"; ulimit -v 16777216; ulimit -a | grep -i virtual; exec python3 r24_hf.py --scenario eval_ulimit'
[ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}"
echo "phase A done after $(( $(date +%s) - T0 )) s"

echo "all done after $(( $(date +%s) - T0 )) s"
cat $L/env.txt
for f in $L/*.log; do n=${f%.log}; echo "## $(basename $n) $(cat $n.exit 2>/dev/null) lines=$(wc -l < $f)"; done
tar czf "${OUT:-/tmp}/r24-logs.tgz" $L
