# Round 29, kernel-level scenarios (one real fault, or none, per --scenario):
# tri_autotune_fp8: a Triton GEMM benchmark: fp16 shapes autotune and run; the fp8 (e4m3) rows reuse the fp16 config
#   list, whose BLOCK_K=16 configs are below tl.dot's minimum K for 8-bit operands (32): the autotuner's compile of
#   that config fails and the CompilationError ends the benchmark;
# cupy_potrf: a retrieval index build whitens each shard's embeddings with a Cholesky factor of their covariance,
#   under cupyx.errstate(linalg='raise'); a shard with fewer rows than dimensions has a singular covariance: cuSOLVER's
#   potrf reports devInfo != 0 and CuPy raises LinAlgError;
# numba_typing: a numba-cuda particle kernel calls np.linalg.norm on a row slice: numba's CUDA typing refuses it at the
#   first launch (TypingError);
# cudapy_dynsmem: a cuda-python (cuda.bindings) decode-attention prototype picks its tile from the sequence length; at
#   8192 keys the tile needs 96 KiB of dynamic shared memory and the kernel was never given
#   CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: cuLaunchKernel returns CUDA_ERROR_INVALID_VALUE;
# jit_nvrtc: an eval script registers an exact-GELU activation through torch.cuda.jiterator; its code uses M_SQRT1_2,
#   which NVRTC does not define: the jiterator's NVRTC compile fails at the first forward;
# ort_cpu_fallback: an ONNX export + onnxruntime benchmark asks for the CUDA execution provider from a CPU-only
#   onnxruntime build: warnings, the session runs on the CPU, the benchmark finishes (no crash).
# ruff: noqa: E501  (log lines kept as they print)
import argparse
import logging
import os
import sys
import time

ROOT = os.environ.get("R29_ROOT", "/tmp/r29_files")


def ts():
    return time.strftime("%Y-%m-%d %H:%M:%S")


# ---------------------------------------------------------------- tri_autotune_fp8
def tri_autotune_fp8():
    import torch
    import triton
    import triton.language as tl

    configs = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}, num_stages=s, num_warps=w)
               for bm, bn, bk, s, w in [(128, 128, 64, 3, 8), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (64, 64, 16, 5, 4), (128, 256, 16, 3, 8)]]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a = tl.load(a_ptr + rm[:, None] * sam + (k * BLOCK_K + rk)[None, :] * sak, mask=(rm[:, None] < M) & ((k * BLOCK_K + rk)[None, :] < K), other=0.0)
            b = tl.load(b_ptr + (k * BLOCK_K + rk)[:, None] * sbk + rn[None, :] * sbn, mask=((k * BLOCK_K + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))

    def matmul(a, b, out_dtype):
        M, K = a.shape
        _, N = b.shape
        c = torch.empty(M, N, device=a.device, dtype=out_dtype)
        grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]), triton.cdiv(N, META["BLOCK_N"]))  # noqa: E731
        matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
        return c

    print(f"triton {triton.__version__}, torch {torch.__version__}, device {torch.cuda.get_device_name()}", flush=True)
    print(f"{'dtype':>8} {'M':>6} {'N':>6} {'K':>6} {'triton TFLOP/s':>15} {'torch TFLOP/s':>14} {'max err':>9}", flush=True)
    shapes = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 14336, 4096)]
    for dt in ("fp16", "fp8e4m3"):
        for M, N, K in shapes:
            a = torch.randn(M, K, device="cuda")
            b = torch.randn(K, N, device="cuda")
            if dt == "fp16":
                a16, b16 = a.half(), b.half()
                ref = a16 @ b16
                ms_ref = triton.testing.do_bench(lambda: a16 @ b16)
                c = matmul(a16, b16, torch.float16)
                ms = triton.testing.do_bench(lambda: matmul(a16, b16, torch.float16))
            else:
                a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
                a16, b16 = a8.to(torch.bfloat16), b8.to(torch.bfloat16)
                ref = a16 @ b16
                ms_ref = triton.testing.do_bench(lambda: a16 @ b16)
                c = matmul(a8, b8, torch.bfloat16)
                ms = triton.testing.do_bench(lambda: matmul(a8, b8, torch.bfloat16))
            err = (c.float() - ref.float()).abs().max().item()
            fl = 2 * M * N * K
            print(f"{dt:>8} {M:>6} {N:>6} {K:>6} {fl / ms / 1e9:>15.1f} {fl / ms_ref / 1e9:>14.1f} {err:>9.3g}", flush=True)


# ---------------------------------------------------------------- cupy_potrf
def cupy_potrf():
    import cupy as cp
    import cupyx

    logging.basicConfig(format="%(asctime)s %(levelname)s build_index: %(message)s", level=logging.INFO)
    log = logging.getLogger("build_index")
    dim = 768
    rs = cp.random.RandomState(11)
    shards = [("en-wiki", 65536), ("en-arxiv", 32768), ("de-wiki", 16384), ("sv-news", 512), ("is-forum", 301)]
    log.info(f"whitening {len(shards)} shards of {dim}-d embeddings (ZCA via Cholesky of the shard covariance); cupy {cp.__version__}")
    with cupyx.errstate(linalg="raise"):
        for name, n in shards:
            t0 = time.time()
            basis = rs.standard_normal((dim, dim), dtype=cp.float32) / dim ** 0.5
            x = rs.standard_normal((n, dim), dtype=cp.float32) @ basis + 0.1
            mu = x.mean(0, keepdims=True)
            xc = x - mu
            cov = xc.T @ xc / (n - 1)
            L = cp.linalg.cholesky(cov)
            w = cp.linalg.solve(L, xc.T).T
            resid = float(cp.abs(cp.cov(w.T) - cp.eye(dim, dtype=cp.float32)).max())
            log.info(f"shard {name}: {n} vectors, whitened in {time.time() - t0:.2f} s, max |cov - I| = {resid:.3f}")
            cp.save(f"{ROOT}/index_{name}.npy", w[:16])
    log.info("index build done")


# ---------------------------------------------------------------- numba_typing
def numba_typing():
    import warnings

    import numpy as np
    from numba import cuda

    warnings.simplefilter("default")

    @cuda.jit
    def lj_forces(pos, force, n, cutoff2):
        i = cuda.grid(1)
        if i >= n:
            return
        fx = 0.0
        fy = 0.0
        fz = 0.0
        for j in range(n):
            if j == i:
                continue
            d = pos[i] - pos[j]
            r = np.linalg.norm(d)
            r2 = r * r
            if r2 < cutoff2:
                inv6 = 1.0 / (r2 * r2 * r2)
                f = 24.0 * inv6 * (2.0 * inv6 - 1.0) / r2
                fx += f * d[0]
                fy += f * d[1]
                fz += f * d[2]
        force[i, 0] = fx
        force[i, 1] = fy
        force[i, 2] = fz

    n = 4096
    rng = np.random.default_rng(0)
    side = 18.0
    pos = (rng.random((n, 3)) * side).astype(np.float32)
    print(f"[md] {n} Lennard-Jones particles in a {side:.0f}^3 box, cutoff 2.5 sigma, dt=0.005", flush=True)
    dev = cuda.get_current_device()
    print(f"[md] device: {dev.name.decode() if isinstance(dev.name, bytes) else dev.name} (cc {dev.compute_capability})", flush=True)
    d_pos = cuda.to_device(pos)
    d_force = cuda.device_array((n, 3), dtype=np.float32)
    threads = 128
    blocks = (n + threads - 1) // threads
    for step in range(1000):
        lj_forces[blocks, threads](d_pos, d_force, n, np.float32(2.5 ** 2))
        if step % 100 == 0:
            f = d_force.copy_to_host()
            print(f"[md] step {step} max |F| = {np.abs(f).max():.3f}", flush=True)


# ---------------------------------------------------------------- cudapy_dynsmem
DECODE_SRC = r'''
extern "C" __global__ void decode_attn(const float* __restrict__ q, const float* __restrict__ k,
                                       const float* __restrict__ v, float* __restrict__ out,
                                       int seq_len, int tile, float scale) {
    extern __shared__ float smem[];           // tile keys x 128 dims staged per block
    const int d = threadIdx.x;                // one thread per head dim (128)
    const int head = blockIdx.x;
    const float* kh = k + (size_t)head * seq_len * 128;
    const float* vh = v + (size_t)head * seq_len * 128;
    float qd = q[head * 128 + d];
    float m = -1e30f, l = 0.f, acc = 0.f;
    for (int t0 = 0; t0 < seq_len; t0 += tile) {
        int nt = min(tile, seq_len - t0);
        for (int j = 0; j < nt; ++j) smem[j * 128 + d] = kh[(size_t)(t0 + j) * 128 + d];
        __syncthreads();
        for (int j = 0; j < nt; ++j) {
            float s = 0.f;
            for (int e = 0; e < 128; ++e) s += q[head * 128 + e] * smem[j * 128 + e];
            s *= scale;
            float mn = fmaxf(m, s);
            float p = __expf(s - mn);
            l = l * __expf(m - mn) + p;
            acc = acc * __expf(m - mn) + p * vh[(size_t)(t0 + j) * 128 + d];
            m = mn;
        }
        __syncthreads();
    }
    out[head * 128 + d] = acc / l + 0.f * qd;
}
'''


def cudapy_dynsmem():
    import ctypes

    import numpy as np
    from cuda.bindings import driver as cu
    from cuda.bindings import nvrtc

    def check(res):
        err = res[0]
        if isinstance(err, cu.CUresult) and err != cu.CUresult.CUDA_SUCCESS:
            _, s = cu.cuGetErrorString(err)
            raise RuntimeError(f"CUDA driver error {err.name} ({int(err)}): {s.decode() if s else ''}")
        if isinstance(err, nvrtc.nvrtcResult) and err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise RuntimeError(f"NVRTC error {err.name}")
        return res[1] if len(res) == 2 else res[1:]

    check(cu.cuInit(0))
    dev = check(cu.cuDeviceGet(0))
    name = check(cu.cuDeviceGetName(256, dev))
    major = check(cu.cuDeviceGetAttribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
    minor = check(cu.cuDeviceGetAttribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
    smem_optin = check(cu.cuDeviceGetAttribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev))
    print(f"[decode-proto] device {name.split(bytes(1))[0].decode()} sm_{major}{minor}, max opt-in shared memory per block {smem_optin // 1024} KiB", flush=True)
    ctx = check(cu.cuDevicePrimaryCtxRetain(dev))
    check(cu.cuCtxSetCurrent(ctx))
    prog = check(nvrtc.nvrtcCreateProgram(DECODE_SRC.encode(), b"decode_attn.cu", 0, [], []))
    opts = [f"--gpu-architecture=sm_{major}{minor}".encode(), b"--use_fast_math", b"-lineinfo"]
    check(nvrtc.nvrtcCompileProgram(prog, len(opts), opts))
    size = check(nvrtc.nvrtcGetCUBINSize(prog))
    cubin = b" " * size
    check(nvrtc.nvrtcGetCUBIN(prog, cubin))
    buf = np.frombuffer(cubin, dtype=np.uint8).copy()
    module = check(cu.cuModuleLoadData(buf.ctypes.data))
    kern = check(cu.cuModuleGetFunction(module, b"decode_attn"))
    print(f"[decode-proto] compiled decode_attn for sm_{major}{minor} ({size} bytes cubin)", flush=True)
    heads = 32
    stream = check(cu.cuStreamCreate(0))
    for seq_len in (1024, 2048, 4096, 8192, 16384):
        tile = 32 if seq_len <= 2048 else 64 if seq_len <= 4096 else 192
        smem = tile * 128 * 4
        host = {n: np.random.default_rng(seq_len).standard_normal(sz, dtype=np.float32)
                for n, sz in (("q", heads * 128), ("k", heads * seq_len * 128), ("v", heads * seq_len * 128))}
        dptr = {}
        for n_, arr in host.items():
            dptr[n_] = check(cu.cuMemAlloc(arr.nbytes))
            check(cu.cuMemcpyHtoD(dptr[n_], arr.ctypes.data, arr.nbytes))
        dptr["out"] = check(cu.cuMemAlloc(heads * 128 * 4))
        args = ((dptr["q"], dptr["k"], dptr["v"], dptr["out"], seq_len, tile, 1.0 / 128 ** 0.5),
                (None, None, None, None, ctypes.c_int, ctypes.c_int, ctypes.c_float))
        start, stop = check(cu.cuEventCreate(0)), check(cu.cuEventCreate(0))
        check(cu.cuEventRecord(start, stream))
        check(cu.cuLaunchKernel(kern, heads, 1, 1, 128, 1, 1, smem, stream, args, 0))
        check(cu.cuEventRecord(stop, stream))
        check(cu.cuStreamSynchronize(stream))
        ms = check(cu.cuEventElapsedTime(start, stop))
        out = np.empty(heads * 128, dtype=np.float32)
        check(cu.cuMemcpyDtoH(out.ctypes.data, dptr["out"], out.nbytes))
        print(f"[decode-proto] seq_len={seq_len:>6} tile={tile:>4} smem={smem // 1024:>3} KiB  {ms * 1000:8.1f} us  out[0]={out[0]:+.4f}", flush=True)
        for p in dptr.values():
            check(cu.cuMemFree(p))


# ---------------------------------------------------------------- jit_nvrtc
def jit_nvrtc():
    import torch
    import torch.nn as nn

    logging.basicConfig(format="%(levelname)s:%(name)s:%(message)s", level=logging.INFO)
    log = logging.getLogger("eval_ppl")
    gelu_code = """
    template <typename T> T gelu_exact_fwd(T x) {
        return T(0.5) * x * (T(1) + erf(x * T(M_SQRT1_2)));
    }
    """
    gelu_exact = torch.cuda.jiterator._create_jit_fn(gelu_code)

    class JitGELU(nn.Module):
        def forward(self, x):
            return gelu_exact(x)

    torch.manual_seed(0)
    d = 1024
    layers = []
    for _ in range(6):
        layers += [nn.LayerNorm(d), nn.Linear(d, 4 * d), JitGELU(), nn.Linear(4 * d, d)]
    model = nn.Sequential(*layers).cuda().eval()
    log.info(f"loaded checkpoint /ckpt/mlp-mixer-lm/step_30000 ({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params), activation=gelu_exact (jiterator)")
    log.info("evaluating on wikitext-103 valid: 217646 tokens, batch 16 x 1024")
    with torch.no_grad():
        for i in range(20):
            x = torch.randn(16, 1024, d, device="cuda")
            y = model(x)
            log.info(f"batch {i}: mean activation {y.float().mean().item():+.5f}")


# ---------------------------------------------------------------- ort_cpu_fallback
def ort_cpu_fallback():
    import warnings

    import numpy as np
    import torch
    import torch.nn as nn

    warnings.simplefilter("default")

    class TextCNN(nn.Module):
        def __init__(self, vocab=30000, d=256, n_cls=4):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.convs = nn.ModuleList(nn.Conv1d(d, 256, k, padding=k // 2) for k in (3, 5, 7))
            self.fc = nn.Linear(3 * 256, n_cls)

        def forward(self, ids):
            x = self.emb(ids).transpose(1, 2)
            return self.fc(torch.cat([torch.relu(c(x)).amax(-1) for c in self.convs], 1))

    torch.manual_seed(0)
    model = TextCNN().cuda().eval()
    ids = torch.randint(0, 30000, (32, 256), device="cuda")
    out_dir = f"{ROOT}/onnx"
    os.makedirs(out_dir, exist_ok=True)
    path = f"{out_dir}/textcnn.onnx"
    print(f"[export] torch {torch.__version__}: exporting TextCNN to {path}", flush=True)
    torch.onnx.export(model, (ids,), path, input_names=["input_ids"], output_names=["logits"],
                      dynamic_axes={"input_ids": {0: "batch", 1: "seq"}}, opset_version=17, dynamo=False)
    print(f"[export] wrote {os.path.getsize(path) / 2**20:.1f} MiB", flush=True)
    import onnxruntime as ort

    print(f"[bench] onnxruntime {ort.__version__}, available providers: {ort.get_available_providers()}", flush=True)
    sess = ort.InferenceSession(path, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    print(f"[bench] session providers: {sess.get_providers()}", flush=True)
    x = ids.cpu().numpy()
    with torch.no_grad():
        ref = model(ids).cpu().numpy()
    got = sess.run(None, {"input_ids": x})[0]
    print(f"[bench] max |onnx - torch| = {np.abs(got - ref).max():.2e}", flush=True)
    for name, fn in (("torch-cuda", lambda: model(ids)), ("onnxruntime", lambda: sess.run(None, {"input_ids": x}))):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        t0 = time.time()
        for _ in range(20):
            with torch.no_grad():
                fn()
        torch.cuda.synchronize()
        print(f"[bench] {name:<12} batch 32 x 256: {(time.time() - t0) / 20 * 1000:7.2f} ms/iter", flush=True)
    print("[bench] done", flush=True)


SCEN = {"tri_autotune_fp8": tri_autotune_fp8, "cupy_potrf": cupy_potrf, "numba_typing": numba_typing,
        "cudapy_dynsmem": cudapy_dynsmem, "jit_nvrtc": jit_nvrtc, "ort_cpu_fallback": ort_cpu_fallback}

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=sorted(SCEN), required=True)
    SCEN[ap.parse_args().scenario]()
