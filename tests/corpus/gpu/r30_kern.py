# Kernel-level and JAX scenarios for round 30:
# tri_lora_expand: a Punica-style multi-LoRA Triton kernel pair; shrink (x @ A, K = hidden) compiles and runs, the
#   expand kernel's tl.dot takes the rank-8 intermediate as its K dimension: Triton refuses K < 16 at compile time
#   (CompilationError over "Input shapes should have M >= ..., N >= ... and K >= 16");
# event_notready: a GEMM benchmark times each shape with CUDA events but reads start.elapsed_time(end) before the end
#   event has completed: small shapes pass, the first large one fails with "CUDA error: device not ready";
# jax_static_list: a JAX model whose jitted apply takes its layer widths as a static argument; the config loader
#   hands a list from YAML/JSON: "Non-hashable static arguments are not supported";
# jax_donate: a JAX loop donating its params to a jitted step that returns them packed into one bf16 vector: the "Some
#   donated buffers were not usable" warning at its compile; the run finishes (no crash).
# ruff: noqa: E501  (log lines kept as they print)
import argparse
import json
import logging
import os
import sys
import time

logging.basicConfig(format="%(levelname).1s%(asctime)s %(process)d %(filename)s:%(lineno)d] %(message)s", datefmt="%m%d %H:%M:%S", level=logging.INFO, stream=sys.stdout)
log = logging.getLogger("run")


# ---------------------------------------------------------------- tri_lora_expand
def tri_lora_expand():
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def lora_shrink_kernel(x_ptr, a_ptr, out_ptr, M, K, R: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
        pid = tl.program_id(0)
        rm = pid * BLOCK_M + tl.arange(0, BLOCK_M)
        rr = tl.arange(0, R)
        acc = tl.zeros((BLOCK_M, R), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            rk = k0 + tl.arange(0, BLOCK_K)
            x = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
            a = tl.load(a_ptr + rk[:, None] * R + rr[None, :], mask=rk[:, None] < K, other=0.0)
            acc += tl.dot(x, a)
        tl.store(out_ptr + rm[:, None] * R + rr[None, :], acc.to(tl.float16), mask=rm[:, None] < M)

    @triton.jit
    def lora_expand_kernel(s_ptr, b_ptr, y_ptr, M, N, R: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rr = tl.arange(0, R)
        s = tl.load(s_ptr + rm[:, None] * R + rr[None, :], mask=rm[:, None] < M, other=0.0)
        b = tl.load(b_ptr + rr[:, None] * N + rn[None, :], mask=rn[None, :] < N, other=0.0)
        y = tl.load(y_ptr + rm[:, None] * N + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N), other=0.0)
        y += tl.dot(s, b).to(tl.float16)
        tl.store(y_ptr + rm[:, None] * N + rn[None, :], y, mask=(rm[:, None] < M) & (rn[None, :] < N))

    print(f"[lora-bench] triton {triton.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name(0)}", flush=True)
    torch.manual_seed(0)
    hidden, out_f = 4096, 4096
    for rank in (64, 32, 16, 8):
        M = 256
        x = torch.randn(M, hidden, device="cuda", dtype=torch.float16)
        A = torch.randn(hidden, rank, device="cuda", dtype=torch.float16) * 0.01
        B = torch.randn(rank, out_f, device="cuda", dtype=torch.float16) * 0.01
        y = torch.zeros(M, out_f, device="cuda", dtype=torch.float16)
        s = torch.empty(M, rank, device="cuda", dtype=torch.float16)
        t0 = time.time()
        lora_shrink_kernel[(triton.cdiv(M, 16),)](x, A, s, M, hidden, R=rank, BLOCK_M=16, BLOCK_K=64)
        print(f"[lora-bench] rank={rank:3d} shrink ok ({(time.time() - t0) * 1e3:.1f} ms incl. compile)", flush=True)
        lora_expand_kernel[(triton.cdiv(M, 16), triton.cdiv(out_f, 64))](s, B, y, M, out_f, R=rank, BLOCK_M=16, BLOCK_N=64)
        torch.cuda.synchronize()
        ref = (x.float() @ A.float()).half().float() @ B.float()
        err = (y.float() - ref).abs().max().item()
        print(f"[lora-bench] rank={rank:3d} expand ok, max abs err vs torch {err:.2e}", flush=True)


# ---------------------------------------------------------------- event_notready
def event_notready():
    import torch

    print(f"gemm_bench: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, dtype=bfloat16, iters=50", flush=True)
    print(f"{'M':>6} {'N':>6} {'K':>6} {'ms':>9} {'TFLOP/s':>9}", flush=True)
    for m, n, k in [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 8192)]:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        for _ in range(3):
            a @ b
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(50):
            a @ b
        end.record()
        ms = start.elapsed_time(end) / 50
        print(f"{m:>6} {n:>6} {k:>6} {ms:>9.3f} {2 * m * n * k / ms / 1e9:>9.1f}", flush=True)


# ---------------------------------------------------------------- jax_static_list
def jax_static_list():
    import functools

    import jax
    import jax.numpy as jnp

    cfg = json.loads('{"model": {"widths": [512, 1024, 1024, 256], "activation": "gelu"}, "train": {"lr": 0.001, "batch": 256, "steps": 2000}}')
    log.info(f"JAX {jax.__version__}, devices: {jax.devices()}")
    log.info(f"config: {json.dumps(cfg)}")

    def init(key, widths, d_in=64):
        params = []
        for w in widths:
            key, k = jax.random.split(key)
            params.append((jax.random.normal(k, (d_in, w)) * (1 / d_in) ** 0.5, jnp.zeros(w)))
            d_in = w
        return params

    @functools.partial(jax.jit, static_argnames=("widths",))
    def apply(params, x, widths):
        for (w, b), n in zip(params, widths):
            x = jax.nn.gelu(x @ w + b)
        return x

    widths = cfg["model"]["widths"]
    params = init(jax.random.PRNGKey(0), widths)
    log.info(f"initialized {sum(w.size + b.size for w, b in params):,} parameters")
    x = jnp.ones((cfg["train"]["batch"], 64))
    y = apply(params, x, widths=widths)
    log.info(f"output {y.shape}")


# ---------------------------------------------------------------- jax_donate
def jax_donate():
    import warnings

    import jax
    import jax.numpy as jnp

    warnings.simplefilter("default")
    log.info(f"JAX {jax.__version__}, devices: {jax.devices()}")
    key = jax.random.PRNGKey(0)
    params = {"w1": jax.random.normal(key, (1024, 2048)) * 0.02, "w2": jax.random.normal(key, (2048, 1024)) * 0.02}

    def loss_fn(p, x):
        return jnp.mean((jax.nn.relu(x @ p["w1"]) @ p["w2"] - x) ** 2)

    def step(p, x):
        loss, g = jax.value_and_grad(loss_fn)(p, x)
        # one packed bf16 vector for the serving side (what the weight-sync RPC sends)
        packed = jnp.concatenate([(p[k] - 1e-3 * g[k]).ravel() for k in ("w1", "w2")]).astype(jnp.bfloat16)
        return packed, loss

    step = jax.jit(step, donate_argnums=(0,))
    x = jax.random.normal(key, (512, 1024))
    for i in range(1, 301):
        packed, loss = step(params, x)
        params = {"w1": packed[: 1024 * 2048].reshape(1024, 2048).astype(jnp.float32),
                  "w2": packed[1024 * 2048:].reshape(2048, 1024).astype(jnp.float32)}
        if i % 50 == 0:
            log.info(f"step {i} loss {float(loss):.5f}")
    log.info("done; wrote /tmp/r30_files/serving_params.npz")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    a = ap.parse_args()
    os.makedirs("/tmp/r30_files", exist_ok=True)
    globals()[a.scenario]()


if __name__ == "__main__":
    main()
