# Native CUDA programs for round 30, written out by `python3 r30_native.py --write DIR` (r30_run.sh builds and runs them):
# fir/     a batch FIR filter whose taps live in __constant__ memory sized for 64 taps; the job's second filter bank
#          has 127 taps and cudaMemcpyToSymbol copies past the symbol: cudaErrorInvalidValue under the samples-style
#          checkCudaErrors line, after the first bank ran fine;
# coop/    a single-pass histogram-normalize kernel using a grid-wide cooperative_groups sync, launched with one block
#          per 1024 elements: cudaLaunchCooperativeKernel refuses more blocks than can be co-resident
#          (cudaErrorCooperativeLaunchTooLarge) on the 16M-element input, after the 64K one passed.
import os
import sys

FIR = r'''// fir_batch.cu: batched FIR filtering of sensor channels, taps in constant memory
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cmath>
#include <cuda_runtime.h>

#define checkCudaErrors(val) check((val), #val, __FILE__, __LINE__)
template <typename T> void check(T result, char const *const func, const char *const file, int const line) {
  if (result) {
    fprintf(stderr, "CUDA error at %s:%d code=%d(%s) \"%s\" \n", file, line, static_cast<unsigned int>(result),
            cudaGetErrorName(result), func);
    exit(EXIT_FAILURE);
  }
}

#define MAX_TAPS 64
__constant__ float c_taps[MAX_TAPS];

__global__ void fir(const float *x, float *y, int n, int ntaps) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int ch = blockIdx.y;
  if (i >= n) return;
  const float *xc = x + (size_t)ch * n;
  float acc = 0.f;
  for (int t = 0; t < ntaps; ++t) acc += (i - t >= 0 ? xc[i - t] : 0.f) * c_taps[t];
  y[(size_t)ch * n + i] = acc;
}

int main(int argc, char **argv) {
  const char *bank = argc > 1 ? argv[1] : "lowpass";
  int ntaps = argc > 2 ? atoi(argv[2]) : 63;
  int n = 1 << 20, channels = 64;
  printf("[fir_batch] bank=%s taps=%d channels=%d samples=%d\n", bank, ntaps, channels, n);
  std::vector<float> taps(ntaps);
  for (int t = 0; t < ntaps; ++t) {
    float m = t - (ntaps - 1) / 2.0f;
    taps[t] = (m == 0 ? 0.25f : sinf(0.25f * M_PI * m) / (M_PI * m)) * (0.54f - 0.46f * cosf(2 * M_PI * t / (ntaps - 1)));
  }
  float *dx, *dy;
  checkCudaErrors(cudaMalloc(&dx, sizeof(float) * n * channels));
  checkCudaErrors(cudaMalloc(&dy, sizeof(float) * n * channels));
  checkCudaErrors(cudaMemset(dx, 0, sizeof(float) * n * channels));
  checkCudaErrors(cudaMemcpyToSymbol(c_taps, taps.data(), ntaps * sizeof(float)));
  cudaEvent_t a, b;
  checkCudaErrors(cudaEventCreate(&a));
  checkCudaErrors(cudaEventCreate(&b));
  checkCudaErrors(cudaEventRecord(a));
  fir<<<dim3((n + 255) / 256, channels), 256>>>(dx, dy, n, ntaps);
  checkCudaErrors(cudaGetLastError());
  checkCudaErrors(cudaEventRecord(b));
  checkCudaErrors(cudaEventSynchronize(b));
  float ms;
  checkCudaErrors(cudaEventElapsedTime(&ms, a, b));
  printf("[fir_batch] bank=%s done in %.3f ms (%.1f GS/s)\n", bank, ms, (double)n * channels / ms / 1e6);
  cudaFree(dx);
  cudaFree(dy);
  return 0;
}
'''

FIR_JOB = r'''#!/bin/bash
# nightly: rebuild the FIR batch tool and run every filter bank of the sensor pipeline
set -e
cd "$(dirname "$0")"
echo "[$(date '+%F %T')] nvcc: $(nvcc --version | tail -1)"
nvcc -O3 -arch=sm_90 -o fir_batch fir_batch.cu
echo "[$(date '+%F %T')] build ok"
./fir_batch lowpass 63
./fir_batch antialias-2x 127
./fir_batch notch-60hz 31
echo "[$(date '+%F %T')] all banks done"
'''

COOP = r'''// hist_norm.cu: one-pass min/max normalization of a feature column with a grid-wide sync
#include <cstdio>
#include <cstdlib>
#include <cooperative_groups.h>
#include <cuda_runtime.h>
namespace cg = cooperative_groups;

#define CUDA_CHECK(call)                                                                                  \
  do {                                                                                                    \
    cudaError_t err__ = (call);                                                                           \
    if (err__ != cudaSuccess) {                                                                           \
      fprintf(stderr, "%s:%d: CUDA call failed: %s\n  error %d (%s): %s\n", __FILE__, __LINE__, #call,    \
              (int)err__, cudaGetErrorName(err__), cudaGetErrorString(err__));                            \
      exit(2);                                                                                            \
    }                                                                                                     \
  } while (0)

__device__ float g_min, g_max;

__global__ void normalize(float *x, int n) {
  cg::grid_group grid = cg::this_grid();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (grid.thread_rank() == 0) { g_min = 1e30f; g_max = -1e30f; }
  grid.sync();
  if (i < n) {
    atomicMin((int *)&g_min, __float_as_int(fmaxf(x[i], 0.f)));
    atomicMax((int *)&g_max, __float_as_int(fmaxf(x[i], 0.f)));
  }
  grid.sync();
  if (i < n) x[i] = (fmaxf(x[i], 0.f) - g_min) / (g_max - g_min + 1e-12f);
}

int main(int argc, char **argv) {
  int dev = 0, sms = 0, coop = 0, per_sm = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, normalize, 1024, 0));
  printf("hist_norm: %d SMs, cooperative launch %s, %d block(s)/SM of 1024 threads\n", sms, coop ? "supported" : "NOT supported", per_sm);
  for (int a = 1; a < argc; ++a) {
    int n = atoi(argv[a]);
    float *d;
    CUDA_CHECK(cudaMalloc(&d, sizeof(float) * n));
    CUDA_CHECK(cudaMemset(d, 0, sizeof(float) * n));
    int threads = 1024, blocks = (n + threads - 1) / threads;
    void *args[] = {&d, &n};
    printf("hist_norm: n=%d grid=%d x %d\n", n, blocks, threads);
    CUDA_CHECK(cudaLaunchCooperativeKernel((void *)normalize, dim3(blocks), dim3(threads), args, 0, 0));
    CUDA_CHECK(cudaDeviceSynchronize());
    printf("hist_norm: n=%d ok\n", n);
    CUDA_CHECK(cudaFree(d));
  }
  return 0;
}
'''

COOP_MAKE = '''NVCC ?= nvcc
ARCH ?= sm_90

hist_norm: hist_norm.cu
\t$(NVCC) -O2 -arch=$(ARCH) -o $@ $<

run: hist_norm
\t./hist_norm 65536 262144 16777216

.PHONY: run
'''


def write(root):
    os.makedirs(f"{root}/fir", exist_ok=True)
    os.makedirs(f"{root}/coop", exist_ok=True)
    open(f"{root}/fir/fir_batch.cu", "w").write(FIR)
    open(f"{root}/fir/run_banks.sh", "w").write(FIR_JOB)
    os.chmod(f"{root}/fir/run_banks.sh", 0o755)
    open(f"{root}/coop/hist_norm.cu", "w").write(COOP)
    open(f"{root}/coop/Makefile", "w").write(COOP_MAKE)
    print(root)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--write":
        write(sys.argv[2])
    else:
        sys.exit("usage: r30_native.py --write DIR")
