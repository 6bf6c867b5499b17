# Native programs of round 32, written out by `python3 r32_native.py --write DIR` (r32_run.sh builds and runs them);
# none of them prints a Python traceback:
# bpe/      a C BPE-merge trainer sizes its pair-count table vocab*vocab*8 bytes from the vocab header (128256) under the
#           job's `ulimit -v`: its xmalloc prints "memory allocation of N bytes failed" and aborts; bash's "Aborted";
# embed/    a CUDA embedding-gather tool with a device assert on the row index; the second table's ids file holds ids of
#           a larger vocabulary (one end-of-text id 50256): the kernel's "Assertion `row < nrows` failed." lines, then cudaErrorAssert on one line;
# mk/       make -j2 over two CUDA sources: topk.cu calls a host helper from a __global__ function: nvcc's two errors and
#           "2 errors detected in the compilation of", then make's "Error 2" lines;
# tile/     a tiled transpose benchmark takes TILE*TILE*4 bytes of dynamic shared memory without raising the 48 KiB
#           limit: TILE 32 and 64 run, TILE 128 fails its launch with "invalid argument" (cudaGetLastError);
# nms/      a C++ detection post-processor whose Det struct owns a raw buffer and is copied into a vector: glibc's
#           "free(): double free detected in tcache 2", bash's "Aborted" after the per-image lines.
import os
import sys

BPE = r'''// bpe_train.c: count adjacent pairs over a token stream, merge the most frequent
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
static void *xmalloc(size_t n) {
  void *p = malloc(n);
  if (!p) { fprintf(stderr, "memory allocation of %zu bytes failed\n", n); abort(); }
  return p;
}
int main(int argc, char **argv) {
  uint64_t vocab = strtoull(argv[1], 0, 10), ntok = strtoull(argv[2], 0, 10);
  fprintf(stderr, "[bpe_train] vocab=%llu tokens=%llu merges=%d\n", (unsigned long long)vocab, (unsigned long long)ntok, 32000);
  uint32_t *stream = xmalloc(ntok * sizeof(uint32_t));
  uint64_t s = 88172645463325252ull;
  for (uint64_t i = 0; i < ntok; i++) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; stream[i] = s % vocab; }
  fprintf(stderr, "[bpe_train] stream loaded (%.1f MiB)\n", ntok * 4.0 / 1048576);
  uint64_t *pairs = xmalloc(vocab * vocab * sizeof(uint64_t));  /* dense pair counts */
  memset(pairs, 0, vocab * vocab * sizeof(uint64_t));
  for (uint64_t i = 0; i + 1 < ntok; i++) pairs[stream[i] * vocab + stream[i + 1]]++;
  printf("done\n");
  return 0;
}
'''
BPE_SH = r'''#!/bin/bash
# tokenizer job: extend the Llama-3 vocabulary with domain merges
set -u
D=$(dirname "$0")
echo "[tok-job] $(date -u +%FT%TZ) host=$(hostname) ulimit -v $(ulimit -v)"
ulimit -v 16000000
echo "[tok-job] building bpe_train"
gcc -O2 -o $D/bpe_train $D/bpe_train.c || exit 1
echo "[tok-job] base vocab: 128256 (llama3), corpus: 200M tokens of /data/code-mix/part-000"
$D/bpe_train 128256 200000000
echo "[tok-job] bpe_train exited with $?"
'''

EMBED = r'''// embed_gather.cu: gather embedding rows for a batch of ids (feature-store export)
#include <cstdio>
#include <cstdlib>
#include <cassert>
#include <vector>
#include <cuda_runtime.h>
#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "CUDA_CHECK failed: %s (%s) at %s:%d\n", cudaGetErrorString(e), cudaGetErrorName(e), __FILE__, __LINE__); exit(1); } } while (0)
__global__ void gather(const float *table, const int *ids, float *out, int nrows, int dim, int n) {
  int i = blockIdx.x, d = threadIdx.x;
  if (i >= n) return;
  int row = ids[i];
  assert(row < nrows);
  for (int j = d; j < dim; j += blockDim.x) out[(size_t)i * dim + j] = table[(size_t)row * dim + j];
}
static void run_table(const char *name, int nrows, int dim, int id_range, int n) {
  float *t, *o; int *ids;
  CUDA_CHECK(cudaMalloc(&t, (size_t)nrows * dim * 4));
  CUDA_CHECK(cudaMalloc(&o, (size_t)n * dim * 4));
  CUDA_CHECK(cudaMalloc(&ids, n * 4));
  CUDA_CHECK(cudaMemset(t, 0, (size_t)nrows * dim * 4));
  std::vector<int> h(n);
  srand(7);
  for (int i = 0; i < n; i++) h[i] = rand() % nrows;
  if (id_range > nrows) h[n - 3] = id_range - 1;  // the exporter's end-of-text id
  CUDA_CHECK(cudaMemcpy(ids, h.data(), n * 4, cudaMemcpyHostToDevice));
  gather<<<n, 32>>>(t, ids, o, nrows, dim, n);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  printf("table %-14s rows=%d dim=%d gathered %d ids\n", name, nrows, dim, n);
  cudaFree(t); cudaFree(o); cudaFree(ids);
}
int main() {
  run_table("item_emb_v7", 500000, 64, 500000, 20000);
  run_table("user_emb_v7", 120000, 128, 120000, 20000);
  run_table("query_tok_v7", 32000, 256, 50257, 4096);  // ids exported with the GPT-2 tokenizer
  printf("export done\n");
  return 0;
}
'''
EMBED_SH = r'''#!/bin/bash
D=$(dirname "$0")
echo "[export] compiling embed_gather (sm_90)"
nvcc -O2 -arch=sm_90 -o $D/embed_gather $D/embed_gather.cu || exit 1
echo "[export] exporting 3 tables to /feature-store/v7"
$D/embed_gather
'''

SOFTMAX = r'''// softmax.cu
#include <cuda_runtime.h>
__global__ void row_softmax(const float *x, float *y, int n) {
  int r = blockIdx.x; float m = -1e30f, s = 0.f;
  for (int i = 0; i < n; i++) m = fmaxf(m, x[r * n + i]);
  for (int i = 0; i < n; i++) s += __expf(x[r * n + i] - m);
  for (int i = threadIdx.x; i < n; i += blockDim.x) y[r * n + i] = __expf(x[r * n + i] - m) / s;
}
'''
TOPK = r'''// topk.cu: per-row top-k by repeated argmax, scores rescaled by the temperature helper
#include <cuda_runtime.h>
#include <cmath>
float temperature_scale(float x, float t) { return x / fmaxf(t, 1e-4f); }
__global__ void topk_kernel(const float *x, int *idx, int n, int k, float t) {
  int r = blockIdx.x;
  for (int j = 0; j < k; j++) {
    float best = -INFINITY; int bi = 0;
    for (int i = 0; i < n; i++) { float v = temperature_scale(x[r * n + i], t); if (v > best) { best = v; bi = i; } }
    idx[r * k + j] = bi;
  }
}
'''
MAKEFILE = '''NVCC ?= nvcc
FLAGS = -O3 -arch=sm_90 -Xcompiler -fPIC
OBJS = build/softmax.o build/topk.o
all: build/libsampling.so
build/%.o: src/%.cu
\t@mkdir -p build
\t$(NVCC) $(FLAGS) -c $< -o $@
build/libsampling.so: $(OBJS)
\t$(NVCC) -shared -o $@ $(OBJS)
'''
MK_SH = r'''#!/bin/bash
cd $(dirname "$0")
echo ">>> building libsampling (make -j2)"
make -j2
rc=$?
echo ">>> make exited with $rc"
exit $rc
'''

TILE = r'''// transpose_bench.cu: tiled transpose, tile in dynamic shared memory
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
__global__ void transpose(const float *in, float *out, int n, int tile) {
  extern __shared__ float s[];
  int bx = blockIdx.x * tile, by = blockIdx.y * tile;
  for (int y = threadIdx.y; y < tile; y += blockDim.y)
    for (int x = threadIdx.x; x < tile; x += blockDim.x)
      s[y * tile + x] = in[(size_t)(by + y) * n + bx + x];
  __syncthreads();
  for (int y = threadIdx.y; y < tile; y += blockDim.y)
    for (int x = threadIdx.x; x < tile; x += blockDim.x)
      out[(size_t)(bx + y) * n + by + x] = s[x * tile + y];
}
int main() {
  const int n = 8192;
  float *a, *b;
  cudaMalloc(&a, (size_t)n * n * 4); cudaMalloc(&b, (size_t)n * n * 4);
  cudaMemset(a, 0, (size_t)n * n * 4);
  int tiles[] = {32, 64, 128};
  for (int t : tiles) {
    dim3 grid(n / t, n / t), block(32, 8);
    size_t smem = (size_t)t * t * sizeof(float);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    cudaEventRecord(e0);
    for (int r = 0; r < 20; r++) transpose<<<grid, block, smem>>>(a, b, n, t);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
      fprintf(stderr, "transpose_bench: kernel launch failed for TILE=%d (smem %zu bytes): %s\n", t, smem, cudaGetErrorString(err));
      return 2;
    }
    cudaEventRecord(e1); cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1);
    printf("TILE=%3d smem=%6zu B  %.3f ms/iter  %.1f GB/s\n", t, smem, ms / 20, 2.0 * n * n * 4 / (ms / 20 * 1e6));
  }
  return 0;
}
'''
TILE_SH = r'''#!/bin/bash
D=$(dirname "$0")
nvcc -O3 -arch=sm_90 -o $D/transpose_bench $D/transpose_bench.cu || exit 1
echo "== transpose sweep $(nvidia-smi --query-gpu=name --format=csv,noheader)"
$D/transpose_bench
echo "== exit $?"
'''

NMS = r'''// nms_post.cpp: greedy NMS over per-image detections, writes the kept boxes
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
struct Det {
  int n; float *boxes;  // n x 5 (x1, y1, x2, y2, score)
  explicit Det(int n_) : n(n_), boxes(new float[n_ * 5]) {}
  ~Det() { delete[] boxes; }
};
static float iou(const float *a, const float *b) {
  float x1 = std::max(a[0], b[0]), y1 = std::max(a[1], b[1]), x2 = std::min(a[2], b[2]), y2 = std::min(a[3], b[3]);
  float in = std::max(0.f, x2 - x1) * std::max(0.f, y2 - y1);
  return in / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - in);
}
int main() {
  srand(3);
  std::vector<Det> kept;
  for (int img = 0; img < 4; img++) {
    Det d(12);
    for (int i = 0; i < 12; i++) {
      float x = rand() % 600, y = rand() % 400;
      float *b = d.boxes + i * 5; b[0] = x; b[1] = y; b[2] = x + 40 + rand() % 80; b[3] = y + 40 + rand() % 80; b[4] = (rand() % 1000) / 1000.f;
    }
    int keep = 0;
    for (int i = 0; i < d.n; i++) { bool ok = true; for (int j = 0; j < i; j++) if (iou(d.boxes + i * 5, d.boxes + j * 5) > 0.5f) ok = false; keep += ok; }
    printf("image %04d: %d detections, %d kept after NMS(0.5)\n", img, d.n, keep);
    fflush(stdout);
    kept.push_back(d);  // copies the raw pointer
  }
  printf("writing %zu images to detections.jsonl\n", kept.size());
  return 0;
}
'''
NMS_SH = r'''#!/bin/bash
D=$(dirname "$0")
echo "[post] $(date -u +%T) detector finished 4 images on cuda:0; running nms_post"
g++ -O1 -o $D/nms_post $D/nms_post.cpp || exit 1
$D/nms_post
echo "[post] nms_post exit status $?"
'''

FILES = {
    "bpe/bpe_train.c": BPE, "bpe/run.sh": BPE_SH,
    "embed/embed_gather.cu": EMBED, "embed/run.sh": EMBED_SH,
    "mk/src/softmax.cu": SOFTMAX, "mk/src/topk.cu": TOPK, "mk/Makefile": MAKEFILE, "mk/run.sh": MK_SH,
    "tile/transpose_bench.cu": TILE, "tile/run.sh": TILE_SH,
    "nms/nms_post.cpp": NMS, "nms/run.sh": NMS_SH,
}


def write(root):
    for rel, text in FILES.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        if rel.endswith(".sh"):
            os.chmod(p, 0o755)
    print(root)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--write":
        write(sys.argv[2])
