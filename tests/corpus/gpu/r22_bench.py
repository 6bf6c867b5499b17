# Kernel jobs and benchmarks for round 22, --scenario:
# misaligned_bf16: a sampler-statistics benchmark (row max and log-sum-exp of the logits) whose Triton kernel
#   reads the bf16 logits two at a time as 32-bit words (ported from a kernel that always saw even row
#   lengths); the benchmark lays the rows back to back in one arena; with GPT-2's 50257-token vocabulary every
#   odd row starts two bytes off a 4-byte boundary: misaligned address;
# ctx_reset: an offline scoring pipeline (PyTorch model, then CuPy post-processing) calls an old utility's
#   release_gpu() between the phases; it resets the device's primary context through the driver API
#   (cuDevicePrimaryCtxReset) while PyTorch's caching allocator still holds the model and its buffers;
# dot_dtype: a W8A16 GEMM benchmark (autotuned Triton kernel): the kernel feeds the int8 weight tile straight
#   into tl.dot with the bf16 activations (the dequantizing cast was dropped in a refactor): the compile
#   fails.
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import logging
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
logging.basicConfig(
    level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stdout
)
log = logging.getLogger("bench")


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


# ---------------------------------------------------------------- misaligned_bf16
def misaligned_bf16():
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def row_stats(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        # two bf16 per 32-bit word
        base = (x_ptr + row.to(tl.int64) * n_cols).to(tl.pointer_type(tl.uint32))
        m = tl.full((), float("-inf"), tl.float32)
        s = tl.zeros((), tl.float32)
        for start in range(0, n_cols // 2, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mk = offs < n_cols // 2
            w = tl.load(base + offs, mask=mk, other=0)
            lo = tl.where(mk, (w << 16).to(tl.float32, bitcast=True), float("-inf"))
            hi = tl.where(mk, ((w >> 16) << 16).to(tl.float32, bitcast=True), float("-inf"))
            m_new = tl.maximum(m, tl.maximum(tl.max(lo, 0), tl.max(hi, 0)))
            s = (
                s * tl.exp(m - m_new)
                + tl.sum(tl.exp(lo - m_new), 0)
                + tl.sum(tl.exp(hi - m_new), 0)
            )
            m = m_new
        tl.store(out_ptr + row * 2, m)
        tl.store(out_ptr + row * 2 + 1, m + tl.log(s))

    log.info("device %s, triton %s", torch.cuda.get_device_name(), triton.__version__)
    shapes = [(64, 32000), (64, 128256), (256, 151936), (64, 50257), (256, 50257)]
    arena = torch.randn(sum(r * v for r, v in shapes), device="cuda", dtype=torch.bfloat16)
    off = 0
    for rows, vocab in shapes:
        x = arena[off : off + rows * vocab].view(rows, vocab)
        off += rows * vocab
        out = torch.empty(rows, 2, device="cuda")

        def fn(x=x, out=out, rows=rows, vocab=vocab):
            row_stats[(rows,)](x, out, vocab, BLOCK=1024)

        ms = bench(fn)
        ref = torch.logsumexp(x.float(), -1)
        err = (out[:, 1] - ref).abs().max().item()
        log.info(
            "rows=%4d vocab=%6d  %.3f ms  %.1f GB/s  max|lse err|=%.2e",
            rows,
            vocab,
            ms,
            rows * vocab * 2 / ms / 1e6,
            err,
        )


# ---------------------------------------------------------------- ctx_reset
def release_gpu():
    """From the team's old utils module: give every byte back to the driver between pipeline phases."""
    import ctypes
    import gc

    gc.collect()
    cuda = ctypes.CDLL("libcuda.so.1")
    dev = ctypes.c_int()
    assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
    rc = cuda.cuDevicePrimaryCtxReset_v2(dev)
    log.info("release_gpu: cuDevicePrimaryCtxReset -> %d", rc)


def ctx_reset():
    import cupy as cp
    import torch
    import torch.nn as nn
    from tqdm import tqdm

    torch.manual_seed(0)
    model = (
        nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda().half().eval()
    )
    log.info("phase 1: embedding 64 shards with the encoder (%s)", torch.cuda.get_device_name())
    embs = []
    with torch.no_grad():
        for _ in tqdm(range(64), desc="encode", ncols=90):
            embs.append(
                model(torch.randn(2048, 1024, device="cuda", dtype=torch.half)).float().cpu()
            )
    log.info(
        "phase 1 done: %d embeddings, torch holds %.2f GiB",
        sum(e.shape[0] for e in embs),
        torch.cuda.memory_reserved() / 2**30,
    )
    release_gpu()
    log.info("phase 2: CuPy clustering of the embeddings")
    x = cp.asarray(torch.cat(embs).numpy())
    cent = x[:256].copy()
    for it in range(10):
        d = (x * x).sum(1, keepdims=True) - 2 * x @ cent.T + (cent * cent).sum(1)
        lab = d.argmin(1)
        cent = cp.stack(
            [x[lab == k].mean(0) if bool((lab == k).any()) else cent[k] for k in range(256)]
        )
        log.info("k-means iteration %d: inertia %.4e", it, float(d.min(1).sum()))
    log.info("phase 3: re-scoring the cluster centres with the encoder")
    with torch.no_grad():
        scores = model(torch.as_tensor(cent, device="cuda").half()).float().norm(dim=1)
    log.info("done: mean score %.4f", scores.mean().item())


# ---------------------------------------------------------------- dot_dtype
def dot_dtype():
    import torch
    import triton
    import triton.language as tl

    configs = [
        triton.Config({"BM": bm, "BN": bn, "BK": bk}, num_warps=w, num_stages=s)
        for bm, bn, bk, w, s in [
            (16, 64, 128, 4, 4),
            (32, 64, 128, 4, 4),
            (64, 128, 64, 4, 3),
            (128, 128, 64, 8, 3),
        ]
    ]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def w8a16_gemm(
        a_ptr, b_ptr, s_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
    ):
        pid_m, pid_n = tl.program_id(0), tl.program_id(1)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, K, BK):
            a = tl.load(
                a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=rm[:, None] < M, other=0.0
            )
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=rn[None, :] < N, other=0)
            acc += tl.dot(a, b)  # int8 weights; the per-channel scale is applied after the loop
        acc *= tl.load(s_ptr + rn, mask=rn < N, other=1.0)[None, :]
        tl.store(
            c_ptr + rm[:, None] * N + rn[None, :],
            acc.to(tl.bfloat16),
            mask=(rm[:, None] < M) & (rn[None, :] < N),
        )

    log.info("device %s, triton %s", torch.cuda.get_device_name(), triton.__version__)
    for M, N, K in [(1, 4096, 4096), (16, 4096, 4096), (64, 14336, 4096), (256, 4096, 14336)]:
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        wq = torch.randint(-127, 128, (K, N), device="cuda", dtype=torch.int8)
        scale = torch.rand(N, device="cuda") / 127
        w_ref = wq.to(torch.bfloat16) * scale.to(torch.bfloat16)
        ms_ref = bench(lambda a=a, w_ref=w_ref: a @ w_ref)
        c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        grid = lambda META, M=M, N=N: (triton.cdiv(M, META["BM"]), triton.cdiv(N, META["BN"]))  # noqa: E731
        ms = bench(
            lambda a=a, wq=wq, scale=scale, c=c, M=M, N=N, K=K, grid=grid: w8a16_gemm[grid](
                a, wq, scale, c, M, N, K
            )
        )
        log.info(
            "M=%4d N=%5d K=%5d  torch bf16 (dequantized) %.3f ms  w8a16 triton %.3f ms",
            M,
            N,
            K,
            ms_ref,
            ms,
        )
        time.sleep(0.1)


if __name__ == "__main__":
    {"misaligned_bf16": misaligned_bf16, "ctx_reset": ctx_reset, "dot_dtype": dot_dtype}[
        args.scenario
    ]()
