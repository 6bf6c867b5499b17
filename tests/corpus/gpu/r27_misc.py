# Round 27, single-process scenarios (one real fault, or none, per --scenario):
# hf_backward_twice: an HF/accelerate-style prompt-tuning loop caches the shared system prompt's hidden states
#   (computed once, with grad) and reuses them every step: the second backward runs through a freed graph;
# hf_bce_autocast: a reward-model loop under bf16 autocast applies sigmoid then F.binary_cross_entropy: autocast
#   refuses it at the first step;
# hf_dataloader_abort: an image fine-tune whose DataLoader workers decode through a native helper (ctypes); one
#   sample's buffer is freed twice: glibc aborts the worker, the main process reports the dead worker;
# gp_notpsd: a GPyTorch exact GP on the GPU, hyperparameters restored from a diverged run (huge lengthscale and
#   outputscale, a noise floor of 1e-8): Cholesky fails even after jitter;
# jax_tracer_bool: a JAX/optax loop whose jitted step keeps the best loss with a Python `if`;
# jax_pmap: a JAX data-parallel step written for 2 GPUs (pmap over a leading axis of 2) on a 1-GPU machine;
# triton_pruned: a Triton matmul tile sweep; the configs over the shared-memory limit fail to launch and are
#   skipped with a warning; the sweep finishes and prints its table (no crash);
# ckpt_retry: a training loop whose checkpoint folder cannot be created (its `ckpt` path is a file): the save is
#   logged as failed and skipped, training goes on and the final model is saved elsewhere (no crash);
# accel_fp8: accelerate's Accelerator(mixed_precision="fp8") on this image;
# cupy_stack: a CuPy tree-search kernel (recursive device function, a local array per frame) on deep trees.
# ruff: noqa: E501  (log lines kept as they print)
import argparse
import logging
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r27_common import OUTDIR, ROOT  # noqa: E402

_h = logging.StreamHandler(sys.stdout)
_h.setFormatter(logging.Formatter("%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S"))
log = logging.getLogger("__main__")
log.handlers[:] = [_h]
log.setLevel(logging.INFO)
log.propagate = False


def accel_banner(mp="bf16"):
    log.info(f"Distributed environment: NO\nNum processes: 1\nProcess index: 0\nLocal process index: 0\nDevice: cuda\n\nMixed precision type: {mp}\n")


def hf_backward_twice():
    import torch
    import torch.nn as nn
    from tqdm.auto import tqdm

    torch.manual_seed(0)
    accel_banner()
    d = 1024
    emb = nn.Embedding(32000, d).cuda()
    body = nn.Sequential(*[nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)) for _ in range(4)]).cuda()
    head = nn.Linear(d, 32000, bias=False).cuda()
    soft_prompt = nn.Parameter(torch.randn(20, d, device="cuda") * 0.02)
    opt = torch.optim.AdamW([soft_prompt] + list(body.parameters()), lr=3e-4)
    log.info("***** Running training *****")
    log.info("  Num examples = 12000")
    log.info("  Num Epochs = 3")
    log.info("  Instantaneous batch size per device = 16")
    log.info("  Gradient Accumulation steps = 1")
    log.info("  Total optimization steps = 2250")
    log.info("  Number of trainable parameters = 50,358,272")
    sys_ids = torch.randint(0, 32000, (1, 48), device="cuda")
    cache = {}
    bar = tqdm(total=2250, desc="Training", ncols=110)
    for step in range(1, 2251):
        if "sys" not in cache:  # the shared system prompt is the same for every sample: encode it once
            cache["sys"] = body(torch.cat([soft_prompt.unsqueeze(0), emb(sys_ids)], dim=1))
        ids = torch.randint(0, 32000, (16, 129), device="cuda")
        h = torch.cat([cache["sys"].expand(16, -1, -1), emb(ids[:, :-1])], dim=1)
        h = body(h)[:, 68:]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = head(h)
        loss = nn.functional.cross_entropy(logits.float().reshape(-1, 32000), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        bar.update(1)
        bar.set_postfix(loss=f"{loss.item():.4f}", lr="3.00e-04")


def hf_bce_autocast():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from tqdm.auto import tqdm

    torch.manual_seed(0)
    accel_banner()
    log.info("Loading reward model backbone from /models/deberta-v3-large (pairwise head replaced by a scalar head)")
    d = 1024
    backbone = nn.Sequential(nn.Embedding(128100, d), nn.Linear(d, d), nn.GELU(), nn.Linear(d, d)).cuda()
    score = nn.Linear(d, 1).cuda()
    opt = torch.optim.AdamW(list(backbone.parameters()) + list(score.parameters()), lr=1e-5)
    log.info("***** Running training *****")
    log.info("  Num examples = 64000")
    log.info("  Num Epochs = 1")
    log.info("  Instantaneous batch size per device = 32")
    log.info("  Total optimization steps = 2000")
    for _ in tqdm(range(64), desc="Tokenizing train split", ncols=100):
        time.sleep(0.01)
    bar = tqdm(total=2000, desc="Training", ncols=100)
    for step in range(1, 2001):
        ids = torch.randint(0, 128100, (32, 256), device="cuda")
        labels = torch.randint(0, 2, (32,), device="cuda").float()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            h = backbone(ids).mean(1)
            prob = torch.sigmoid(score(h)).squeeze(-1)
            loss = F.binary_cross_entropy(prob, labels)
        loss.backward()
        opt.step()
        opt.zero_grad()
        bar.update(1)


class NativeDecodeDataset:
    """Images decoded by a native helper; the helper frees the sample buffer twice for one truncated file."""

    def __init__(self, n=4096):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import ctypes

        import numpy as np
        import torch

        libc = ctypes.CDLL("libc.so.6")
        libc.malloc.restype = ctypes.c_void_p
        libc.free.argtypes = [ctypes.c_void_p]
        buf = libc.malloc(512)  # the decoder's per-image header
        arr = np.random.default_rng(i).random((3, 224, 224), dtype=np.float32)
        libc.free(buf)
        if i == 1187:  # truncated JPEG: the error path frees the output buffer again
            libc.free(buf)
        return torch.from_numpy(arr), i % 1000


def hf_dataloader_abort():
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, SequentialSampler
    from tqdm.auto import tqdm

    torch.manual_seed(0)
    accel_banner("fp16")
    log.info("Loaded 4096 images from /data/imagenet-subset/train (shards: 4)")
    model = nn.Sequential(nn.Conv2d(3, 64, 7, stride=4), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 1000)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    dl = DataLoader(NativeDecodeDataset(), batch_size=64, sampler=SequentialSampler(range(4096)), num_workers=4)
    log.info("***** Running training *****")
    log.info("  Num examples = 4096")
    log.info("  Num Epochs = 10")
    log.info("  Total train batch size = 64")
    bar = tqdm(total=640, desc="Epoch 1/10", ncols=100)
    for x, y in dl:
        x, y = x.cuda(non_blocking=True), y.cuda()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        bar.update(1)
        bar.set_postfix(loss=f"{loss.item():.3f}")


def gp_notpsd():
    import gpytorch
    import torch

    warnings.simplefilter("default")
    torch.manual_seed(0)
    n = 600
    x = torch.linspace(0, 1, n, device="cuda").unsqueeze(-1)
    y = torch.sin(6 * x.squeeze()) + 0.01 * torch.randn(n, device="cuda")

    class GP(gpytorch.models.ExactGP):
        def __init__(self, x, y, lik):
            super().__init__(x, y, lik)
            self.mean = gpytorch.means.ConstantMean()
            self.cov = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean(x), self.cov(x))

    lik = gpytorch.likelihoods.GaussianLikelihood(noise_constraint=gpytorch.constraints.GreaterThan(1e-9)).cuda()
    model = GP(x, y, lik).cuda()
    print(f"[bo] resuming surrogate from {ROOT}/bo/state_iter_41.pt (lengthscale=2.3e+03, outputscale=4.1e+05, noise=1.0e-08)", flush=True)
    model.cov.base_kernel.lengthscale = 2.3e3
    model.cov.outputscale = 4.1e5
    lik.noise = 1e-8
    model.train()
    lik.train()
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(lik, model)
    for it in range(1, 101):
        opt.zero_grad()
        loss = -mll(model(x), y)
        loss.backward()
        opt.step()
        print(f"[bo] iter {it:3d} - mll loss {loss.item():.4f}", flush=True)


def jax_tracer_bool():
    import jax
    import jax.numpy as jnp
    import optax

    print(f"jax {jax.__version__} devices: {jax.devices()}", flush=True)
    key = jax.random.PRNGKey(0)
    k1, k2 = jax.random.split(key)
    params = {"w1": jax.random.normal(k1, (256, 512)) * 0.05, "w2": jax.random.normal(k2, (512, 10)) * 0.05}
    opt = optax.adamw(1e-3)
    state = opt.init(params)

    def loss_fn(p, x, y):
        h = jax.nn.relu(x @ p["w1"])
        return optax.softmax_cross_entropy_with_integer_labels(h @ p["w2"], y).mean()

    @jax.jit
    def train_step(p, s, x, y, best):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        upd, s = opt.update(g, s, p)
        p = optax.apply_updates(p, upd)
        if loss < best:  # keep the best loss for early stopping
            best = loss
        return p, s, loss, best

    best = jnp.inf
    for step in range(1, 501):
        x = jax.random.normal(jax.random.PRNGKey(step), (128, 256))
        y = jax.random.randint(jax.random.PRNGKey(step + 1), (128,), 0, 10)
        params, state, loss, best = train_step(params, state, x, y, best)
        if step % 50 == 0:
            print(f"step {step} loss {float(loss):.4f} best {float(best):.4f}", flush=True)


def jax_pmap():
    import jax
    import jax.numpy as jnp

    n_dev = 2  # the config's data_parallel=2 (written for the 2-GPU node)
    print(f"jax {jax.__version__}: local devices {jax.local_devices()}, data_parallel={n_dev}", flush=True)

    def step(w, x):
        g = jax.grad(lambda w: jnp.mean((x @ w) ** 2))(w)
        g = jax.lax.pmean(g, axis_name="dp")
        return w - 1e-3 * g

    p_step = jax.pmap(step, axis_name="dp")
    w = jnp.stack([jnp.ones((512, 512)) * 0.01] * n_dev)
    for it in range(1, 101):
        x = jax.random.normal(jax.random.PRNGKey(it), (n_dev, 64, 512))
        w = p_step(w, x)
        if it % 20 == 0:
            print(f"iter {it}: |w| = {float(jnp.linalg.norm(w[0])):.4f}", flush=True)


def triton_pruned():
    import torch
    import triton
    import triton.language as tl
    from triton.runtime.errors import OutOfResources

    @triton.jit
    def mm(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid_m, pid_n = tl.program_id(0), tl.program_id(1)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
            y = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
            acc += tl.dot(x, y)
        tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16))

    M = N = K = 8192
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    print(f"triton {triton.__version__}, {torch.cuda.get_device_name()}, M=N=K={M} bf16", flush=True)
    configs = [(64, 64, 32, 3, 4), (128, 128, 32, 3, 4), (128, 128, 64, 4, 8), (128, 256, 64, 3, 8), (256, 128, 64, 4, 8),
               (256, 256, 64, 4, 8), (256, 256, 128, 3, 8), (128, 256, 128, 5, 8)]
    res = []
    for BM, BN, BK, st, nw in configs:
        name = f"BLOCK_M={BM}, BLOCK_N={BN}, BLOCK_K={BK}, num_stages={st}, num_warps={nw}"
        grid = (M // BM, N // BN)
        try:
            ms = triton.testing.do_bench(lambda: mm[grid](a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, num_stages=st, num_warps=nw), warmup=5, rep=20)
        except OutOfResources as e:
            print(f"[autotune] WARNING: config {name} skipped: {type(e).__name__}: {e}", flush=True)
            continue
        tf = 2 * M * N * K / ms / 1e9
        res.append((tf, name))
        print(f"[autotune] {name}: {ms:.3f} ms, {tf:.1f} TFLOPS", flush=True)
    ref = triton.testing.do_bench(lambda: torch.matmul(a, b), warmup=5, rep=20)
    best = max(res)
    print(f"[autotune] best config: {best[1]} ({best[0]:.1f} TFLOPS)", flush=True)
    print(f"[autotune] torch.matmul (cuBLAS): {2 * M * N * K / ref / 1e9:.1f} TFLOPS", flush=True)
    print(f"[autotune] {len(res)}/{len(configs)} configs benchmarked, results written to {ROOT}/autotune_mm_bf16.json", flush=True)


def ckpt_retry():
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    accel_banner()
    m = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    log.info(f"output_dir={OUTDIR}, save_steps=100, max_steps=300")
    for step in range(1, 301):
        x = torch.randn(64, 1024, device="cuda")
        loss = (m(x) - x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step % 25 == 0:
            print(f"{{'loss': {loss.item():.4f}, 'grad_norm': {0.31 + 1 / step:.4f}, 'learning_rate': {1e-3 * (1 - step / 300):.2e}, 'epoch': {step / 100:.2f}}}", flush=True)
        if step % 100 == 0:
            d = f"{OUTDIR}/ckpt/checkpoint-{step}"
            try:
                os.makedirs(d, exist_ok=True)
                torch.save(m.state_dict(), f"{d}/model.pt")
                log.info(f"Saving model checkpoint to {d}")
            except OSError as e:
                log.error(f"Failed to save checkpoint at step {step}: {type(e).__name__}: {e}")
                log.warning("Checkpointing skipped for this step; training continues.")
    final = f"{ROOT}/runs/llama-sft-0412-final"
    os.makedirs(final, exist_ok=True)
    torch.save(m.state_dict(), f"{final}/model.pt")
    log.info(f"Training completed. Final model saved to {final}")
    print("{'train_runtime': 41.7712, 'train_samples_per_second': 459.65, 'train_steps_per_second': 7.182, 'train_loss': 0.4127, 'epoch': 3.0}", flush=True)


def accel_fp8():
    import torch
    import torch.nn as nn
    from accelerate import Accelerator

    acc = Accelerator(mixed_precision="fp8")
    log.info(f"Accelerator state: {acc.state}")
    m = nn.Sequential(nn.Linear(4096, 4096), nn.GELU(), nn.Linear(4096, 4096))
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    m, opt = acc.prepare(m, opt)
    for step in range(1, 51):
        x = torch.randn(256, 4096, device=acc.device)
        loss = m(x).float().pow(2).mean()
        acc.backward(loss)
        opt.step()
        opt.zero_grad()
        if step % 10 == 0:
            log.info(f"step {step} loss {loss.item():.4f}")


TREE = r'''
struct Node { int left, right; float score; };
__device__ float best_path(const Node* t, int i, int depth) {
    float hist[32];
    for (int k = 0; k < 32; ++k) hist[k] = t[i].score * (k + 1);
    if (i < 0 || depth > 100000) return 0.f;
    float l = t[i].left >= 0 ? best_path(t, t[i].left, depth + 1) : 0.f;
    float r = t[i].right >= 0 ? best_path(t, t[i].right, depth + 1) : 0.f;
    return hist[depth & 31] + (l > r ? l : r);
}
extern "C" __global__ void score_trees(const Node* trees, const int* roots, float* out, int n) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < n) out[b] = best_path(trees, roots[b], 0);
}
'''


def cupy_stack():
    import cupy as cp
    import numpy as np

    print(f"cupy {cp.__version__}, device {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}", flush=True)
    kern = cp.RawKernel(TREE, "score_trees")
    for depth in (64, 512, 4096, 65536):
        n = 256
        nodes = np.zeros((n * depth, 3), dtype=np.int32)
        for b in range(n):
            base = b * depth
            nodes[base:base + depth, 0] = np.arange(base + 1, base + depth + 1)  # a chain: left child only
            nodes[base + depth - 1, 0] = -1
        nodes[:, 1] = -1
        nodes_f = nodes.view(np.int32).copy()
        nodes_f[:, 2] = np.float32(0.001).view(np.int32)
        t = cp.asarray(nodes_f)
        roots = cp.arange(0, n * depth, depth, dtype=cp.int32)
        out = cp.zeros(n, dtype=cp.float32)
        kern(((n + 127) // 128,), (128,), (t, roots, out, cp.int32(n)))
        cp.cuda.Device().synchronize()
        print(f"depth {depth}: scored {n} beams, best {float(out.max()):.4f}", flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    a = ap.parse_args()
    globals()[a.scenario]()
