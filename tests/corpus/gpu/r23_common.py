# Round 23: shared helpers for the r23_* scenarios. Loggers and the small GPU decoder come from r18_common /
# shapes_common; this adds the prep step (`python3 r23_common.py --prep`, CPU only, run once by r23_run.sh)
# that builds and writes what some scenarios load:
# - libpackops.so (C): the sequence-packing helper of a data pipeline; it divides the pack length by the number
#   of documents of a length bucket, which is 0 for an empty bucket (integer division by zero: SIGFPE);
# - libblendprefetch.so (C++): a Megatron-style blended-dataset prefetcher whose background thread walks the
#   blending index; the index was built from four weights while three datasets were given, so the thread
#   throws std::out_of_range, which nothing catches (std::terminate, abort);
# - one data shard of a two-shard dataset (the second shard was never copied to this node);
# - an empty HF cache folder (the node's HF_HOME);
# - the supervisor script of a one-GPU vLLM node (serve.sh: retries with fallback configurations, every attempt
#   appended to one log; frees the GPU from leftover workers before the third attempt; forwards SIGTERM).
# SHAPES_DRY=1: no GPU (a local check of the process shapes).
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from r18_common import DRY, Decoder, add_prefix, sglang_logger, ts, uvicorn_log, vllm_logger  # noqa: E402,F401

ROOT = os.environ.get("R23_ROOT", "/tmp/r23_files")  # R23_ROOT: elsewhere for a local dry run
PACKOPS = f"{ROOT}/lib/libpackops.so"
PREFETCH = f"{ROOT}/lib/libblendprefetch.so"
DATA = f"{ROOT}/data/slimpajama-6b"
HF_HOME = f"{ROOT}/hf_home"
SERVE_SH = f"{ROOT}/node/serve.sh"
SERVE_SH_TEXT = r"""#!/bin/bash
# the supervisor script of a one-GPU inference node. It starts the vLLM-shaped server
# (r23_vllm.py --scenario relaunch) and, when it exits, retries with the next fallback configuration; every
# attempt appends to the same log. Before the third attempt it frees the GPU from leftover engine workers (their
# pid file). SIGTERM (the operator) is forwarded to the server.
cd "${SCRIPT_DIR:?}"
MODEL=/models/Qwen2.5-32B-Instruct-AWQ
PIDFILE=@ROOT@/vllm-workers.pid
rm -f "$PIDFILE"
child=
trap 'echo "[serve.sh] $(date "+%F %T") caught SIGTERM, stopping vllm (pid $child)"; kill -TERM $child 2>/dev/null; wait $child; echo "[serve.sh] $(date "+%F %T") vllm exited with code $?"; exit 0' TERM
CONFIGS=("--tensor-parallel-size 2 --gpu-memory-utilization 0.90"
         "--tensor-parallel-size 1 --gpu-memory-utilization 0.90"
         "--tensor-parallel-size 1 --gpu-memory-utilization 0.90")
for i in 0 1 2; do
  attempt=$((i + 1))
  if [ $attempt -eq 3 ]; then
    echo "[serve.sh] $(date '+%F %T') GPU processes before restart:"
    nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
    if [ -s "$PIDFILE" ]; then
      for pid in $(cat "$PIDFILE"); do echo "[serve.sh] killing stale vllm worker $pid"; kill -KILL $pid; done
      rm -f "$PIDFILE"; sleep 3
    fi
  fi
  echo "[serve.sh] $(date '+%F %T') attempt $attempt/3: vllm serve $MODEL ${CONFIGS[$i]} --max-model-len 32768 --port 8000"
  python3 r23_vllm.py --scenario relaunch --attempt $attempt ${CONFIGS[$i]} --max-model-len 32768 --port 8000 &
  child=$!
  wait $child
  rc=$?
  echo "[serve.sh] $(date '+%F %T') vllm exited with code $rc"
  [ $rc -eq 0 ] && exit 0
  sleep 2
done
echo "[serve.sh] $(date '+%F %T') giving up after 3 attempts"
exit 1
"""

PACKOPS_C = r"""
#include <stdint.h>
/* Greedy packing of one sample: documents are bucketed by length; every bucket gets an equal share of the
   pack (seq_len / docs_in_bucket tokens per document). Returns the number of tokens written. */
int pack_sample(const int32_t* doc_lens, int n_docs, int seq_len, int n_buckets, int32_t* out) {
    int counts[64] = {0};
    for (int i = 0; i < n_docs; i++) {
        int b = doc_lens[i] * n_buckets / (seq_len + 1);
        counts[b < n_buckets ? b : n_buckets - 1]++;
    }
    int written = 0;
    for (int b = 0; b < n_buckets && written < seq_len; b++) {
        volatile int share = seq_len / counts[b];
        for (int t = 0; t < share && written < seq_len; t++) out[written++] = b;
    }
    return written;
}
"""

PREFETCH_CPP = r"""
#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

static std::vector<int64_t> g_sizes;
static std::vector<uint8_t> g_dataset_index;
static std::atomic<int64_t> g_pos{0};

// blending index: sample i comes from dataset argmax(weight[d] * (i + 1) - taken[d])
static void build_index(const std::vector<double>& weights, int64_t n) {
    std::vector<int64_t> taken(weights.size(), 0);
    g_dataset_index.resize(n);
    for (int64_t i = 0; i < n; i++) {
        size_t best = 0;
        double best_err = -1e30;
        for (size_t d = 0; d < weights.size(); d++) {
            double err = weights[d] * (i + 1) - taken[d];
            if (err > best_err) { best_err = err; best = d; }
        }
        g_dataset_index[i] = (uint8_t)best;
        taken[best]++;
    }
}

static void prefetch_loop() {
    for (;;) {
        int64_t i = g_pos.fetch_add(1);
        if (i >= (int64_t)g_dataset_index.size()) return;
        size_t d = g_dataset_index[i];
        if (d >= g_sizes.size())
            throw std::out_of_range("blended index: sample " + std::to_string(i) + " maps to dataset " +
                                    std::to_string(d) + " but only " + std::to_string(g_sizes.size()) +
                                    " datasets were given");
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // read + shuffle one sample
    }
}

extern "C" int blend_start(const double* weights, int n_weights, const int64_t* sizes, int n_datasets,
                           int64_t n_samples, int64_t start) {
    g_sizes.assign(sizes, sizes + n_datasets);
    build_index(std::vector<double>(weights, weights + n_weights), n_samples);
    g_pos = start;
    std::thread(prefetch_loop).detach();
    return 0;
}

extern "C" int64_t blend_position() { return g_pos.load(); }
"""


def build_libs():
    os.makedirs(os.path.dirname(PACKOPS), exist_ok=True)
    with open(f"{ROOT}/lib/packops.c", "w") as f:
        f.write(PACKOPS_C)
    with open(f"{ROOT}/lib/blendprefetch.cpp", "w") as f:
        f.write(PREFETCH_CPP)
    subprocess.run(["cc", "-O0", "-shared", "-fPIC", "-o", PACKOPS, f"{ROOT}/lib/packops.c"], check=True)
    subprocess.run(["c++", "-O1", "-std=c++17", "-shared", "-fPIC", "-pthread", "-o", PREFETCH,
                    f"{ROOT}/lib/blendprefetch.cpp"], check=True)


def make_serve_sh():
    os.makedirs(os.path.dirname(SERVE_SH), exist_ok=True)
    with open(SERVE_SH, "w") as f:
        f.write(SERVE_SH_TEXT.replace("@ROOT@", ROOT))


def make_data():
    import numpy as np

    os.makedirs(DATA, exist_ok=True)
    rng = np.random.default_rng(0)
    rng.integers(0, 32000, size=(2048, 513), dtype=np.int32).tofile(f"{DATA}/train-00000-of-00002.bin")
    os.makedirs(HF_HOME, exist_ok=True)


if __name__ == "__main__":
    if "--prep" in sys.argv:
        t0 = time.time()
        os.makedirs(ROOT, exist_ok=True)
        for fn in (make_serve_sh, build_libs, make_data):
            try:
                fn()
                print(f"prep {fn.__name__} ok ({time.time() - t0:.1f} s)", flush=True)
            except Exception as e:
                print(f"prep {fn.__name__} FAILED: {type(e).__name__}: {e}", flush=True)
