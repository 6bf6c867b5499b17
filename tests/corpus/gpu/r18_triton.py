# A Triton fp8 GEMM benchmark (autotuned) for round 18: the weights are stored as fp8e4b15 bytes (the
# format the kernel was first written for on Ampere); the benchmark runs the torch baseline, then the
# autotuner compiles the Triton kernel on this Hopper GPU.
import os
import time

import torch
import triton
import triton.language as tl

print(f"device: {torch.cuda.get_device_name()} (sm_{''.join(map(str, torch.cuda.get_device_capability()))}), "
      f"triton {triton.__version__}, torch {torch.__version__}", flush=True)


@triton.autotune(configs=[triton.Config({"BM": bm, "BN": bn, "BK": bk}, num_warps=w, num_stages=s)
                          for bm, bn, bk, w, s in [(128, 128, 64, 8, 3), (64, 128, 64, 4, 4), (128, 64, 128, 8, 3)]],
                 key=["M", "N", "K"])
@triton.jit
def fp8_gemm(a_ptr, b_ptr, c_ptr, scale, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :]).to(tl.bfloat16)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :]).to(tl.float8e4b15, bitcast=True)
        acc += tl.dot(a, b.to(tl.bfloat16))
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], (acc * scale).to(tl.bfloat16))


def bench(fn, n=20):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n


print(f"{'M':>6} {'N':>6} {'K':>6} {'torch bf16 TFLOP/s':>20} {'triton fp8w TFLOP/s':>20}", flush=True)
for M, N, K in [(4096, 4096, 4096), (8192, 8192, 4096), (128, 14336, 4096)]:
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    bw = torch.randint(0, 255, (K, N), device="cuda", dtype=torch.uint8)
    bref = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    t_ref = bench(lambda: a @ bref)
    grid = lambda meta: (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))
    t_tri = bench(lambda: fp8_gemm[grid](a, bw, c, 0.5, M, N, K))
    print(f"{M:>6} {N:>6} {K:>6} {2 * M * N * K / t_ref / 1e12:>20.1f} {2 * M * N * K / t_tri / 1e12:>20.1f}",
          flush=True)
