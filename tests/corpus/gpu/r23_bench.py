# Kernel benchmarks for round 23, --scenario:
# cublas_ld: a GEMM benchmark of a row-major wrapper around cuBLAS (CuPy's raw cublas bindings). The wrapper
#   computes C^T = B^T A^T in column-major terms; a refactor swapped the leading dimensions of the two operands
#   (lda=K where N is needed). Square shapes pass (and the results were never checked); the first shape with
#   N > K is refused by cuBLAS (invalid value);
# triton_tiles_ok: a Triton matmul autotune sweep over tile configs; the configs that need more shared memory than
#   the SM has are pruned by the autotuner's OutOfResources handling and the sweep finishes (no crash).
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import logging
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stdout)
log = logging.getLogger("gemm_bench")


# ---------------------------------------------------------------- cublas_ld
def cublas_ld():
    import cupy as cp
    import numpy as np
    from cupy_backends.cuda.libs import cublas

    handle = cp.cuda.device.get_cublas_handle()
    one = np.array(1.0, dtype=np.float32)
    zero = np.array(0.0, dtype=np.float32)

    def gemm_rowmajor(A, B):
        """C = A @ B for row-major A (M, K), B (K, N): cuBLAS sees C^T (N, M) = B^T (N, K) @ A^T (K, M)."""
        M, K = A.shape
        N = B.shape[1]
        C = cp.empty((M, N), dtype=cp.float32)
        lda, ldb, ldc = K, K, N  # leading dimensions of B^T, A^T, C^T
        cublas.sgemm(handle, cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_N, N, M, K, one.ctypes.data, B.data.ptr, lda,
                     A.data.ptr, ldb, zero.ctypes.data, C.data.ptr, ldc)
        return C

    dev = cp.cuda.runtime.getDeviceProperties(0)
    name = dev["name"].decode() if isinstance(dev["name"], bytes) else dev["name"]
    log.info(f"device: {name}, cc {dev['major']}.{dev['minor']}, {dev['multiProcessorCount']} SMs; "
             f"cupy {cp.__version__}, CUDA runtime {cp.cuda.runtime.runtimeGetVersion()}")
    log.info("shape sweep (fp32, TF32 off), 20 iterations each after 3 warm-ups")
    print(f"{'M':>6} {'N':>6} {'K':>6} {'ms':>9} {'TFLOP/s':>9}", flush=True)
    shapes = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
              (4096, 11008, 4096), (4096, 4096, 11008), (8192, 28672, 8192)]
    rng = cp.random.default_rng(0)
    for M, N, K in shapes:
        A = rng.standard_normal((M, K), dtype=cp.float32)
        B = rng.standard_normal((K, N), dtype=cp.float32)
        for _ in range(3):
            gemm_rowmajor(A, B)
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        for _ in range(20):
            gemm_rowmajor(A, B)
        e.record()
        e.synchronize()
        ms = cp.cuda.get_elapsed_time(s, e) / 20
        print(f"{M:>6} {N:>6} {K:>6} {ms:>9.3f} {2 * M * N * K / ms / 1e9:>9.1f}", flush=True)
    log.info("done")


# ---------------------------------------------------------------- triton_tiles_ok
def triton_tiles_ok():
    import torch
    import triton
    import triton.language as tl

    configs = [triton.Config({"BM": bm, "BN": bn, "BK": bk}, num_stages=s, num_warps=w)
               for bm, bn, bk, s, w in [(128, 128, 64, 3, 8), (128, 256, 64, 3, 8), (256, 128, 64, 4, 8),
                                        (256, 256, 64, 4, 8), (256, 256, 128, 5, 8), (64, 128, 32, 4, 4),
                                        (128, 64, 32, 4, 4), (128, 256, 128, 6, 8)]]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
        b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0.0)
            b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(a, b)
            a_ptrs += BK
            b_ptrs += BK * N
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))

    log.info(f"device: {torch.cuda.get_device_name()}; triton {triton.__version__}; {len(configs)} configs")
    for M, N, K in [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 14336, 4096)]:
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)

        def grid(meta):
            return (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))

        matmul[grid](a, b, c, M, N, K)
        ms = triton.testing.do_bench(lambda: matmul[grid](a, b, c, M, N, K))
        err = (c.float() - (a @ b).float()).abs().max().item()
        log.info(f"M={M} N={N} K={K}: best {matmul.best_config}, {ms:.3f} ms, {2 * M * N * K / ms / 1e9:.1f} TFLOP/s, "
                 f"max abs err {err:.3f}")
    log.info("sweep finished")


if __name__ == "__main__":
    {"cublas_ld": cublas_ld, "triton_tiles_ok": triton_tiles_ok}[args.scenario]()
