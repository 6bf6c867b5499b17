# CuPy-based kernels (round 14), --scenario:
# cublas_lda: a row-major GEMM wrapper over raw cuBLAS sgemm that passes the row-major leading
#   dimension for a transposed operand (lda < m): cuBLAS rejects the call;
# launch_resources: a one-row-per-block fused softmax kernel that keeps 96 values a thread in
#   registers, launched with 1024 threads a block (more registers than a block may have).
import argparse

import cupy as cp
import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
dev = cp.cuda.Device(0)
props = cp.cuda.runtime.getDeviceProperties(0)
print(f"CuPy {cp.__version__}, CUDA runtime {cp.cuda.runtime.runtimeGetVersion()}, device {props['name'].decode()} "
      f"(sm_{props['major']}{props['minor']}, {props['multiProcessorCount']} SMs, "
      f"{props['regsPerBlock']} regs/block)", flush=True)

if args.scenario == "cublas_lda":
    from cupy_backends.cuda.libs import cublas

    def gemm_rowmajor(a, b, trans_a=False):
        """C = op(A) @ B for C-contiguous float32 arrays via column-major cuBLAS (C^T = B^T op(A)^T)."""
        m = a.shape[1] if trans_a else a.shape[0]
        k = a.shape[0] if trans_a else a.shape[1]
        n = b.shape[1]
        c = cp.empty((m, n), dtype=cp.float32)
        one = np.array(1.0, dtype=np.float32)
        zero = np.array(0.0, dtype=np.float32)
        handle = dev.cublas_handle
        op_a = cublas.CUBLAS_OP_T if trans_a else cublas.CUBLAS_OP_N
        lda = a.shape[1] if not trans_a else a.shape[0]  # bug: row-major ld for the transposed operand
        cublas.sgemm(handle, cublas.CUBLAS_OP_N, op_a, n, m, k, one.ctypes.data, b.data.ptr, n,
                     a.data.ptr, lda, zero.ctypes.data, c.data.ptr, n)
        return c

    rng = cp.random.default_rng(0)
    for (m, k, n, t) in [(512, 256, 128, False), (1024, 1024, 1024, False), (4096, 1024, 512, False),
                         (1024, 256, 512, True)]:
        a = rng.standard_normal((k, m) if t else (m, k), dtype=cp.float32)
        b = rng.standard_normal((k, n), dtype=cp.float32)
        c = gemm_rowmajor(a, b, trans_a=t)
        ref = (a.T if t else a) @ b
        cp.cuda.runtime.deviceSynchronize()
        print(f"gemm m={m} k={k} n={n} trans_a={t}: max abs err {float(cp.abs(c - ref).max()):.2e}", flush=True)

elif args.scenario == "launch_resources":
    SRC = r"""
    #define VPT 96
    extern "C" __global__ void fused_row_softmax(const float* __restrict__ x, float* __restrict__ y, int n) {
      const float* xr = x + (long long)blockIdx.x * n;
      float* yr = y + (long long)blockIdx.x * n;
      float v[VPT];
      #pragma unroll
      for (int i = 0; i < VPT; i++) v[i] = xr[threadIdx.x + i * blockDim.x];
      float m = v[0];
      #pragma unroll
      for (int i = 1; i < VPT; i++) m = fmaxf(m, v[i]);
      __shared__ float red[32];
      for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
      if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = m;
      __syncthreads();
      m = red[0];
      for (int w = 1; w < (blockDim.x >> 5); w++) m = fmaxf(m, red[w]);
      __syncthreads();
      float s = 0.f;
      #pragma unroll
      for (int i = 0; i < VPT; i++) { v[i] = __expf(v[i] - m); s += v[i]; }
      for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
      if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
      __syncthreads();
      s = 0.f;
      for (int w = 0; w < (blockDim.x >> 5); w++) s += red[w];
      float inv = 1.f / s;
      #pragma unroll
      for (int i = 0; i < VPT; i++) yr[threadIdx.x + i * blockDim.x] = v[i] * inv;
    }
    """
    kern = cp.RawKernel(SRC, "fused_row_softmax", options=("-O3", "--use_fast_math"))
    attrs = kern.attributes
    print(f"fused_row_softmax: {attrs['num_regs']} registers/thread, {attrs['shared_size_bytes']} B static smem, "
          f"max_threads_per_block={attrs['max_threads_per_block']}", flush=True)
    rows = 4096
    for threads in (256, 512, 1024):
        n = threads * 96
        x = cp.random.standard_normal((rows, n), dtype=cp.float32)
        y = cp.empty_like(x)
        kern((rows,), (threads,), (x, y, cp.int32(n)))
        cp.cuda.runtime.deviceSynchronize()
        err = float(cp.abs(y.sum(axis=1) - 1).max())
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(10):
            kern((rows,), (threads,), (x, y, cp.int32(n)))
        end.record()
        end.synchronize()
        ms = cp.cuda.get_elapsed_time(start, end) / 10
        print(f"rows={rows} n={n} threads={threads}: {ms:.3f} ms, {2 * x.nbytes / ms / 1e6:.1f} GB/s, "
              f"row-sum err {err:.1e}", flush=True)
