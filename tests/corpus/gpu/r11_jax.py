# JAX jobs (round 11), --scenario:
# pallas_smem: a Pallas (Triton) fused matmul whose 256x512 bf16 operand blocks need more shared
#   memory than an H100/H200 block may have, after a few ordinary training steps;
# dist_timeout: process 0 of 2 starts the coordination service; process 1 never joins;
# healthy: a small MLP trains to the end, with float64-truncation and donation warnings and XLA logs.
import argparse
import time

import jax
import jax.numpy as jnp

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()


def mlp_init(key, d_in=512, d=1024, classes=16):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (d_in, d)) * 0.02, "w2": jax.random.normal(k2, (d, classes)) * 0.02}


def loss_fn(p, x, y):
    logits = jax.nn.gelu(x @ p["w1"]) @ p["w2"]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


def train(steps, log_every, donate=False):
    key = jax.random.PRNGKey(0)
    p = mlp_init(key)
    x = jax.random.normal(key, (4096, 512))
    y = jnp.argmax(x[:, :16], axis=1)

    def step(p, x, y, stats):
        l, g = jax.value_and_grad(loss_fn)(p, x, y)
        return jax.tree_util.tree_map(lambda a, b: a - 0.05 * b, p, g), l

    f = jax.jit(step, donate_argnums=(3,) if donate else ())
    t0 = time.perf_counter()
    for s in range(1, steps + 1):
        stats = jnp.zeros((7,), dtype=jnp.float64)
        p, l = f(p, x, y, stats)
        if s % log_every == 0:
            l.block_until_ready()
            dt = time.perf_counter() - t0
            print(f"step {s:5d} | loss {float(l):.4f} | {log_every * x.shape[0] / dt:,.0f} examples/s", flush=True)
            t0 = time.perf_counter()
    return p


if args.scenario == "healthy":
    print(f"JAX {jax.__version__} devices: {jax.devices()}", flush=True)
    train(600, 200, donate=True)
    print("done", flush=True)

elif args.scenario == "dist_timeout":
    print("process 0/2: connecting to coordinator 127.0.0.1:12355", flush=True)
    jax.distributed.initialize(coordinator_address="127.0.0.1:12355", num_processes=2, process_id=0,
                               initialization_timeout=20)
    print(f"process {jax.process_index()} of {jax.process_count()} ready", flush=True)

elif args.scenario == "pallas_smem":
    from jax.experimental import pallas as pl
    print(f"JAX {jax.__version__} devices: {jax.devices()}", flush=True)
    train(200, 100)

    def matmul_kernel(x_ref, y_ref, o_ref):
        o_ref[...] = jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)

    def fused_matmul(x, y, bm=256, bn=256):
        m, k = x.shape
        n = y.shape[1]
        return pl.pallas_call(matmul_kernel, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=(m // bm, n // bn),
                              in_specs=[pl.BlockSpec((bm, k), lambda i, j: (i, 0)),
                                        pl.BlockSpec((k, bn), lambda i, j: (0, j))],
                              out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)))(x, y)

    print("eval: switching projections to the fused Pallas matmul (block 256x256, K=512)", flush=True)
    a = jnp.ones((4096, 512), jnp.bfloat16)
    b = jnp.ones((512, 4096), jnp.bfloat16)
    out = jax.jit(fused_matmul)(a, b)
    print(float(out[0, 0]), flush=True)
