# Kernel jobs and benchmarks for round 21, --scenario:
# cupy_mangled: an RMSNorm benchmark whose CUDA kernels were copied from a .cu file into a CuPy RawModule; the
#   kernels are plain C++ functions (no extern "C"), so their names in the module are mangled and
#   get_function() with the source name finds no symbol;
# cupy_shfl: a block-reduction kernel from an old (Kepler/Pascal-era) code base uses the warp shuffles without
#   _sync; NVRTC compiles for this GPU's architecture, where those intrinsics do not exist;
# triton_cpu_ptr: a decode benchmark whose fused-RoPE Triton kernel reads the cos/sin cache; the module keeps the
#   cache as plain attributes (not registered buffers), so model.cuda() leaves it on the CPU;
# readonly_cache: a Triton kernel job in a container whose home directory is mounted read-only (r21_run.sh mounts
#   it): Triton cannot create its kernel cache under ~/.triton.
import argparse
import logging
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stdout)


def bench(fn, n=50):
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(n):
        fn()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) / n


# ---------------------------------------------------------------- cupy_mangled
RMSNORM_SRC = r"""
template <int BLOCK>
__device__ float block_sum(float v) {
    __shared__ float red[BLOCK / 32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    v = threadIdx.x < BLOCK / 32 ? red[threadIdx.x] : 0.f;
    if (threadIdx.x < 32)
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    return v;
}

__global__ void rmsnorm_fwd(const float* __restrict__ x, const float* __restrict__ w,
                            float* __restrict__ y, int hidden, float eps) {
    const float* row = x + (size_t)blockIdx.x * hidden;
    float ss = 0.f;
    for (int i = threadIdx.x; i < hidden; i += 256) { float v = row[i]; ss += v * v; }
    __shared__ float inv;
    float tot = block_sum<256>(ss);
    if (threadIdx.x == 0) inv = rsqrtf(tot / hidden + eps);
    __syncthreads();
    for (int i = threadIdx.x; i < hidden; i += 256)
        y[(size_t)blockIdx.x * hidden + i] = (row[i] * inv * w[i]);
}

__global__ void fused_add_rmsnorm_fwd(float* __restrict__ x, float* __restrict__ residual,
                                      const float* __restrict__ w, int hidden, float eps) {
    float* row = x + (size_t)blockIdx.x * hidden;
    float* res = residual + (size_t)blockIdx.x * hidden;
    float ss = 0.f;
    for (int i = threadIdx.x; i < hidden; i += 256) {
        float v = row[i] + res[i];
        res[i] = (v);
        ss += v * v;
    }
    __shared__ float inv;
    float tot = block_sum<256>(ss);
    if (threadIdx.x == 0) inv = rsqrtf(tot / hidden + eps);
    __syncthreads();
    for (int i = threadIdx.x; i < hidden; i += 256)
        row[i] = (res[i] * inv * w[i]);
}
"""


def cupy_mangled():
    import cupy as cp
    import torch
    log = logging.getLogger("bench_rmsnorm")
    log.info(f"device: {torch.cuda.get_device_name()} | torch {torch.__version__} | cupy {cp.__version__} | "
             f"CUDA runtime {cp.cuda.runtime.runtimeGetVersion()}")
    tokens, hidden = 8192, 8192
    x = torch.randn(tokens, hidden, device="cuda")
    w = torch.randn(hidden, device="cuda")
    ref = lambda: torch.nn.functional.rms_norm(x, (hidden,), w, 1e-6)  # noqa: E731
    ms = bench(ref)
    log.info(f"torch.nn.functional.rms_norm  tokens={tokens} hidden={hidden}: {ms * 1000:.1f} us "
             f"({2 * x.numel() * 4 / ms / 1e6:.0f} GB/s)")
    mod = cp.RawModule(code=RMSNORM_SRC, options=("-std=c++17", "--use_fast_math"))
    log.info("compiling rmsnorm_fwd / fused_add_rmsnorm_fwd (NVRTC)")
    kern = mod.get_function("rmsnorm_fwd")
    y = torch.empty_like(x)
    ms = bench(lambda: kern((tokens,), (256,), (x.data_ptr(), w.data_ptr(), y.data_ptr(), cp.int32(hidden),
                                                 cp.float32(1e-6))))
    log.info(f"rmsnorm_fwd (cupy) tokens={tokens} hidden={hidden}: {ms * 1000:.1f} us")


# ---------------------------------------------------------------- cupy_shfl
REDUCE_SRC = r"""
__inline__ __device__ float warp_reduce_sum(float val) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        val += __shfl_down(val, offset);
    return val;
}

extern "C" __global__ void row_sum_sq(const float* __restrict__ x, float* __restrict__ out, int cols) {
    static __shared__ float shared[32];
    const float* row = x + (size_t)blockIdx.x * cols;
    float s = 0.f;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) s += row[i] * row[i];
    int lane = threadIdx.x % warpSize, wid = threadIdx.x / warpSize;
    s = warp_reduce_sum(s);
    if (lane == 0) shared[wid] = s;
    __syncthreads();
    s = (threadIdx.x < blockDim.x / warpSize) ? shared[lane] : 0.f;
    if (wid == 0) s = warp_reduce_sum(s);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}
"""


def cupy_shfl():
    import cupy as cp
    log = logging.getLogger("feature_stats")
    dev = cp.cuda.Device()
    log.info(f"device {dev.id}: compute capability {dev.compute_capability}, CuPy {cp.__version__}")
    rows, cols = 65536, 4096
    x = cp.random.standard_normal((rows, cols), dtype=cp.float32)
    t0 = time.perf_counter()
    ref = (x * x).sum(axis=1)
    cp.cuda.Device().synchronize()
    log.info(f"cupy reference: {rows}x{cols} row sums of squares in {(time.perf_counter() - t0) * 1000:.1f} ms")
    log.info("building row_sum_sq from kernels/reduce.cuh (legacy warp-reduce helpers)")
    k = cp.RawKernel(REDUCE_SRC, "row_sum_sq")
    out = cp.empty(rows, dtype=cp.float32)
    k((rows,), (256,), (x, out, cp.int32(cols)))
    cp.cuda.Device().synchronize()
    log.info(f"max abs diff vs reference: {float(cp.abs(out - ref).max()):.3e}")


# ---------------------------------------------------------------- triton_cpu_ptr / readonly_cache
def rope_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def fused_rope_kernel(q_ptr, k_ptr, cos_ptr, sin_ptr, pos_ptr, stride_t, n_heads, n_kv_heads,
                          HALF: tl.constexpr):
        t = tl.program_id(0)
        h = tl.program_id(1)
        pos = tl.load(pos_ptr + t)
        offs = tl.arange(0, HALF)
        c = tl.load(cos_ptr + pos * HALF + offs)
        s = tl.load(sin_ptr + pos * HALF + offs)
        base = q_ptr + t * stride_t + h * 2 * HALF
        a = tl.load(base + offs)
        b = tl.load(base + HALF + offs)
        tl.store(base + offs, a * c - b * s)
        tl.store(base + HALF + offs, b * c + a * s)
        if h < n_kv_heads:
            kb = k_ptr + t * (n_kv_heads * 2 * HALF) + h * 2 * HALF
            a = tl.load(kb + offs)
            b = tl.load(kb + HALF + offs)
            tl.store(kb + offs, a * c - b * s)
            tl.store(kb + HALF + offs, b * c + a * s)

    return fused_rope_kernel


def decode_bench(scenario):
    import torch
    import torch.nn as nn
    log = logging.getLogger("decode_bench")
    kern = rope_kernel()

    class Rope(nn.Module):
        def __init__(self, head_dim=128, max_pos=32768, base=500000.0):
            super().__init__()
            inv = 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim)
            f = torch.outer(torch.arange(max_pos).float(), inv)
            if scenario == "triton_cpu_ptr":
                self.cos, self.sin = f.cos().contiguous(), f.sin().contiguous()  # cache (plain attributes)
            else:
                self.register_buffer("cos", f.cos().contiguous(), persistent=False)
                self.register_buffer("sin", f.sin().contiguous(), persistent=False)

        def forward(self, q, k, pos):
            T, H, D = q.shape
            kern[(T, H)](q, k, self.cos, self.sin, pos, q.stride(0), H, k.shape[1], HALF=D // 2)
            return q, k

    class Attn(nn.Module):
        def __init__(self, d=4096, h=32, kvh=8):
            super().__init__()
            self.h, self.kvh, self.hd = h, kvh, d // h
            self.qkv = nn.Linear(d, (h + 2 * kvh) * self.hd, bias=False)
            self.o = nn.Linear(d, d, bias=False)
            self.rope = Rope(self.hd)

        def forward(self, x, pos):
            T = x.shape[0]
            q, k, v = self.qkv(x).split([self.h * self.hd, self.kvh * self.hd, self.kvh * self.hd], -1)
            q, k = q.contiguous().view(T, self.h, self.hd), k.contiguous().view(T, self.kvh, self.hd)
            q, k = self.rope(q, k, pos)
            v = v.reshape(T, self.kvh, self.hd)
            o = torch.nn.functional.scaled_dot_product_attention(
                q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None], enable_gqa=True)
            return self.o(o[0].transpose(0, 1).reshape(T, -1))

    torch.manual_seed(0)
    log.info(f"{torch.cuda.get_device_name()} | torch {torch.__version__} | building 4 attention layers "
             f"(llama-3-8b shapes) with the fused RoPE kernel")
    layers = nn.ModuleList([Attn() for _ in range(4)]).cuda().to(torch.float32)
    log.info(f"parameters on {next(layers.parameters()).device}: "
             f"{sum(p.numel() for p in layers.parameters()) / 1e6:.0f}M")
    for bs in (1, 8, 32, 128):
        x = torch.randn(bs, 4096, device="cuda")
        pos = torch.randint(0, 8192, (bs,), device="cuda", dtype=torch.int32)

        def step():
            h = x
            for L in layers:
                h = h + L(h, pos)
            return h

        with torch.no_grad():
            ms = bench(step, n=20)
        log.info(f"batch {bs:4d}: {ms * 1000:.1f} us / step ({bs / ms * 1000:.0f} tok/s)")


{"cupy_mangled": cupy_mangled, "cupy_shfl": cupy_shfl, "triton_cpu_ptr": decode_bench,
 "readonly_cache": decode_bench}[args.scenario](*([args.scenario] if args.scenario in ("triton_cpu_ptr",
                                                                                        "readonly_cache") else []))
