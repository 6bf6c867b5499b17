# A GEMM benchmark (round 11): cuBLAS baselines, then a Triton matmul whose autotune configs (tuned for
# a bigger-shared-memory part) all need more shared memory than an H200 block may use.
import torch
import triton
import triton.language as tl

CONFIGS = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_stages=s, num_warps=8)
           for bm, bn, bk, s in [(256, 256, 128, 4), (256, 128, 128, 5), (128, 256, 128, 5), (256, 256, 64, 6)]]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_n
    gid = pid // group
    first_m = gid * GROUP_M
    gsz = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % gsz
    pid_n = (pid % group) // gsz
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        acc += tl.dot(tl.load(a), tl.load(b))
        a += BLOCK_K * sak
        b += BLOCK_K * sbk
    c = c_ptr + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]) * triton.cdiv(N, META["BLOCK_N"]),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    return c


print(f"device: {torch.cuda.get_device_name()}, triton {triton.__version__}, torch {torch.__version__}", flush=True)
for n in (4096, 8192):
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    ms = triton.testing.do_bench(lambda: a @ b)
    print(f"cuBLAS  fp16 M=N=K={n}: {ms:.3f} ms, {2 * n ** 3 / ms / 1e9:.1f} TFLOP/s", flush=True)
for n in (4096, 8192):
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    print(f"triton  fp16 M=N=K={n}: autotuning {len(CONFIGS)} configs ...", flush=True)
    ms = triton.testing.do_bench(lambda: matmul(a, b))
    print(f"triton  fp16 M=N=K={n}: {ms:.3f} ms, {2 * n ** 3 / ms / 1e9:.1f} TFLOP/s", flush=True)
