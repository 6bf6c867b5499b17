# Kernel benchmarks (round 16), --scenario:
# cublas_int8: a W8A8 GEMM benchmark: cuBLAS fp16/bf16 baselines (CuPy), then the int8 path calls
#   cublasGemmEx with int8 inputs, int32 compute and a bf16 output "to skip the dequant pass": cuBLAS has
#   no such type combination;
# lora_expand_k8: punica-style LoRA kernels in Triton: the shrink kernel (K = hidden) runs; the autotuned
#   expand kernel takes BLOCK_K = the LoRA rank (8) in every config: tl.dot needs K >= 16 for 16-bit inputs.
import argparse

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()

if args.scenario == "cublas_int8":
    import cupy as cp
    import numpy as np
    from cupy_backends.cuda.libs import cublas
    from cupy.cuda import runtime

    dev = cp.cuda.Device(0)
    props = runtime.getDeviceProperties(0)
    print(f"CuPy {cp.__version__}, CUDA runtime {runtime.runtimeGetVersion()}, "
          f"device {props['name'].decode()} (sm_{props['major']}{props['minor']})", flush=True)
    M = N = K = 8192

    def bench(fn, iters=20):
        fn()
        cp.cuda.runtime.deviceSynchronize()
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) / iters

    rng = cp.random.default_rng(0)
    print(f"{'dtype':<22}{'M':>7}{'N':>7}{'K':>7}{'ms':>10}{'TFLOP/s':>10}", flush=True)
    for name, dt in [("fp16 (cublasGemmEx)", cp.float16), ("fp32 (cublasSgemm)", cp.float32)]:
        a = rng.standard_normal((M, K), dtype=cp.float32).astype(dt)
        b = rng.standard_normal((K, N), dtype=cp.float32).astype(dt)
        ms = bench(lambda: a @ b)
        print(f"{name:<22}{M:>7}{N:>7}{K:>7}{ms:>10.3f}{2 * M * N * K / ms / 1e9:>10.1f}", flush=True)

    CUDA_R_8I = getattr(runtime, "CUDA_R_8I", 3)
    CUDA_R_16BF = getattr(runtime, "CUDA_R_16BF", 14)
    COMPUTE_32I = getattr(cublas, "CUBLAS_COMPUTE_32I", 72)
    GEMM_DEFAULT = getattr(cublas, "CUBLAS_GEMM_DEFAULT", -1)

    def w8a8_gemm_bf16(a_q, b_q):
        """C[M,N] (bf16) = A_q[M,K] (int8) @ B_q[K,N] (int8), int32 accumulate, via column-major cuBLAS."""
        m, k = a_q.shape
        n = b_q.shape[1]
        c = cp.empty((m, n), dtype=cp.uint16)  # bf16 storage
        one = np.array(1, dtype=np.int32)
        zero = np.array(0, dtype=np.int32)
        cublas.gemmEx(dev.cublas_handle, cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_N, n, m, k,
                      one.ctypes.data, b_q.data.ptr, CUDA_R_8I, n, a_q.data.ptr, CUDA_R_8I, k,
                      zero.ctypes.data, c.data.ptr, CUDA_R_16BF, n, COMPUTE_32I, GEMM_DEFAULT)
        return c

    a_q = rng.integers(-127, 128, (M, K), dtype=cp.int64).astype(cp.int8)
    b_q = rng.integers(-127, 128, (K, N), dtype=cp.int64).astype(cp.int8)
    print("w8a8: per-token int8 activations x per-channel int8 weights, bf16 output (fused dequant)", flush=True)
    ms = bench(lambda: w8a8_gemm_bf16(a_q, b_q))
    print(f"{'int8 (W8A8, bf16 out)':<22}{M:>7}{N:>7}{K:>7}{ms:>10.3f}{2 * M * N * K / ms / 1e9:>10.1f}", flush=True)

elif args.scenario == "lora_expand_k8":
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def lora_shrink_kernel(x_ptr, a_ptr, out_ptr, M, K, R: tl.constexpr, BLOCK_M: tl.constexpr,
                           BLOCK_K: tl.constexpr):
        pid = tl.program_id(0)
        offs_m = pid * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_r = tl.arange(0, R)
        acc = tl.zeros((BLOCK_M, R), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            offs_k = k0 + tl.arange(0, BLOCK_K)
            x = tl.load(x_ptr + offs_m[:, None] * K + offs_k[None, :], mask=offs_m[:, None] < M, other=0.0)
            a = tl.load(a_ptr + offs_k[:, None] * R + offs_r[None, :])
            acc += tl.sum(x[:, :, None].to(tl.float32) * a[None, :, :].to(tl.float32), axis=1)
        tl.store(out_ptr + offs_m[:, None] * R + offs_r[None, :], acc.to(tl.float16), mask=offs_m[:, None] < M)

    @triton.autotune(configs=[triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
                              for bm, bn, w, s in [(64, 128, 4, 3), (64, 256, 8, 3), (128, 128, 8, 4),
                                                   (32, 64, 4, 2)]],
                     key=["M", "N"])
    @triton.jit
    def lora_expand_kernel(s_ptr, b_ptr, y_ptr, M, N, R: tl.constexpr, BLOCK_M: tl.constexpr,
                           BLOCK_N: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        offs_r = tl.arange(0, R)
        s = tl.load(s_ptr + offs_m[:, None] * R + offs_r[None, :], mask=offs_m[:, None] < M, other=0.0)
        b = tl.load(b_ptr + offs_r[:, None] * N + offs_n[None, :], mask=offs_n[None, :] < N, other=0.0)
        acc = tl.dot(s, b)
        y = tl.load(y_ptr + offs_m[:, None] * N + offs_n[None, :], mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
        tl.store(y_ptr + offs_m[:, None] * N + offs_n[None, :], (y + acc).to(tl.float16),
                 mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))

    torch.manual_seed(0)
    M, H, R = 4096, 4096, 8
    print(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()}", flush=True)
    print(f"LoRA rank {R}, hidden {H}, tokens {M}, fp16", flush=True)
    x = torch.randn(M, H, device="cuda", dtype=torch.float16)
    A = torch.randn(H, R, device="cuda", dtype=torch.float16) * 0.01
    B = torch.randn(R, H, device="cuda", dtype=torch.float16) * 0.01
    s = torch.empty(M, R, device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(M, 32),)
    lora_shrink_kernel[grid](x, A, s, M, H, R=R, BLOCK_M=32, BLOCK_K=64)
    torch.cuda.synchronize()
    err = (s.float() - (x.float() @ A.float())).abs().max().item()
    t = triton.testing.do_bench(lambda: lora_shrink_kernel[grid](x, A, s, M, H, R=R, BLOCK_M=32, BLOCK_K=64))
    print(f"lora_shrink: max abs err {err:.3e}, {t * 1e3:.1f} us, {(M * H * 2 + H * R * 2) / t / 1e6:.1f} GB/s",
          flush=True)
    y = torch.zeros(M, H, device="cuda", dtype=torch.float16)
    egrid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(H, meta["BLOCK_N"]))  # noqa: E731
    print("lora_expand: autotuning 4 configs ...", flush=True)
    lora_expand_kernel[egrid](s, B, y, M, H, R=R)
    torch.cuda.synchronize()
    err = (y.float() - (s.float() @ B.float())).abs().max().item()
    print(f"lora_expand: max abs err {err:.3e}", flush=True)

