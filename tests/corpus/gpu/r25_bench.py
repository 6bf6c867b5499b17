# Stand-alone kernel scripts for round 25, one real fault (or none) per --scenario:
# gemm_healthy: a GEMM / attention micro-benchmark that checks each kernel against an fp32 reference and prints
#   "error" columns and an error budget in passing, with a framework warning or two; it finishes (no crash);
# cupy_block: a feature-extraction step with a CuPy RawKernel (one block per row) launched with the row length
#   as the block size: 2048 threads per block, over the GPU's limit of 1024;
# fp8_layout: an FP8 (e4m3) post-training quantization script calibrates the activations of each layer, then
#   checks the quantized layer with torch._scaled_mm; it passes the weight as stored (row-major [K, N]) where
#   the FP8 GEMM needs the second operand column-major.
# ruff: noqa: E501  (log lines kept as they print)
import argparse
import logging
import sys
import time

_h = logging.StreamHandler(sys.stdout)
_h.setFormatter(logging.Formatter("[%(asctime)s] %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S"))
log = logging.getLogger("bench")
log.handlers[:] = [_h]
log.setLevel(logging.INFO)
log.propagate = False


def timeit(fn, iters=50):
    import torch

    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(iters):
        fn()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) / iters


def gemm_healthy():
    import warnings

    import torch
    import torch.nn.functional as F

    warnings.simplefilter("default")
    print(f"device: {torch.cuda.get_device_name(0)}  torch {torch.__version__}  cuda {torch.version.cuda}", flush=True)
    print("error budget: max relative error vs fp32 reference must stay under 2.0e-02 (bf16), 5.0e-02 (fp8)", flush=True)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.manual_seed(0)
    print(f"{'kernel':<28}{'shape':<22}{'ms':>9}{'TFLOP/s':>10}{'max_rel_error':>15}{'status':>8}", flush=True)
    for m, n, k in ((4096, 4096, 4096), (8192, 8192, 8192), (16384, 4096, 14336)):
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        ref = a.float() @ b.float()
        out = a @ b
        err = ((out.float() - ref).abs().max() / ref.abs().max()).item()
        ms = timeit(lambda: a @ b)
        print(f"{'cublas bf16 gemm':<28}{f'{m}x{n}x{k}':<22}{ms:>9.3f}{2 * m * n * k / ms / 1e9:>10.1f}{err:>15.2e}{'ok' if err < 2e-2 else 'FAIL':>8}", flush=True)
    for seq in (2048, 8192):
        q = torch.randn(4, 32, seq, 128, device="cuda", dtype=torch.bfloat16)
        kk, v = torch.randn_like(q), torch.randn_like(q)
        out = F.scaled_dot_product_attention(q, kk, v, is_causal=True)
        ref = F.scaled_dot_product_attention(q[:1].float(), kk[:1].float(), v[:1].float(), is_causal=True)
        err = ((out[:1].float() - ref).abs().max() / ref.abs().max()).item()
        ms = timeit(lambda: F.scaled_dot_product_attention(q, kk, v, is_causal=True), iters=20)
        fl = 4 * 4 * 32 * seq * seq * 128 / 2
        print(f"{'sdpa causal (flash)':<28}{f'b4 h32 s{seq} d128':<22}{ms:>9.3f}{fl / ms / 1e9:>10.1f}{err:>15.2e}{'ok' if err < 2e-2 else 'FAIL':>8}", flush=True)
    x = torch.randn(8192, 8192, device="cuda")
    ms = timeit(lambda: x @ x, iters=10)
    print(f"{'fp32 gemm (tf32 allowed)':<28}{'8192x8192x8192':<22}{ms:>9.3f}{2 * 8192 ** 3 / ms / 1e9:>10.1f}{'-':>15}{'ok':>8}", flush=True)
    warnings.warn("torch.backends.cuda.matmul.allow_tf32 is set: fp32 GEMM numbers use TF32 (relative error up to ~1e-3)", UserWarning, stacklevel=1)
    print("summary: 6/6 kernels within the error budget, 0 errors, 0 mismatches", flush=True)


def cupy_block():
    import cupy as cp
    import numpy as np

    log.name = "features"
    log.info(f"cupy {cp.__version__}, device {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    kern = cp.RawKernel(r"""
extern "C" __global__ void row_stats(const float* x, float* mean, float* var, int n) {
    extern __shared__ float buf[];
    const float* row = x + (size_t)blockIdx.x * n;
    float v = row[threadIdx.x];
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    float m = buf[0] / n;
    __syncthreads();
    buf[threadIdx.x] = (v - m) * (v - m);
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) { mean[blockIdx.x] = m; var[blockIdx.x] = buf[0] / n; }
}
""", "row_stats")
    for dim in (512, 1024, 2048):  # the embedding sizes of the three encoders
        rows = 65536
        x = cp.random.standard_normal((rows, dim), dtype=cp.float32)
        mean, var = cp.empty(rows, cp.float32), cp.empty(rows, cp.float32)
        log.info(f"encoder dim={dim}: computing per-row statistics of {rows} embeddings")
        kern((rows,), (dim,), (x, mean, var, np.int32(dim)), shared_mem=dim * 4)
        cp.cuda.Device().synchronize()
        log.info(f"encoder dim={dim}: mean of row means {float(mean.mean()):+.5f}, mean variance {float(var.mean()):.5f}")


def fp8_layout():
    import torch
    from tqdm import tqdm

    log.name = "quantize_fp8"
    torch.manual_seed(0)
    layers = {f"model.layers.{i}.{n}": (o, k) for i in range(4) for n, o, k in
              (("self_attn.qkv_proj", 6144, 4096), ("self_attn.o_proj", 4096, 4096), ("mlp.gate_up_proj", 28672, 4096), ("mlp.down_proj", 4096, 14336))}
    log.info("recipe: FP8_DYNAMIC (weights: per-tensor e4m3 static, activations: per-tensor e4m3 dynamic); ignore=['lm_head']")
    log.info(f"calibrating {len(layers)} linear layers on 256 samples of ultrachat_200k (max_seq_length=2048)")
    w8 = {}
    for name, (o, k) in tqdm(layers.items(), desc="Calibrating", ncols=100):
        w = torch.randn(o, k, device="cuda", dtype=torch.bfloat16) * 0.02
        ws = (w.abs().max().float() / 448.0).reshape(())
        # stored as [in_features, out_features] for the kernel (contiguous)
        w8[name] = ((w / ws).to(torch.float8_e4m3fn).t().contiguous(), ws)
        time.sleep(0.05)
    log.info("calibration done; validating quantized layers against bf16")
    for name, (wq, ws) in w8.items():
        k = wq.shape[0]
        x = torch.randn(512, k, device="cuda", dtype=torch.bfloat16)
        xs = (x.abs().max().float() / 448.0).reshape(())
        y = torch._scaled_mm((x / xs).to(torch.float8_e4m3fn), wq, scale_a=xs, scale_b=ws, out_dtype=torch.bfloat16)
        log.info(f"{name}: out {tuple(y.shape)}, ok")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    a = ap.parse_args()
    {"gemm_healthy": gemm_healthy, "cupy_block": cupy_block, "fp8_layout": fp8_layout}[a.scenario]()
