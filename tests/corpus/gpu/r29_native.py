# Round 29: the C/C++ programs of two scenarios, written out by r29_run.sh (`python3 r29_native.py --write DIR`):
# spmv_bench.cu (cu_misaligned): a CSR SpMV benchmark whose vectorized kernel reads values and column indices as
#   float4/int4 from each row's start; that is aligned only when every row's nnz is padded to a multiple of 4. The
#   nightly job's second matrix is not padded: the kernel's 16-byte loads hit a misaligned address, the program's
#   CUDA_CHECK reports it; the job script prints its failure line first and then the tail of the program's log;
# int8_gemm.cu + Makefile (cu_gemmex): an int8 GEMM test run by `make run`: the plain int8 -> int32 GEMM works; the
#   "fused dequant" variant asks cublasGemmEx for int8 inputs with a float32 C under CUBLAS_COMPUTE_32I, a combination
#   cuBLAS does not support: the program's status check prints the cuBLAS status and make reports the failed target.
import os
import sys

SPMV = r'''// spmv_bench.cu - CSR SpMV throughput on synthetic power-law matrices
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <random>
#include <cmath>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                                       \
    do {                                                                                       \
        cudaError_t err_ = (call);                                                             \
        if (err_ != cudaSuccess) {                                                             \
            fprintf(stderr, "CUDA error at %s:%d code=%d(%s) \"%s\": %s\n", __FILE__, __LINE__, \
                    (int)err_, cudaGetErrorName(err_), #call, cudaGetErrorString(err_));       \
            exit(EXIT_FAILURE);                                                                \
        }                                                                                      \
    } while (0)

__global__ void spmv_csr_vec4(int nrows, const int* __restrict__ row_ptr, const int* __restrict__ col,
                              const float* __restrict__ val, const float* __restrict__ x, float* __restrict__ y) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= nrows) return;
    int start = row_ptr[row], end = row_ptr[row + 1];
    float sum = 0.f;
    for (int j = start + 4 * lane; j < end; j += 128) {
        float4 v = *reinterpret_cast<const float4*>(val + j);
        int4 c = *reinterpret_cast<const int4*>(col + j);
        sum += v.x * x[c.x];
        if (j + 1 < end) sum += v.y * x[c.y];
        if (j + 2 < end) sum += v.z * x[c.z];
        if (j + 3 < end) sum += v.w * x[c.w];
    }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_down_sync(0xffffffff, sum, o);
    if (lane == 0) y[row] = sum;
}

int main(int argc, char** argv) {
    const char* name = argc > 1 ? argv[1] : "synthetic";
    int nrows = argc > 2 ? atoi(argv[2]) : 1 << 20;
    int pad = argc > 3 ? atoi(argv[3]) : 1;
    std::mt19937 rng(42);
    std::vector<int> row_ptr(nrows + 1, 0);
    for (int r = 0; r < nrows; ++r) {
        int nnz = 1 + (int)(std::pow(std::uniform_real_distribution<float>(0.f, 1.f)(rng), 6.f) * 400.f);
        if (pad) nnz = (nnz + 3) & ~3;
        row_ptr[r + 1] = row_ptr[r] + nnz;
    }
    size_t nnz = row_ptr[nrows];
    std::vector<int> col(nnz + 4);
    std::vector<float> val(nnz + 4);
    for (size_t i = 0; i < nnz; ++i) { col[i] = rng() % nrows; val[i] = 1.0f / (1 + (i & 7)); }
    printf("matrix %s: %d rows, %zu nnz (%.1f per row), rows padded to 4: %s\n", name, nrows, nnz, (double)nnz / nrows, pad ? "yes" : "no");

    int *d_rp, *d_col; float *d_val, *d_x, *d_y;
    CUDA_CHECK(cudaMalloc(&d_rp, (nrows + 1) * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_col, (nnz + 4) * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_val, (nnz + 4) * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_x, nrows * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_y, nrows * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(d_rp, row_ptr.data(), (nrows + 1) * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_col, col.data(), (nnz + 4) * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_val, val.data(), (nnz + 4) * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(d_x, 0, nrows * sizeof(float)));

    const int threads = 256, rows_per_block = threads / 32;
    const int blocks = (nrows + rows_per_block - 1) / rows_per_block;
    cudaEvent_t t0, t1;
    CUDA_CHECK(cudaEventCreate(&t0));
    CUDA_CHECK(cudaEventCreate(&t1));
    spmv_csr_vec4<<<blocks, threads>>>(nrows, d_rp, d_col, d_val, d_x, d_y);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    const int iters = 50;
    CUDA_CHECK(cudaEventRecord(t0));
    for (int i = 0; i < iters; ++i) spmv_csr_vec4<<<blocks, threads>>>(nrows, d_rp, d_col, d_val, d_x, d_y);
    CUDA_CHECK(cudaEventRecord(t1));
    CUDA_CHECK(cudaEventSynchronize(t1));
    float ms;
    CUDA_CHECK(cudaEventElapsedTime(&ms, t0, t1));
    ms /= iters;
    printf("spmv_csr_vec4: %.3f ms/iter, %.1f GFLOP/s, %.1f GB/s effective\n", ms, 2.0 * nnz / ms / 1e6,
           (nnz * 8.0 + nrows * 12.0) / ms / 1e6);
    cudaFree(d_rp); cudaFree(d_col); cudaFree(d_val); cudaFree(d_x); cudaFree(d_y);
    return 0;
}
'''

GEMM = r'''// int8_gemm.cu - int8 GEMM paths for the W8A8 inference kernels (cuBLAS reference)
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include <cublas_v2.h>

#define CUDA_CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_), __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)
#define CUBLAS_CHECK(call) do { cublasStatus_t s_ = (call); if (s_ != CUBLAS_STATUS_SUCCESS) { \
    fprintf(stderr, "cuBLAS error %s (%d) at %s:%d\n    in: %s\n", cublasGetStatusName(s_), (int)s_, __FILE__, __LINE__, #call); exit(1); } } while (0)

int main(int argc, char** argv) {
    int M = argc > 1 ? atoi(argv[1]) : 4096, N = argc > 2 ? atoi(argv[2]) : 4096, K = argc > 3 ? atoi(argv[3]) : 4096;
    int ver = 0;
    cublasHandle_t h;
    CUBLAS_CHECK(cublasCreate(&h));
    CUBLAS_CHECK(cublasGetVersion(h, &ver));
    printf("cuBLAS %d, int8 GEMM M=%d N=%d K=%d (A^T * B, column-major)\n", ver, M, N, K);
    std::vector<int8_t> ha((size_t)M * K), hb((size_t)K * N);
    for (size_t i = 0; i < ha.size(); ++i) ha[i] = (int8_t)((i * 37) % 255 - 127);
    for (size_t i = 0; i < hb.size(); ++i) hb[i] = (int8_t)((i * 53) % 255 - 127);
    int8_t *a, *b; int32_t* c32; float* cf;
    CUDA_CHECK(cudaMalloc(&a, ha.size()));
    CUDA_CHECK(cudaMalloc(&b, hb.size()));
    CUDA_CHECK(cudaMalloc(&c32, (size_t)M * N * sizeof(int32_t)));
    CUDA_CHECK(cudaMalloc(&cf, (size_t)M * N * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(a, ha.data(), ha.size(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(b, hb.data(), hb.size(), cudaMemcpyHostToDevice));
    cudaEvent_t t0, t1;
    CUDA_CHECK(cudaEventCreate(&t0)); CUDA_CHECK(cudaEventCreate(&t1));

    // path 1: int8 x int8 -> int32 accumulate (reference)
    int32_t ialpha = 1, ibeta = 0;
    CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, &ialpha, a, CUDA_R_8I, K, b, CUDA_R_8I, K,
                              &ibeta, c32, CUDA_R_32I, M, CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT));
    CUDA_CHECK(cudaEventRecord(t0));
    for (int i = 0; i < 20; ++i)
        CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, &ialpha, a, CUDA_R_8I, K, b, CUDA_R_8I, K,
                                  &ibeta, c32, CUDA_R_32I, M, CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT));
    CUDA_CHECK(cudaEventRecord(t1)); CUDA_CHECK(cudaEventSynchronize(t1));
    float ms; CUDA_CHECK(cudaEventElapsedTime(&ms, t0, t1)); ms /= 20;
    printf("[int8->int32] %.3f ms  %.1f TOPS\n", ms, 2.0 * M * N * K / ms / 1e9);

    // path 2: fused dequant, int8 x int8 -> float32 output scaled by alpha
    int32_t qalpha = 1, qbeta = 0;
    CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, &qalpha, a, CUDA_R_8I, K, b, CUDA_R_8I, K,
                              &qbeta, cf, CUDA_R_32F, M, CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT));
    CUDA_CHECK(cudaDeviceSynchronize());
    printf("[int8->fp32 fused dequant] ok\n");
    cublasDestroy(h);
    return 0;
}
'''

MAKEFILE = '''NVCC ?= nvcc
ARCH ?= sm_90
CFLAGS ?= -O2 -std=c++17
-include config.mk
CUBLAS_LIBS ?= -lcublas

all: int8_gemm

int8_gemm: int8_gemm.cu
\t$(NVCC) $(CFLAGS) -arch=$(ARCH) $(CUBLAS_CFLAGS) -o $@ $< $(CUBLAS_LIBS)

run: int8_gemm
\t./int8_gemm 4096 4096 4096

clean:
\trm -f int8_gemm
'''

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--write":
        sys.exit("usage: r29_native.py --write DIR")
    d = sys.argv[2]
    for sub, files in (("spmv", {"spmv_bench.cu": SPMV}), ("int8gemm", {"int8_gemm.cu": GEMM, "Makefile": MAKEFILE})):
        os.makedirs(f"{d}/{sub}", exist_ok=True)
        for n, txt in files.items():
            with open(f"{d}/{sub}/{n}", "w") as f:
                f.write(txt)
    print(f"wrote {d}/spmv and {d}/int8gemm")
