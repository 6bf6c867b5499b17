# Triton kernel benchmark (round 17), --scenario splitk_atomic: a split-K GEMM for skinny decode shapes
# accumulates its K-slices into C with tl.atomic_add; the kernel is @triton.autotune'd over SPLIT_K without
# reset_to_zero, so every benchmark run of every config adds into the same C; the correctness check that
# the benchmark runs before timing fails.
import argparse

import torch
import triton
import triton.language as tl

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()


@triton.autotune(configs=[triton.Config({"BLOCK_M": 16, "BLOCK_N": bn, "BLOCK_K": bk, "SPLIT_K": sk}, num_warps=w,
                                        num_stages=s)
                          for bn, bk, sk, w, s in [(64, 128, 1, 4, 4), (64, 128, 4, 4, 4), (128, 64, 8, 4, 3),
                                                   (64, 256, 16, 8, 3)]],
                 key=["M", "N", "K"])
@triton.jit
def splitk_gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                       stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       SPLIT_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_k = tl.program_id(2)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(pid_k * BLOCK_K, K, BLOCK_K * SPLIT_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak,
                    mask=(offs_m[:, None] < M) & (offs_k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=(offs_k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    c = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.atomic_add(c, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def splitk_gemm(a, b):
    M, K = a.shape
    N = b.shape[1]
    c = torch.zeros((M, N), device=a.device, dtype=torch.float32)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]), meta["SPLIT_K"])  # noqa
    splitk_gemm_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                             c.stride(1))
    return c


if __name__ == "__main__":
    cap = torch.cuda.get_device_capability()
    print(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()} "
          f"(sm_{cap[0]}{cap[1]})", flush=True)
    shapes = [(16, 4096, 14336), (16, 14336, 4096), (32, 4096, 14336), (64, 28672, 4096)]
    print(f"{'M':>5}{'N':>7}{'K':>7}{'cublas us':>11}{'TFLOP/s':>9}", flush=True)
    torch.manual_seed(0)
    for M, N, K in shapes:
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        t = triton.testing.do_bench(lambda: a @ b)
        print(f"{M:>5}{N:>7}{K:>7}{t * 1e3:>11.1f}{2 * M * N * K / t / 1e9:>9.1f}", flush=True)
    print("split-K Triton GEMM (fp32 accumulate, atomic_add reduction): correctness check, then timing", flush=True)
    for M, N, K in shapes:
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        c = splitk_gemm(a, b)
        ref = (a.float() @ b.float())
        torch.testing.assert_close(c, ref, rtol=2e-2, atol=2e-1)
        t = triton.testing.do_bench(lambda: splitk_gemm(a, b))
        print(f"{M:>5}{N:>7}{K:>7}{t * 1e3:>11.1f}{2 * M * N * K / t / 1e9:>9.1f}  "
              f"best config: {splitk_gemm_kernel.best_config}", flush=True)
