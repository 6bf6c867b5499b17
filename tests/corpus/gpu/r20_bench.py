# Kernel jobs and benchmarks for round 20, --scenario:
# forest_stack: a GPU batch-scoring job for a gradient-boosted forest; the CuPy (NVRTC) kernel walks each tree
#   recursively (shrinkage applied on the way back up, so it is no tail call); one tree of the new model was
#   grown without a depth limit on a feature whose missing-value sentinel sends new accounts down a chain of
#   thousands of nodes: the first batch with new accounts overruns the per-thread stack;
# old_tma_api: a Hopper FP8 GEMM benchmark ported from the Triton 3.2 tutorial: the host side already fell back
#   to the new TensorDescriptor, the kernel still calls tl._experimental_descriptor_load, which this Triton no
#   longer has;
# graph_skip: a decode benchmark compiled with torch.compile(mode="reduce-overhead"); the step writes the KV
#   cache in place (an input mutation), so Inductor does not use CUDA graphs for it and says so (TORCH_LOGS is
#   set by r20_run.sh); the benchmark completes and prints its numbers (no crash).
import argparse
import logging
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()

FOREST_SRC = r"""
struct Node { int feature; float threshold; int left; int right; float value; float shrink; };

__device__ float eval_node(const Node* __restrict__ nodes, const float* __restrict__ x, int idx) {
    const Node n = nodes[idx];
    if (n.left < 0) return n.value;
    const float f = x[n.feature];
    const int child = (f <= n.threshold) ? n.left : n.right;
    const float v = eval_node(nodes, x, child);
    return v * n.shrink + n.value;
}

extern "C" __global__ void forest_predict(const Node* __restrict__ nodes, const int* __restrict__ roots,
                                          int n_trees, const float* __restrict__ X, int n_features,
                                          int n_rows, float* __restrict__ out) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n_rows) return;
    const float* x = X + (size_t)r * n_features;
    float s = 0.f;
    for (int t = 0; t < n_trees; ++t) s += eval_node(nodes, x, roots[t]);
    out[r] = 1.f / (1.f + __expf(-s));
}
"""


def forest_stack():
    import cupy as cp
    import numpy as np
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stdout)
    log = logging.getLogger("gbdt_batch_score")
    node_t = np.dtype([("feature", "<i4"), ("threshold", "<f4"), ("left", "<i4"), ("right", "<i4"),
                       ("value", "<f4"), ("shrink", "<f4")])
    rng = np.random.default_rng(7)
    nodes, roots = [], []

    def grow(depth, max_depth):
        i = len(nodes)
        nodes.append(None)
        if depth == max_depth or (depth > 3 and rng.random() < 0.15):
            nodes[i] = (-1, 0.0, -1, -1, float(rng.normal(0, 0.05)), 1.0)
            return i
        feat = int(rng.integers(0, 48))
        thr = float(rng.normal())
        left = grow(depth + 1, max_depth)
        right = grow(depth + 1, max_depth)
        nodes[i] = (feat, thr, left, right, 0.0, 1.0)
        return i

    for _ in range(400):
        roots.append(grow(0, 8))
    # tree 401: grown on days_since_signup (feature 3) with no max_depth; -1.0 is the missing-value sentinel,
    # which takes the left branch at every level of the chain
    start, chain = len(nodes), 24000
    for k in range(chain):
        nodes.append((3, -0.5, start + k + 1, start + chain + 1 + k, 0.0, 0.999))
    nodes.append((-1, 0.0, -1, -1, 0.3, 1.0))
    for k in range(chain):
        nodes.append((-1, 0.0, -1, -1, -0.01, 1.0))
    roots.append(start)
    arr = np.array(nodes, dtype=node_t)
    log.info("loaded model fraud-gbdt-v7.json: %d trees, %d nodes, 48 features", len(roots), len(arr))
    d_nodes = cp.asarray(arr.view(np.int32))
    d_roots = cp.asarray(np.array(roots, dtype=np.int32))
    mod = cp.RawModule(code=FOREST_SRC, options=("-std=c++17",))
    kern = mod.get_function("forest_predict")
    log.info("compiled forest_predict for sm_%s (NVRTC %s); stack limit %d bytes per thread",
             cp.cuda.Device().compute_capability, ".".join(map(str, cp.cuda.nvrtc.getVersion())),
             cp.cuda.runtime.deviceGetLimit(0))  # cudaLimitStackSize
    n_rows, batches = 200_000, 12
    for b in range(batches):
        X = rng.normal(size=(n_rows, 48)).astype(np.float32)
        X[:, 3] = np.abs(X[:, 3]) * 400  # days since signup
        if b >= 4:  # the partition with this week's sign-ups: no history yet
            new = rng.random(n_rows) < 0.01
            X[new, 3] = -1.0
        t0 = time.perf_counter()
        d_x = cp.asarray(X)
        out = cp.empty(n_rows, dtype=cp.float32)
        kern(((n_rows + 127) // 128,), (128,), (d_nodes, d_roots, cp.int32(len(roots)), d_x, cp.int32(48),
                                               cp.int32(n_rows), out))
        flagged = int((out > 0.9).sum())
        dt = time.perf_counter() - t0
        log.info("batch %d/%d: scored %d rows in %.3f s (%.0f rows/s), flagged %d", b + 1, batches, n_rows, dt,
                 n_rows / dt, flagged)
    log.info("done")


def old_tma_api():
    import torch
    import triton
    import triton.language as tl
    try:
        from triton.tools.experimental_descriptor import create_2d_tma_descriptor  # Triton <= 3.2
        HAS_EXPERIMENTAL = True
    except ImportError:
        from triton.tools.tensor_descriptor import TensorDescriptor
        HAS_EXPERIMENTAL = False

    @triton.jit
    def matmul_kernel_tma(a_desc, b_desc, c_desc, M, N, K,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        pid = tl.program_id(0)
        num_pid_m = tl.cdiv(M, BLOCK_M)
        pid_m = pid % num_pid_m
        pid_n = pid // num_pid_m
        offs_am = pid_m * BLOCK_M
        offs_bn = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            offs_k = k * BLOCK_K
            a = tl._experimental_descriptor_load(a_desc, [offs_am, offs_k], [BLOCK_M, BLOCK_K], tl.float8e4nv)
            b = tl._experimental_descriptor_load(b_desc, [offs_bn, offs_k], [BLOCK_N, BLOCK_K], tl.float8e4nv)
            acc = tl.dot(a, b.T, acc)
        tl._experimental_descriptor_store(c_desc, acc.to(tl.float16), [offs_am, offs_bn])

    print(f"device: {torch.cuda.get_device_name()} (sm_{''.join(map(str, torch.cuda.get_device_capability()))}), "
          f"triton {triton.__version__}, torch {torch.__version__}, experimental TMA API: {HAS_EXPERIMENTAL}",
          flush=True)
    print(f"{'M':>6} {'N':>6} {'K':>6} {'torch fp8 TFLOP/s':>18} {'triton TMA TFLOP/s':>19}", flush=True)
    for M, N, K in [(8192, 8192, 8192), (4096, 4096, 4096), (512, 8192, 8192)]:
        a = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
        c = torch.empty(M, N, device="cuda", dtype=torch.float16)
        one = torch.ones((), device="cuda")
        f_ref = lambda: torch._scaled_mm(a, b.t(), one, one, out_dtype=torch.float16)
        f_ref()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(20):
            f_ref()
        torch.cuda.synchronize()
        t_ref = (time.perf_counter() - t0) / 20
        BM, BN, BK = 128, 256, 128
        if HAS_EXPERIMENTAL:
            da = create_2d_tma_descriptor(a.data_ptr(), M, K, BM, BK, a.element_size())
            db = create_2d_tma_descriptor(b.data_ptr(), N, K, BN, BK, b.element_size())
            dc = create_2d_tma_descriptor(c.data_ptr(), M, N, BM, BN, c.element_size())
        else:
            da = TensorDescriptor.from_tensor(a, [BM, BK])
            db = TensorDescriptor.from_tensor(b, [BN, BK])
            dc = TensorDescriptor.from_tensor(c, [BM, BN])
        grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
        f_tri = lambda: matmul_kernel_tma[grid](da, db, dc, M, N, K, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK,
                                                num_warps=8, num_stages=3)
        f_tri()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(20):
            f_tri()
        torch.cuda.synchronize()
        t_tri = (time.perf_counter() - t0) / 20
        print(f"{M:>6} {N:>6} {K:>6} {2 * M * N * K / t_ref / 1e12:>18.1f} {2 * M * N * K / t_tri / 1e12:>19.1f}",
              flush=True)


def graph_skip():
    import torch
    torch.manual_seed(0)
    d, heads, layers, vocab, max_len = 1024, 8, 4, 32000, 2048
    hd = d // heads
    kw = dict(device="cuda", dtype=torch.bfloat16)
    W = {"emb": torch.randn(vocab, d, **kw) * 0.02, "head": torch.randn(vocab, d, **kw) * 0.02,
         "qkv": [torch.randn(3 * d, d, **kw) * 0.02 for _ in range(layers)],
         "o": [torch.randn(d, d, **kw) * 0.02 for _ in range(layers)],
         "up": [torch.randn(4 * d, d, **kw) * 0.02 for _ in range(layers)],
         "down": [torch.randn(d, 4 * d, **kw) * 0.02 for _ in range(layers)]}
    bs = 16
    k_cache = torch.zeros(layers, bs, heads, max_len, hd, **kw)
    v_cache = torch.zeros(layers, bs, heads, max_len, hd, **kw)

    def decode_step(tok, pos, k_cache, v_cache):
        h = W["emb"][tok]  # (bs, d)
        for i in range(layers):
            q, k, v = (h @ W["qkv"][i].T).view(bs, 3, heads, hd).unbind(1)
            k_cache[i].index_copy_(2, pos, k.unsqueeze(2))
            v_cache[i].index_copy_(2, pos, v.unsqueeze(2))
            att = torch.nn.functional.scaled_dot_product_attention(q.unsqueeze(2), k_cache[i], v_cache[i])
            h = h + att.reshape(bs, d) @ W["o"][i].T
            h = h + torch.nn.functional.gelu(h @ W["up"][i].T) @ W["down"][i].T
        return (h @ W["head"].T).argmax(-1)

    step = torch.compile(decode_step, mode="reduce-overhead")
    print(f"decode benchmark: bs={bs}, layers={layers}, d_model={d}, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}", flush=True)
    tok = torch.randint(0, vocab, (bs,), device="cuda")
    t0 = time.perf_counter()
    for p in range(3):
        tok = step(tok, torch.tensor([p], device="cuda"), k_cache, v_cache)
    torch.cuda.synchronize()
    print(f"warm-up (compile) took {time.perf_counter() - t0:.1f} s", flush=True)
    for run in range(3):
        n = 256
        t0 = time.perf_counter()
        for p in range(3 + run * n, 3 + (run + 1) * n):
            tok = step(tok, torch.tensor([p], device="cuda"), k_cache, v_cache)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        print(f"run {run}: {n} steps in {dt:.3f} s, {n * bs / dt:.1f} tokens/s, {dt / n * 1000:.2f} ms/step",
              flush=True)


{"forest_stack": forest_stack, "old_tma_api": old_tma_api, "graph_skip": graph_skip}[args.scenario]()
