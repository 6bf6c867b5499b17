# Kernel benchmarks for round 24, --scenario:
# rowsum: a CuPy (NVRTC) row-sum kernel whose shared buffer is sized for 256 threads while the benchmark launches
#   it with 512 (the wide-row configuration); r24_run.sh runs it under compute-sanitizer (memcheck), which
#   reports the invalid __shared__ writes; the kernel is stopped and the CUDA runtime error reaches CuPy;
# triton_cache: a Triton fused-add-RMSNorm benchmark on a node whose TRITON_CACHE_DIR is a shared folder; the
#   cached cubin of the kernel was cut short (another job's copy was interrupted, r24_run.sh truncates it after a
#   first, unlogged run fills the cache): meant to make the driver refuse the image; on the H100 run of 2026-12-06
#   the process died of SIGSEGV without a word after its two header lines (log not kept);
# warm: that first run (fills the cache).
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import os
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()

ROWSUM_SRC = r"""
#define BLOCK 256
extern "C" __global__ void row_sum(const float* __restrict__ x, float* __restrict__ out, int n) {
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    float acc = 0.f;
    for (int i = t; i < n; i += blockDim.x) acc += x[(size_t)blockIdx.x * n + i];
    buf[t] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = buf[0];
}
"""


def rowsum():
    import cupy as cp

    dev = cp.cuda.Device(0)
    props = cp.cuda.runtime.getDeviceProperties(0)
    print(f"device 0: {props['name'].decode()}, cc {dev.compute_capability}, cupy {cp.__version__}", flush=True)
    ker = cp.RawKernel(ROWSUM_SRC, "row_sum")
    for rows, n, threads in ((64, 1024, 256), (64, 8192, 256), (16, 65536, 512), (16, 262144, 512)):
        x = cp.random.standard_normal((rows, n), dtype=cp.float32)
        out = cp.empty(rows, dtype=cp.float32)
        ker((rows,), (threads,), (x, out, cp.int32(n)))
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(20):
            ker((rows,), (threads,), (x, out, cp.int32(n)))
        cp.cuda.Device().synchronize()
        dt = (time.perf_counter() - t0) / 20
        err = float(cp.abs(out - x.sum(1)).max())
        print(f"rows={rows:3d} n={n:7d} threads={threads}: {dt * 1e6:8.1f} us, {x.nbytes / dt / 1e9:7.1f} GB/s, max abs err {err:.3e}", flush=True)


def triton_cache(log=True):
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def fused_add_rmsnorm(x_ptr, r_ptr, w_ptr, y_ptr, stride, n, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + row * stride + offs, mask=m, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + row * stride + offs, mask=m, other=0.0).to(tl.float32)
        h = x + r
        tl.store(r_ptr + row * stride + offs, h.to(r_ptr.dtype.element_ty), mask=m)
        w = tl.load(w_ptr + offs, mask=m, other=0.0).to(tl.float32)
        y = h * tl.rsqrt(tl.sum(h * h, axis=0) / n + eps) * w
        tl.store(y_ptr + row * stride + offs, y.to(y_ptr.dtype.element_ty), mask=m)

    if log:
        print(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()}", flush=True)
        print(f"TRITON_CACHE_DIR={os.environ.get('TRITON_CACHE_DIR')}", flush=True)
    for tokens, hidden in ((4096, 4096), (4096, 8192), (16384, 8192)):
        x = torch.randn(tokens, hidden, device="cuda", dtype=torch.bfloat16)
        r = torch.randn_like(x)
        w = torch.ones(hidden, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        fn = lambda: fused_add_rmsnorm[(tokens,)](x, r, w, y, x.stride(0), hidden, 1e-6, BLOCK=triton.next_power_of_2(hidden))  # noqa: E731
        ms = triton.testing.do_bench(fn)
        if log:
            print(f"tokens={tokens:6d} hidden={hidden}: {ms * 1000:8.1f} us, {4 * x.nbytes / ms / 1e6:7.1f} GB/s", flush=True)


if __name__ == "__main__":
    {"rowsum": rowsum, "triton_cache": triton_cache, "warm": lambda: triton_cache(log=False)}[args.scenario]()
    sys.exit(0)
